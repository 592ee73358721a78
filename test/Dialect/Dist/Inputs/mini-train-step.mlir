// A train-step-like module in the shape tfm-autodiff emits (block function
// with a hidden-state arg, role / param / state attributes, adamw), small
// enough to check by hand. Used by dist-apply-plan.mlir and dist-propagate.mlir.
module attributes {tfm.model = {num_heads = 2 : i64, num_kv_heads = 2 : i64, ffn_hidden_size = 16 : i64, padded_vocab_size = 8 : i64}} {
  func.func private @block(%x: tensor<4x8x16xf32> {tfm.role = "hidden"},
                           %wq: tensor<16x16xf32> {tfm.role = "attn_q"},
                           %wo: tensor<16x16xf32> {tfm.role = "attn_out"})
      -> (tensor<4x8x16xf32> {tfm.role = "hidden"}) {
    %q = tfm.matmul %x, %wq : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %q4 = tfm.reshape %q : (tensor<4x8x16xf32>) -> tensor<4x8x2x8xf32>
    %a, %lse = tfm.attention %q4, %q4, %q4 {causal, scale = 0.35 : f64}
        : (tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>) -> (tensor<4x8x2x8xf32>, tensor<4x2x8xf32>)
    %a3 = tfm.reshape %a : (tensor<4x8x2x8xf32>) -> tensor<4x8x16xf32>
    %o = tfm.matmul %a3, %wo : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %y = tfm.add %x, %o : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    return %y : tensor<4x8x16xf32>
  }
  func.func @train_step(
      %tokens: tensor<4x8xi32> {tfm.input = "tokens"},
      %labels: tensor<4x8xi32> {tfm.input = "labels"},
      %step: tensor<i64> {tfm.input = "step"},
      %lr: tensor<f32> {tfm.input = "lr"},
      %wte: tensor<8x16xf32> {tfm.param = "wte", tfm.role = "embedding"},
      %wq: tensor<16x16xf32> {tfm.param = "l0.wq", tfm.role = "attn_q"},
      %bq: tensor<16xf32> {tfm.param = "l0.bq", tfm.role = "bias", tfm.bias_of = "attn_q"},
      %wo: tensor<16x16xf32> {tfm.param = "l0.wo", tfm.role = "attn_out"},
      %ln: tensor<16xf32> {tfm.param = "ln_f", tfm.role = "norm"},
      %odd: tensor<3x5xf32> {tfm.param = "odd", tfm.role = "norm"},
      %m_wq: tensor<16x16xf32> {tfm.state = "l0.wq.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "l0.wq"},
      %v_wq: tensor<16x16xf32> {tfm.state = "l0.wq.exp_avg_sq", tfm.state_kind = "opt_v", tfm.state_of = "l0.wq"},
      %m_odd: tensor<3x5xf32> {tfm.state = "odd.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "odd"})
      -> (tensor<f32> {tfm.output = "loss"},
          tensor<16x16xf32> {tfm.param = "l0.wq"},
          tensor<16x16xf32> {tfm.state = "l0.wq.exp_avg"},
          tensor<16x16xf32> {tfm.state = "l0.wq.exp_avg_sq"}) {
    %h = tfm.embedding %tokens, %wte : (tensor<4x8xi32>, tensor<8x16xf32>) -> tensor<4x8x16xf32>
    %h1 = call @block(%h, %wq, %wo) : (tensor<4x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %n = tfm.layer_norm %h1, %ln {epsilon = 1.0e-05 : f64} : (tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %logits = tfm.matmul %n, %wte {transpose_rhs} : (tensor<4x8x16xf32>, tensor<8x16xf32>) -> tensor<4x8x8xf32>
    %loss = tfm.cross_entropy %logits, %labels : (tensor<4x8x8xf32>, tensor<4x8xi32>) -> tensor<f32>
    %g = tfm.matmul_wgrad %n, %h1 : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<16x16xf32>
    %ss = tfm.sum_squares %g : (tensor<16x16xf32>) -> tensor<f32>
    %coef, %norm = tfm.clip_coef %ss {max_norm = 1.0 : f64} : (tensor<f32>) -> (tensor<f32>, tensor<f32>)
    %p1, %m1, %v1 = tfm.adamw %wq, %g, %m_wq, %v_wq, %lr, %step, %coef
        {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64}
        : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>, tensor<i64>, tensor<f32>)
        -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
    return %loss, %p1, %m1, %v1 : tensor<f32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
  }
}
