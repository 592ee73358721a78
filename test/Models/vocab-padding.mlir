// --vocab-multiple pads the embedding / LM head and masks the padded logits in
// the loss; the parameter count reports the unpadded model.
// RUN: %python -m autoshard.models %configs/models/gpt2-124m.json --batch 2 --seq 64 --vocab-multiple 128 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: shard-opt %t.mlir | FileCheck %s
// RUN: %python -m autoshard.models %configs/models/llama3-8b.json --batch 1 --seq 16 --vocab-multiple 1000 -q | shard-opt | FileCheck %s --check-prefix=UNTIED

// COUNT: gpt2-124m: 124439808 parameters (124.4M)

// CHECK: padded_vocab_size = 50304 : i64
// CHECK: tensor<50304x768xf32> {tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64, tfm.param = "wte", tfm.role = "embedding", tfm.vocab_size = 50257 : i64}
// CHECK: tfm.matmul {{.*}} {transpose_rhs} : (tensor<2x64x768xf32>, tensor<50304x768xf32>) -> tensor<2x64x50304xf32>
// CHECK: tfm.cross_entropy {{.*}} {vocab_size = 50257 : i64} : (tensor<2x64x50304xf32>, tensor<2x64xi32>) -> tensor<f32>

// UNTIED: tensor<129000x4096xf32> {{.*}}tfm.param = "tok_embeddings"
// UNTIED: tensor<4096x129000xf32> {{.*}}tfm.param = "lm_head"
// UNTIED: tfm.cross_entropy {{.*}} {vocab_size = 128256 : i64} : (tensor<1x16x129000xf32>, tensor<1x16xi32>)
