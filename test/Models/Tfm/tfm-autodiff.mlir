// tfm-autodiff on the builder's models; the tests on hand-written IR are
// test/Dialect/Tfm/tfm-autodiff.mlir.

// The builder's models at a tiny batch and sequence: the pass must produce a
// module that verifies and parses back.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 -o %t.nanogpt.mlir
// RUN: shard-opt %t.nanogpt.mlir --tfm-autodiff | shard-opt | FileCheck %s --check-prefix=NANOGPT
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --dropout 0.1 -o %t.dropout.mlir
// RUN: shard-opt %t.dropout.mlir --tfm-autodiff | shard-opt | FileCheck %s --check-prefix=DROPOUT
// RUN: %python -m autoshard.models %configs/models/llama3-8b.json --batch 2 --seq 8 -o %t.llama.mlir
// RUN: shard-opt %t.llama.mlir --tfm-autodiff | shard-opt | FileCheck %s --check-prefix=LLAMA
// RUN: %python -m autoshard.models %configs/models/mixtral-8x7b.json --batch 2 --seq 8 -o %t.mixtral.mlir
// RUN: shard-opt %t.mixtral.mlir --tfm-autodiff | shard-opt | FileCheck %s --check-prefix=MIXTRAL
// RUN: %python -m autoshard.models %autoshard_src/configs/models/mixtral-tiny-cpu.json --batch 2 --seq 8 -q -o %t.mixtral-aux.mlir
// RUN: shard-opt %t.mixtral-aux.mlir --tfm-autodiff | shard-opt | FileCheck %s --check-prefix=MIXTRAL-AUX

// nanoGPT (tied wte, learned positions, LayerNorm, GELU): one pair with 11
// residuals (ln_1 output; q, k, v, attention output and lse; the flattened
// attention; the residual after attention; ln_2 output; fc and gelu
// outputs). @gpt2_block_bwd takes dy, x, the 8 weights (not the unused layer
// index) and the residuals, and returns dx and the 8 weight gradients.
// NANOGPT:      func.func private @gpt2_block_fwd(
// NANOGPT-SAME:   -> (tensor<2x8x128xf32>, tensor<2x8x128xf32>, tensor<2x8x4x32xf32>, tensor<2x8x4x32xf32>, tensor<2x8x4x32xf32>, tensor<2x8x4x32xf32>, tensor<2x4x8xf32>, tensor<2x8x128xf32>, tensor<2x8x128xf32>, tensor<2x8x128xf32>, tensor<2x8x512xf32>, tensor<2x8x512xf32>)
// NANOGPT-SAME:   attributes {tfm.func_kind = #tfm.func_kind<forward>} {
// NANOGPT:      func.func private @gpt2_block_bwd(%{{.*}}: tensor<2x8x128xf32>, %{{.*}}: tensor<2x8x128xf32> {tfm.role = "hidden"}, %{{.*}}: tensor<128xf32> {tfm.name = "ln_1.weight", tfm.role = "norm"},
// NANOGPT-SAME:   %arg20: tensor<2x8x512xf32>)
// NANOGPT-SAME:   -> (tensor<2x8x128xf32> {tfm.role = "hidden"}, tensor<128xf32> {tfm.name = "ln_1.weight", tfm.role = "norm"},
// NANOGPT-SAME:   tensor<512x128xf32> {tfm.name = "mlp.w_proj", tfm.role = "mlp_down"})
// NANOGPT-SAME:   attributes {tfm.func_kind = #tfm.func_kind<backward>} {
// NANOGPT:        tfm.attention_grad
// NANOGPT:        tfm.layer_norm_grad
// NANOGPT-NOT:  func.func private @gpt2_block_{{fwd|bwd|infer}}
// NANOGPT:      func.func @train_step(
// NANOGPT-COUNT-4: call @gpt2_block_fwd(
// NANOGPT:        tfm.cross_entropy_grad
// NANOGPT-COUNT-4: call @gpt2_block_bwd(
// NANOGPT:        tfm.position_embedding_grad
// NANOGPT:        %[[DEMB:.*]] = tfm.embedding_grad
// NANOGPT:        %[[DWTE:.*]] = tfm.add %{{.*}}, %[[DEMB]] : (tensor<65x128xf32>, tensor<65x128xf32>)
// NANOGPT:        tfm.sum_squares %[[DWTE]],
// NANOGPT:        tfm.clip_coef
// NANOGPT-COUNT-35: tfm.adamw
// NANOGPT-NEXT:   return
// Without dropout, @eval is @forward (the original block is called).
// NANOGPT:      func.func @eval({{.*}} -> (tensor<f32> {tfm.output = "loss"})
// NANOGPT-COUNT-4: call @gpt2_block(
// NANOGPT:      func.func @logits({{.*}} -> (tensor<2x8x65xf32> {tfm.output = "logits"})
// NANOGPT-COUNT-4: call @gpt2_block(
// NANOGPT-NOT:  func.func @forward(

