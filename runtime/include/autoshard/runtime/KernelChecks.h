//===- KernelChecks.h - Shared checks of kernel binders ---------*- C++ -*-===//
//
// Every backend's binder of an op checks the instruction's operand and
// result types, shapes and attributes against the op (so a malformed
// artifact fails at load time, never with an out-of-bounds access) before it
// builds its kernel. Those checks do not depend on the device, so they live
// here, in the runtime core, shared by the CPU backend
// (runtime/lib/cpu_backend) and the CUDA backend (runtime/lib/cuda): per op,
// a function that validates a KernelSignature (failing through
// KernelSignature::fail, the message naming the instruction) and returns
// the sizes and attributes its kernel needs. What only one backend limits
// (its element types, a device's maximum sizes) stays with that backend's
// binder, after the shared check.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_KERNELCHECKS_H
#define AUTOSHARD_RUNTIME_KERNELCHECKS_H

#include "autoshard/runtime/Backend.h"
#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/SequencePositions.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autoshard::runtime::checks {

//===----------------------------------------------------------------------===//
// Operand checks
//===----------------------------------------------------------------------===//

/// "arg 1" / "result 0", for messages.
std::string argName(size_t i);
std::string resultName(size_t i);

/// Fails unless `got` equals `want`.
void expectType(const KernelSignature &sig, const TensorType &got,
                const TensorType &want, const std::string &what);
/// Fails unless result 0 is `want` (the message names "result 0").
void expectResult(const KernelSignature &sig, const TensorType &want);
/// Fails unless `got` is a scalar (rank 0) of `dtype`.
void expectScalar(const KernelSignature &sig, const TensorType &got,
                  DType dtype, const std::string &what);
/// Fails unless `got` has rank >= `rank`.
void expectRank(const KernelSignature &sig, const TensorType &got, size_t rank,
                const std::string &what);
/// Fails unless `got` has exactly rank `rank`.
void expectExactRank(const KernelSignature &sig, const TensorType &got,
                     size_t rank, const std::string &what);
/// Fails unless every result has the type of arg 0; returns its numel.
int64_t expectResultsLikeArg0(const KernelSignature &sig);
/// Fails unless every arg and result has the type of arg 0; returns numel.
int64_t expectAllLikeArg0(const KernelSignature &sig);
/// Product of shape[begin, end).
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);
/// A type with `dtype` and `shape`.
TensorType typeOf(DType dtype, std::vector<int64_t> shape);

/// Calls fn(I{}) with I = int32_t or int64_t for an i32/i64 `dtype` (every
/// backend takes both id types); fails naming `what` otherwise.
template <typename Fn>
BoundKernel withId(const KernelSignature &sig, DType dtype,
                   const std::string &what, Fn &&fn) {
  if (dtype == DType::I32)
    return fn(int32_t{});
  if (dtype == DType::I64)
    return fn(int64_t{});
  sig.fail(what + " must hold i32 or i64 ids, found " +
           std::string(dtypeName(dtype)));
}

