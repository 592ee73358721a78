//===- Moe.cpp - CPU mixture-of-experts routing kernels -------------------===//

#include "autoshard/runtime/cpu/Moe.h"

#include "Check.h"
#include "Instantiate.h"
#include "Softmax.h"

#include <algorithm>
#include <vector>

namespace autoshard::runtime::cpu {
namespace {

void checkRouting(const char *op, const MoeShape &s) {
  detail::checkAtLeast(op, "batch", s.batch, 0);
  detail::checkAtLeast(op, "seq", s.seq, 0);
  detail::checkAtLeast(op, "num_experts", s.numExperts, 1);
  detail::checkAtLeast(op, "top_k", s.topK, 1);
  if (s.topK > s.numExperts)
    detail::fail(op, "top_k " + std::to_string(s.topK) +
                         " exceeds num_experts " +
                         std::to_string(s.numExperts));
}

void checkBuffers(const char *op, const MoeShape &s) {
  checkRouting(op, s);
  detail::checkAtLeast(op, "capacity", s.capacity, 1);
  detail::checkAtLeast(op, "hidden", s.hidden, 0);
}

/// Capacity slot of every (b, s, j) choice, or -1 when it is dropped: within
/// each sequence, choices take the next free slot of their expert in
/// (token, choice) order (see Moe.h). Checks the expert ids.
template <typename I>
std::vector<int64_t> assignSlots(const char *op, const I *ids,
                                 const MoeShape &s) {
  const int64_t perSeq = s.seq * s.topK;
  detail::checkIndices(op, "expert id", ids, s.batch * perSeq, s.numExperts);
  std::vector<int64_t> slots(s.batch * perSeq);
  std::vector<int64_t> used(s.numExperts);
  for (int64_t b = 0; b < s.batch; ++b) {
    std::fill(used.begin(), used.end(), 0);
    // Tokens in original order (row zigzagIndex(pos) holds position pos).
    for (int64_t pos = 0; pos < s.seq; ++pos) {
      const int64_t t = zigzagIndex(pos, s.seq, s.zigzagChunks);
      for (int64_t j = 0; j < s.topK; ++j) {
        const int64_t c = (b * s.seq + t) * s.topK + j;
        const int64_t slot = used[ids[c]]++;
        slots[c] = slot < s.capacity ? slot : -1;
      }
    }
    if (s.dropless)
      for (int64_t e = 0; e < s.numExperts; ++e)
        if (used[e] > s.capacity)
          throw MoeOverflowError(
              std::string(op) + ": sequence " + std::to_string(b) +
              " (of this rank's batch)" + " routes " + std::to_string(used[e]) +
              " tokens to expert " + std::to_string(e) +
              ", over the dropless bound of " + std::to_string(s.capacity) +
              (s.capacity == 1 ? " token" : " tokens") +
              " per expert and sequence (rebuild the model with a "
              "larger --max-tokens-per-expert, at most the sequence length " +
              std::to_string(s.seq) + ", which never overflows)");
  }
  return slots;
}

/// Element offset of (expert, b, slot, 0) in a [E, B, C, H] buffer.
int64_t bufferRow(const MoeShape &s, int64_t expert, int64_t b, int64_t slot) {
  return ((expert * s.batch + b) * s.capacity + slot) * s.hidden;
}

/// Calls fn(choice, token, bufferOffset) for every kept choice; choice
/// indexes gates/ids [B, S, K], token indexes x/y rows [B, S].
template <typename I, typename Fn>
void forEachKeptChoice(const char *op, const I *ids, const MoeShape &s, Fn fn) {
  const std::vector<int64_t> slots = assignSlots(op, ids, s);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t t = 0; t < s.seq; ++t)
      for (int64_t j = 0; j < s.topK; ++j) {
        const int64_t choice = (b * s.seq + t) * s.topK + j;
        if (slots[choice] >= 0)
          fn(choice, b * s.seq + t,
             bufferRow(s, ids[choice], b, slots[choice]));
      }
}

} // namespace