// With dropout, the backward regenerates the masks from the step and the
// layer index, so @gpt2_block_bwd takes both; @train_step's step feeds the
// dropout as well as AdamW. @eval and @logits run with dropout off: they call
// @gpt2_block_infer, which has neither dropout nor the step and layer-index
// arguments only dropout read, and take no step; the original @gpt2_block,
// now uncalled, is removed.
// DROPOUT-NOT:  func.func private @gpt2_block(
// DROPOUT:      func.func private @gpt2_block_bwd(%{{.*}}: tensor<2x8x128xf32>, %{{.*}}: tensor<2x8x128xf32> {tfm.role = "hidden"}, %[[LAYER:[a-z0-9]+]]: tensor<i64> {tfm.role = "layer_index"}, %[[STEP:[a-z0-9]+]]: tensor<i64> {tfm.role = "step"},
// DROPOUT:        tfm.dropout_grad %{{.*}}, %[[STEP]], %[[LAYER]] {rate = 1.000000e-01 : f64, site = 2 : i64}
// DROPOUT:        tfm.dropout_grad %{{.*}}, %[[STEP]], %[[LAYER]] {rate = 1.000000e-01 : f64, site = 1 : i64}
// DROPOUT:      func.func private @gpt2_block_infer(%{{[a-z0-9]+}}: tensor<2x8x128xf32> {tfm.role = "hidden"}, %{{[a-z0-9]+}}: tensor<128xf32> {tfm.name = "ln_1.weight", tfm.role = "norm"},
// DROPOUT-NOT:    tfm.dropout
// DROPOUT:      func.func @train_step(%{{.*}}, %{{.*}}, %[[STEP:[a-z0-9]+]]: tensor<i64> {tfm.input = "step"},
// DROPOUT:        tfm.dropout %{{.*}}, %[[STEP]], %{{.*}} {rate = 1.000000e-01 : f64, site = 0 : i64}
// DROPOUT-COUNT-4: call @gpt2_block_fwd(%{{.*}}, %{{.*}}, %[[STEP]],
// DROPOUT:        tfm.dropout_grad %{{.*}}, %[[STEP]], %{{.*}} {rate = 1.000000e-01 : f64, site = 0 : i64}
// DROPOUT:        tfm.adamw {{.*}}, %[[STEP]], %{{.*}} {beta1
// DROPOUT:      func.func @eval(%{{[a-z0-9]+}}: tensor<2x8xi32> {tfm.input = "tokens"}, %{{[a-z0-9]+}}: tensor<2x8xi32> {tfm.input = "labels"}, %{{[a-z0-9]+}}: tensor<65x128xf32> {{.*}}tfm.param = "wte"
// DROPOUT-SAME:   -> (tensor<f32> {tfm.output = "loss"})
// DROPOUT-NOT:    tfm.dropout
// DROPOUT-COUNT-4: call @gpt2_block_infer(
// DROPOUT-NOT:    tfm.dropout
// DROPOUT:      func.func @logits(%{{[a-z0-9]+}}: tensor<2x8xi32> {tfm.input = "tokens"}, %{{[a-z0-9]+}}: tensor<65x128xf32> {{.*}}tfm.param = "wte"
// DROPOUT-NOT:    tfm.dropout
// DROPOUT-COUNT-4: call @gpt2_block_infer(
// DROPOUT-NOT:    tfm.dropout
// DROPOUT-NOT:  func.func

