// dist-bucket-collectives on the builder's models; the tests on hand-written IR are
// test/Dialect/Dist/dist-bucket-collectives.mlir.

// nanoGPT (batch 4, seq 8, 4 layers), dp = 2:
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2" --dist-propagate --dist-partition --dist-bucket-collectives | FileCheck %s --check-prefix=DDP \
// RUN:   --implicit-check-not=dist.all_reduce --implicit-check-not=dist.all_gather --implicit-check-not=dist.reduce_scatter
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,zero=1" --dist-propagate --dist-partition --dist-bucket-collectives | FileCheck %s --check-prefix=Z1 \
// RUN:   --implicit-check-not=dist.all_reduce --implicit-check-not=dist.all_gather --implicit-check-not=dist.reduce_scatter
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,zero=2" --dist-propagate --dist-partition --dist-bucket-collectives | FileCheck %s --check-prefix=Z2 \
// RUN:   --implicit-check-not=dist.all_reduce --implicit-check-not=dist.all_gather --implicit-check-not=dist.reduce_scatter
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,zero=3" --dist-propagate --dist-partition --dist-bucket-collectives | FileCheck %s --check-prefix=Z3 \
// RUN:   --implicit-check-not=dist.all_reduce --implicit-check-not=dist.all_gather --implicit-check-not=dist.reduce_scatter
// Bucketed programs lower, plan and export like any other.
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,zero=3" --dist-propagate --dist-partition --dist-bucket-collectives --rt-lower --rt-plan-memory | FileCheck %s --check-prefix=RT

// Data parallel (no ZeRO), the block functions hold no collective; the
// train step reduces the 35 partial gradients (and the loss) in one
// all-reduce per layer, right after the backward that produced them (the
// partitioner leaves them all at the end of the step; a reduction's layer
// is its operand's producer's): the final norm's gradient with the loss,
// each block's 8 gradients, then the first block's with the embeddings';
// eval reduces its loss.
// DDP-LABEL: func.func @train_step(
// DDP: dist.pack %{{.*}}, %{{.*}} : tensor<128xf32>, tensor<f32> -> tensor<129xf32>
// DDP-NEXT: dist.all_reduce %{{.*}} on @mesh axes = [dp] reduction = sum : tensor<129xf32> -> tensor<129xf32>
// DDP-NEXT: dist.unpack
// DDP-COUNT-3: call @gpt2_block_bwd
// DDP-NEXT: dist.pack
// DDP-NEXT: dist.all_reduce %{{.*}} on @mesh axes = [dp] reduction = sum : tensor<196864xf32> -> tensor<196864xf32>
// DDP-NEXT: dist.unpack
// DDP: call @gpt2_block_bwd
// DDP: dist.pack
// DDP-NEXT: dist.all_reduce %{{.*}} on @mesh axes = [dp] reduction = sum : tensor<{{[0-9]+}}xf32> -> tensor<{{[0-9]+}}xf32>
// DDP-NEXT: dist.unpack
// DDP-LABEL: func.func @eval(
// DDP: dist.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// DDP-LABEL: func.func @logits(

// ZeRO-1: one reduce-scatter of each layer's gradients right after its
// backward (Megatron's distributed optimizer with overlap_grad_reduce), the
// loss and the gradient norm's sum of squares all-reduced, one all-gather
// of the updated parameters.
// Z1-LABEL: func.func @train_step(
// Z1: call @gpt2_block_bwd
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.reduce_scatter %{{.*}} on @mesh axes = [dp] scatter_dim = 0 reduction = sum : tensor<196864xf32> -> tensor<98432xf32>
// Z1: call @gpt2_block_bwd
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.reduce_scatter %{{.*}} : tensor<196864xf32> -> tensor<98432xf32>
// Z1: call @gpt2_block_bwd
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.reduce_scatter %{{.*}} : tensor<196864xf32> -> tensor<98432xf32>
// Z1: call @gpt2_block_bwd
// Z1: dist.reduce_scatter %{{.*}} : tensor<214272xf32> -> tensor<107136xf32>
// Z1: dist.reduce_scatter %dgamma {{.*}} : tensor<128xf32> -> tensor<64xf32>
// Z1: dist.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// Z1: dist.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// The updated parameter shards are gathered in the gradients' layer groups:
// one bucket per reduce-scatter bucket (the final norm's weight alone).
// Z1: dist.all_gather %{{.*}} on @mesh axes = [dp] gather_dim = 0 : tensor<64xf32> -> tensor<128xf32>
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.all_gather %{{.*}} on @mesh axes = [dp] gather_dim = 0 : tensor<107136xf32> -> tensor<214272xf32>
// Z1-NEXT: dist.unpack %{{.*}} num_groups = 2
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.all_gather %{{.*}} : tensor<98432xf32> -> tensor<196864xf32>
// Z1-NEXT: dist.unpack %{{.*}} num_groups = 2
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.all_gather %{{.*}} : tensor<98432xf32> -> tensor<196864xf32>
// Z1-NEXT: dist.unpack %{{.*}} num_groups = 2
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.all_gather %{{.*}} : tensor<98432xf32> -> tensor<196864xf32>
// Z1-NEXT: dist.unpack %{{.*}} num_groups = 2
// Z1-LABEL: func.func @eval(
// Z1: dist.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// Z1-LABEL: func.func @logits(