template <typename T, typename I>
void moeRouter(const T *logits, T *gates, I *expertIds, const MoeShape &shape,
               bool renormalize) {
  checkRouting("moe_router", shape);
  const int64_t e = shape.numExperts, k = shape.topK;
  std::vector<double> p(e);
  std::vector<bool> taken(e);
  for (int64_t t = 0; t < shape.batch * shape.seq; ++t) {
    detail::softmax(logits + t * e, e, p.data());
    std::fill(taken.begin(), taken.end(), false);
    double total = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      // Largest untaken probability; strict '>' keeps the lower index on
      // ties.
      int64_t best = -1;
      for (int64_t x = 0; x < e; ++x)
        if (!taken[x] && (best < 0 || p[x] > p[best]))
          best = x;
      taken[best] = true;
      expertIds[t * k + j] = static_cast<I>(best);
      total += p[best];
    }
    for (int64_t j = 0; j < k; ++j) {
      const double gate = p[expertIds[t * k + j]];
      gates[t * k + j] = static_cast<T>(renormalize ? gate / total : gate);
    }
  }
}

template <typename T, typename I>
void moeRouterGrad(const T *dgates, const T *logits, const I *expertIds,
                   T *dlogits, const MoeShape &shape, bool renormalize) {
  const char *op = "moe_router_grad";
  checkRouting(op, shape);
  const int64_t e = shape.numExperts, k = shape.topK;
  detail::checkIndices(op, "expert id", expertIds, shape.batch * shape.seq * k,
                       e);
  std::vector<double> p(e), dp(e);
  for (int64_t t = 0; t < shape.batch * shape.seq; ++t) {
    const I *ids = expertIds + t * k;
    const T *dg = dgates + t * k;
    detail::softmax(logits + t * e, e, p.data());
    std::fill(dp.begin(), dp.end(), 0.0);
    if (!renormalize) {
      for (int64_t j = 0; j < k; ++j)
        dp[ids[j]] += dg[j];
    } else {
      // g_j = p_j / Z, Z = sum_i p_i: dp_j = (dg_j - sum_i dg_i g_i) / Z.
      double z = 0.0;
      for (int64_t j = 0; j < k; ++j)
        z += p[ids[j]];
      double dot = 0.0;
      for (int64_t j = 0; j < k; ++j)
        dot += dg[j] * p[ids[j]] / z;
      for (int64_t j = 0; j < k; ++j)
        dp[ids[j]] += (dg[j] - dot) / z;
    }
    detail::softmaxBackward(p.data(), dp.data(), e, dlogits + t * e);
  }
}

namespace {
/// Per-sequence fraction f_e of routed (token, choice) pairs, [B, E].
template <typename I>
std::vector<double> routedFractions(const char *op, const I *ids,
                                    const MoeShape &s) {
  const int64_t perSeq = s.seq * s.topK;
  detail::checkIndices(op, "expert id", ids, s.batch * perSeq, s.numExperts);
  std::vector<double> f(s.batch * s.numExperts, 0.0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t c = b * perSeq; c < (b + 1) * perSeq; ++c)
      f[b * s.numExperts + ids[c]] += 1.0 / static_cast<double>(perSeq);
  return f;
}
} // namespace

template <typename T, typename I>
double moeAuxLoss(const T *logits, const I *expertIds, const MoeShape &shape) {
  const char *op = "moe_aux_loss";
  checkRouting(op, shape);
  detail::checkAtLeast(op, "batch", shape.batch, 1);
  detail::checkAtLeast(op, "seq", shape.seq, 1);
  const int64_t e = shape.numExperts;
  const std::vector<double> f = routedFractions(op, expertIds, shape);
  std::vector<double> p(e);
  double loss = 0.0;
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t t = 0; t < shape.seq; ++t) {
      detail::softmax(logits + (b * shape.seq + t) * e, e, p.data());
      for (int64_t x = 0; x < e; ++x)
        loss += f[b * e + x] * p[x];
    }
  // E * sum_e f_e * (sum_t p_te / S), averaged over B.
  return loss * static_cast<double>(e) /
         static_cast<double>(shape.seq * shape.batch);
}

template <typename T, typename I>
void moeAuxLossGrad(double dloss, const T *logits, const I *expertIds,
                    T *dlogits, const MoeShape &shape) {
  const char *op = "moe_aux_loss_grad";
  checkRouting(op, shape);
  detail::checkAtLeast(op, "batch", shape.batch, 1);
  detail::checkAtLeast(op, "seq", shape.seq, 1);
  const int64_t e = shape.numExperts;
  const std::vector<double> f = routedFractions(op, expertIds, shape);
  const double coef = dloss * static_cast<double>(e) /
                      static_cast<double>(shape.seq * shape.batch);
  std::vector<double> p(e), dp(e);
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t t = 0; t < shape.seq; ++t) {
      const int64_t row = (b * shape.seq + t) * e;
      detail::softmax(logits + row, e, p.data());
      for (int64_t x = 0; x < e; ++x)
        dp[x] = coef * f[b * e + x];
      detail::softmaxBackward(p.data(), dp.data(), e, dlogits + row);
    }
}

