// RUN: shard-opt %s -split-input-file --tfm-autodiff | FileCheck %s
// RUN: shard-opt %s -split-input-file --tfm-autodiff="beta1=0.8 beta2=0.99 epsilon=1e-6 weight-decay=0.05 max-grad-norm=0.5" | FileCheck %s --check-prefix=OPTS
// The builder's models: test/Models/Tfm/tfm-autodiff.mlir.

// A linear layer with a bias and cross-entropy: the entry points' signatures,
// the reverse pass, clipping and AdamW (no decay for the 1-D bias). @eval
// replaces @forward (there is no dropout, so it is the same function).

// CHECK-NOT:   func.func @forward(
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[IDS:[a-z0-9]+]]: tensor<2x3xi32> {tfm.input = "tokens"},
// CHECK-SAME:    %[[LABELS:[a-z0-9]+]]: tensor<2x3xi32> {tfm.input = "labels"},
// CHECK-SAME:    %[[STEP:[a-z0-9]+]]: tensor<i64> {tfm.input = "step"},
// CHECK-SAME:    %[[LR:[a-z0-9]+]]: tensor<f32> {tfm.input = "lr"},
// CHECK-SAME:    %[[EMB:[a-z0-9]+]]: tensor<7x4xf32> {tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64, tfm.param = "emb", tfm.role = "embedding"},
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<4x5xf32> {tfm.param = "head.w", tfm.role = "lm_head"},
// CHECK-SAME:    %[[B:[a-z0-9]+]]: tensor<5xf32> {tfm.param = "head.b", tfm.role = "bias"},
// CHECK-SAME:    %[[MEMB:[a-z0-9]+]]: tensor<7x4xf32> {tfm.init = "zeros", tfm.state = "emb.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "emb"},
// CHECK-SAME:    %[[MW:[a-z0-9]+]]: tensor<4x5xf32> {tfm.init = "zeros", tfm.state = "head.w.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "head.w"},
// CHECK-SAME:    %[[MB:[a-z0-9]+]]: tensor<5xf32> {tfm.init = "zeros", tfm.state = "head.b.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "head.b"},
// CHECK-SAME:    %[[VEMB:[a-z0-9]+]]: tensor<7x4xf32> {tfm.init = "zeros", tfm.state = "emb.exp_avg_sq", tfm.state_kind = "opt_v", tfm.state_of = "emb"},
// CHECK-SAME:    %[[VW:[a-z0-9]+]]: tensor<4x5xf32> {tfm.init = "zeros", tfm.state = "head.w.exp_avg_sq", tfm.state_kind = "opt_v", tfm.state_of = "head.w"},
// CHECK-SAME:    %[[VB:[a-z0-9]+]]: tensor<5xf32> {tfm.init = "zeros", tfm.state = "head.b.exp_avg_sq", tfm.state_kind = "opt_v", tfm.state_of = "head.b"})
// CHECK-SAME:    -> (tensor<f32> {tfm.output = "loss"}, tensor<f32> {tfm.output = "grad_norm"},
// CHECK-SAME:    tensor<7x4xf32> {tfm.param = "emb"}, tensor<4x5xf32> {tfm.param = "head.w"}, tensor<5xf32> {tfm.param = "head.b"},
// CHECK-SAME:    tensor<7x4xf32> {tfm.state = "emb.exp_avg"}, tensor<4x5xf32> {tfm.state = "head.w.exp_avg"}, tensor<5xf32> {tfm.state = "head.b.exp_avg"},
// CHECK-SAME:    tensor<7x4xf32> {tfm.state = "emb.exp_avg_sq"}, tensor<4x5xf32> {tfm.state = "head.w.exp_avg_sq"}, tensor<5xf32> {tfm.state = "head.b.exp_avg_sq"})
// CHECK:         %[[H:.*]] = tfm.embedding %[[IDS]], %[[EMB]]
// CHECK:         %[[Z:.*]] = tfm.add
// CHECK:         %[[LOSS:.*]] = tfm.cross_entropy %[[Z]], %[[LABELS]]
// CHECK:         %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK:         %[[DZ:.*]] = tfm.cross_entropy_grad %[[ONE]], %[[Z]], %[[LABELS]]
// CHECK:         %[[DB:.*]] = tfm.reduce_sum %[[DZ]] {dims = array<i64: 0, 1>} : (tensor<2x3x5xf32>) -> tensor<5xf32>
// CHECK:         %[[DH:.*]] = tfm.matmul %[[DZ]], %[[W]] {transpose_rhs} : (tensor<2x3x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4xf32>
// CHECK:         %[[DW:.*]] = tfm.matmul_wgrad %[[H]], %[[DZ]] : (tensor<2x3x4xf32>, tensor<2x3x5xf32>) -> tensor<4x5xf32>
// CHECK:         %[[DEMB:.*]] = tfm.embedding_grad %[[IDS]], %[[DH]] {num_embeddings = 7 : i64}
// CHECK:         %[[SS:.*]] = tfm.sum_squares %[[DEMB]], %[[DW]], %[[DB]] :
// CHECK:         %[[COEF:.*]], %[[NORM:.*]] = tfm.clip_coef %[[SS]] {max_norm = 1.000000e+00 : f64}
// CHECK:         %[[P0:.*]], %[[M0:.*]], %[[V0:.*]] = tfm.adamw %[[EMB]], %[[DEMB]], %[[MEMB]], %[[VEMB]], %[[LR]], %[[STEP]], %[[COEF]]
// CHECK-SAME:      {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64}
// CHECK:         %[[P1:.*]], %[[M1:.*]], %[[V1:.*]] = tfm.adamw %[[W]], %[[DW]], %[[MW]], %[[VW]], %[[LR]], %[[STEP]], %[[COEF]]
// CHECK-SAME:      weight_decay = 1.000000e-01 : f64
// CHECK:         %[[P2:.*]], %[[M2:.*]], %[[V2:.*]] = tfm.adamw %[[B]], %[[DB]], %[[MB]], %[[VB]], %[[LR]], %[[STEP]], %[[COEF]]
// CHECK-SAME:      weight_decay = 0.000000e+00 : f64
// CHECK-NEXT:    return %[[LOSS]], %[[NORM]], %[[P0]], %[[P1]], %[[P2]], %[[M0]], %[[M1]], %[[M2]], %[[V0]], %[[V1]], %[[V2]] :

