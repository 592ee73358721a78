// A two-layer GPT-2 (hidden 16, 2 heads, vocab 16) in the form the model
// builder emits (block function, train entry points, role / param
// attributes), checked in so that pass and pipeline tests (dist-auto-plan,
// autoshard-train) run without the builder. 4560 parameters; batch 4, seq 8,
// f32.
module attributes {tfm.model = {name = "tiny-gpt2", model_type = "gpt2", num_layers = 2 : i64, hidden_size = 16 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, ffn_hidden_size = 32 : i64, vocab_size = 16 : i64, padded_vocab_size = 16 : i64, max_positions = 8 : i64, batch = 4 : i64, seq_len = 8 : i64, dtype = "f32", num_parameters = 4560 : i64, tie_word_embeddings = true}} {
  func.func private @gpt2_block(
      %x: tensor<4x8x16xf32> {tfm.role = "hidden"},
      %layer: tensor<i64> {tfm.role = "layer_index"},
      %ln_1_weight: tensor<16xf32> {tfm.name = "ln_1.weight", tfm.role = "norm"},
      %attn_wq: tensor<16x16xf32> {tfm.name = "attn.wq", tfm.role = "attn_q"},
      %attn_wk: tensor<16x16xf32> {tfm.name = "attn.wk", tfm.role = "attn_k"},
      %attn_wv: tensor<16x16xf32> {tfm.name = "attn.wv", tfm.role = "attn_v"},
      %attn_wo: tensor<16x16xf32> {tfm.name = "attn.wo", tfm.role = "attn_out"},
      %ln_2_weight: tensor<16xf32> {tfm.name = "ln_2.weight", tfm.role = "norm"},
      %mlp_w_fc: tensor<16x32xf32> {tfm.name = "mlp.w_fc", tfm.role = "mlp_up"},
      %mlp_w_proj: tensor<32x16xf32> {tfm.name = "mlp.w_proj", tfm.role = "mlp_down"})
      -> tensor<4x8x16xf32> {
    %attn_in = tfm.layer_norm %x, %ln_1_weight {epsilon = 1.000000e-05 : f64} : (tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %q = tfm.matmul %attn_in, %attn_wq : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %k = tfm.matmul %attn_in, %attn_wk : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %v = tfm.matmul %attn_in, %attn_wv : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %q4 = tfm.reshape %q : (tensor<4x8x16xf32>) -> tensor<4x8x2x8xf32>
    %k4 = tfm.reshape %k : (tensor<4x8x16xf32>) -> tensor<4x8x2x8xf32>
    %v4 = tfm.reshape %v : (tensor<4x8x16xf32>) -> tensor<4x8x2x8xf32>
    %attn, %attn_lse = tfm.attention %q4, %k4, %v4 {causal, scale = 0.35355339059327373 : f64} : (tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>) -> (tensor<4x8x2x8xf32>, tensor<4x2x8xf32>)
    %attn_flat = tfm.reshape %attn : (tensor<4x8x2x8xf32>) -> tensor<4x8x16xf32>
    %attn_out = tfm.matmul %attn_flat, %attn_wo : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %resid_attn = tfm.add %x, %attn_out : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %mlp_in = tfm.layer_norm %resid_attn, %ln_2_weight {epsilon = 1.000000e-05 : f64} : (tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %fc = tfm.matmul %mlp_in, %mlp_w_fc : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
    %act = tfm.gelu %fc : (tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
    %mlp_out = tfm.matmul %act, %mlp_w_proj : (tensor<4x8x32xf32>, tensor<32x16xf32>) -> tensor<4x8x16xf32>
    %resid_mlp = tfm.add %resid_attn, %mlp_out : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    return %resid_mlp : tensor<4x8x16xf32>
  }

  func.func @forward(
      %ids: tensor<4x8xi32> {tfm.input = "tokens"},
      %labels: tensor<4x8xi32> {tfm.input = "labels"},
      %wte: tensor<16x16xf32> {tfm.param = "wte", tfm.role = "embedding", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %wpe: tensor<8x16xf32> {tfm.param = "wpe", tfm.role = "pos_embedding", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %layers_0_ln_1_weight: tensor<16xf32> {tfm.param = "layers.0.ln_1.weight", tfm.role = "norm", tfm.init = "ones"},
      %layers_0_attn_wq: tensor<16x16xf32> {tfm.param = "layers.0.attn.wq", tfm.role = "attn_q", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %layers_0_attn_wk: tensor<16x16xf32> {tfm.param = "layers.0.attn.wk", tfm.role = "attn_k", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %layers_0_attn_wv: tensor<16x16xf32> {tfm.param = "layers.0.attn.wv", tfm.role = "attn_v", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %layers_0_attn_wo: tensor<16x16xf32> {tfm.param = "layers.0.attn.wo", tfm.role = "attn_out", tfm.init = "normal", tfm.init_std = 1.000000e-02 : f64},
      %layers_0_ln_2_weight: tensor<16xf32> {tfm.param = "layers.0.ln_2.weight", tfm.role = "norm", tfm.init = "ones"},
      %layers_0_mlp_w_fc: tensor<16x32xf32> {tfm.param = "layers.0.mlp.w_fc", tfm.role = "mlp_up", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %layers_0_mlp_w_proj: tensor<32x16xf32> {tfm.param = "layers.0.mlp.w_proj", tfm.role = "mlp_down", tfm.init = "normal", tfm.init_std = 1.000000e-02 : f64},
      %layers_1_ln_1_weight: tensor<16xf32> {tfm.param = "layers.1.ln_1.weight", tfm.role = "norm", tfm.init = "ones"},
      %layers_1_attn_wq: tensor<16x16xf32> {tfm.param = "layers.1.attn.wq", tfm.role = "attn_q", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %layers_1_attn_wk: tensor<16x16xf32> {tfm.param = "layers.1.attn.wk", tfm.role = "attn_k", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %layers_1_attn_wv: tensor<16x16xf32> {tfm.param = "layers.1.attn.wv", tfm.role = "attn_v", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %layers_1_attn_wo: tensor<16x16xf32> {tfm.param = "layers.1.attn.wo", tfm.role = "attn_out", tfm.init = "normal", tfm.init_std = 1.000000e-02 : f64},
      %layers_1_ln_2_weight: tensor<16xf32> {tfm.param = "layers.1.ln_2.weight", tfm.role = "norm", tfm.init = "ones"},
      %layers_1_mlp_w_fc: tensor<16x32xf32> {tfm.param = "layers.1.mlp.w_fc", tfm.role = "mlp_up", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %layers_1_mlp_w_proj: tensor<32x16xf32> {tfm.param = "layers.1.mlp.w_proj", tfm.role = "mlp_down", tfm.init = "normal", tfm.init_std = 1.000000e-02 : f64},
      %ln_f_weight: tensor<16xf32> {tfm.param = "ln_f.weight", tfm.role = "norm", tfm.init = "ones"})
      -> tensor<f32> {
    %tok_emb = tfm.embedding %ids, %wte : (tensor<4x8xi32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %pos_emb = tfm.position_embedding %wpe {seq_len = 8 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %emb = tfm.add %tok_emb, %pos_emb : (tensor<4x8x16xf32>, tensor<8x16xf32>) -> tensor<4x8x16xf32>
    %layer0 = arith.constant dense<0> : tensor<i64>
    %h1 = func.call @gpt2_block(%emb, %layer0, %layers_0_ln_1_weight, %layers_0_attn_wq, %layers_0_attn_wk, %layers_0_attn_wv, %layers_0_attn_wo, %layers_0_ln_2_weight, %layers_0_mlp_w_fc, %layers_0_mlp_w_proj) : (tensor<4x8x16xf32>, tensor<i64>, tensor<16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x32xf32>, tensor<32x16xf32>) -> tensor<4x8x16xf32>
    %layer1 = arith.constant dense<1> : tensor<i64>
    %h2 = func.call @gpt2_block(%h1, %layer1, %layers_1_ln_1_weight, %layers_1_attn_wq, %layers_1_attn_wk, %layers_1_attn_wv, %layers_1_attn_wo, %layers_1_ln_2_weight, %layers_1_mlp_w_fc, %layers_1_mlp_w_proj) : (tensor<4x8x16xf32>, tensor<i64>, tensor<16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x32xf32>, tensor<32x16xf32>) -> tensor<4x8x16xf32>
    %final_norm = tfm.layer_norm %h2, %ln_f_weight {epsilon = 1.000000e-05 : f64} : (tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %logits = tfm.matmul %final_norm, %wte {transpose_rhs} : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %ce_loss = tfm.cross_entropy %logits, %labels : (tensor<4x8x16xf32>, tensor<4x8xi32>) -> tensor<f32>
    return %ce_loss : tensor<f32>
  }
}
