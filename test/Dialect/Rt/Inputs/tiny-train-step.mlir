// A tiny model after tfm-autodiff (hand-written to /work/spec/autodiff.md):
// embedding, a residual GELU-MLP block called twice, tied LM head,
// cross-entropy; train step with global-norm clipping and AdamW; eval and
// logits entries. Vocabulary 16, hidden 8, batch 2, seq 4.
module attributes {tfm.model = {name = "tiny", vocab_size = 16 : i64, padded_vocab_size = 16 : i64, batch = 2 : i64, seq_len = 4 : i64, num_layers = 2 : i64, dtype = "f32", tie_word_embeddings = true}} {
  func.func private @blk(%x: tensor<2x4x8xf32>, %layer: tensor<i64>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %h = tfm.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %a = tfm.gelu %h {tanh_approx} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %y = tfm.add %x, %a : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }

  func.func private @blk_fwd(%x: tensor<2x4x8xf32>, %layer: tensor<i64>, %w: tensor<8x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) attributes {tfm.func_kind = #tfm.func_kind<forward>} {
    %h = tfm.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %a = tfm.gelu %h {tanh_approx} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %y = tfm.add %x, %a : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %y, %h : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  }

  func.func private @blk_bwd(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %h: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>) attributes {tfm.func_kind = #tfm.func_kind<backward>} {
    %dh = tfm.gelu_grad %dy, %h {tanh_approx} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %dw = tfm.matmul_wgrad %x, %dh : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<8x8xf32>
    %dxm = tfm.matmul %dh, %w {transpose_rhs} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %dx = tfm.add %dy, %dxm : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %dx, %dw : tensor<2x4x8xf32>, tensor<8x8xf32>
  }