// Llama (RMSNorm, RoPE, GQA attention, SwiGLU, untied head): 12 residuals.
// LLAMA:        func.func private @llama_block_fwd(
// LLAMA-SAME:     -> (tensor<2x8x4096xf32>, tensor<2x8x4096xf32>, tensor<2x8x8x128xf32>, tensor<2x8x32x128xf32>, tensor<2x8x8x128xf32>, tensor<2x8x32x128xf32>, tensor<2x32x8xf32>, tensor<2x8x4096xf32>, tensor<2x8x4096xf32>, tensor<2x8x4096xf32>, tensor<2x8x14336xf32>, tensor<2x8x14336xf32>, tensor<2x8x14336xf32>) attributes {tfm.func_kind = #tfm.func_kind<forward>} {
// LLAMA:        func.func private @llama_block_bwd(
// LLAMA:          tfm.swiglu_grad
// LLAMA:          tfm.rms_norm_grad
// LLAMA:          tfm.attention_grad {{.*}} -> (tensor<2x8x32x128xf32>, tensor<2x8x8x128xf32>, tensor<2x8x8x128xf32>)
// LLAMA:          tfm.rope_grad {{.*}} {theta = 5.000000e+05 : f64} : (tensor<2x8x8x128xf32>) -> tensor<2x8x8x128xf32>
// LLAMA:          tfm.rope_grad {{.*}} {theta = 5.000000e+05 : f64} : (tensor<2x8x32x128xf32>) -> tensor<2x8x32x128xf32>
// LLAMA:          tfm.rms_norm_grad
// LLAMA:        func.func @train_step(
// LLAMA-COUNT-32: call @llama_block_fwd(
// LLAMA-COUNT-32: call @llama_block_bwd(
// LLAMA:          tfm.embedding_grad
// LLAMA-COUNT-291: tfm.adamw
// LLAMA:        func.func @logits({{.*}} -> (tensor<2x8x128256xf32> {tfm.output = "logits"})

// Mixtral 8x7B (no output_router_logits: no aux loss, as in HF): the block
// returns only the hidden state, so @mixtral_block_bwd takes one dy; expert
// weights get batched-matmul gradients.
// MIXTRAL:      func.func private @mixtral_block_bwd(%{{[a-z0-9]+}}: tensor<2x8x4096xf32>, %{{[a-z0-9]+}}: tensor<2x8x4096xf32> {tfm.role = "hidden"},
// MIXTRAL:        tfm.moe_combine_grad
// MIXTRAL:        tfm.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<8x16x14336xf32>, tensor<8x16x4096xf32>) -> tensor<8x14336x4096xf32>
// MIXTRAL:        tfm.swiglu_grad
// MIXTRAL:        tfm.moe_dispatch_grad
// MIXTRAL-NOT:    tfm.moe_aux_loss_grad
// MIXTRAL:        tfm.moe_router_grad {{.*}} {renormalize}
// MIXTRAL:        tfm.matmul_wgrad {{.*}} -> tensor<4096x8xf32>
// MIXTRAL:      func.func @train_step(
// MIXTRAL-COUNT-32: call @mixtral_block_fwd(
// MIXTRAL-COUNT-32: call @mixtral_block_bwd(
// MIXTRAL-COUNT-323: tfm.adamw
// MIXTRAL:      func.func @logits(
// MIXTRAL-NOT:    tfm.moe_aux_loss
// MIXTRAL:        return {{.*}} : tensor<2x8x32000xf32>

// Mixtral with output_router_logits (configs/models/mixtral-tiny-cpu.json):
// the block also returns its aux loss, so @mixtral_block_bwd takes two dy
// (hidden and aux) and differentiates the aux loss.
// MIXTRAL-AUX:      func.func private @mixtral_block_bwd(%{{[a-z0-9]+}}: tensor<2x8x64xf32>, %{{[a-z0-9]+}}: tensor<f32>, %{{[a-z0-9]+}}: tensor<2x8x64xf32> {tfm.role = "hidden"},
// MIXTRAL-AUX:        tfm.moe_combine_grad
// MIXTRAL-AUX:        tfm.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<4x16x128xf32>, tensor<4x16x64xf32>) -> tensor<4x128x64xf32>
// MIXTRAL-AUX:        tfm.swiglu_grad
// MIXTRAL-AUX:        tfm.moe_dispatch_grad
// MIXTRAL-AUX:        tfm.moe_aux_loss_grad
// MIXTRAL-AUX:        tfm.moe_router_grad {{.*}} {renormalize}
// MIXTRAL-AUX:        tfm.matmul_wgrad {{.*}} -> tensor<64x4xf32>
// MIXTRAL-AUX:      func.func @train_step(
// MIXTRAL-AUX-COUNT-4: call @mixtral_block_fwd(
// MIXTRAL-AUX-COUNT-4: call @mixtral_block_bwd(
// MIXTRAL-AUX-COUNT-43: tfm.adamw
// MIXTRAL-AUX:      func.func @logits(
// MIXTRAL-AUX-NOT:    tfm.moe_aux_loss
// MIXTRAL-AUX:        return {{.*}} : tensor<2x8x65xf32>
