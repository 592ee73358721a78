//===- Moe.h - CPU mixture-of-experts routing kernels -----------*- C++ -*-===//
//
// Top-k softmax routing, the Switch-Transformer load-balancing loss (Fedus,
// Zoph, Shazeer 2021) and capacity-based token dispatch/combine, all defined
// per sequence (DESIGN.md §5: every plan must route exactly as one device).
//
// Capacity slots: within sequence b, the (token s, choice j) pairs are visited
// in order s = 0..S-1, j = 0..K-1; each takes the next free slot of its
// expert; once an expert has `capacity` slots the pair is dropped (it
// contributes nothing to buf, y or any gradient). Unused slots are zero.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_MOE_H
#define AUTOSHARD_RUNTIME_CPU_MOE_H

#include "autoshard/runtime/SequencePositions.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace autoshard::runtime::cpu {

/// Shapes of the MoE ops: logits [batch, seq, numExperts]; gates and expert
/// ids [batch, seq, topK]; x and y [batch, seq, hidden]; expert buffers
/// [numExperts, batch, capacity, hidden]. Fields an op does not use are
/// ignored (e.g. hidden for the router).
struct MoeShape {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t numExperts = 0;
  int64_t topK = 1;
  int64_t capacity = 1;
  int64_t hidden = 0;
  /// > 0: the sequence is in zig-zag order of this many chunks
  /// (SequencePositions.h); capacity slots go to the tokens in the order of
  /// their original positions, so the same tokens are kept.
  int64_t zigzagChunks = 0;
  /// moe_dispatch: `capacity` bounds a dropless layer; a sequence routing
  /// more choices to one expert throws MoeOverflowError instead of dropping.
  bool dropless = false;
};

/// A dropless layer's bound exceeded: the message names the sequence, the
/// expert, its token count and the bound.
class MoeOverflowError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// tfm.moe_router: p = softmax(logits) over experts; expertIds = the topK
/// experts by p (descending, ties to the lower expert index); gates = their
/// p, divided by their sum when renormalize is set. Throws
/// std::invalid_argument unless 1 <= topK <= numExperts.
template <typename T, typename I>
void moeRouter(const T *logits, T *gates, I *expertIds, const MoeShape &shape,
               bool renormalize);

/// tfm.moe_router_grad: dlogits = d(gates)/d(logits)^T dgates with the ids
/// held fixed (top-k selection is piecewise constant).
template <typename T, typename I>
void moeRouterGrad(const T *dgates, const T *logits, const I *expertIds,
                   T *dlogits, const MoeShape &shape, bool renormalize);

/// tfm.moe_aux_loss: per sequence, f_e = (number of (token, choice) pairs
/// routed to e) / (seq * topK) and P_e = mean over tokens of softmax(logits)_e;
/// returns numExperts * sum_e f_e P_e averaged over the batch (1 for a
/// perfectly balanced router; the caller applies the loss coefficient).
/// Throws std::out_of_range naming an expert id outside [0, numExperts).
template <typename T, typename I>
double moeAuxLoss(const T *logits, const I *expertIds, const MoeShape &shape);

/// tfm.moe_aux_loss_grad: dlogits [batch, seq, numExperts]; f_e is a
/// constant (counts are not differentiable), so only P_e carries gradient.
template <typename T, typename I>
void moeAuxLossGrad(double dloss, const T *logits, const I *expertIds,
                    T *dlogits, const MoeShape &shape);

/// tfm.moe_dispatch: buf [numExperts, batch, capacity, hidden] receives x's
/// token rows at their capacity slots (see the file comment).
template <typename T, typename I>
void moeDispatch(const T *x, const I *expertIds, T *buf, const MoeShape &shape);

/// tfm.moe_dispatch_grad: dx [batch, seq, hidden] = sum over the token's kept
/// choices of its dbuf slot rows.
template <typename T, typename I>
void moeDispatchGrad(const T *dbuf, const I *expertIds, T *dx,
                     const MoeShape &shape);

/// tfm.moe_combine: y [batch, seq, hidden] = sum over kept choices j of
/// gates[b, s, j] * buf[expert, b, slot, :].
template <typename T, typename I>
void moeCombine(const T *buf, const T *gates, const I *expertIds, T *y,
                const MoeShape &shape);

/// tfm.moe_combine_grad: dbuf[expert, b, slot, :] = gate * dy[b, s, :] on
/// kept slots (zero elsewhere); dgates[b, s, j] = <dy[b, s, :], slot row>
/// (zero for dropped choices).
template <typename T, typename I>
void moeCombineGrad(const T *dy, const T *buf, const T *gates,
                    const I *expertIds, T *dbuf, T *dgates,
                    const MoeShape &shape);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_MOE_H