// ZeRO-2: the gradients are reduce-scattered where they are produced: the
// final norm's alone (right after the loss), then one per layer backward
// (the first layer's with the embeddings').
// Z2-LABEL: func.func @train_step(
// Z2: dist.reduce_scatter %{{.*}} : tensor<{{[0-9]+}}xf32> -> tensor<{{[0-9]+}}xf32>
// Z2: call @gpt2_block_bwd
// Z2: dist.reduce_scatter {{.*}} : tensor<196864xf32> -> tensor<98432xf32>
// Z2: call @gpt2_block_bwd
// Z2: dist.reduce_scatter {{.*}} : tensor<196864xf32> -> tensor<98432xf32>
// Z2: call @gpt2_block_bwd
// Z2: dist.reduce_scatter {{.*}} : tensor<196864xf32> -> tensor<98432xf32>
// Z2: call @gpt2_block_bwd
// Z2: dist.reduce_scatter {{.*}} : tensor<{{[0-9]+}}xf32> -> tensor<{{[0-9]+}}xf32>
// Z2: dist.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// Z2: dist.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// Z2: dist.all_gather %{{.*}} : tensor<64xf32> -> tensor<128xf32>
// Z2-COUNT-4: dist.all_gather %{{.*}} on @mesh axes = [dp] gather_dim = 0 : tensor<{{[0-9]+}}xf32>
// Z2-LABEL: func.func @eval(
// Z2: dist.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// Z2-LABEL: func.func @logits(

// ZeRO-3: each block function gathers its layer's 8 parameters in one
// all-gather before their first use (forward, and again in backward); the
// train step gathers the embeddings (one) and the final norm (one),
// reduce-scatters per layer as ZeRO-2, and all-reduces loss and norm.
// Z3-LABEL: func.func private @gpt2_block(
// Z3-NEXT: dist.pack
// Z3-NEXT: dist.all_gather %{{.*}} : tensor<98432xf32> -> tensor<196864xf32>
// Z3-NEXT: dist.unpack %{{.*}} num_groups = 2 scatter_dims = [0, 0, 0, 0, 0, 0, 0, 0]
// Z3-LABEL: func.func private @gpt2_block_fwd(
// Z3-NEXT: dist.pack
// Z3-NEXT: dist.all_gather %{{.*}} : tensor<98432xf32> -> tensor<196864xf32>
// Z3-LABEL: func.func private @gpt2_block_bwd(
// Z3-NEXT: dist.pack
// Z3-NEXT: dist.all_gather %{{.*}} : tensor<98432xf32> -> tensor<196864xf32>
// Z3-LABEL: func.func @train_step(
// Z3-NEXT: dist.pack
// Z3-NEXT: dist.all_gather
// Z3: dist.all_gather %{{.*}} : tensor<64xf32> -> tensor<128xf32>
// Z3: dist.reduce_scatter
// Z3: call @gpt2_block_bwd
// Z3: dist.reduce_scatter {{.*}} : tensor<196864xf32> -> tensor<98432xf32>
// Z3: call @gpt2_block_bwd
// Z3: dist.reduce_scatter {{.*}} : tensor<196864xf32> -> tensor<98432xf32>
// Z3: call @gpt2_block_bwd
// Z3: dist.reduce_scatter {{.*}} : tensor<196864xf32> -> tensor<98432xf32>
// Z3: call @gpt2_block_bwd
// Z3: dist.reduce_scatter
// Z3: dist.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// Z3: dist.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// Z3-LABEL: func.func @eval(
// Z3-NEXT: dist.pack
// Z3-NEXT: dist.all_gather
// Z3: dist.all_gather %{{.*}} : tensor<64xf32> -> tensor<128xf32>
// Z3: dist.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// Z3-LABEL: func.func @logits(
// Z3-NEXT: dist.pack
// Z3-NEXT: dist.all_gather
// Z3: dist.all_gather %{{.*}} : tensor<64xf32> -> tensor<128xf32>

// RT-LABEL: rt.func @gpt2_block_fwd(
// RT: rt.kernel "dist.pack"({{.*}}) -> ({{.*}}) attrs {num_groups = 1 : i64, scatter_dims = array<i64>}
// RT: rt.kernel "dist.all_gather"
// RT: rt.kernel "dist.unpack"({{.*}}) -> ({{.*}}) attrs {num_groups = 2 : i64, scatter_dims = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>}
