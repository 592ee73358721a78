// rt-lower's errors: each names the rule and the value found.
// RUN: shard-opt %s --rt-lower -split-input-file -verify-diagnostics

// The old parameter is read after adamw has overwritten it in place.
func.func @train_step(%p: tensor<4xf32> {tfm.param = "p", tfm.init = "ones"},
                      %g: tensor<4xf32> {tfm.input = "g"},
                      %m: tensor<4xf32> {tfm.state = "p.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "p", tfm.init = "zeros"},
                      %v: tensor<4xf32> {tfm.state = "p.exp_avg_sq", tfm.state_kind = "opt_v", tfm.state_of = "p", tfm.init = "zeros"},
                      %lr: tensor<f32> {tfm.input = "lr"}, %step: tensor<i64> {tfm.input = "step"})
    -> (tensor<4xf32> {tfm.param = "p"}, tensor<4xf32> {tfm.output = "late"}) {
  // expected-note @+1 {{updated in place here}}
  %p2, %m2, %v2 = tfm.adamw %p, %g, %m, %v, %lr, %step, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.500000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  // expected-error @+1 {{'tfm.add' op reads the old value of state 'p' after 'tfm.adamw' has updated it in place (the new value is returned as that state)}}
  %late = tfm.add %p, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %p2, %late : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func private @update(%p: tensor<4xf32>) -> tensor<4xf32> {
  %q = tfm.scale %p {factor = 2.000000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %q : tensor<4xf32>
}
func.func @step(%p: tensor<4xf32> {tfm.param = "p", tfm.init = "ones"}) -> (tensor<4xf32> {tfm.param = "p"}) {
  // expected-error @+1 {{both reads and writes state 'p'; a callee may overwrite an argument before it has read it, so an in-place update must be a single kernel}}
  %q = func.call @update(%p) : (tensor<4xf32>) -> tensor<4xf32>
  return %q : tensor<4xf32>
}

// -----

// expected-error @+1 {{entry argument 0 has none of 'tfm.input', 'tfm.param', 'tfm.state' (the runtime cannot fill it)}}
func.func @eval(%x: tensor<4xf32>) -> (tensor<4xf32> {tfm.output = "y"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{entry result 0 has neither 'tfm.output' nor 'tfm.param'/'tfm.state'}}
func.func @eval(%x: tensor<4xf32> {tfm.input = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 updates state 'q', which is not an argument of the function}}
func.func @eval(%x: tensor<4xf32> {tfm.input = "x"}) -> (tensor<4xf32> {tfm.param = "q"}) {
  return %x : tensor<4xf32>
}

// -----

func.func @eval(%x: tensor<4xf32> {tfm.input = "x"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  // expected-error @+1 {{'tensor.empty' op cannot be lowered by rt-lower (supported: tfm ops, dist collectives, arith.constant, func.call, func.return)}}
  %e = tensor.empty() : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

func.func @other(%x: tensor<4xf32> {tfm.input = "x"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  return %x : tensor<4xf32>
}
func.func @eval(%x: tensor<4xf32> {tfm.input = "x"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  // expected-error @+1 {{calls 'other', which is not a private func.func (only non-entry functions can be called)}}
  %y = func.call @other(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @a(%w: tensor<4xf32> {tfm.param = "w", tfm.init = "ones"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  return %w : tensor<4xf32>
}
// expected-error @+1 {{argument 0 (state 'w'): type '!rt.buffer<8xf32>' differs from the type '!rt.buffer<4xf32>' it has in another function}}
func.func @b(%w: tensor<8xf32> {tfm.param = "w", tfm.init = "ones"}) -> (tensor<8xf32> {tfm.output = "y"}) {
  return %w : tensor<8xf32>
}

// -----

// expected-error @+1 {{argument 0 (state 'm'): 'tfm.state_kind' must be "opt_m" or "opt_v", found "param"}}
func.func @a(%m: tensor<4xf32> {tfm.state = "m", tfm.state_kind = "param", tfm.init = "zeros"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  return %m : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument 0 (state 'm'): missing 'tfm.state_of' (the parameter it belongs to)}}
func.func @a(%m: tensor<4xf32> {tfm.state = "m", tfm.state_kind = "opt_m", tfm.init = "zeros"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  return %m : tensor<4xf32>
}

// -----

// A missing attribute is called missing (issue 19: it printed as
// `found <<NULL ATTRIBUTE>>`).
// expected-error @+1 {{argument 0 (state 'w'): missing 'tfm.init' ("normal", "zeros" or "ones": how the runtime initialises the state; the model builder sets it on every parameter)}}
func.func @a(%w: tensor<4xf32> {tfm.param = "w"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument 0 (state 'w'): 'tfm.init' must be "normal", "zeros" or "ones", found "uniform"}}
func.func @a(%w: tensor<4xf32> {tfm.param = "w", tfm.init = "uniform"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument 0 (state 'm'): missing 'tfm.state_kind' ("opt_m" or "opt_v")}}
func.func @a(%m: tensor<4xf32> {tfm.state = "m", tfm.state_of = "w", tfm.init = "zeros"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  return %m : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument 0 (state 'w'): init "normal" needs a float 'tfm.init_std'}}
func.func @a(%w: tensor<4xf32> {tfm.param = "w", tfm.init = "normal"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{has no body; rt-lower needs every function defined}}
func.func private @decl(tensor<4xf32>) -> tensor<4xf32>

// -----

// Returning the old parameter as an output reads it after the update.
func.func @train_step(%p: tensor<4xf32> {tfm.param = "p", tfm.init = "ones"})
    -> (tensor<4xf32> {tfm.param = "p"}, tensor<4xf32> {tfm.output = "old"}) {
  // expected-note @+1 {{updated in place here}}
  %q = tfm.scale %p {factor = 2.000000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'func.return' op reads the old value of state 'p' after 'tfm.scale' has updated it in place}}
  return %q, %p : tensor<4xf32>, tensor<4xf32>
}

// -----

// An async collective's handle must be waited on once, in its function.
module {
  dist.mesh @m [dp = 2 : data]
  func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{handle must have exactly one use, a dist.wait in the same function}}
    %h = dist.all_reduce_start %x on @m axes = [dp] reduction = sum : tensor<4xf32> -> !dist.async<tensor<4xf32>>
    %a = dist.wait %h : !dist.async<tensor<4xf32>>
    %b = dist.wait %h : !dist.async<tensor<4xf32>>
    %c = tfm.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %c : tensor<4xf32>
  }
}

// -----

// Global-shape dist ops must be gone (dist-partition) before rt-lower.
module {
  dist.mesh @m [dp = 2 : data]
  func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{cannot be lowered by rt-lower (global-shape dist ops must be removed by dist-partition first)}}
    %y = dist.reshard %x to <@m, [{dp}]> : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// Sharded but not partitioned: the shapes are still global.
module {
  dist.mesh @m [dp = 2 : data]
  // expected-error @+1 {{carries 'dist.sharding' (argument 0) but is not partitioned (no 'dist.partitioned'): its shapes are global; run --dist-partition before rt-lower}}
  func.func @eval(%x: tensor<4xf32> {tfm.input = "x", dist.sharding = #dist.sharding<@m, [{dp}]>}) -> (tensor<4xf32> {tfm.output = "y"}) {
    %y = tfm.scale %x {factor = 2.000000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// A private function with propagated (global) shardings on its ops.
module {
  dist.mesh @m [dp = 2 : data]
  // expected-error @+1 {{carries 'dist.sharding' (op 'tfm.scale') but is not partitioned}}
  func.func private @block(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = tfm.scale %x {factor = 2.000000e+00 : f64, dist.sharding = #dist.sharding<@m, [{dp}]>} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// An empty state name would make an rt.state_def that prints as
// `@<<INVALID EMPTY SYMBOL>>`.
// expected-error @+1 {{argument 0 (state ''): the state needs a name ('tfm.param' or 'tfm.state'), found an empty one}}
func.func @a(%w: tensor<4xf32> {tfm.param = "", tfm.init = "zeros"}) -> (tensor<4xf32> {tfm.output = "y"}) {
  return %w : tensor<4xf32>
}