/// Element-type dispatch over the float types a backend computes in: f32
/// and one other, `Wide` of dtype `wide` (the CPU's f64, the CUDA backend's
/// bf16); `backend` names the backend in messages.
template <typename Wide> struct FloatDispatch {
  DType wide;
  const char *backend;

  /// Calls fn(T{}) with T = float or Wide for such a `dtype`; fails naming
  /// `what` otherwise.
  template <typename Fn>
  BoundKernel operator()(const KernelSignature &sig, DType dtype,
                         const std::string &what, Fn &&fn) const {
    if (dtype == DType::F32)
      return fn(float{});
    if (dtype == wide)
      return fn(Wide{});
    sig.fail(what + " has element type " + std::string(dtypeName(dtype)) +
             "; the " + backend + " backend computes in f32 or " +
             std::string(dtypeName(wide)));
  }

  /// Binds a kernel of one float type T, that of the operand or result at
  /// `typed`: the bound kernel calls `run(T{}, Operands)`. Fails naming
  /// the slot when its type is neither f32 nor `wide`.
  template <typename Slot, typename Run>
  BoundKernel bind(const KernelSignature &sig, Slot typed, Run run) const {
    return bind(sig, typed, std::string(typed.name), std::move(run));
  }
  /// As above, the message naming `what` (a gradient op whose message
  /// names its forward operand: rope_grad's dy is "x").
  template <typename Slot, typename Run>
  BoundKernel bind(const KernelSignature &sig, Slot typed,
                   const std::string &what, Run run) const {
    OperandIndex index(sig);
    return (*this)(
        sig, sig.type(typed).dtype, what, [&](auto tag) -> BoundKernel {
          using T = decltype(tag);
          return [=](void *const *p) { run(T{}, Operands(index, p)); };
        });
  }

  /// Binds a kernel of float type T, that of `typed`, and id type I
  /// (int32_t or int64_t, withId), that of `ids`: the bound kernel calls
  /// `run(T{}, I{}, Operands)`. Checks T first; fails naming the slot.
  template <typename Slot, typename IdSlot, typename Run>
  BoundKernel bindWithIds(const KernelSignature &sig, Slot typed, IdSlot ids,
                          Run run) const {
    return bindWithIds(sig, typed, std::string(typed.name), ids,
                       std::move(run));
  }
  /// As above, the float type's message naming `what`.
  template <typename Slot, typename IdSlot, typename Run>
  BoundKernel bindWithIds(const KernelSignature &sig, Slot typed,
                          const std::string &what, IdSlot ids, Run run) const {
    OperandIndex index(sig);
    return (*this)(
        sig, sig.type(typed).dtype, what, [&](auto tag) -> BoundKernel {
          using T = decltype(tag);
          return withId(sig, sig.type(ids).dtype, std::string(ids.name),
                        [&](auto id) -> BoundKernel {
                          using I = decltype(id);
                          return [=](void *const *p) {
                            run(T{}, I{}, Operands(index, p));
                          };
                        });
        });
  }
};

/// moe_* (`Op`, OpTable.h): binds a kernel of the float type T of the
/// float operands, that of `floats`, and the id type I of Op::expert_ids:
/// the bound kernel calls `run(T{}, I{}, Operands)`. Fails naming "float
/// operands" or expert_ids.
template <typename Op, typename Wide, typename Slot, typename Run>
BoundKernel bindMoe(const KernelSignature &sig,
                    const FloatDispatch<Wide> &withFloat, Slot floats,
                    Run run) {
  return withFloat.bindWithIds(sig, floats, "float operands", Op::expert_ids,
                               std::move(run));
}

//===----------------------------------------------------------------------===//
// Elementwise and shape ops
//===----------------------------------------------------------------------===//

/// add / sub / mul: rhs's shape is a suffix of lhs's, out is like lhs.
struct BinaryShape {
  int64_t numel = 0;    ///< Elements of lhs and out.
  int64_t rhsNumel = 0; ///< Elements of rhs (repeated over lhs).
};
BinaryShape checkBinary(const KernelSignature &sig);

/// scale.
struct ScaleShape {
  int64_t numel = 0;
  double factor = 1.0;
};
ScaleShape checkScale(const KernelSignature &sig);

/// reduce_sum: returns the attribute `dims` (sorted, unique dims of x).
std::vector<int64_t> checkReduceSum(const KernelSignature &sig);
/// broadcast: returns the attribute `dims` (sorted, unique dims of the
/// result that x lacks).
std::vector<int64_t> checkBroadcast(const KernelSignature &sig);
/// reshape: returns the bytes to copy.
int64_t checkReshape(const KernelSignature &sig);

/// microbatch: rows `index, index + count, ...` of x.
struct MicrobatchShape {
  int64_t index = 0, count = 1;
  int64_t rows = 0;     ///< Rows of the result.
  int64_t rowBytes = 0; ///< Bytes of one row.
};
MicrobatchShape checkMicrobatch(const KernelSignature &sig);

