// Every rt verifier rule, one case each.
// RUN: shard-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{expected static shape}}
func.func private @f(!rt.buffer<?xf32>)

// -----

// expected-error @+1 {{buffer element type must be an integer or float of whole bytes, found 'i1'}}
func.func private @f(!rt.buffer<4xi1>)

// -----

// expected-error @+1 {{'std' must be given exactly when init is 'normal'; init is 'normal' without std}}
rt.state_def @w param init normal : !rt.buffer<4xf32>

// -----

// expected-error @+1 {{'std' must be given exactly when init is 'normal'; init is 'zeros' with a std}}
rt.state_def @w param init zeros std 1.0 : !rt.buffer<4xf32>

// -----

// expected-error @+1 {{std must be finite and >= 0, found -1}}
rt.state_def @w param init normal std -1.0 : !rt.buffer<4xf32>

// -----

// expected-error @+1 {{logical shape must have the buffer's rank 2, found rank 1}}
rt.state_def @w param init normal std 1.0 logical [3] : !rt.buffer<4x4xf32>

// -----

// expected-error @+1 {{logical shape dims must be >= 0}}
rt.state_def @w param init normal std 1.0 logical [3, -1] : !rt.buffer<4x4xf32>

// -----

// expected-error @+1 {{a 'opt_m' state must name the parameter it belongs to with 'of'}}
rt.state_def @m opt_m init zeros : !rt.buffer<4xf32>

// -----

rt.state_def @w param init ones : !rt.buffer<4xf32>
// expected-error @+1 {{a 'param' state cannot name the parameter it belongs to with 'of'}}
rt.state_def @p param of @w init ones : !rt.buffer<4xf32>

// -----

rt.state_def @w param init ones : !rt.buffer<4xf32>
// expected-error @+1 {{only a 'param' state can have 'decay', found 'opt_v'}}
rt.state_def @v opt_v of @w init zeros decay : !rt.buffer<4xf32>

// -----

rt.state_def @w param init ones : !rt.buffer<4xf32>
rt.state_def @m opt_m of @w init zeros : !rt.buffer<4xf32>
// expected-error @+1 {{'of' must name a 'param' rt.state_def, found '@m'}}
rt.state_def @v opt_v of @m init zeros : !rt.buffer<4xf32>

// -----

rt.state_def @w param init ones : !rt.buffer<4xf32>
// expected-error @+1 {{type '!rt.buffer<8xf32>' differs from that of its parameter "w", '!rt.buffer<4xf32>'}}
rt.state_def @m opt_m of @w init zeros : !rt.buffer<8xf32>

// -----

// expected-error @+1 {{must have no results (outputs are passed as arguments), found 1}}
rt.func @f() -> !rt.buffer<f32> {
  rt.return
}

// -----

// expected-error @+1 {{argument 0 must be an !rt.buffer, found 'tensor<f32>'}}
rt.func @f(%x: tensor<f32>) {
  rt.return
}

// -----

// expected-error @+1 {{entry 'eval' must have no arguments (it reads I/O slots and state), found 1}}
rt.func @f(%x: !rt.buffer<f32>) attributes {entry = "eval"} {
  rt.return
}

// -----

// expected-error @+1 {{frame_bytes must be a multiple of 64 bytes, found 100}}
rt.func @f() attributes {frame_bytes = 100 : i64} {
  rt.return
}

// -----

// expected-error @+1 {{peak_breakdown key 'params' is not a category}}
rt.func @f() attributes {frame_bytes = 0 : i64, peak_breakdown = {params = 0 : i64}} {
  rt.return
}


// -----

rt.func @f() attributes {entry = "eval"} {
  %a = rt.input "tokens" : !rt.buffer<4xi32>
  // expected-error @+1 {{input role 'tokens' appears twice}}
  %b = rt.input "tokens" : !rt.buffer<4xi32>
  rt.return
}

// -----

rt.func @f() attributes {entry = "eval"} {
  %a = rt.output "loss" : !rt.buffer<f32>
  // expected-error @+1 {{output role 'loss' appears twice}}
  %b = rt.output "loss" : !rt.buffer<f32>
  rt.return
}

// -----

rt.func @f() attributes {frame_bytes = 64 : i64} {
  // expected-error @+1 {{has no offset but its function is planned (it has frame_bytes)}}
  %a = rt.alloc activation : !rt.buffer<4xf32>
  rt.return
}