  func.func @train_step(
      %tokens: tensor<2x4xi32> {tfm.input = "tokens"},
      %labels: tensor<2x4xi32> {tfm.input = "labels"},
      %step: tensor<i64> {tfm.input = "step"},
      %lr: tensor<f32> {tfm.input = "lr"},
      %wte: tensor<16x8xf32> {tfm.param = "wte", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %w0: tensor<8x8xf32> {tfm.param = "layers.0.w", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %g: tensor<8xf32> {tfm.param = "ln_f.weight", tfm.init = "ones"},
      %m_wte: tensor<16x8xf32> {tfm.state = "wte.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "wte", tfm.init = "zeros"},
      %m_w0: tensor<8x8xf32> {tfm.state = "layers.0.w.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "layers.0.w", tfm.init = "zeros"},
      %m_g: tensor<8xf32> {tfm.state = "ln_f.weight.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "ln_f.weight", tfm.init = "zeros"},
      %v_wte: tensor<16x8xf32> {tfm.state = "wte.exp_avg_sq", tfm.state_kind = "opt_v", tfm.state_of = "wte", tfm.init = "zeros"},
      %v_w0: tensor<8x8xf32> {tfm.state = "layers.0.w.exp_avg_sq", tfm.state_kind = "opt_v", tfm.state_of = "layers.0.w", tfm.init = "zeros"},
      %v_g: tensor<8xf32> {tfm.state = "ln_f.weight.exp_avg_sq", tfm.state_kind = "opt_v", tfm.state_of = "ln_f.weight", tfm.init = "zeros"})
      -> (tensor<f32> {tfm.output = "loss"}, tensor<f32> {tfm.output = "grad_norm"},
          tensor<16x8xf32> {tfm.param = "wte"}, tensor<8x8xf32> {tfm.param = "layers.0.w"}, tensor<8xf32> {tfm.param = "ln_f.weight"},
          tensor<16x8xf32> {tfm.state = "wte.exp_avg"}, tensor<8x8xf32> {tfm.state = "layers.0.w.exp_avg"}, tensor<8xf32> {tfm.state = "ln_f.weight.exp_avg"},
          tensor<16x8xf32> {tfm.state = "wte.exp_avg_sq"}, tensor<8x8xf32> {tfm.state = "layers.0.w.exp_avg_sq"}, tensor<8xf32> {tfm.state = "ln_f.weight.exp_avg_sq"}) {
    %e = tfm.embedding %tokens, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %l0 = arith.constant dense<0> : tensor<i64>
    %h1, %r0 = func.call @blk_fwd(%e, %l0, %w0) : (tensor<2x4x8xf32>, tensor<i64>, tensor<8x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
    %l1 = arith.constant dense<1> : tensor<i64>
    %h2, %r1 = func.call @blk_fwd(%h1, %l1, %w0) : (tensor<2x4x8xf32>, tensor<i64>, tensor<8x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
    %n = tfm.mul %h2, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %logits = tfm.matmul %n, %wte {transpose_rhs} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = tfm.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    %seed = arith.constant dense<1.000000e+00> : tensor<f32>
    %dlogits = tfm.cross_entropy_grad %seed, %logits, %labels : (tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
    %dn = tfm.matmul %dlogits, %wte : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %dwte_head = tfm.matmul_wgrad %dlogits, %n : (tensor<2x4x16xf32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
    %dh2 = tfm.mul %dn, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %dgh = tfm.mul %dn, %h2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %dg = tfm.reduce_sum %dgh {dims = array<i64: 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8xf32>
    %dh1, %dw0b = func.call @blk_bwd(%dh2, %h1, %w0, %r1) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>)
    %de, %dw0a = func.call @blk_bwd(%dh1, %e, %w0, %r0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>)
    %dw0 = tfm.add %dw0a, %dw0b : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %dwte_emb = tfm.embedding_grad %tokens, %de {num_embeddings = 16 : i64} : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
    %dwte = tfm.add %dwte_head, %dwte_emb : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
    %ss = tfm.sum_squares %dwte, %dw0, %dg : (tensor<16x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<f32>
    %coef, %norm = tfm.clip_coef %ss {max_norm = 1.000000e+00 : f64} : (tensor<f32>) -> (tensor<f32>, tensor<f32>)
    %wte2, %m_wte2, %v_wte2 = tfm.adamw %wte, %dwte, %m_wte, %v_wte, %lr, %step, %coef {beta1 = 9.000000e-01 : f64, beta2 = 9.500000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>)
    %w02, %m_w02, %v_w02 = tfm.adamw %w0, %dw0, %m_w0, %v_w0, %lr, %step, %coef {beta1 = 9.000000e-01 : f64, beta2 = 9.500000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>)
    %g2, %m_g2, %v_g2 = tfm.adamw %g, %dg, %m_g, %v_g, %lr, %step, %coef {beta1 = 9.000000e-01 : f64, beta2 = 9.500000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    return %loss, %norm, %wte2, %w02, %g2, %m_wte2, %m_w02, %m_g2, %v_wte2, %v_w02, %v_g2 : tensor<f32>, tensor<f32>, tensor<16x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<8x8xf32>, tensor<8xf32>
  }

  func.func @eval(
      %tokens: tensor<2x4xi32> {tfm.input = "tokens"},
      %labels: tensor<2x4xi32> {tfm.input = "labels"},
      %wte: tensor<16x8xf32> {tfm.param = "wte", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %w0: tensor<8x8xf32> {tfm.param = "layers.0.w", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %g: tensor<8xf32> {tfm.param = "ln_f.weight", tfm.init = "ones"})
      -> (tensor<f32> {tfm.output = "loss"}) {
    %e = tfm.embedding %tokens, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %l0 = arith.constant dense<0> : tensor<i64>
    %h1 = func.call @blk(%e, %l0, %w0) : (tensor<2x4x8xf32>, tensor<i64>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %l1 = arith.constant dense<1> : tensor<i64>
    %h2 = func.call @blk(%h1, %l1, %w0) : (tensor<2x4x8xf32>, tensor<i64>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %n = tfm.mul %h2, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %logits = tfm.matmul %n, %wte {transpose_rhs} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = tfm.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }

  func.func @logits(
      %tokens: tensor<2x4xi32> {tfm.input = "tokens"},
      %wte: tensor<16x8xf32> {tfm.param = "wte", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %w0: tensor<8x8xf32> {tfm.param = "layers.0.w", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %g: tensor<8xf32> {tfm.param = "ln_f.weight", tfm.init = "ones"})
      -> (tensor<2x4x16xf32> {tfm.output = "logits"}) {
    %e = tfm.embedding %tokens, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %l0 = arith.constant dense<0> : tensor<i64>
    %h1 = func.call @blk(%e, %l0, %w0) : (tensor<2x4x8xf32>, tensor<i64>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %l1 = arith.constant dense<1> : tensor<i64>
    %h2 = func.call @blk(%h1, %l1, %w0) : (tensor<2x4x8xf32>, tensor<i64>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %n = tfm.mul %h2, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %logits = tfm.matmul %n, %wte {transpose_rhs} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    return %logits : tensor<2x4x16xf32>
  }
}