//===----------------------------------------------------------------------===//
// Linear algebra, normalisation, optimizer
//===----------------------------------------------------------------------===//

/// matmul: out[b] = op(lhs[b]) op(rhs[b or shared]).
/// The epilogue of a fused matmul (rt-fuse-epilogues, docs/artifact-
/// format.md): `Add` takes a third argument of the result's type (it may be
/// the result buffer itself); `Bias` (epilogue = "bias") a third argument
/// [n] added to every row; `Gelu` (epilogue = "gelu") no third argument,
/// writes gelu(product) to result 0 and, with a second result, the product
/// (the pre-activation) to result 1; `GeluGrad` (epilogue =
/// "gelu_grad") a third argument x of the result's type and writes
/// gelu_grad(product, x). The gelu forms take gelu's `tanh_approx` flag.
enum class MatmulEpilogue { None, Add, Bias, Gelu, GeluGrad };
struct MatmulDims {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transposeLhs = false, transposeRhs = false;
  bool batchedRhs = false; ///< rhs has lhs's batch dims (else rank 2).
  MatmulEpilogue epilogue = MatmulEpilogue::None;
  bool tanhApprox = false;         ///< The gelu epilogues' variant.
  bool keepsPreActivation = false; ///< Gelu with two results.
};
MatmulDims checkMatmul(const KernelSignature &sig);

/// matmul_wgrad: dw [k, n] = x [rows, k]^T dy [rows, n].
struct MatmulWgradDims {
  int64_t rows = 0, k = 0, n = 0;
};
MatmulWgradDims checkMatmulWgrad(const KernelSignature &sig);

/// layer_norm / rms_norm and their gradients over x [..., hidden].
struct NormShape {
  int64_t rows = 0, hidden = 0;
  double epsilon = 0.0;
};
/// layer_norm (x, gamma, optional beta) / rms_norm (x, gamma).
NormShape checkNorm(const KernelSignature &sig);
/// layer_norm_grad (`withBeta`: results dx, dgamma, dbeta) / rms_norm_grad
/// (dx, dgamma); operands dy, x, gamma.
NormShape checkNormGrad(const KernelSignature &sig, bool withBeta);

/// sum_squares: each operand's element type (f32 or `wide`, the backend's
/// other float type; the message names `backend`) and element count.
struct SumSquaresTerm {
  DType dtype;
  int64_t numel = 0;
};
std::vector<SumSquaresTerm> checkSumSquares(const KernelSignature &sig,
                                            DType wide,
                                            std::string_view backend);
/// clip_coef: returns the attribute `max_norm` (> 0).
double checkClipCoef(const KernelSignature &sig);

/// adamw: param, grad, m, v alike; lr, step, grad_scale scalars.
struct AdamwShape {
  int64_t numel = 0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, weightDecay = 0.0;
};
AdamwShape checkAdamw(const KernelSignature &sig);

//===----------------------------------------------------------------------===//
// Embeddings, RoPE, dropout
//===----------------------------------------------------------------------===//

/// embedding / vocab_embedding (`vocabParallel`: a third operand, the i64
/// shard) and their gradients: ids [...], table [vocab, hidden].
struct EmbeddingShape {
  int64_t numIds = 0, vocab = 0, hidden = 0;
};
EmbeddingShape checkEmbedding(const KernelSignature &sig, bool vocabParallel);
EmbeddingShape checkEmbeddingGrad(const KernelSignature &sig,
                                  bool vocabParallel);

/// position_embedding (table [positions, hidden] -> [seqLen, hidden]) and
/// its gradient (dy [outer..., seqLen, hidden]).
/// `zigzagChunks`: the sequence order (SequencePositions.h; 0: original).
struct PositionEmbeddingShape {
  int64_t outer = 1, positions = 0, seqLen = 0, hidden = 0, zigzagChunks = 0;
};
/// The optional `zigzag_chunks` of a sequence of `seqLen` positions: 0 when
/// absent; fails unless even, >= 2 and dividing seqLen.
int64_t zigzagChunksOf(const KernelSignature &sig, int64_t seqLen);
PositionEmbeddingShape checkPositionEmbedding(const KernelSignature &sig);
PositionEmbeddingShape checkPositionEmbeddingGrad(const KernelSignature &sig);