// -----

rt.func @f() {
  // expected-error @+1 {{has an offset but its function is not planned (no frame_bytes)}}
  %a = rt.alloc activation at 0 : !rt.buffer<4xf32>
  rt.return
}

// -----

rt.func @f() attributes {frame_bytes = 64 : i64} {
  // expected-error @+1 {{bytes [0, 128) exceed the function's frame_bytes 64}}
  %a = rt.alloc grad at 0 : !rt.buffer<32xf32>
  rt.return
}

// -----

rt.func @f() {
  // expected-error @+1 {{category 'io' is reserved for rt.input/rt.output slots}}
  %a = rt.alloc io : !rt.buffer<4xf32>
  rt.return
}

// -----

rt.func @f() attributes {frame_bytes = 128 : i64} {
  // expected-error @+1 {{offset must be a multiple of 64 bytes, found 32}}
  %a = rt.alloc activation at 32 : !rt.buffer<4xf32>
  rt.return
}

// -----

rt.func @f() {
  // expected-error @+1 {{is only allowed in an entry function; 'f' has no 'entry'}}
  %a = rt.input "tokens" : !rt.buffer<4xi32>
  rt.return
}

// -----

rt.func @f() {
  %a = rt.alloc activation : !rt.buffer<4xf32>
  // expected-error @+1 {{element type 'f64' differs from the source's 'f32'}}
  %b = rt.view %a : !rt.buffer<4xf32> to !rt.buffer<4xf64>
  rt.return
}

// -----

rt.func @f() {
  %a = rt.alloc activation : !rt.buffer<4xf32>
  // expected-error @+1 {{element count 6 differs from the source's 4}}
  %b = rt.view %a : !rt.buffer<4xf32> to !rt.buffer<2x3xf32>
  rt.return
}

// -----

rt.func @f() {
  // expected-error @+1 {{'w' does not name an rt.state_def}}
  %a = rt.state @w : !rt.buffer<4xf32>
  rt.return
}

// -----

rt.state_def @w param init ones : !rt.buffer<4xf32>
rt.func @f() {
  // expected-error @+1 {{type '!rt.buffer<8xf32>' differs from state 'w' declared as '!rt.buffer<4xf32>'}}
  %a = rt.state @w : !rt.buffer<8xf32>
  rt.return
}

// -----

rt.func @f() {
  // expected-error @+1 {{type '!rt.buffer<2xi64>' differs from the value's type 'tensor<2xi32>'}}
  %a = "rt.const"() {value = dense<1> : tensor<2xi32>} : () -> !rt.buffer<2xi64>
  rt.return
}

// -----

rt.func @f(%x: !rt.buffer<4xf32>) {
  // expected-error @+1 {{kernel name must be a non-empty [a-z0-9_] identifier (optionally prefixed by 'dist.'), found 'Gelu'}}
  rt.kernel "Gelu"(%x) -> (%x) : (!rt.buffer<4xf32>) -> !rt.buffer<4xf32>
  rt.return
}

// -----

rt.func @f(%x: !rt.buffer<4xf32>) {
  // expected-error @+1 {{kernel 'gelu' must have a result}}
  "rt.kernel"(%x) {kernel = "gelu", operandSegmentSizes = array<i32: 1, 0>} : (!rt.buffer<4xf32>) -> ()
  rt.return
}

// -----

rt.func @f(%x: !rt.buffer<4xf32>) {
  %c = rt.const dense<1.0> : tensor<4xf32>
  // expected-error @+1 {{result 0 of kernel 'gelu' is read-only memory (rt.const)}}
  rt.kernel "gelu"(%x) -> (%c) : (!rt.buffer<4xf32>) -> !rt.buffer<4xf32>
  rt.return
}

// -----

rt.func @f() attributes {entry = "eval"} {
  %t = rt.input "tokens" : !rt.buffer<4xf32>
  %v = rt.view %t : !rt.buffer<4xf32> to !rt.buffer<2x2xf32>
  // expected-error @+1 {{result 0 of kernel 'gelu' is read-only memory (rt.input)}}
  rt.kernel "gelu"(%v) -> (%v) : (!rt.buffer<2x2xf32>) -> !rt.buffer<2x2xf32>
  rt.return
}

// -----

rt.func @f() {
  // expected-error @+1 {{'g' does not name an rt.func}}
  rt.call @g()
  rt.return
}

// -----

