//===- CpuKernelChecks.cpp - Checked shapes as the CPU kernels' structs ---===//
//
// The operand checks themselves are backend-neutral (KernelChecks.h, in the
// runtime core); these convert what they return into the shape structs of
// the CPU kernels (autoshard/runtime/cpu/*.h).
//
//===----------------------------------------------------------------------===//

#include "CpuKernels.h"

namespace autoshard::runtime::cpu_kernels {

cpu::MatmulShape matmulShape(const MatmulDims &d) {
  return {d.batch, d.m, d.n, d.k, d.transposeLhs, d.transposeRhs, d.batchedRhs};
}

cpu::RopeShape ropeShape(const RopeDims &d) {
  cpu::RopeShape s{d.batch, d.seq, d.heads, d.headDim, d.theta};
  s.seqLen = d.seqLen;
  s.zigzagChunks = d.zigzagChunks;
  return s;
}

cpu::AttentionShape attentionShape(const AttentionDims &d) {
  // Positions: row 0 at 0 (attention_block sets its chunks').
  return {d.batch,   d.seqQ,   d.seqK,  d.heads, d.kvHeads,
          d.headDim, d.causal, d.scale, {},      {}};
}

cpu::CrossEntropyShape crossEntropyShape(const CrossEntropyDims &d) {
  return {d.tokens, d.classes, d.vocabSize};
}

cpu::VocabCeShape vocabCeShape(const VocabCeDims &d) {
  return {d.tokens, d.classes, d.vocabSize};
}

cpu::MoeShape moeShape(const MoeDims &d) {
  return {d.batch,    d.seq,    d.numExperts,   d.topK,
          d.capacity, d.hidden, d.zigzagChunks, d.dropless};
}

} // namespace autoshard::runtime::cpu_kernels