/// rope / rope_grad (`grad`): x [batch, seq, heads, headDim].
struct RopeDims {
  int64_t batch = 0, seq = 0, heads = 0, headDim = 0;
  double theta = 10000.0;
  /// The whole sequence's length and order (SequencePositions.h).
  int64_t seqLen = 0, zigzagChunks = 0;
};
RopeDims checkRope(const KernelSignature &sig, bool grad);
/// rope_local / rope_local_grad: x [batch, seq, heads, headDim], shard (i64
/// scalar), `seq_len` the global length, a multiple of seq (`numShards`
/// blocks); the positions are shard * seq + 0..seq-1.
struct RopeLocalDims {
  RopeDims rope;
  int64_t seqLen = 0, numShards = 1;
};
RopeLocalDims checkRopeLocal(const KernelSignature &sig, bool grad);
/// The first position of block `shard` (checked against numShards).
int64_t ropeLocalOffset(const RopeLocalDims &d, int64_t shard);

/// dropout(_grad) and, with `local`, dropout_local(_grad): x, step, layer,
/// then one i64 shard operand per entry of `shardDims`.
struct DropoutShape {
  int64_t numel = 0;
  double rate = 0.0;
  int64_t site = 0;
  /// x's (local) shape, the global shape (x's own for dropout) and, for
  /// dropout_local, the sharded dims (strictly increasing).
  std::vector<int64_t> shape, globalShape, shardDims;
  /// The order of the sequence, the second-to-last dim (0: original).
  int64_t zigzagChunks = 0;
};
DropoutShape checkDropout(const KernelSignature &sig, bool local);

//===----------------------------------------------------------------------===//
// Attention and loss
//===----------------------------------------------------------------------===//

/// attention (q, k, v -> out, lse) / attention_grad (dout, q, k, v, out, lse
/// -> dq, dk, dv): q [batch, seqQ, heads, headDim], k and v [batch, seqK,
/// kvHeads, headDim], lse [batch, heads, seqQ] of any element type
/// (`lseType`; the backend's dispatch decides).
struct AttentionDims {
  int64_t batch = 0, seqQ = 0, seqK = 0, heads = 0, kvHeads = 0, headDim = 0;
  bool causal = false;
  double scale = 1.0;
  DType lseType = DType::F32;
  /// attention_block(_grad) only: the ring step and the number of chunks,
  /// and the zig-zag order of the sequence (SequencePositions.h; 0: none).
  int64_t kvStep = 0, numChunks = 1, zigzagChunks = 0;
};
AttentionDims checkAttention(const KernelSignature &sig);
AttentionDims checkAttentionGrad(const KernelSignature &sig);
/// attention_block (q, k, v, chunk -> out, lse) / attention_block_grad
/// (dout, q, k, v, out, lse, chunk -> dq, dk, dv): as attention(_grad) on
/// one block of a sequence cut into `num_chunks` chunks of seqQ == seqK
/// positions; `chunk` (i64 scalar, read at run time) is q's chunk, k and v
/// hold chunk (chunk - kv_step) mod num_chunks.
AttentionDims checkAttentionBlock(const KernelSignature &sig);
AttentionDims checkAttentionBlockGrad(const KernelSignature &sig);
/// The original positions of q's and k's rows for the chunk index read at
/// run time (chunk q holds permuted rows [chunk seqQ, (chunk + 1) seqQ)).
struct BlockPositions {
  SequencePositions q, k;
};
BlockPositions attentionBlockPositions(const AttentionDims &d, int64_t chunk);
/// attention_merge (out_a, lse_a, out_b, lse_b -> out, lse): out* [batch,
/// seq, heads, headDim], lse* [batch, heads, seq].
struct AttentionMergeDims {
  int64_t batch = 0, seq = 0, heads = 0, headDim = 0;
  DType lseType = DType::F32;
};
AttentionMergeDims checkAttentionMerge(const KernelSignature &sig);

