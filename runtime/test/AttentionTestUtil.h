//===- AttentionTestUtil.h - Shared helpers of the attention tests -*- C++
//-*-===//

#ifndef AUTOSHARD_RUNTIME_TEST_ATTENTIONTESTUTIL_H
#define AUTOSHARD_RUNTIME_TEST_ATTENTIONTESTUTIL_H

#include "autoshard/runtime/cpu/Attention.h"

#include <cmath>
#include <cstdint>

namespace autoshard::runtime::test {

/// An attention shape (q [batch, seqQ, heads, headDim], k/v [batch, seqK,
/// kvHeads, headDim]) with the usual 1/sqrt(headDim) scale.
inline cpu::AttentionShape makeAttentionShape(int64_t batch, int64_t seqQ,
                                              int64_t seqK, int64_t heads,
                                              int64_t kvHeads, int64_t headDim,
                                              bool causal) {
  cpu::AttentionShape s;
  s.batch = batch;
  s.seqQ = seqQ;
  s.seqK = seqK;
  s.heads = heads;
  s.kvHeads = kvHeads;
  s.headDim = headDim;
  s.causal = causal;
  s.scale = 1.0 / std::sqrt(static_cast<double>(headDim));
  return s;
}

} // namespace autoshard::runtime::test

#endif // AUTOSHARD_RUNTIME_TEST_ATTENTIONTESTUTIL_H
