// RUN: shard-opt %s --tfm-mixed-precision | FileCheck %s
// RUN: shard-opt %s --tfm-mixed-precision --tfm-autodiff | FileCheck %s --check-prefix=STEP
// RUN: shard-opt %s --tfm-mixed-precision="compute-type=f16" | FileCheck %s --check-prefix=HALF

// A one-layer GPT (tied embedding, LayerNorm, RMSNorm, GELU MLP) on global
// shapes, as the model builder writes it, in f32.

module {
  func.func private @block(
      %x: tensor<2x4x8xf32> {tfm.role = "hidden"},
      %ln: tensor<8xf32> {tfm.name = "ln.weight", tfm.role = "norm"},
      %rms: tensor<8xf32> {tfm.name = "rms.weight", tfm.role = "norm"},
      %w_fc: tensor<8x16xf32> {tfm.name = "mlp.w_fc", tfm.role = "mlp_up"},
      %w_proj: tensor<16x8xf32> {tfm.name = "mlp.w_proj", tfm.role = "mlp_down"})
      -> tensor<2x4x8xf32> {
    %h = tfm.layer_norm %x, %ln {epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %r = tfm.rms_norm %h, %rms {epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %fc = tfm.matmul %r, %w_fc : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
    %act = tfm.gelu %fc : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    %proj = tfm.matmul %act, %w_proj : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %out = tfm.add %x, %proj : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %out : tensor<2x4x8xf32>
  }

  func.func @forward(
      %ids: tensor<2x4xi32> {tfm.input = "tokens"},
      %labels: tensor<2x4xi32> {tfm.input = "labels"},
      %wte: tensor<16x8xf32> {tfm.param = "wte", tfm.role = "embedding", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %ln: tensor<8xf32> {tfm.param = "layers.0.ln.weight", tfm.role = "norm", tfm.init = "ones"},
      %rms: tensor<8xf32> {tfm.param = "layers.0.rms.weight", tfm.role = "norm", tfm.init = "ones"},
      %w_fc: tensor<8x16xf32> {tfm.param = "layers.0.mlp.w_fc", tfm.role = "mlp_up", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %w_proj: tensor<16x8xf32> {tfm.param = "layers.0.mlp.w_proj", tfm.role = "mlp_down", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %ln_f: tensor<8xf32> {tfm.param = "ln_f.weight", tfm.role = "norm", tfm.init = "ones"})
      -> tensor<f32> {
    %emb = tfm.embedding %ids, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %h = func.call @block(%emb, %ln, %rms, %w_fc, %w_proj) : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %f = tfm.layer_norm %h, %ln_f {epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %logits = tfm.matmul %f, %wte {transpose_rhs} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %ce = tfm.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    %loss = tfm.scale %ce {factor = 1.000000e+00 : f64} : (tensor<f32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// The module is marked, so the pass does not run twice.
// CHECK: module attributes {tfm.mixed_precision = "bf16"}

// The block takes the residual stream in bf16 and its parameters in f32,
// casting each weight to bf16 right before the op that uses it; the norms
// run in f32 (input cast up, f32 weight as it is, output cast back down).
// CHECK-LABEL: func.func private @block
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xbf16> {tfm.role = "hidden"}, %[[LN:.*]]: tensor<8xf32> {{.*}}, %[[RMS:.*]]: tensor<8xf32> {{.*}}, %[[WFC:.*]]: tensor<8x16xf32> {{.*}}, %[[WPROJ:.*]]: tensor<16x8xf32> {{.*}}) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[X32:.*]] = tfm.cast %[[X]] : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[H:.*]] = tfm.layer_norm %[[X32]], %[[LN]] {{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[H16:.*]] = tfm.cast %[[H]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[H32:.*]] = tfm.cast %[[H16]] : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[R:.*]] = tfm.rms_norm %[[H32]], %[[RMS]] {{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[R16:.*]] = tfm.cast %[[R]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[WFC16:.*]] = tfm.cast %[[WFC]] : (tensor<8x16xf32>) -> tensor<8x16xbf16>
// CHECK-NEXT: %[[FC:.*]] = tfm.matmul %[[R16]], %[[WFC16]] : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[ACT:.*]] = tfm.gelu %[[FC]] : (tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[WPROJ16:.*]] = tfm.cast %[[WPROJ]] : (tensor<16x8xf32>) -> tensor<16x8xbf16>
// CHECK-NEXT: %[[PROJ:.*]] = tfm.matmul %[[ACT]], %[[WPROJ16]] : (tensor<2x4x16xbf16>, tensor<16x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[OUT:.*]] = tfm.add %[[X]], %[[PROJ]] : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: return %[[OUT]] : tensor<2x4x8xbf16>

// @forward keeps its f32 signature. The tied embedding is cast once per
// use (embedding, LM head); the logits go to the loss in f32; the loss and
// scalar arithmetic on it stay f32.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[WTE:[^:]*]]: tensor<16x8xf32>
// CHECK-SAME: -> tensor<f32>
// CHECK-NEXT: %[[WTE16A:.*]] = tfm.cast %[[WTE]] : (tensor<16x8xf32>) -> tensor<16x8xbf16>
// CHECK-NEXT: %[[EMB:.*]] = tfm.embedding %{{.*}}, %[[WTE16A]] : (tensor<2x4xi32>, tensor<16x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[HB:.*]] = call @block(%[[EMB]], {{.*}}) : (tensor<2x4x8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[HB32:.*]] = tfm.cast %[[HB]] : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[F:.*]] = tfm.layer_norm %[[HB32]], %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[F16:.*]] = tfm.cast %[[F]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[WTE16B:.*]] = tfm.cast %[[WTE]] : (tensor<16x8xf32>) -> tensor<16x8xbf16>
// CHECK-NEXT: %[[LOGITS:.*]] = tfm.matmul %[[F16]], %[[WTE16B]] {transpose_rhs} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[LOGITS32:.*]] = tfm.cast %[[LOGITS]] : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[CE:.*]] = tfm.cross_entropy %[[LOGITS32]], %{{.*}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
// CHECK-NEXT: %[[LOSS:.*]] = tfm.scale %[[CE]] {{.*}} : (tensor<f32>) -> tensor<f32>
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>

// The training step: parameters, AdamW moments and the gradients AdamW
// reads are all f32; each bf16 weight gradient is cast to f32 (the VJP of
// the forward cast), and the two uses of the tied embedding are summed in
// f32.
// The forward saves no weight copy: the backward recomputes the casts of
// its f32 weight arguments (and of the bf16 block input) rather than taking
// them as residuals.
// STEP-LABEL: func.func private @block_fwd
// STEP-SAME: -> (tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4x16xbf16>, tensor<2x4x16xbf16>)
// STEP-LABEL: func.func private @block_bwd
// STEP-SAME: %[[BX:[^:]*]]: tensor<2x4x8xbf16> {tfm.role = "hidden"}
// STEP-SAME: %[[BWFC:[^:]*]]: tensor<8x16xf32> {tfm.name = "mlp.w_fc"
// STEP-SAME: %[[BWPROJ:[^:]*]]: tensor<16x8xf32> {tfm.name = "mlp.w_proj"
// STEP-NEXT: tfm.cast %[[BX]] : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// STEP-NEXT: tfm.cast %[[BWFC]] : (tensor<8x16xf32>) -> tensor<8x16xbf16>
// STEP-NEXT: tfm.cast %[[BWPROJ]] : (tensor<16x8xf32>) -> tensor<16x8xbf16>
// STEP: %[[DW:.*]] = tfm.matmul_wgrad {{.*}} : (tensor<2x4x16xbf16>, tensor<2x4x8xbf16>) -> tensor<16x8xbf16>
// STEP-NEXT: %{{.*}} = tfm.cast %[[DW]] : (tensor<16x8xbf16>) -> tensor<16x8xf32>
// STEP: tfm.layer_norm_grad {{.*}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// STEP: return {{.*}} : tensor<2x4x8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>
// STEP-LABEL: func.func @train_step
// STEP-SAME: %{{[^:]*}}: tensor<16x8xf32> {{{.*}}tfm.param = "wte"
// STEP: tfm.cross_entropy_grad {{.*}} -> tensor<2x4x16xf32>
// STEP: %[[DLM:.*]] = tfm.matmul_wgrad {{.*}} -> tensor<16x8xbf16>
// STEP: %[[DLM32:.*]] = tfm.cast %[[DLM]] : (tensor<16x8xbf16>) -> tensor<16x8xf32>
// STEP: %[[DEMB:.*]] = tfm.embedding_grad {{.*}} -> tensor<16x8xbf16>
// STEP: %[[DEMB32:.*]] = tfm.cast %[[DEMB]] : (tensor<16x8xbf16>) -> tensor<16x8xf32>
// STEP: %[[DWTE:.*]] = tfm.add {{.*}} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
// STEP: tfm.sum_squares
// STEP: tfm.adamw %{{.*}}, %[[DWTE]], {{.*}} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>)
// STEP-COUNT-4: tfm.adamw {{.*}} : (tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xf32>, tensor<f32>, tensor<i64>, tensor<f32>)
// STEP: tfm.adamw {{.*}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>, tensor<f32>)
// STEP-NOT: tfm.adamw
// The sampling entry returns the f32 logits the loss reads.
// STEP-LABEL: func.func @logits
// STEP-SAME: -> (tensor<2x4x16xf32> {tfm.output = "logits"})
// STEP: %[[L:.*]] = tfm.cast %{{.*}} : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
// STEP-NEXT: return %[[L]]

// HALF: module attributes {tfm.mixed_precision = "f16"}
// HALF: tfm.matmul {{.*}} -> tensor<2x4x16xf16>