/// cross_entropy(_grad): logits [..., classes], labels [...]; the first
/// `vocabSize` classes are real.
struct CrossEntropyDims {
  int64_t tokens = 0, classes = 0, vocabSize = 0;
};
CrossEntropyDims checkCrossEntropy(const KernelSignature &sig);
CrossEntropyDims checkCrossEntropyGrad(const KernelSignature &sig);

/// vocab_ce_*: local logits [..., classes] of a vocabulary of `vocabSize`
/// split over the tensor-parallel group; `numTokens` (vocab_ce_loss and
/// vocab_ce_grad) is the global token count of the mean.
struct VocabCeDims {
  int64_t tokens = 0, classes = 0, vocabSize = 0;
  int64_t numTokens = 0;
};
VocabCeDims checkVocabCeMax(const KernelSignature &sig);
VocabCeDims checkVocabCeStats(const KernelSignature &sig);
/// vocab_ce_loss: sets tokens (the local count) and numTokens only.
VocabCeDims checkVocabCeLoss(const KernelSignature &sig);
VocabCeDims checkVocabCeGrad(const KernelSignature &sig);

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// moe_*: expert_ids [batch, seq, topK], logits [batch, seq, numExperts],
/// expert buffers [numExperts, batch, capacity, hidden].
struct MoeDims {
  int64_t batch = 0, seq = 0, numExperts = 0, topK = 1, capacity = 1,
          hidden = 0;
  bool renormalize = false; ///< moe_router(_grad) only.
  /// moe_dispatch only: capacity is a dropless bound (a choice past it is
  /// an error, not a drop).
  bool dropless = false;
  /// dispatch / combine (and gradients): the sequence's zig-zag order
  /// (SequencePositions.h); slots are assigned in original token order.
  int64_t zigzagChunks = 0;
};
MoeDims checkMoeRouter(const KernelSignature &sig);
MoeDims checkMoeRouterGrad(const KernelSignature &sig);
MoeDims checkMoeAuxLoss(const KernelSignature &sig);
MoeDims checkMoeAuxLossGrad(const KernelSignature &sig);
MoeDims checkMoeDispatch(const KernelSignature &sig);
MoeDims checkMoeDispatchGrad(const KernelSignature &sig);
MoeDims checkMoeCombine(const KernelSignature &sig);
MoeDims checkMoeCombineGrad(const KernelSignature &sig);

//===----------------------------------------------------------------------===//
// Communication (`dist.*`)
//===----------------------------------------------------------------------===//

/// The communicator of the instruction's `axes`; fails clearly without the
/// job's communicators.
Communicator &groupOf(const KernelSignature &sig);
/// The dim attribute `name`, checked against `rank`.
size_t dimAttr(const KernelSignature &sig, const char *name, size_t rank);
/// The group-index attribute `name` (a root, a peer), checked against the
/// group's `size`.
int64_t groupIndexAttr(const KernelSignature &sig, const char *name,
                       int64_t size);
/// The attribute `reduction`.
ReduceOp reductionOf(const KernelSignature &sig);
/// The instruction's `axes`, checked against the mesh.
std::vector<std::string> meshAxes(const KernelSignature &sig);

/// Fails unless the backend reduces `dtype` (its message lists the
/// backend's types).
using ReducibleCheck = void (*)(const KernelSignature &sig, DType dtype);

/// A tensor viewed as [outer, G, inner] around one dim (inner in bytes):
/// block (o, g) is the g-th of G equal slices of that dim at outer index o.
struct CommBlocks {
  int64_t outer = 1, inner = 0;
};
/// Blocks of a tensor of `shape` split into `g` equal slices along `dim`.
CommBlocks blocksOf(const std::vector<int64_t> &shape, size_t dim, int64_t g,
                    int64_t elemBytes);