// CHECK-LABEL: func.func @eval(
// CHECK-SAME:    %{{[^)]*}}: tensor<2x3xi32> {tfm.input = "tokens"}, %{{[^)]*}}: tensor<2x3xi32> {tfm.input = "labels"}, %{{[^)]*}}: tensor<7x4xf32> {{[^)]*}}, %{{[^)]*}}: tensor<4x5xf32> {{[^)]*}}, %{{[^)]*}}: tensor<5xf32> {{[^)]*}})
// CHECK-SAME:    -> (tensor<f32> {tfm.output = "loss"})
// CHECK:         %[[EVAL:.*]] = tfm.cross_entropy
// CHECK-NEXT:    return %[[EVAL]]

// CHECK-LABEL: func.func @logits(
// CHECK-SAME:    %{{[^)]*}}: tensor<2x3xi32> {tfm.input = "tokens"}, %{{[^)]*}}: tensor<7x4xf32> {{[^)]*}}, %{{[^)]*}}: tensor<4x5xf32> {{[^)]*}}, %{{[^)]*}}: tensor<5xf32> {{[^)]*}})
// CHECK-SAME:    -> (tensor<2x3x5xf32> {tfm.output = "logits"})
// CHECK:         %[[LOGITS:.*]] = tfm.add
// CHECK-NEXT:    return %[[LOGITS]] : tensor<2x3x5xf32>