rt.func @g() attributes {entry = "eval"} {
  rt.return
}
rt.func @f() {
  // expected-error @+1 {{cannot call entry function 'g'}}
  rt.call @g()
  rt.return
}

// -----

rt.func @g(%x: !rt.buffer<4xf32>) {
  rt.return
}
rt.func @f() {
  // expected-error @+1 {{passes 0 buffers but 'g' takes 1}}
  rt.call @g()
  rt.return
}

// -----

rt.func @g(%x: !rt.buffer<4xf32>) {
  rt.return
}
rt.func @f(%x: !rt.buffer<4xf64>) {
  // expected-error @+1 {{operand 0 has type '!rt.buffer<4xf64>' but 'g' expects '!rt.buffer<4xf32>'}}
  rt.call @g(%x) : !rt.buffer<4xf64>
  rt.return
}

// -----

rt.func @g() {
  rt.return
}
rt.func @f() attributes {frame_bytes = 0 : i64} {
  // expected-error @+1 {{has no frame_offset but its function is planned (it has frame_bytes)}}
  rt.call @g()
  rt.return
}

// -----

rt.func @g() {
  rt.return
}
rt.func @f() attributes {frame_bytes = 0 : i64} {
  // expected-error @+1 {{is planned but its callee 'g' is not (no frame_bytes)}}
  rt.call @g() at 0
  rt.return
}

// -----

rt.func @g() attributes {frame_bytes = 128 : i64} {
  rt.return
}
rt.func @f() attributes {frame_bytes = 128 : i64} {
  // expected-error @+1 {{callee frame [64, 192) exceeds the caller's frame_bytes 128}}
  rt.call @g() at 64
  rt.return
}

// -----

// Found by fuzzing (issue 19): a call outside any function crashed the
// verifier (the caller's frame was read from a null function).
rt.func @f() {
  rt.return
}
// expected-error @+1 {{'rt.call' op expects parent op 'rt.func'}}
rt.call @f() at 0

// -----

// Every instruction and buffer op lives in a function.
// expected-error @+1 {{'rt.kernel' op expects parent op 'rt.func'}}
rt.kernel "dist.barrier"() -> ()  : () -> ()

// -----

// expected-error @+1 {{'rt.const' op expects parent op 'rt.func'}}
%c = rt.const dense<1> : tensor<i64>

// -----

rt.state_def @w param init zeros : !rt.buffer<4xf32>
// expected-error @+1 {{'rt.state' op expects parent op 'rt.func'}}
%w = rt.state @w : !rt.buffer<4xf32>


// -----

// expected-error @+1 {{std must be finite and >= 0, found INF}}
rt.state_def @w param init normal std 0x7FF0000000000000 : !rt.buffer<4xf32>

// -----

// expected-error @+1 {{std must be finite and >= 0, found nan}}
rt.state_def @w param init normal std 0x7FF8000000000000 : !rt.buffer<4xf32>

// -----

// A symbol prints as @name; an empty name printed as
// `@<<INVALID EMPTY SYMBOL>>`.
// expected-error @+1 {{'rt.state_def' op needs a name, found an empty one (@"")}}
rt.state_def @"" param init zeros : !rt.buffer<4xf32>

// -----

// expected-error @+1 {{'rt.func' op needs a name, found an empty one (@"")}}
rt.func @""() {
  rt.return
}

// -----

rt.state_def @w param init zeros : !rt.buffer<4xf32>
// expected-error @+1 {{'of' must name a 'param' rt.state_def, found '@'}}
rt.state_def @m opt_m of @"" init zeros : !rt.buffer<4xf32>

// -----

// Found by fuzzing (issue 19): a constant no buffer can hold made an
// invalid buffer type (an assertion build aborted).
rt.func @f() {
  // expected-error @+1 {{buffer element type must be an integer or float of whole bytes, found 'i60'}}
  %c = rt.const dense<[0, 1]> : tensor<2xi60>
  rt.return
}

// -----

// Found by fuzzing (issue 19): the generic form skips the custom parser, and
// the verifier built a buffer type from a value of i31 (an assertion build
// aborted).
rt.func @f() {
  // expected-error @+1 {{'rt.const' op type '!rt.buffer<2xi64>' differs from the value's type 'tensor<2xi31>'}}
  %c = "rt.const"() {value = dense<1> : tensor<2xi31>} : () -> !rt.buffer<2xi64>
  rt.return
}