/// dist.all_reduce(_start).
struct AllReduceShape {
  Communicator *comm = nullptr;
  int64_t count = 0;
  int64_t bytes = 0;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
};
AllReduceShape checkAllReduce(const KernelSignature &sig,
                              ReducibleCheck reducible);

/// dist.all_gather(_start): each member's whole operand (`bytes`) is one
/// block row of the result; `blocks` is the operand as [outer, 1, inner].
struct AllGatherShape {
  Communicator *comm = nullptr;
  int64_t groupSize = 1;
  int64_t bytes = 0;
  CommBlocks blocks;
};
AllGatherShape checkAllGather(const KernelSignature &sig);

/// dist.reduce_scatter(_start): `blocks` is the operand as [outer, G,
/// inner]; each member receives `count` elements.
struct ReduceScatterShape {
  Communicator *comm = nullptr;
  int64_t groupSize = 1;
  int64_t bytes = 0; ///< The operand's.
  int64_t count = 0;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  CommBlocks blocks;
};
ReduceScatterShape checkReduceScatter(const KernelSignature &sig,
                                      ReducibleCheck reducible);

/// dist.all_to_all(_start): x as [outer, G, inner] around split_dim
/// (`split`), the result likewise around concat_dim (`concat`); each member
/// sends `pieceBytes` to each.
struct AllToAllShape {
  Communicator *comm = nullptr;
  int64_t groupSize = 1;
  int64_t bytes = 0; ///< The operand's (and the result's).
  int64_t pieceBytes = 0;
  CommBlocks split, concat;
  /// With `ragged_dim` (a ragged all-to-all): the operand and the result are
  /// slots (every index of the dims before `ragged_dim`) of `raggedRows`
  /// rows of `rowBytes` bytes each (that dim, then the dims after it);
  /// `raggedRows == 0` for a dense all-to-all.
  int64_t raggedRows = 0, rowBytes = 0;
};
AllToAllShape checkAllToAll(const KernelSignature &sig);

/// dist.broadcast(_start).
struct BroadcastShape {
  Communicator *comm = nullptr;
  int64_t root = 0;
  int64_t bytes = 0;
};
BroadcastShape checkCommBroadcast(const KernelSignature &sig);

/// dist.ppermute(_start): this member sends to `to` and receives from
/// `from` (-1: none; no source means zeros).
struct PpermuteShape {
  Communicator *comm = nullptr;
  int64_t from = -1, to = -1;
  int64_t bytes = 0;
};
PpermuteShape checkPpermute(const KernelSignature &sig);

/// dist.send(_start) (`send`: the operand goes to `peer`) /
/// dist.recv(_start) (the result comes from `peer`).
struct PeerShape {
  Communicator *comm = nullptr;
  int64_t peer = 0;
  int64_t bytes = 0;
};
PeerShape checkPeer(const KernelSignature &sig, bool send);

/// dist.shard_slice: block `index` of x as [outer, G, inner] around `dim`.
struct ShardSliceShape {
  int64_t groupSize = 1;
  int64_t index = 0;
  CommBlocks blocks;
  int64_t resultBytes = 0;
};
ShardSliceShape checkShardSlice(const KernelSignature &sig);
/// dist.axis_index: returns this rank's index in the group of `axes`.
int64_t checkAxisIndex(const KernelSignature &sig);

/// dist.pack / dist.unpack: `tensors` is the unpacked side, `flat` the 1-D
/// buffer, `what` names the tensors ("arg", "result"). `num_groups`
/// defaults to 1 and `scatter_dims` to none (rt-lower omits attributes at
/// their default). The layout is cpu/Pack.h's.
struct PackLayout {
  int64_t groups = 1;
  /// Per tensor, the dim split into `groups` blocks (0 when groups == 1).
  std::vector<int64_t> dims;
  int64_t total = 0; ///< Elements of the flat buffer.
};
PackLayout checkPack(const KernelSignature &sig,
                     const std::vector<TensorType> &tensors,
                     const TensorType &flat, const std::string &what);

} // namespace autoshard::runtime::checks

#endif // AUTOSHARD_RUNTIME_KERNELCHECKS_H
