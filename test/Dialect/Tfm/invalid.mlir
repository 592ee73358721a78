// RUN: shard-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule; each checks the rule's message and the value found.

func.func @matmul_element_types(%a: tensor<4x8xf32>, %b: tensor<8x2xbf16>) {
  // expected-error @+1 {{operand element types must match, found 'f32' and 'bf16'}}
  %0 = tfm.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xbf16>) -> tensor<4x2xf32>
  return
}

// -----

func.func @matmul_lhs_rank(%a: tensor<8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{lhs must have rank >= 2, found rank 1}}
  %0 = tfm.matmul %a, %b : (tensor<8xf32>, tensor<8x2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @matmul_rhs_rank(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{rhs must have rank >= 2, found rank 1}}
  %0 = tfm.matmul %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_rhs_rank_batch(%a: tensor<2x3x4x8xf32>, %b: tensor<3x8x2xf32>) {
  // expected-error @+1 {{rhs must be rank 2 or have lhs's rank 4, found rank 3}}
  %0 = tfm.matmul %a, %b : (tensor<2x3x4x8xf32>, tensor<3x8x2xf32>) -> tensor<2x3x4x2xf32>
  return
}

// -----

func.func @matmul_batch_dims(%a: tensor<3x4x8xf32>, %b: tensor<2x8x2xf32>) {
  // expected-error @+1 {{batch dims must match: lhs [3], rhs [2]}}
  %0 = tfm.matmul %a, %b : (tensor<3x4x8xf32>, tensor<2x8x2xf32>) -> tensor<3x4x2xf32>
  return
}

// -----

func.func @matmul_contracting(%a: tensor<4x8xf32>, %b: tensor<9x2xf32>) {
  // expected-error @+1 {{contracting dims must match: lhs K = 8, rhs K = 9}}
  %0 = tfm.matmul %a, %b : (tensor<4x8xf32>, tensor<9x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @matmul_contracting_transposed(%a: tensor<4x8xf32>, %b: tensor<2x8xf32>) {
  // expected-error @+1 {{contracting dims must match: lhs K = 4, rhs K = 8}}
  %0 = tfm.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<8x2xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{result type must be 'tensor<4x2xf32>' (inferred from operands), found 'tensor<2x4xf32>'}}
  %0 = tfm.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @wgrad_element_types(%x: tensor<4x8xf32>, %dy: tensor<4x2xf16>) {
  // expected-error @+1 {{operand element types must match, found 'f32' and 'f16'}}
  %0 = tfm.matmul_wgrad %x, %dy : (tensor<4x8xf32>, tensor<4x2xf16>) -> tensor<8x2xf32>
  return
}

// -----

func.func @wgrad_x_rank(%x: tensor<8xf32>, %dy: tensor<4x2xf32>) {
  // expected-error @+1 {{x must have rank >= 2, found rank 1}}
  %0 = tfm.matmul_wgrad %x, %dy : (tensor<8xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  return
}

// -----

func.func @wgrad_dy_rank(%x: tensor<4x8xf32>, %dy: tensor<2xf32>) {
  // expected-error @+1 {{dy must have rank >= 2, found rank 1}}
  %0 = tfm.matmul_wgrad %x, %dy : (tensor<4x8xf32>, tensor<2xf32>) -> tensor<8x2xf32>
  return
}

// -----

func.func @wgrad_leading(%x: tensor<4x5x8xf32>, %dy: tensor<4x6x2xf32>) {
  // expected-error @+1 {{leading dims of x [4, 5, 8] and dy [4, 6, 2] must match}}
  %0 = tfm.matmul_wgrad %x, %dy : (tensor<4x5x8xf32>, tensor<4x6x2xf32>) -> tensor<8x2xf32>
  return
}

// -----

func.func @wgrad_result(%x: tensor<4x5x8xf32>, %dy: tensor<4x5x2xf32>) {
  // expected-error @+1 {{dw type must be 'tensor<8x2xf32>' (inferred from operands), found 'tensor<2x8xf32>'}}
  %0 = tfm.matmul_wgrad %x, %dy : (tensor<4x5x8xf32>, tensor<4x5x2xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @add_element_types(%a: tensor<4x8x16xf32>, %b: tensor<16xbf16>) {
  // expected-error @+1 {{operand element types must match, found 'f32' and 'bf16'}}
  %0 = tfm.add %a, %b : (tensor<4x8x16xf32>, tensor<16xbf16>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @sub_suffix(%a: tensor<4x8x16xf32>, %b: tensor<4x16xf32>) {
  // expected-error @+1 {{rhs shape must be a suffix of lhs shape [4, 8, 16], found [4, 16]}}
  %0 = tfm.sub %a, %b : (tensor<4x8x16xf32>, tensor<4x16xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @mul_rhs_rank(%a: tensor<8x16xf32>, %b: tensor<4x8x16xf32>) {
  // expected-error @+1 {{rhs shape must be a suffix of lhs shape [8, 16], found [4, 8, 16]}}
  %0 = tfm.mul %a, %b : (tensor<8x16xf32>, tensor<4x8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @add_result(%a: tensor<4x8x16xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{result type must be 'tensor<4x8x16xf32>' (inferred from operands), found 'tensor<4x8x16xbf16>'}}
  %0 = tfm.add %a, %b : (tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<4x8x16xbf16>
  return
}

// -----

func.func @scale_result(%a: tensor<4x8x16xf32>) {
  // expected-error @+1 {{result type must be 'tensor<4x8x16xf32>' (inferred from operands), found 'tensor<4x8xf32>'}}
  %0 = tfm.scale %a {factor = 2.0 : f64} : (tensor<4x8x16xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_sum_range(%a: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dims must be in [0, 3), found 3}}
  %0 = tfm.reduce_sum %a {dims = array<i64: 0, 3>} : (tensor<4x8x16xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @reduce_sum_negative(%a: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dims must be in [0, 3), found -1}}
  %0 = tfm.reduce_sum %a {dims = array<i64: -1>} : (tensor<4x8x16xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_sum_sorted(%a: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dims must be sorted and unique, found [1, 0]}}
  %0 = tfm.reduce_sum %a {dims = array<i64: 1, 0>} : (tensor<4x8x16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @broadcast_range(%a: tensor<8xf32>) {
  // expected-error @+1 {{dims must be in [0, 2), found 2}}
  %0 = tfm.broadcast %a {dims = array<i64: 2>} : (tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_sorted(%a: tensor<16xf32>) {
  // expected-error @+1 {{dims must be sorted and unique, found [1, 0]}}
  %0 = tfm.broadcast %a {dims = array<i64: 1, 0>} : (tensor<16xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @broadcast_shape(%a: tensor<8xf32>) {
  // expected-error @+1 {{x must be 'tensor<16xf32>' (result type without dims [0, 1]), found 'tensor<8xf32>'}}
  %0 = tfm.broadcast %a {dims = array<i64: 0, 1>} : (tensor<8xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @broadcast_element_type(%a: tensor<16xbf16>) {
  // expected-error @+1 {{x must be 'tensor<16xf32>' (result type without dims [0]), found 'tensor<16xbf16>'}}
  %0 = tfm.broadcast %a {dims = array<i64: 0>} : (tensor<16xbf16>) -> tensor<4x16xf32>
  return
}

// -----

func.func @reduce_sum_unique(%a: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dims must be sorted and unique, found [0, 0]}}
  %0 = tfm.reduce_sum %a {dims = array<i64: 0, 0>} : (tensor<4x8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @reduce_sum_result(%a: tensor<4x8x16xf32>) {
  // expected-error @+1 {{result type must be 'tensor<16xf32>' (inferred from operands), found 'tensor<4x16xf32>'}}
  %0 = tfm.reduce_sum %a {dims = array<i64: 0, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @embedding_table_rank(%ids: tensor<4x8xi32>, %t: tensor<2x65x16xf32>) {
  // expected-error @+1 {{table must have rank 2 [V, H], found rank 3}}
  %0 = tfm.embedding %ids, %t : (tensor<4x8xi32>, tensor<2x65x16xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @embedding_result(%ids: tensor<4x8xi32>, %t: tensor<65x16xf32>) {
  // expected-error @+1 {{out type must be 'tensor<4x8x16xf32>' (inferred from operands), found 'tensor<4x8x65xf32>'}}
  %0 = tfm.embedding %ids, %t : (tensor<4x8xi32>, tensor<65x16xf32>) -> tensor<4x8x65xf32>
  return
}

// -----

func.func @embedding_grad_num_embeddings(%ids: tensor<4x8xi32>, %dy: tensor<4x8x16xf32>) {
  // expected-error @+1 {{num_embeddings must be >= 1, found 0}}
  %0 = tfm.embedding_grad %ids, %dy {num_embeddings = 0 : i64} : (tensor<4x8xi32>, tensor<4x8x16xf32>) -> tensor<0x16xf32>
  return
}

// -----

func.func @embedding_grad_dy_rank(%ids: tensor<4x8xi32>, %dy: tensor<32x16xf32>) {
  // expected-error @+1 {{dy must have rank 3 (rank of ids + 1), found rank 2}}
  %0 = tfm.embedding_grad %ids, %dy {num_embeddings = 65 : i64} : (tensor<4x8xi32>, tensor<32x16xf32>) -> tensor<65x16xf32>
  return
}

// -----

func.func @embedding_grad_dy_leading(%ids: tensor<4x8xi32>, %dy: tensor<4x9x16xf32>) {
  // expected-error @+1 {{dy leading dims [4, 9] must match ids shape [4, 8]}}
  %0 = tfm.embedding_grad %ids, %dy {num_embeddings = 65 : i64} : (tensor<4x8xi32>, tensor<4x9x16xf32>) -> tensor<65x16xf32>
  return
}

// -----

func.func @embedding_grad_result(%ids: tensor<4x8xi32>, %dy: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dtable type must be 'tensor<65x16xf32>' (inferred from operands), found 'tensor<64x16xf32>'}}
  %0 = tfm.embedding_grad %ids, %dy {num_embeddings = 65 : i64} : (tensor<4x8xi32>, tensor<4x8x16xf32>) -> tensor<64x16xf32>
  return
}

// -----

func.func @microbatch_index(%ids: tensor<16x64xi32>) {
  // expected-error @+1 {{index must be in [0, 4), found 4}}
  %0 = tfm.microbatch %ids {index = 4 : i64, count = 4 : i64} : (tensor<16x64xi32>) -> tensor<4x64xi32>
  return
}

// -----

func.func @microbatch_count(%ids: tensor<16x64xi32>) {
  // expected-error @+1 {{the batch dim of x (16) is not divisible by count = 3}}
  %0 = tfm.microbatch %ids {index = 0 : i64, count = 3 : i64} : (tensor<16x64xi32>) -> tensor<5x64xi32>
  return
}

// -----

func.func @microbatch_result(%ids: tensor<16x64xi32>) {
  // expected-error @+1 {{}}
  %0 = tfm.microbatch %ids {index = 0 : i64, count = 2 : i64} : (tensor<16x64xi32>) -> tensor<4x64xi32>
  return
}

// -----

func.func @position_embedding_table_rank(%t: tensor<64xf32>) {
  // expected-error @+1 {{table must have rank 2 [P, H], found rank 1}}
  %0 = tfm.position_embedding %t {seq_len = 8 : i64} : (tensor<64xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @position_embedding_seq_len_zero(%t: tensor<64x16xf32>) {
  // expected-error @+1 {{seq_len must be in [1, 64] (rows of table), found 0}}
  %0 = tfm.position_embedding %t {seq_len = 0 : i64} : (tensor<64x16xf32>) -> tensor<0x16xf32>
  return
}

// -----

func.func @position_embedding_seq_len_too_long(%t: tensor<64x16xf32>) {
  // expected-error @+1 {{seq_len must be in [1, 64] (rows of table), found 65}}
  %0 = tfm.position_embedding %t {seq_len = 65 : i64} : (tensor<64x16xf32>) -> tensor<65x16xf32>
  return
}

// -----

func.func @position_embedding_grad_num_positions(%dy: tensor<4x8x16xf32>) {
  // expected-error @+1 {{num_positions must be >= 1, found -1}}
  %0 = tfm.position_embedding_grad %dy {num_positions = -1 : i64} : (tensor<4x8x16xf32>) -> tensor<64x16xf32>
  return
}

// -----

func.func @position_embedding_grad_rank(%dy: tensor<16xf32>) {
  // expected-error @+1 {{dy must have rank >= 2, found rank 1}}
  %0 = tfm.position_embedding_grad %dy {num_positions = 64 : i64} : (tensor<16xf32>) -> tensor<64x16xf32>
  return
}

// -----

func.func @position_embedding_grad_seq_len(%dy: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dy sequence length (8) must be <= num_positions (7)}}
  %0 = tfm.position_embedding_grad %dy {num_positions = 7 : i64} : (tensor<4x8x16xf32>) -> tensor<7x16xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<4x8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{epsilon must be > 0, found 0.000000e+00}}
  %0 = tfm.layer_norm %x, %g {epsilon = 0.0 : f64} : (tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @layer_norm_x_rank(%x: tensor<f32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{x must have rank >= 1, found rank 0}}
  %0 = tfm.layer_norm %x, %g {epsilon = 1.0e-05 : f64} : (tensor<f32>, tensor<16xf32>) -> tensor<f32>
  return
}

// -----

func.func @layer_norm_gamma(%x: tensor<4x8x16xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{gamma must be 'tensor<16xf32>' (last dim of x), found 'tensor<8xf32>'}}
  %0 = tfm.layer_norm %x, %g {epsilon = 1.0e-05 : f64} : (tensor<4x8x16xf32>, tensor<8xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @layer_norm_beta(%x: tensor<4x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xbf16>) {
  // expected-error @+1 {{beta must be 'tensor<16xf32>' (last dim of x), found 'tensor<16xbf16>'}}
  %0 = tfm.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xbf16>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @layer_norm_grad_dy(%dy: tensor<4x8x8xf32>, %x: tensor<4x8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{dy must be 'tensor<4x8x16xf32>' (type of x), found 'tensor<4x8x8xf32>'}}
  %0:3 = tfm.layer_norm_grad %dy, %x, %g {epsilon = 1.0e-05 : f64} : (tensor<4x8x8xf32>, tensor<4x8x16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @layer_norm_grad_dbeta(%dy: tensor<4x8x16xf32>, %x: tensor<4x8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{dbeta type must be 'tensor<16xf32>' (inferred from operands), found 'tensor<8xf32>'}}
  %0:3 = tfm.layer_norm_grad %dy, %x, %g {epsilon = 1.0e-05 : f64} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_gamma_element_type(%x: tensor<4x8x16xf32>, %g: tensor<16xbf16>) {
  // expected-error @+1 {{gamma must be 'tensor<16xf32>' (last dim of x), found 'tensor<16xbf16>'}}
  %0 = tfm.rms_norm %x, %g {epsilon = 1.0e-05 : f64} : (tensor<4x8x16xf32>, tensor<16xbf16>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @rms_norm_grad_epsilon(%dy: tensor<4x8x16xf32>, %x: tensor<4x8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{epsilon must be > 0, found -1.000000e+00}}
  %0:2 = tfm.rms_norm_grad %dy, %x, %g {epsilon = -1.0 : f64} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @rms_norm_grad_dgamma(%dy: tensor<4x8x16xf32>, %x: tensor<4x8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{dgamma type must be 'tensor<16xf32>' (inferred from operands), found 'tensor<4x8x16xf32>'}}
  %0:2 = tfm.rms_norm_grad %dy, %x, %g {epsilon = 1.0e-05 : f64} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>)
  return
}

// -----

func.func @gelu_result(%x: tensor<4x8x16xf32>) {
  // expected-error @+1 {{y type must be 'tensor<4x8x16xf32>' (inferred from operands), found 'tensor<4x8x16xbf16>'}}
  %0 = tfm.gelu %x : (tensor<4x8x16xf32>) -> tensor<4x8x16xbf16>
  return
}

// -----

func.func @gelu_grad_dy(%dy: tensor<4x8x16xbf16>, %x: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dy must be 'tensor<4x8x16xf32>' (type of x), found 'tensor<4x8x16xbf16>'}}
  %0 = tfm.gelu_grad %dy, %x {tanh_approx} : (tensor<4x8x16xbf16>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @silu_result(%x: tensor<4x8x16xf32>) {
  // expected-error @+1 {{y type must be 'tensor<4x8x16xf32>' (inferred from operands), found 'tensor<4x8xf32>'}}
  %0 = tfm.silu %x : (tensor<4x8x16xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @silu_grad_dy(%dy: tensor<4x8xf32>, %x: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dy must be 'tensor<4x8x16xf32>' (type of x), found 'tensor<4x8xf32>'}}
  %0 = tfm.silu_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @swiglu_up(%gate: tensor<4x8x16xf32>, %up: tensor<4x8x32xf32>) {
  // expected-error @+1 {{up must be 'tensor<4x8x16xf32>' (type of gate), found 'tensor<4x8x32xf32>'}}
  %0 = tfm.swiglu %gate, %up : (tensor<4x8x16xf32>, tensor<4x8x32xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @swiglu_grad_dy(%dy: tensor<4x8x16xbf16>, %gate: tensor<4x8x16xf32>, %up: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dy must be 'tensor<4x8x16xf32>' (type of gate), found 'tensor<4x8x16xbf16>'}}
  %0:2 = tfm.swiglu_grad %dy, %gate, %up : (tensor<4x8x16xbf16>, tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>)
  return
}

// -----

func.func @swiglu_grad_dup(%dy: tensor<4x8x16xf32>, %gate: tensor<4x8x16xf32>, %up: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dup type must be 'tensor<4x8x16xf32>' (inferred from operands), found 'tensor<4x8x16xbf16>'}}
  %0:2 = tfm.swiglu_grad %dy, %gate, %up : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xbf16>)
  return
}

// -----

func.func @rope_theta(%x: tensor<2x8x4x16xf32>) {
  // expected-error @+1 {{theta must be > 0, found 0.000000e+00}}
  %0 = tfm.rope %x {theta = 0.0 : f64} : (tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  return
}

// -----

func.func @rope_rank(%x: tensor<4x8x16xf32>) {
  // expected-error @+1 {{x must have rank 4 [B, S, N, D], found rank 3}}
  %0 = tfm.rope %x {theta = 1.0e+04 : f64} : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @rope_odd_head_dim(%x: tensor<2x8x4x15xf32>) {
  // expected-error @+1 {{head dim D must be even, found 15}}
  %0 = tfm.rope %x {theta = 1.0e+04 : f64} : (tensor<2x8x4x15xf32>) -> tensor<2x8x4x15xf32>
  return
}

// -----

func.func @rope_grad_rank(%dy: tensor<4x8x16xf32>) {
  // expected-error @+1 {{dy must have rank 4 [B, S, N, D], found rank 3}}
  %0 = tfm.rope_grad %dy {theta = 1.0e+04 : f64} : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @rope_grad_result(%dy: tensor<2x8x4x16xf32>) {
  // expected-error @+1 {{dx type must be 'tensor<2x8x4x16xf32>' (inferred from operands), found 'tensor<2x8x64xf32>'}}
  %0 = tfm.rope_grad %dy {theta = 1.0e+04 : f64} : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{shape must be preserved: x has shape [4, 8], result has shape [8, 4]}}
  %0 = tfm.cast %x : (tensor<4x8xf32>) -> tensor<8x4xbf16>
  return
}

// -----

func.func @cast_integer(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tfm.cast %x : (tensor<4x8xi32>) -> tensor<4x8xbf16>
  return
}

// -----

func.func @cast_to_integer(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of floating-point values}}
  %0 = tfm.cast %x : (tensor<4x8xf32>) -> tensor<4x8xi32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<4x8x16xf32>) {
  // expected-error @+1 {{element type must be preserved: x has 'f32', y has 'bf16'}}
  %0 = tfm.reshape %x : (tensor<4x8x16xf32>) -> tensor<32x16xbf16>
  return
}

// -----

func.func @reshape_element_count(%x: tensor<4x8x16xf32>) {
  // expected-error @+1 {{element count must be preserved: x has 512 elements, y has 640}}
  %0 = tfm.reshape %x : (tensor<4x8x16xf32>) -> tensor<4x8x4x5xf32>
  return
}

// -----

func.func @dropout_rate_one(%x: tensor<4x8x16xf32>, %s: tensor<i64>, %l: tensor<i64>) {
  // expected-error @+1 {{rate must be in [0, 1), found 1.000000e+00}}
  %0 = tfm.dropout %x, %s, %l {rate = 1.0 : f64, site = 0 : i64} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @dropout_rate_negative(%x: tensor<4x8x16xf32>, %s: tensor<i64>, %l: tensor<i64>) {
  // expected-error @+1 {{rate must be in [0, 1), found -5.000000e-01}}
  %0 = tfm.dropout %x, %s, %l {rate = -0.5 : f64, site = 0 : i64} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @dropout_site(%x: tensor<4x8x16xf32>, %s: tensor<i64>, %l: tensor<i64>) {
  // expected-error @+1 {{site must be >= 0, found -1}}
  %0 = tfm.dropout %x, %s, %l {rate = 0.1 : f64, site = -1 : i64} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @dropout_grad_rate(%dy: tensor<4x8x16xf32>, %s: tensor<i64>, %l: tensor<i64>) {
  // expected-error @+1 {{rate must be in [0, 1), found 2.000000e+00}}
  %0 = tfm.dropout_grad %dy, %s, %l {rate = 2.0 : f64, site = 1 : i64} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @dropout_step_type(%x: tensor<4x8x16xf32>, %s: tensor<i32>, %l: tensor<i64>) {
  // expected-error @+1 {{operand #1 must be 0D tensor of 64-bit signless integer values, but got 'tensor<i32>'}}
  %0 = tfm.dropout %x, %s, %l {rate = 0.1 : f64, site = 0 : i64} : (tensor<4x8x16xf32>, tensor<i32>, tensor<i64>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x16xf32>) {
  // expected-error @+1 {{scale must be > 0, found 0.000000e+00}}
  %0:2 = tfm.attention %q, %k, %v {scale = 0.0 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_q_rank(%q: tensor<4x8x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x16xf32>) {
  // expected-error @+1 {{q must have rank 4 [B, Sq, N, D], found rank 3}}
  %0:2 = tfm.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<4x8x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> (tensor<4x8x16xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_k_rank(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x32xf32>, %v: tensor<2x8x32xf32>) {
  // expected-error @+1 {{k must have rank 4 [B, Sk, G, D], found rank 3}}
  %0:2 = tfm.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_v_type(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x8xf32>) {
  // expected-error @+1 {{v must be 'tensor<2x8x2x16xf32>' (type of k), found 'tensor<2x8x2x8xf32>'}}
  %0:2 = tfm.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x8xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_element_types(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xbf16>, %v: tensor<2x8x2x16xbf16>) {
  // expected-error @+1 {{operand element types must match, found 'f32' and 'bf16'}}
  %0:2 = tfm.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_batch(%q: tensor<4x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x16xf32>) {
  // expected-error @+1 {{q batch (4) must match k batch (2)}}
  %0:2 = tfm.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<4x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>)
  return
}

// -----

func.func @attention_head_dim(%q: tensor<2x8x4x32xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x16xf32>) {
  // expected-error @+1 {{q head dim (32) must match k head dim (16)}}
  %0:2 = tfm.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<2x8x4x32xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> (tensor<2x8x4x32xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_gqa(%q: tensor<2x8x6x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>) {
  // expected-error @+1 {{q heads (6) must be a multiple of kv heads (4)}}
  %0:2 = tfm.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<2x8x6x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x6x16xf32>, tensor<2x6x8xf32>)
  return
}

// -----

func.func @attention_causal(%q: tensor<2x8x4x16xf32>, %k: tensor<2x16x2x16xf32>, %v: tensor<2x16x2x16xf32>) {
  // expected-error @+1 {{causal attention requires Sq == Sk, found Sq = 8, Sk = 16}}
  %0:2 = tfm.attention %q, %k, %v {causal, scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_lse(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x16xf32>) {
  // expected-error @+1 {{lse type must be 'tensor<2x4x8xf32>' (inferred from operands), found 'tensor<2x8x4xf32>'}}
  %0:2 = tfm.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4xf32>)
  return
}

// -----

func.func @attention_grad_dout(%dout: tensor<2x8x4x16xbf16>, %q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x16xf32>, %out: tensor<2x8x4x16xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{dout must be 'tensor<2x8x4x16xf32>' (type of q), found 'tensor<2x8x4x16xbf16>'}}
  %0:3 = tfm.attention_grad %dout, %q, %k, %v, %out, %lse {causal, scale = 0.25 : f64} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>)
  return
}

// -----

func.func @attention_grad_out(%dout: tensor<2x8x4x16xf32>, %q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x16xf32>, %out: tensor<2x8x4x8xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{out must be 'tensor<2x8x4x16xf32>' (type of q), found 'tensor<2x8x4x8xf32>'}}
  %0:3 = tfm.attention_grad %dout, %q, %k, %v, %out, %lse {causal, scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>)
  return
}

// -----

func.func @attention_grad_lse(%dout: tensor<2x8x4x16xf32>, %q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x16xf32>, %out: tensor<2x8x4x16xf32>, %lse: tensor<2x4x8xbf16>) {
  // expected-error @+1 {{lse must be 'tensor<2x4x8xf32>' ([B, N, Sq] f32), found 'tensor<2x4x8xbf16>'}}
  %0:3 = tfm.attention_grad %dout, %q, %k, %v, %out, %lse {causal, scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xbf16>) -> (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>)
  return
}

// -----

func.func @attention_grad_causal(%dout: tensor<2x8x4x16xf32>, %q: tensor<2x8x4x16xf32>, %k: tensor<2x4x2x16xf32>, %v: tensor<2x4x2x16xf32>, %out: tensor<2x8x4x16xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{causal attention requires Sq == Sk, found Sq = 8, Sk = 4}}
  %0:3 = tfm.attention_grad %dout, %q, %k, %v, %out, %lse {causal, scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>)
  return
}

// -----

func.func @cross_entropy_rank(%l: tensor<32x72xf32>, %y: tensor<4x8xi64>) {
  // expected-error @+1 {{logits must have rank 3 (rank of labels + 1), found rank 2}}
  %0 = tfm.cross_entropy %l, %y : (tensor<32x72xf32>, tensor<4x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_leading(%l: tensor<8x4x72xf32>, %y: tensor<4x8xi64>) {
  // expected-error @+1 {{logits leading dims [8, 4] must match labels shape [4, 8]}}
  %0 = tfm.cross_entropy %l, %y : (tensor<8x4x72xf32>, tensor<4x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_vocab_zero(%l: tensor<4x8x72xf32>, %y: tensor<4x8xi64>) {
  // expected-error @+1 {{vocab_size must be in [1, 72] (classes in logits), found 0}}
  %0 = tfm.cross_entropy %l, %y {vocab_size = 0 : i64} : (tensor<4x8x72xf32>, tensor<4x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_vocab_too_big(%l: tensor<4x8x72xf32>, %y: tensor<4x8xi64>) {
  // expected-error @+1 {{vocab_size must be in [1, 72] (classes in logits), found 73}}
  %0 = tfm.cross_entropy %l, %y {vocab_size = 73 : i64} : (tensor<4x8x72xf32>, tensor<4x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_loss_type(%l: tensor<4x8x72xf32>, %y: tensor<4x8xi64>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values, but got 'tensor<f64>'}}
  %0 = tfm.cross_entropy %l, %y : (tensor<4x8x72xf32>, tensor<4x8xi64>) -> tensor<f64>
  return
}

// -----

func.func @cross_entropy_grad_vocab(%d: tensor<f32>, %l: tensor<4x8x72xf32>, %y: tensor<4x8xi64>) {
  // expected-error @+1 {{vocab_size must be in [1, 72] (classes in logits), found 100}}
  %0 = tfm.cross_entropy_grad %d, %l, %y {vocab_size = 100 : i64} : (tensor<f32>, tensor<4x8x72xf32>, tensor<4x8xi64>) -> tensor<4x8x72xf32>
  return
}

// -----

func.func @cross_entropy_grad_result(%d: tensor<f32>, %l: tensor<4x8x72xf32>, %y: tensor<4x8xi64>) {
  // expected-error @+1 {{dlogits type must be 'tensor<4x8x72xf32>' (inferred from operands), found 'tensor<4x8x65xf32>'}}
  %0 = tfm.cross_entropy_grad %d, %l, %y : (tensor<f32>, tensor<4x8x72xf32>, tensor<4x8xi64>) -> tensor<4x8x65xf32>
  return
}

// -----

func.func @moe_router_rank(%l: tensor<32x6xf32>) {
  // expected-error @+1 {{logits must have rank 3 [B, S, E], found rank 2}}
  %0:2 = tfm.moe_router %l {top_k = 2 : i64} : (tensor<32x6xf32>) -> (tensor<32x2xf32>, tensor<32x2xi32>)
  return
}

// -----

func.func @moe_router_top_k_zero(%l: tensor<4x8x6xf32>) {
  // expected-error @+1 {{top_k must be in [1, 6] (number of experts), found 0}}
  %0:2 = tfm.moe_router %l {top_k = 0 : i64} : (tensor<4x8x6xf32>) -> (tensor<4x8x0xf32>, tensor<4x8x0xi32>)
  return
}

// -----

func.func @moe_router_top_k_too_big(%l: tensor<4x8x6xf32>) {
  // expected-error @+1 {{top_k must be in [1, 6] (number of experts), found 7}}
  %0:2 = tfm.moe_router %l {top_k = 7 : i64} : (tensor<4x8x6xf32>) -> (tensor<4x8x7xf32>, tensor<4x8x7xi32>)
  return
}

// -----

func.func @moe_router_ids_i32(%l: tensor<4x8x6xf32>) {
  // expected-error @+1 {{expert_ids type must be 'tensor<4x8x2xi32>' (inferred from operands), found 'tensor<4x8x2xi64>'}}
  %0:2 = tfm.moe_router %l {top_k = 2 : i64} : (tensor<4x8x6xf32>) -> (tensor<4x8x2xf32>, tensor<4x8x2xi64>)
  return
}

// -----

func.func @moe_router_grad_ids(%dg: tensor<4x7x2xf32>, %l: tensor<4x8x6xf32>, %i: tensor<4x7x2xi32>) {
  // expected-error @+1 {{expert_ids [B, S] = [4, 7] must match logits [B, S] = [4, 8]}}
  %0 = tfm.moe_router_grad %dg, %l, %i : (tensor<4x7x2xf32>, tensor<4x8x6xf32>, tensor<4x7x2xi32>) -> tensor<4x8x6xf32>
  return
}

// -----

func.func @moe_router_grad_dgates(%dg: tensor<4x8x3xf32>, %l: tensor<4x8x6xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{dgates must be 'tensor<4x8x2xf32>' (shape of expert_ids, element type of logits), found 'tensor<4x8x3xf32>'}}
  %0 = tfm.moe_router_grad %dg, %l, %i {renormalize} : (tensor<4x8x3xf32>, tensor<4x8x6xf32>, tensor<4x8x2xi32>) -> tensor<4x8x6xf32>
  return
}

// -----

func.func @moe_aux_loss_ids_rank(%l: tensor<4x8x6xf32>, %i: tensor<32x2xi32>) {
  // expected-error @+1 {{expert_ids must have rank 3 [B, S, K], found rank 2}}
  %0 = tfm.moe_aux_loss %l, %i : (tensor<4x8x6xf32>, tensor<32x2xi32>) -> tensor<f32>
  return
}

// -----

func.func @moe_aux_loss_top_k(%l: tensor<4x8x6xf32>, %i: tensor<4x8x7xi32>) {
  // expected-error @+1 {{expert_ids top-k (7) must be in [1, 6] (number of experts)}}
  %0 = tfm.moe_aux_loss %l, %i : (tensor<4x8x6xf32>, tensor<4x8x7xi32>) -> tensor<f32>
  return
}

// -----

func.func @moe_aux_loss_grad_rank(%d: tensor<f32>, %l: tensor<4x8xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{logits must have rank 3 [B, S, E], found rank 2}}
  %0 = tfm.moe_aux_loss_grad %d, %l, %i : (tensor<f32>, tensor<4x8xf32>, tensor<4x8x2xi32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @moe_dispatch_num_experts(%x: tensor<4x8x16xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{num_experts must be >= 1, found 0}}
  %0 = tfm.moe_dispatch %x, %i {capacity = 5 : i64, num_experts = 0 : i64} : (tensor<4x8x16xf32>, tensor<4x8x2xi32>) -> tensor<0x4x5x16xf32>
  return
}

// -----

func.func @moe_dispatch_capacity(%x: tensor<4x8x16xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{capacity must be >= 1, found 0}}
  %0 = tfm.moe_dispatch %x, %i {capacity = 0 : i64, num_experts = 6 : i64} : (tensor<4x8x16xf32>, tensor<4x8x2xi32>) -> tensor<6x4x0x16xf32>
  return
}

// -----

func.func @moe_dispatch_x_rank(%x: tensor<32x16xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{x must have rank 3 [B, S, H], found rank 2}}
  %0 = tfm.moe_dispatch %x, %i {capacity = 5 : i64, num_experts = 6 : i64} : (tensor<32x16xf32>, tensor<4x8x2xi32>) -> tensor<6x4x5x16xf32>
  return
}

// -----

func.func @moe_dispatch_ids(%x: tensor<4x8x16xf32>, %i: tensor<4x4x2xi32>) {
  // expected-error @+1 {{expert_ids [B, S] = [4, 4] must match x [B, S] = [4, 8]}}
  %0 = tfm.moe_dispatch %x, %i {capacity = 5 : i64, num_experts = 6 : i64} : (tensor<4x8x16xf32>, tensor<4x4x2xi32>) -> tensor<6x4x5x16xf32>
  return
}

// -----

func.func @moe_dispatch_result(%x: tensor<4x8x16xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{buf type must be 'tensor<6x4x5x16xf32>' (inferred from operands), found 'tensor<6x4x4x16xf32>'}}
  %0 = tfm.moe_dispatch %x, %i {capacity = 5 : i64, num_experts = 6 : i64} : (tensor<4x8x16xf32>, tensor<4x8x2xi32>) -> tensor<6x4x4x16xf32>
  return
}

// -----

func.func @moe_dispatch_grad_capacity(%b: tensor<6x4x5x16xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{capacity must be >= 1, found 0}}
  %0 = tfm.moe_dispatch_grad %b, %i {capacity = 0 : i64} : (tensor<6x4x5x16xf32>, tensor<4x8x2xi32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @moe_dispatch_grad_rank(%b: tensor<6x20x16xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{dbuf must have rank 4 [E, B, C, H], found rank 3}}
  %0 = tfm.moe_dispatch_grad %b, %i {capacity = 5 : i64} : (tensor<6x20x16xf32>, tensor<4x8x2xi32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @moe_dispatch_grad_top_k(%b: tensor<1x4x5x16xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{expert_ids top-k (2) must be in [1, 1] (number of experts)}}
  %0 = tfm.moe_dispatch_grad %b, %i {capacity = 5 : i64} : (tensor<1x4x5x16xf32>, tensor<4x8x2xi32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @moe_dispatch_grad_batch(%b: tensor<6x2x5x16xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{dbuf batch (2) must match expert_ids batch (4)}}
  %0 = tfm.moe_dispatch_grad %b, %i {capacity = 5 : i64} : (tensor<6x2x5x16xf32>, tensor<4x8x2xi32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @moe_dispatch_grad_capacity_dim(%b: tensor<6x4x5x16xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{dbuf capacity dim (5) must equal capacity (4)}}
  %0 = tfm.moe_dispatch_grad %b, %i {capacity = 4 : i64} : (tensor<6x4x5x16xf32>, tensor<4x8x2xi32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @moe_combine_buf_rank(%b: tensor<6x20x16xf32>, %g: tensor<4x8x2xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{buf must have rank 4 [E, B, C, H], found rank 3}}
  %0 = tfm.moe_combine %b, %g, %i : (tensor<6x20x16xf32>, tensor<4x8x2xf32>, tensor<4x8x2xi32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @moe_combine_batch(%b: tensor<6x3x5x16xf32>, %g: tensor<4x8x2xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{buf batch (3) must match expert_ids batch (4)}}
  %0 = tfm.moe_combine %b, %g, %i : (tensor<6x3x5x16xf32>, tensor<4x8x2xf32>, tensor<4x8x2xi32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @moe_combine_gates(%b: tensor<6x4x5x16xf32>, %g: tensor<4x8x2xbf16>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{gates must be 'tensor<4x8x2xf32>' (shape of expert_ids, element type of buf), found 'tensor<4x8x2xbf16>'}}
  %0 = tfm.moe_combine %b, %g, %i : (tensor<6x4x5x16xf32>, tensor<4x8x2xbf16>, tensor<4x8x2xi32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @moe_combine_result(%b: tensor<6x4x5x16xf32>, %g: tensor<4x8x2xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{y type must be 'tensor<4x8x16xf32>' (inferred from operands), found 'tensor<4x8x32xf32>'}}
  %0 = tfm.moe_combine %b, %g, %i : (tensor<6x4x5x16xf32>, tensor<4x8x2xf32>, tensor<4x8x2xi32>) -> tensor<4x8x32xf32>
  return
}

// -----

func.func @moe_combine_grad_dy(%dy: tensor<4x8x32xf32>, %b: tensor<6x4x5x16xf32>, %g: tensor<4x8x2xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{dy must be 'tensor<4x8x16xf32>' (type of moe_combine's result), found 'tensor<4x8x32xf32>'}}
  %0:2 = tfm.moe_combine_grad %dy, %b, %g, %i : (tensor<4x8x32xf32>, tensor<6x4x5x16xf32>, tensor<4x8x2xf32>, tensor<4x8x2xi32>) -> (tensor<6x4x5x16xf32>, tensor<4x8x2xf32>)
  return
}

// -----

func.func @moe_combine_grad_dgates(%dy: tensor<4x8x16xf32>, %b: tensor<6x4x5x16xf32>, %g: tensor<4x8x2xf32>, %i: tensor<4x8x2xi32>) {
  // expected-error @+1 {{dgates type must be 'tensor<4x8x2xf32>' (inferred from operands), found 'tensor<4x8x3xf32>'}}
  %0:2 = tfm.moe_combine_grad %dy, %b, %g, %i : (tensor<4x8x16xf32>, tensor<6x4x5x16xf32>, tensor<4x8x2xf32>, tensor<4x8x2xi32>) -> (tensor<6x4x5x16xf32>, tensor<4x8x3xf32>)
  return
}

// -----

func.func @sum_squares_empty() {
  // expected-error @+1 {{requires at least one operand}}
  %0 = tfm.sum_squares : () -> tensor<f32>
  return
}

// -----

func.func @clip_coef_max_norm(%s: tensor<f32>) {
  // expected-error @+1 {{max_norm must be > 0, found 0.000000e+00}}
  %0:2 = tfm.clip_coef %s {max_norm = 0.0 : f64} : (tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func @adamw_beta1(%p: tensor<8x16xf32>, %g: tensor<8x16xf32>, %m: tensor<8x16xf32>, %v: tensor<8x16xf32>, %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>) {
  // expected-error @+1 {{beta1 must be in [0, 1), found 1.000000e+00}}
  %0:3 = tfm.adamw %p, %g, %m, %v, %lr, %t, %c {beta1 = 1.0 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @adamw_beta2(%p: tensor<8x16xf32>, %g: tensor<8x16xf32>, %m: tensor<8x16xf32>, %v: tensor<8x16xf32>, %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>) {
  // expected-error @+1 {{beta2 must be in [0, 1), found -5.000000e-01}}
  %0:3 = tfm.adamw %p, %g, %m, %v, %lr, %t, %c {beta1 = 0.9 : f64, beta2 = -0.5 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @adamw_epsilon(%p: tensor<8x16xf32>, %g: tensor<8x16xf32>, %m: tensor<8x16xf32>, %v: tensor<8x16xf32>, %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>) {
  // expected-error @+1 {{epsilon must be > 0, found 0.000000e+00}}
  %0:3 = tfm.adamw %p, %g, %m, %v, %lr, %t, %c {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 0.0 : f64, weight_decay = 0.1 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @adamw_weight_decay(%p: tensor<8x16xf32>, %g: tensor<8x16xf32>, %m: tensor<8x16xf32>, %v: tensor<8x16xf32>, %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>) {
  // expected-error @+1 {{weight_decay must be >= 0, found -1.000000e-01}}
  %0:3 = tfm.adamw %p, %g, %m, %v, %lr, %t, %c {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = -0.1 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @adamw_grad_shape(%p: tensor<8x16xf32>, %g: tensor<16x8xbf16>, %m: tensor<8x16xf32>, %v: tensor<8x16xf32>, %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>) {
  // expected-error @+1 {{grad shape [16, 8] must match param shape [8, 16]}}
  %0:3 = tfm.adamw %p, %g, %m, %v, %lr, %t, %c {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<8x16xf32>, tensor<16x8xbf16>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @adamw_m(%p: tensor<8x16xf32>, %g: tensor<8x16xf32>, %m: tensor<8x16xbf16>, %v: tensor<8x16xf32>, %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>) {
  // expected-error @+1 {{m must be 'tensor<8x16xf32>' (type of param), found 'tensor<8x16xbf16>'}}
  %0:3 = tfm.adamw %p, %g, %m, %v, %lr, %t, %c {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xbf16>, tensor<8x16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @adamw_v(%p: tensor<8x16xf32>, %g: tensor<8x16xf32>, %m: tensor<8x16xf32>, %v: tensor<8x8xf32>, %lr: tensor<f32>, %t: tensor<i64>, %c: tensor<f32>) {
  // expected-error @+1 {{v must be 'tensor<8x16xf32>' (type of param), found 'tensor<8x8xf32>'}}
  %0:3 = tfm.adamw %p, %g, %m, %v, %lr, %t, %c {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x8xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @dynamic_shape(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values, but got 'tensor<?x16xf32>'}}
  %0 = tfm.scale %x {factor = 2.0 : f64} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @reshape_element_count_overflow(%x: tensor<4294967296x4294967296xf32>) {
  // expected-error @+1 {{element count of x (shape [4294967296, 4294967296]) overflows int64}}
  %0 = tfm.reshape %x : (tensor<4294967296x4294967296xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @reshape_element_count_overflow_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{element count of y (shape [2, 4611686018427387904, 2]) overflows int64}}
  %0 = tfm.reshape %x : (tensor<4xf32>) -> tensor<2x4611686018427387904x2xf32>
  return
}

// -----

func.func @vocab_embedding_table_rank(%ids: tensor<8xi32>, %t: tensor<32xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{table must have rank 2 [Vl, H], found rank 1}}
  %0 = tfm.vocab_embedding %ids, %t, %s : (tensor<8xi32>, tensor<32xf32>, tensor<i64>) -> tensor<8x4xf32>
  return
}

// -----

func.func @vocab_embedding_grad_rows(%ids: tensor<8xi32>, %dy: tensor<8x4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{num_embeddings must be >= 1, found 0}}
  %0 = tfm.vocab_embedding_grad %ids, %dy, %s {num_embeddings = 0 : i64} : (tensor<8xi32>, tensor<8x4xf32>, tensor<i64>) -> tensor<0x4xf32>
  return
}

// -----

func.func @vocab_ce_stats_labels(%l: tensor<8x36xf32>, %y: tensor<4xi32>, %m: tensor<8xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{logits leading dims [8] must match labels shape [4]}}
  %0 = tfm.vocab_ce_stats %l, %y, %m, %s {vocab_size = 65 : i64} : (tensor<8x36xf32>, tensor<4xi32>, tensor<8xf32>, tensor<i64>) -> tensor<8x2xf32>
  return
}

// -----

func.func @vocab_ce_stats_max(%l: tensor<8x36xf32>, %y: tensor<8xi32>, %m: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{max must be 'tensor<8xf32>' (leading dims of logits, f32), found 'tensor<4xf32>'}}
  %0 = tfm.vocab_ce_stats %l, %y, %m, %s {vocab_size = 65 : i64} : (tensor<8x36xf32>, tensor<8xi32>, tensor<4xf32>, tensor<i64>) -> tensor<8x2xf32>
  return
}

// -----

func.func @vocab_ce_max_vocab(%l: tensor<8x36xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{vocab_size must be >= 1, found 0}}
  %0 = tfm.vocab_ce_max %l, %s {vocab_size = 0 : i64} : (tensor<8x36xf32>, tensor<i64>) -> tensor<8xf32>
  return
}

// -----

func.func @vocab_ce_loss_tokens(%st: tensor<8x2xf32>, %m: tensor<8xf32>) {
  // expected-error @+1 {{num_tokens must be >= the local token count 8 (and >= 1), found 4}}
  %0 = tfm.vocab_ce_loss %st, %m {num_tokens = 4 : i64} : (tensor<8x2xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @vocab_ce_grad_stats(%d: tensor<f32>, %l: tensor<8x36xf32>, %y: tensor<8xi32>, %m: tensor<8xf32>, %st: tensor<8x3xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{stats must be 'tensor<8x2xf32>' (leading dims of logits + [2], f32), found 'tensor<8x3xf32>'}}
  %0 = tfm.vocab_ce_grad %d, %l, %y, %m, %st, %s {num_tokens = 8 : i64, vocab_size = 65 : i64} : (tensor<f32>, tensor<8x36xf32>, tensor<8xi32>, tensor<8xf32>, tensor<8x3xf32>, tensor<i64>) -> tensor<8x36xf32>
  return
}

// -----

func.func @dropout_local_global_rank(%x: tensor<4x8xf32>, %s: tensor<i64>, %l: tensor<i64>, %k: tensor<i64>) {
  // expected-error @+1 {{global_shape [8, 8, 1] must have the input's rank 2}}
  %0 = tfm.dropout_local %x, %s, %l, %k {global_shape = array<i64: 8, 8, 1>, rate = 0.1 : f64, shard_dims = array<i64: 0>, site = 0 : i64} : (tensor<4x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dropout_local_shard_count(%x: tensor<4x8xf32>, %s: tensor<i64>, %l: tensor<i64>, %k: tensor<i64>) {
  // expected-error @+1 {{needs one shard operand per sharded dim: 2 shard_dims [0, 1], found 1 shard operands}}
  %0 = tfm.dropout_local %x, %s, %l, %k {global_shape = array<i64: 8, 16>, rate = 0.1 : f64, shard_dims = array<i64: 0, 1>, site = 0 : i64} : (tensor<4x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dropout_local_dims_order(%x: tensor<4x8xf32>, %s: tensor<i64>, %l: tensor<i64>, %k: tensor<i64>) {
  // expected-error @+1 {{shard_dims [1, 0] must be strictly increasing}}
  %0 = tfm.dropout_local %x, %s, %l, %k, %k {global_shape = array<i64: 8, 16>, rate = 0.1 : f64, shard_dims = array<i64: 1, 0>, site = 0 : i64} : (tensor<4x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dropout_local_dim_range(%x: tensor<4x8xf32>, %s: tensor<i64>, %l: tensor<i64>, %k: tensor<i64>) {
  // expected-error @+1 {{shard_dims [2] must be dims of the rank-2 input}}
  %0 = tfm.dropout_local %x, %s, %l, %k {global_shape = array<i64: 4, 8>, rate = 0.1 : f64, shard_dims = array<i64: 2>, site = 0 : i64} : (tensor<4x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dropout_local_not_multiple(%x: tensor<4x8xf32>, %s: tensor<i64>, %l: tensor<i64>, %k: tensor<i64>) {
  // expected-error @+1 {{global dim 0 (10) must be a multiple of the local dim 4}}
  %0 = tfm.dropout_local_grad %x, %s, %l, %k {global_shape = array<i64: 10, 8>, rate = 0.1 : f64, shard_dims = array<i64: 0>, site = 0 : i64} : (tensor<4x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dropout_local_unsharded_dim(%x: tensor<4x8xf32>, %s: tensor<i64>, %l: tensor<i64>, %k: tensor<i64>) {
  // expected-error @+1 {{dim 1 is not sharded, so the local dim 8 must equal the global dim 16}}
  %0 = tfm.dropout_local %x, %s, %l, %k {global_shape = array<i64: 8, 16>, rate = 0.1 : f64, shard_dims = array<i64: 0>, site = 0 : i64} : (tensor<4x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dropout_local_rate(%x: tensor<4x8xf32>, %s: tensor<i64>, %l: tensor<i64>, %k: tensor<i64>) {
  // expected-error @+1 {{rate must be in [0, 1), found 1.000000e+00}}
  %0 = tfm.dropout_local %x, %s, %l, %k {global_shape = array<i64: 8, 8>, rate = 1.0 : f64, shard_dims = array<i64: 0>, site = 0 : i64} : (tensor<4x8xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @attention_block_step(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %c: tensor<i64>) {
  // expected-error @+1 {{kv_step must be in [0, num_chunks = 2), found 2}}
  %o, %l = tfm.attention_block %q, %k, %k, %c {causal, kv_step = 2 : i64, num_chunks = 2 : i64, scale = 0.25 : f64} : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<i64>) -> (tensor<1x4x2x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @attention_block_chunks(%q: tensor<1x4x2x8xf32>, %k: tensor<1x6x2x8xf32>, %c: tensor<i64>) {
  // expected-error @+1 {{q and k must hold chunks of equal length, found Sq = 4, Sk = 6}}
  %o, %l = tfm.attention_block %q, %k, %k, %c {kv_step = 0 : i64, num_chunks = 2 : i64, scale = 0.25 : f64} : (tensor<1x4x2x8xf32>, tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32>, tensor<i64>) -> (tensor<1x4x2x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @attention_merge_lse(%o: tensor<1x4x2x8xf32>, %l: tensor<1x2x4xf32>, %bad: tensor<1x4x2xf32>) {
  // expected-error @+1 {{lse_b must be 'tensor<1x2x4xf32>' ([B, N, S] f32), found 'tensor<1x4x2xf32>'}}
  %0, %1 = tfm.attention_merge %o, %l, %o, %bad : (tensor<1x4x2x8xf32>, tensor<1x2x4xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @rope_local_seq_len(%x: tensor<1x4x2x8xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{seq_len must be a positive multiple of the local sequence length 4, found 6}}
  %0 = tfm.rope_local %x, %s {seq_len = 6 : i64, theta = 10000.0 : f64} : (tensor<1x4x2x8xf32>, tensor<i64>) -> tensor<1x4x2x8xf32>
  return
}