template <typename T, typename I>
void moeDispatch(const T *x, const I *expertIds, T *buf,
                 const MoeShape &shape) {
  checkBuffers("moe_dispatch", shape);
  const int64_t h = shape.hidden;
  std::fill(buf, buf + bufferRow(shape, shape.numExperts, 0, 0), T(0));
  forEachKeptChoice("moe_dispatch", expertIds, shape,
                    [&](int64_t, int64_t token, int64_t row) {
                      std::copy_n(x + token * h, h, buf + row);
                    });
}

template <typename T, typename I>
void moeDispatchGrad(const T *dbuf, const I *expertIds, T *dx,
                     const MoeShape &shape) {
  checkBuffers("moe_dispatch_grad", shape);
  const int64_t h = shape.hidden;
  std::fill(dx, dx + shape.batch * shape.seq * h, T(0));
  forEachKeptChoice("moe_dispatch_grad", expertIds, shape,
                    [&](int64_t, int64_t token, int64_t row) {
                      T *dst = dx + token * h;
                      for (int64_t i = 0; i < h; ++i)
                        dst[i] += dbuf[row + i];
                    });
}

template <typename T, typename I>
void moeCombine(const T *buf, const T *gates, const I *expertIds, T *y,
                const MoeShape &shape) {
  checkBuffers("moe_combine", shape);
  const int64_t h = shape.hidden;
  std::fill(y, y + shape.batch * shape.seq * h, T(0));
  forEachKeptChoice("moe_combine", expertIds, shape,
                    [&](int64_t choice, int64_t token, int64_t row) {
                      const T gate = gates[choice];
                      T *dst = y + token * h;
                      for (int64_t i = 0; i < h; ++i)
                        dst[i] += gate * buf[row + i];
                    });
}

template <typename T, typename I>
void moeCombineGrad(const T *dy, const T *buf, const T *gates,
                    const I *expertIds, T *dbuf, T *dgates,
                    const MoeShape &shape) {
  checkBuffers("moe_combine_grad", shape);
  const int64_t h = shape.hidden;
  std::fill(dbuf, dbuf + bufferRow(shape, shape.numExperts, 0, 0), T(0));
  std::fill(dgates, dgates + shape.batch * shape.seq * shape.topK, T(0));
  forEachKeptChoice("moe_combine_grad", expertIds, shape,
                    [&](int64_t choice, int64_t token, int64_t row) {
                      const T gate = gates[choice];
                      const T *src = dy + token * h;
                      T dot = T(0);
                      for (int64_t i = 0; i < h; ++i) {
                        dbuf[row + i] += gate * src[i];
                        dot += src[i] * buf[row + i];
                      }
                      dgates[choice] = dot;
                    });
}

#define INSTANTIATE(T, I)                                                      \
  template void moeRouter<T, I>(const T *, T *, I *, const MoeShape &, bool);  \
  template void moeRouterGrad<T, I>(const T *, const T *, const I *, T *,      \
                                    const MoeShape &, bool);                   \
  template double moeAuxLoss<T, I>(const T *, const I *, const MoeShape &);    \
  template void moeAuxLossGrad<T, I>(double, const T *, const I *, T *,        \
                                     const MoeShape &);                        \
  template void moeDispatch<T, I>(const T *, const I *, T *,                   \
                                  const MoeShape &);                           \
  template void moeDispatchGrad<T, I>(const T *, const I *, T *,               \
                                      const MoeShape &);                       \
  template void moeCombine<T, I>(const T *, const T *, const I *, T *,         \
                                 const MoeShape &);                            \
  template void moeCombineGrad<T, I>(const T *, const T *, const T *,          \
                                     const I *, T *, T *, const MoeShape &);
AUTOSHARD_FOR_EACH_FLOAT_AND_ID(INSTANTIATE)

} // namespace autoshard::runtime::cpu