// OPTS:        tfm.clip_coef %{{.*}} {max_norm = 5.000000e-01 : f64}
// OPTS:        tfm.adamw {{.*}} {beta1 = 8.000000e-01 : f64, beta2 = 0.98999999999999999 : f64, epsilon = 9.9999999999999995E-7 : f64, weight_decay = 5.000000e-02 : f64}
// OPTS:        tfm.adamw {{.*}} weight_decay = 5.000000e-02 : f64}
// OPTS:        tfm.adamw {{.*}} weight_decay = 0.000000e+00 : f64}
func.func @forward(%ids: tensor<2x3xi32> {tfm.input = "tokens"},
                   %labels: tensor<2x3xi32> {tfm.input = "labels"},
                   %emb: tensor<7x4xf32> {tfm.param = "emb", tfm.role = "embedding", tfm.init = "normal", tfm.init_std = 2.0e-02 : f64},
                   %w: tensor<4x5xf32> {tfm.param = "head.w", tfm.role = "lm_head"},
                   %b: tensor<5xf32> {tfm.param = "head.b", tfm.role = "bias"}) -> tensor<f32> {
  %h = tfm.embedding %ids, %emb : (tensor<2x3xi32>, tensor<7x4xf32>) -> tensor<2x3x4xf32>
  %y = tfm.matmul %h, %w : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %z = tfm.add %y, %b : (tensor<2x3x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %loss = tfm.cross_entropy %z, %labels : (tensor<2x3x5xf32>, tensor<2x3xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tied weights: the token embedding is also the LM head (`transpose_rhs`);
// its gradient is the sum of the head's weight gradient ([V, H], from
// matmul_wgrad(dlogits, h)) and the embedding's scatter-add.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[IDS:[a-z0-9]+]]: tensor<2x3xi32> {tfm.input = "tokens"},
// CHECK-SAME:    %[[WTE:[a-z0-9]+]]: tensor<7x4xf32> {tfm.param = "wte"},
// CHECK:         %[[H:.*]] = tfm.embedding %[[IDS]], %[[WTE]]
// CHECK:         %[[DLOGITS:.*]] = tfm.cross_entropy_grad
// CHECK:         %[[DH:.*]] = tfm.matmul %[[DLOGITS]], %[[WTE]] : (tensor<2x3x7xf32>, tensor<7x4xf32>) -> tensor<2x3x4xf32>
// CHECK:         %[[DHEAD:.*]] = tfm.matmul_wgrad %[[DLOGITS]], %[[H]] : (tensor<2x3x7xf32>, tensor<2x3x4xf32>) -> tensor<7x4xf32>
// CHECK:         %[[DEMB:.*]] = tfm.embedding_grad %[[IDS]], %[[DH]] {num_embeddings = 7 : i64}
// CHECK:         %[[DWTE:.*]] = tfm.add %[[DHEAD]], %[[DEMB]] : (tensor<7x4xf32>, tensor<7x4xf32>) -> tensor<7x4xf32>
// CHECK:         tfm.sum_squares %[[DWTE]] :
// CHECK:         tfm.adamw %[[WTE]], %[[DWTE]],
func.func @forward(%ids: tensor<2x3xi32> {tfm.input = "tokens"},
                   %labels: tensor<2x3xi32> {tfm.input = "labels"},
                   %wte: tensor<7x4xf32> {tfm.param = "wte"}) -> tensor<f32> {
  %h = tfm.embedding %ids, %wte : (tensor<2x3xi32>, tensor<7x4xf32>) -> tensor<2x3x4xf32>
  %logits = tfm.matmul %h, %wte {transpose_rhs} : (tensor<2x3x4xf32>, tensor<7x4xf32>) -> tensor<2x3x7xf32>
  %loss = tfm.cross_entropy %logits, %labels : (tensor<2x3x7xf32>, tensor<2x3xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A block called twice gets one @B_fwd/@B_bwd pair. The residual stream is
// used twice in the block, so its gradient is accumulated in @B_bwd. The
// residuals are what the backward reads and is not an argument of @B (the
// matmul result read by gelu_grad); @B_bwd takes the arguments it reads
// (x for the weight gradient, w for the input gradient) directly, and not the
// unused layer index.

// CHECK-LABEL: func.func private @blk(
// CHECK-LABEL: func.func private @blk_fwd(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x3x4xf32> {tfm.role = "hidden"}, %{{.*}}: tensor<i64> {tfm.role = "layer_index"}, %[[W:[a-z0-9]+]]: tensor<4x4xf32> {tfm.name = "w", tfm.role = "mlp_up"})
// CHECK-SAME:    -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[Y:.*]] = tfm.matmul %[[X]], %[[W]]
// CHECK-NEXT:    %[[A:.*]] = tfm.gelu %[[Y]]
// CHECK-NEXT:    %[[R:.*]] = tfm.add %[[X]], %[[A]]
// CHECK-NEXT:    return %[[R]], %[[Y]] :

// CHECK-LABEL: func.func private @blk_bwd(
// CHECK-SAME:    %[[DR:[a-z0-9]+]]: tensor<2x3x4xf32>, %[[X:[a-z0-9]+]]: tensor<2x3x4xf32> {tfm.role = "hidden"}, %[[W:[a-z0-9]+]]: tensor<4x4xf32> {tfm.name = "w", tfm.role = "mlp_up"}, %[[Y:[a-z0-9]+]]: tensor<2x3x4xf32>)
// CHECK-SAME:    -> (tensor<2x3x4xf32> {tfm.role = "hidden"}, tensor<4x4xf32> {tfm.name = "w", tfm.role = "mlp_up"})
// CHECK-NEXT:    %[[DY:.*]] = tfm.gelu_grad %[[DR]], %[[Y]]
// CHECK-NEXT:    %[[DX1:.*]] = tfm.matmul %[[DY]], %[[W]] {transpose_rhs}
// CHECK-NEXT:    %[[DW:.*]] = tfm.matmul_wgrad %[[X]], %[[DY]]
// CHECK-NEXT:    %[[DX:.*]] = tfm.add %[[DR]], %[[DX1]]
// CHECK-NEXT:    return %[[DX]], %[[DW]] :
// CHECK-NOT:   func.func private @blk_{{fwd|bwd}}

// CHECK-LABEL: func.func @train_step(
// CHECK:         %[[H:.*]] = tfm.embedding
// CHECK:         %[[L0:.*]] = arith.constant dense<0> : tensor<i64>
// CHECK:         %[[B0:.*]]:2 = call @blk_fwd(%[[H]], %[[L0]], %[[W0:[a-z0-9]+]])
// CHECK:         %[[L1:.*]] = arith.constant dense<1> : tensor<i64>
// CHECK:         %[[B1:.*]]:2 = call @blk_fwd(%[[B0]]#0, %[[L1]], %[[W1:[a-z0-9]+]])
// CHECK:         tfm.cross_entropy_grad
// CHECK:         %[[G1:.*]]:2 = call @blk_bwd(%{{.*}}, %[[B0]]#0, %[[W1]], %[[B1]]#1)
// CHECK:         %[[G0:.*]]:2 = call @blk_bwd(%[[G1]]#0, %[[H]], %[[W0]], %[[B0]]#1)
// CHECK:         tfm.embedding_grad %{{.*}}, %[[G0]]#0
// CHECK:         tfm.sum_squares %{{.*}}, %[[G0]]#1, %[[G1]]#1 :
// CHECK:         tfm.adamw %[[W0]], %[[G0]]#1,
// CHECK:         tfm.adamw %[[W1]], %[[G1]]#1,

// CHECK-LABEL: func.func @logits(
// CHECK:         call @blk(
// CHECK:         call @blk(
func.func private @blk(%x: tensor<2x3x4xf32> {tfm.role = "hidden"},
                       %layer: tensor<i64> {tfm.role = "layer_index"},
                       %w: tensor<4x4xf32> {tfm.name = "w", tfm.role = "mlp_up"}) -> tensor<2x3x4xf32> {
  %y = tfm.matmul %x, %w : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %a = tfm.gelu %y : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %r = tfm.add %x, %a : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

func.func @forward(%ids: tensor<2x3xi32> {tfm.input = "tokens"},
                   %labels: tensor<2x3xi32> {tfm.input = "labels"},
                   %wte: tensor<7x4xf32> {tfm.param = "wte"},
                   %w0: tensor<4x4xf32> {tfm.param = "layers.0.w"},
                   %w1: tensor<4x4xf32> {tfm.param = "layers.1.w"}) -> tensor<f32> {
  %h = tfm.embedding %ids, %wte : (tensor<2x3xi32>, tensor<7x4xf32>) -> tensor<2x3x4xf32>
  %l0 = arith.constant dense<0> : tensor<i64>
  %h1 = func.call @blk(%h, %l0, %w0) : (tensor<2x3x4xf32>, tensor<i64>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %l1 = arith.constant dense<1> : tensor<i64>
  %h2 = func.call @blk(%h1, %l1, %w1) : (tensor<2x3x4xf32>, tensor<i64>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %logits = tfm.matmul %h2, %wte {transpose_rhs} : (tensor<2x3x4xf32>, tensor<7x4xf32>) -> tensor<2x3x7xf32>
  %loss = tfm.cross_entropy %logits, %labels : (tensor<2x3x7xf32>, tensor<2x3xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The rules not exercised by the models: dropout (with @forward's step),
// layer_norm with beta, mul/sub with suffix broadcasting, scale, silu,
// reduce_sum <-> broadcast, and matmul with transposed operands.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[IDS:[a-z0-9]+]]: tensor<2x4xi32> {tfm.input = "tokens"}, %[[LABELS:[a-z0-9]+]]: tensor<2x4xi32> {tfm.input = "labels"}, %[[STEP:[a-z0-9]+]]: tensor<i64> {tfm.input = "step"},
// CHECK-SAME:    %[[A:[a-z0-9]+]]: tensor<6x8xf32> {tfm.param = "a"}, %[[E:[a-z0-9]+]]: tensor<3x8x8xf32> {tfm.param = "e"}, %[[W:[a-z0-9]+]]: tensor<5x8xf32> {tfm.param = "w"},
// CHECK-SAME:    %[[G:[a-z0-9]+]]: tensor<8xf32> {tfm.param = "g"}, %[[BETA:[a-z0-9]+]]: tensor<8xf32> {tfm.param = "beta"}, %[[S:[a-z0-9]+]]: tensor<4x8xf32> {tfm.param = "s"}, %[[T:[a-z0-9]+]]: tensor<5x6xf32> {tfm.param = "t"},
// CHECK:         %[[L0:.*]] = arith.constant dense<0> : tensor<i64>
// CHECK:         %[[D:.*]] = tfm.dropout %{{.*}}, %[[STEP]], %[[L0]]
// CHECK:         %[[N:.*]] = tfm.layer_norm %[[D]], %[[G]], %[[BETA]]
// CHECK:         %[[SC:.*]] = tfm.scale
// CHECK:         %[[X3:.*]] = tfm.reshape %{{.*}} : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
// CHECK:         %[[WL:.*]] = tfm.matmul %[[W]], %[[X3]] {transpose_rhs}
// CHECK:         %[[EB:.*]] = tfm.reshape %{{.*}} : (tensor<8x6xf32>) -> tensor<3x8x2xf32>
// CHECK:         %[[DLG:.*]] = tfm.cross_entropy_grad %{{.*}} {vocab_size = 5 : i64}
// CHECK:         %[[DBM:.*]] = tfm.reshape %[[DLG]] : (tensor<2x4x6xf32>) -> tensor<3x2x8xf32>
// y = A^T B^T: dA = B^T dy^T, dB = dy^T A^T
// CHECK:         %[[DEB:.*]] = tfm.matmul %[[E]], %[[DBM]] {transpose_lhs, transpose_rhs} : (tensor<3x8x8xf32>, tensor<3x2x8xf32>) -> tensor<3x8x2xf32>
// CHECK:         %[[DE:.*]] = tfm.matmul %[[DBM]], %[[EB]] {transpose_lhs, transpose_rhs} : (tensor<3x2x8xf32>, tensor<3x8x2xf32>) -> tensor<3x8x8xf32>
// CHECK:         %[[DTT:.*]] = tfm.reshape %[[DEB]] : (tensor<3x8x2xf32>) -> tensor<8x6xf32>
// y = A^T B (2-D): dA = B dy^T, dB = A dy
// CHECK:         %[[DWL:.*]] = tfm.matmul %[[T]], %[[DTT]] {transpose_rhs} : (tensor<5x6xf32>, tensor<8x6xf32>) -> tensor<5x8xf32>
// CHECK:         %[[DT:.*]] = tfm.matmul %[[WL]], %[[DTT]] : (tensor<5x8xf32>, tensor<8x6xf32>) -> tensor<5x6xf32>
// y = A B^T (2-D weight B): dA = dy B, dB = matmul_wgrad(dy, A)
// CHECK:         %[[DW:.*]] = tfm.matmul %[[DWL]], %[[X3]] : (tensor<5x8xf32>, tensor<8x8xf32>) -> tensor<5x8xf32>
// CHECK:         %[[DX3:.*]] = tfm.matmul_wgrad %[[DWL]], %[[W]] : (tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<8x8xf32>
// CHECK:         %[[DBC:.*]] = tfm.reshape %[[DX3]] : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
// CHECK:         %[[DR:.*]] = tfm.reduce_sum %[[DBC]] {dims = array<i64: 0>} : (tensor<2x4x8xf32>) -> tensor<4x8xf32>
// CHECK:         %[[DSI:.*]] = tfm.broadcast %[[DR]] {dims = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<2x4x8xf32>
// CHECK:         %[[DSC:.*]] = tfm.silu_grad %[[DSI]], %[[SC]]
// CHECK:         %[[DU:.*]] = tfm.scale %[[DSC]] {factor = 5.000000e-01 : f64}
// CHECK:         %[[DUG0:.*]] = tfm.reduce_sum %[[DU]] {dims = array<i64: 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8xf32>
// CHECK:         %[[DUG:.*]] = tfm.scale %[[DUG0]] {factor = -1.000000e+00 : f64}
// CHECK:         %[[DN:.*]] = tfm.mul %[[DU]], %[[S]] : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
// CHECK:         %[[DSN:.*]] = tfm.mul %[[DU]], %[[N]] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK:         %[[DS:.*]] = tfm.reduce_sum %[[DSN]] {dims = array<i64: 0>} : (tensor<2x4x8xf32>) -> tensor<4x8xf32>
// CHECK:         %[[DD:.*]], %[[DGN:.*]], %[[DBETA:.*]] = tfm.layer_norm_grad %[[DN]], %[[D]], %[[G]] {epsilon = 1.000000e-05 : f64}
// CHECK:         %[[DG:.*]] = tfm.add %[[DUG]], %[[DGN]] : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK:         %[[DH:.*]] = tfm.dropout_grad %[[DD]], %[[STEP]], %[[L0]] {rate = 1.000000e-01 : f64, site = 0 : i64}
// CHECK:         %[[DA:.*]] = tfm.embedding_grad %[[IDS]], %[[DH]] {num_embeddings = 6 : i64}
// CHECK:         tfm.sum_squares %[[DA]], %[[DE]], %[[DW]], %[[DG]], %[[DBETA]], %[[DS]], %[[DT]] :

// Dropout is off in @eval and @logits (nanoGPT's model.eval()): each dropout
// is replaced by its input, and the step, which only dropout read, is no
// input of theirs.
// CHECK-LABEL: func.func @eval(
// CHECK-SAME:    %{{[a-z0-9]+}}: tensor<2x4xi32> {tfm.input = "tokens"}, %{{[a-z0-9]+}}: tensor<2x4xi32> {tfm.input = "labels"}, %{{[a-z0-9]+}}: tensor<6x8xf32> {tfm.param = "a"},
// CHECK-SAME:    -> (tensor<f32> {tfm.output = "loss"})
// CHECK-NEXT:    %[[H:.*]] = tfm.embedding
// CHECK-NEXT:    tfm.layer_norm %[[H]],
// CHECK-NOT:     tfm.dropout
// CHECK-LABEL: func.func @logits(
// CHECK-SAME:    %{{[a-z0-9]+}}: tensor<2x4xi32> {tfm.input = "tokens"}, %{{[a-z0-9]+}}: tensor<6x8xf32> {tfm.param = "a"},
// CHECK-NEXT:    %[[H:.*]] = tfm.embedding
// CHECK-NEXT:    tfm.layer_norm %[[H]],
// CHECK-NOT:     tfm.dropout
func.func @forward(%ids: tensor<2x4xi32> {tfm.input = "tokens"}, %labels: tensor<2x4xi32> {tfm.input = "labels"},
                   %step: tensor<i64> {tfm.input = "step"},
                   %a: tensor<6x8xf32> {tfm.param = "a"}, %e: tensor<3x8x8xf32> {tfm.param = "e"},
                   %w: tensor<5x8xf32> {tfm.param = "w"}, %g: tensor<8xf32> {tfm.param = "g"},
                   %bt: tensor<8xf32> {tfm.param = "beta"}, %s: tensor<4x8xf32> {tfm.param = "s"},
                   %t: tensor<5x6xf32> {tfm.param = "t"}) -> tensor<f32> {
  %h = tfm.embedding %ids, %a : (tensor<2x4xi32>, tensor<6x8xf32>) -> tensor<2x4x8xf32>
  %l0 = arith.constant dense<0> : tensor<i64>
  %d = tfm.dropout %h, %step, %l0 {rate = 0.1 : f64, site = 0 : i64} : (tensor<2x4x8xf32>, tensor<i64>, tensor<i64>) -> tensor<2x4x8xf32>
  %n = tfm.layer_norm %d, %g, %bt {epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %m = tfm.mul %n, %s : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %u = tfm.sub %m, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %sc = tfm.scale %u {factor = 0.5 : f64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %si = tfm.silu %sc : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = tfm.reduce_sum %si {dims = array<i64: 0>} : (tensor<2x4x8xf32>) -> tensor<4x8xf32>
  %bc = tfm.broadcast %r {dims = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %x3 = tfm.reshape %bc : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %wl = tfm.matmul %w, %x3 {transpose_rhs} : (tensor<5x8xf32>, tensor<8x8xf32>) -> tensor<5x8xf32>
  %tt = tfm.matmul %wl, %t {transpose_lhs} : (tensor<5x8xf32>, tensor<5x6xf32>) -> tensor<8x6xf32>
  %eb = tfm.reshape %tt : (tensor<8x6xf32>) -> tensor<3x8x2xf32>
  %bm = tfm.matmul %eb, %e {transpose_lhs, transpose_rhs} : (tensor<3x8x2xf32>, tensor<3x8x8xf32>) -> tensor<3x2x8xf32>
  %lg = tfm.reshape %bm : (tensor<3x2x8xf32>) -> tensor<2x4x6xf32>
  %loss = tfm.cross_entropy %lg, %labels {vocab_size = 5 : i64} : (tensor<2x4x6xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A block calling another block: the inner pair's residuals become residuals
// of the outer pair.

// CHECK-LABEL: func.func private @inner_fwd(
// CHECK-SAME:    -> (tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK-LABEL: func.func private @inner_bwd(
// CHECK-LABEL: func.func private @outer_fwd(
// CHECK-SAME:    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK-NEXT:    %[[IN:.*]]:2 = call @inner_fwd(
// CHECK-NEXT:    %[[O:.*]] = tfm.mul %[[IN]]#0
// CHECK-NEXT:    return %[[O]], %[[IN]]#0, %[[IN]]#1
// CHECK-LABEL: func.func private @outer_bwd(
// CHECK-SAME:    %[[DO:[a-z0-9]+]]: tensor<2x4xf32>, %[[X:[a-z0-9]+]]: tensor<2x4xf32>, %[[W:[a-z0-9]+]]: tensor<4x4xf32>, %[[A:[a-z0-9]+]]: tensor<2x4xf32>, %[[R:[a-z0-9]+]]: tensor<2x4xf32>)
// CHECK:         call @inner_bwd(%{{.*}}, %[[X]], %[[W]], %[[R]])
// CHECK-LABEL: func.func @train_step(
// CHECK:         call @outer_fwd(
// CHECK:         call @outer_bwd(
func.func private @inner(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %y = tfm.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %z = tfm.gelu %y : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %z : tensor<2x4xf32>
}

func.func private @outer(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %a = func.call @inner(%x, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %b = tfm.mul %a, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %b : tensor<2x4xf32>
}

func.func @forward(%ids: tensor<2xi32> {tfm.input = "tokens"}, %labels: tensor<2xi32> {tfm.input = "labels"},
                   %wte: tensor<4x4xf32> {tfm.param = "wte"}, %w: tensor<4x4xf32> {tfm.param = "w"}) -> tensor<f32> {
  %h = tfm.embedding %ids, %wte : (tensor<2xi32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %o = func.call @outer(%h, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %loss = tfm.cross_entropy %o, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Dropout inside blocks: @eval and @logits call dropout-free clones @B_infer,
// made transitively (@outer has no dropout itself but calls @inner, which
// has) and once per callee; a block without dropout (@plain) is called as it
// is. A clone drops the arguments that only dropout read (the step and here
// the layer index), so @eval and @logits take no step. @train_step keeps the
// dropout. The builder's blocks that nothing calls any more are removed, and
// @eval replaces @forward.

// CHECK-NOT:   func.func private @inner(
// CHECK-LABEL: func.func private @inner_fwd(
// CHECK:         tfm.dropout
// CHECK-LABEL: func.func private @inner_bwd(
// CHECK:         tfm.dropout_grad
// CHECK-LABEL: func.func private @inner_infer(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x4xf32> {tfm.role = "hidden"}, %[[W:[a-z0-9]+]]: tensor<4x4xf32> {tfm.name = "w"}) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = tfm.matmul %[[X]], %[[W]]
// CHECK-NEXT:    return %[[Y]]
// CHECK-NOT:   func.func private @outer(
// CHECK-LABEL: func.func private @outer_fwd(
// CHECK-SAME:    tensor<i64> {tfm.role = "step"}
// CHECK-LABEL: func.func private @outer_bwd(
// CHECK-LABEL: func.func private @outer_infer(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x4xf32>, %[[W:[a-z0-9]+]]: tensor<4x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[A:.*]] = call @inner_infer(%[[X]], %[[W]]) {tfm.layer = 0 : i64}
// CHECK-NEXT:    %[[B:.*]] = call @inner_infer(%[[A]], %[[W]]) {tfm.layer = 1 : i64}
// CHECK-NEXT:    return %[[B]]
// CHECK-LABEL: func.func private @plain(
// CHECK-LABEL: func.func private @plain_fwd(
// CHECK-LABEL: func.func private @plain_bwd(
// CHECK-NOT:   func.func private @plain_infer
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[STEP:[a-z0-9]+]]: tensor<i64> {tfm.input = "step"},
// CHECK:         tfm.dropout %{{.*}}, %[[STEP]], %{{.*}} {rate = 1.000000e-01 : f64, site = 0 : i64}
// CHECK:         call @outer_fwd(%{{.*}}, %[[STEP]], %{{.*}})
// CHECK:         call @plain_fwd(
// CHECK:         call @plain_bwd(
// CHECK:         call @outer_bwd(
// CHECK:         tfm.dropout_grad %{{.*}}, %[[STEP]], %{{.*}} {rate = 1.000000e-01 : f64, site = 0 : i64}
// CHECK-LABEL: func.func @eval(
// CHECK-SAME:    %[[IDS:[a-z0-9]+]]: tensor<2xi32> {tfm.input = "tokens"}, %[[LABELS:[a-z0-9]+]]: tensor<2xi32> {tfm.input = "labels"}, %[[WTE:[a-z0-9]+]]: tensor<4x4xf32> {tfm.param = "wte"}, %[[W:[a-z0-9]+]]: tensor<4x4xf32> {tfm.param = "w"})
// CHECK-SAME:    -> (tensor<f32> {tfm.output = "loss"})
// CHECK-NEXT:    %[[H:.*]] = tfm.embedding %[[IDS]], %[[WTE]]
// CHECK-NEXT:    %[[O:.*]] = call @outer_infer(%[[H]], %[[W]]) {tfm.layer = 0 : i64}
// CHECK-NEXT:    %[[P:.*]] = call @plain(%[[O]], %[[W]])
// CHECK-NEXT:    %[[LOSS:.*]] = tfm.cross_entropy %[[P]], %[[LABELS]]
// CHECK-NEXT:    return %[[LOSS]]
// CHECK-LABEL: func.func @logits(
// CHECK-SAME:    %[[IDS:[a-z0-9]+]]: tensor<2xi32> {tfm.input = "tokens"}, %[[WTE:[a-z0-9]+]]: tensor<4x4xf32> {tfm.param = "wte"}, %[[W:[a-z0-9]+]]: tensor<4x4xf32> {tfm.param = "w"})
// CHECK-SAME:    -> (tensor<2x4xf32> {tfm.output = "logits"})
// CHECK-NEXT:    %[[H:.*]] = tfm.embedding %[[IDS]], %[[WTE]]
// CHECK-NEXT:    %[[O:.*]] = call @outer_infer(%[[H]], %[[W]]) {tfm.layer = 0 : i64}
// CHECK-NEXT:    %[[P:.*]] = call @plain(%[[O]], %[[W]])
// CHECK-NEXT:    return %[[P]]
// CHECK-NOT:   func.func @forward(
func.func private @inner(%x: tensor<2x4xf32> {tfm.role = "hidden"}, %step: tensor<i64> {tfm.role = "step"},
                         %layer: tensor<i64> {tfm.role = "layer_index"}, %w: tensor<4x4xf32> {tfm.name = "w"}) -> tensor<2x4xf32> {
  %y = tfm.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %d = tfm.dropout %y, %step, %layer {rate = 0.1 : f64, site = 1 : i64} : (tensor<2x4xf32>, tensor<i64>, tensor<i64>) -> tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

func.func private @outer(%x: tensor<2x4xf32>, %step: tensor<i64> {tfm.role = "step"}, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %l0 = arith.constant dense<0> : tensor<i64>
  %a = func.call @inner(%x, %step, %l0, %w) {tfm.layer = 0 : i64} : (tensor<2x4xf32>, tensor<i64>, tensor<i64>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l1 = arith.constant dense<1> : tensor<i64>
  %b = func.call @inner(%a, %step, %l1, %w) {tfm.layer = 1 : i64} : (tensor<2x4xf32>, tensor<i64>, tensor<i64>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %b : tensor<2x4xf32>
}

func.func private @plain(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %y = tfm.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %z = tfm.gelu %y : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %z : tensor<2x4xf32>
}

func.func @forward(%ids: tensor<2xi32> {tfm.input = "tokens"}, %labels: tensor<2xi32> {tfm.input = "labels"},
                   %step: tensor<i64> {tfm.input = "step"},
                   %wte: tensor<4x4xf32> {tfm.param = "wte"}, %w: tensor<4x4xf32> {tfm.param = "w"}) -> tensor<f32> {
  %h = tfm.embedding %ids, %wte : (tensor<2xi32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %le = arith.constant dense<-1> : tensor<i64>
  %hd = tfm.dropout %h, %step, %le {rate = 0.1 : f64, site = 0 : i64} : (tensor<2x4xf32>, tensor<i64>, tensor<i64>) -> tensor<2x4xf32>
  %o = func.call @outer(%hd, %step, %w) {tfm.layer = 0 : i64} : (tensor<2x4xf32>, tensor<i64>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %p = func.call @plain(%o, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %loss = tfm.cross_entropy %p, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Found by fuzzing (issue 19): a block whose arguments carry no attributes
// crashed tfm-autodiff (it copied a null attribute array onto @blk_fwd).
// CHECK-LABEL: func.func private @bare_fwd(
// CHECK-SAME:    %{{[a-z0-9]+}}: tensor<2x3x4xf32>, %{{[a-z0-9]+}}: tensor<4x4xf32>)
// CHECK-LABEL: func.func private @bare_bwd(
// CHECK-LABEL: func.func @train_step(
// CHECK:         call @bare_fwd(
func.func private @bare(%x: tensor<2x3x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x3x4xf32> {
  %y = tfm.matmul %x, %w : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

func.func @forward(%ids: tensor<2x3xi32> {tfm.input = "tokens"},
                   %labels: tensor<2x3xi32> {tfm.input = "labels"},
                   %wte: tensor<7x4xf32> {tfm.param = "wte"},
                   %w0: tensor<4x4xf32> {tfm.param = "layers.0.w"}) -> tensor<f32> {
  %h = tfm.embedding %ids, %wte : (tensor<2x3xi32>, tensor<7x4xf32>) -> tensor<2x3x4xf32>
  %h1 = func.call @bare(%h, %w0) : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %logits = tfm.matmul %h1, %wte {transpose_rhs} : (tensor<2x3x4xf32>, tensor<7x4xf32>) -> tensor<2x3x7xf32>
  %loss = tfm.cross_entropy %logits, %labels : (tensor<2x3x7xf32>, tensor<2x3xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
