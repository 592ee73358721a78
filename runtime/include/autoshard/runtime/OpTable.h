//===- OpTable.h - The runtime's kernel ABI (generated) ---------*- C++ -*-===//
//
// GENERATED from include/autoshard/Dialect/Rt/IR/RtKernels.td
// (the tfm and dist ODS) by cmake/gen_runtime_op_table.py; do not edit.
// The compiler build regenerates it whenever the ODS changes (target
// autoshard-runtime-op-table); a runtime-only build uses it as it is.
//
//===----------------------------------------------------------------------===//

// clang-format off

#ifndef AUTOSHARD_RUNTIME_OPTABLE_H
#define AUTOSHARD_RUNTIME_OPTABLE_H

#include "autoshard/runtime/OpAbi.h"

namespace autoshard::runtime {
namespace op_table_detail {
inline constexpr std::string_view kMatmulArgs[] = {"lhs", "rhs", "addend"};
inline constexpr std::string_view kMatmulResults[] = {"result", "preact"};
inline constexpr AttrSpec kMatmulAttrs[] = {
    {"transpose_lhs", AttrKind::Unit, false},
    {"transpose_rhs", AttrKind::Unit, false},
    {"epilogue", AttrKind::String, false},
    {"tanh_approx", AttrKind::Unit, false},
};
inline constexpr std::string_view kMatmulWgradArgs[] = {"x", "dy"};
inline constexpr std::string_view kMatmulWgradResults[] = {"dw"};
inline constexpr std::string_view kAddArgs[] = {"lhs", "rhs"};
inline constexpr std::string_view kAddResults[] = {"result"};
inline constexpr std::string_view kSubArgs[] = {"lhs", "rhs"};
inline constexpr std::string_view kSubResults[] = {"result"};
inline constexpr std::string_view kMulArgs[] = {"lhs", "rhs"};
inline constexpr std::string_view kMulResults[] = {"result"};
inline constexpr std::string_view kScaleArgs[] = {"x"};
inline constexpr std::string_view kScaleResults[] = {"result"};
inline constexpr AttrSpec kScaleAttrs[] = {
    {"factor", AttrKind::Float, true},
};
inline constexpr std::string_view kReduceSumArgs[] = {"x"};
inline constexpr std::string_view kReduceSumResults[] = {"result"};
inline constexpr AttrSpec kReduceSumAttrs[] = {
    {"dims", AttrKind::IntArray, true},
};
inline constexpr std::string_view kBroadcastArgs[] = {"x"};
inline constexpr std::string_view kBroadcastResults[] = {"result"};
inline constexpr AttrSpec kBroadcastAttrs[] = {
    {"dims", AttrKind::IntArray, true},
};
inline constexpr std::string_view kCastArgs[] = {"x"};
inline constexpr std::string_view kCastResults[] = {"result"};
inline constexpr std::string_view kEmbeddingArgs[] = {"ids", "table"};
inline constexpr std::string_view kEmbeddingResults[] = {"out"};
inline constexpr std::string_view kEmbeddingGradArgs[] = {"ids", "dy"};
inline constexpr std::string_view kEmbeddingGradResults[] = {"dtable"};
inline constexpr AttrSpec kEmbeddingGradAttrs[] = {
    {"num_embeddings", AttrKind::Int, true},
};
inline constexpr std::string_view kMicrobatchArgs[] = {"x"};
inline constexpr std::string_view kMicrobatchResults[] = {"result"};
inline constexpr AttrSpec kMicrobatchAttrs[] = {
    {"index", AttrKind::Int, true},
    {"count", AttrKind::Int, true},
};
inline constexpr std::string_view kPositionEmbeddingArgs[] = {"table"};
inline constexpr std::string_view kPositionEmbeddingResults[] = {"out"};
inline constexpr AttrSpec kPositionEmbeddingAttrs[] = {
    {"seq_len", AttrKind::Int, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kPositionEmbeddingGradArgs[] = {"dy"};
inline constexpr std::string_view kPositionEmbeddingGradResults[] = {"dtable"};
inline constexpr AttrSpec kPositionEmbeddingGradAttrs[] = {
    {"num_positions", AttrKind::Int, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kLayerNormArgs[] = {"x", "gamma", "beta"};
inline constexpr std::string_view kLayerNormResults[] = {"y"};
inline constexpr AttrSpec kLayerNormAttrs[] = {
    {"epsilon", AttrKind::Float, true},
};
inline constexpr std::string_view kLayerNormGradArgs[] = {"dy", "x", "gamma"};
inline constexpr std::string_view kLayerNormGradResults[] = {"dx", "dgamma", "dbeta"};
inline constexpr AttrSpec kLayerNormGradAttrs[] = {
    {"epsilon", AttrKind::Float, true},
};
inline constexpr std::string_view kRmsNormArgs[] = {"x", "gamma"};
inline constexpr std::string_view kRmsNormResults[] = {"y"};
inline constexpr AttrSpec kRmsNormAttrs[] = {
    {"epsilon", AttrKind::Float, true},
};
inline constexpr std::string_view kRmsNormGradArgs[] = {"dy", "x", "gamma"};
inline constexpr std::string_view kRmsNormGradResults[] = {"dx", "dgamma"};
inline constexpr AttrSpec kRmsNormGradAttrs[] = {
    {"epsilon", AttrKind::Float, true},
};
inline constexpr std::string_view kGeluArgs[] = {"x"};
inline constexpr std::string_view kGeluResults[] = {"y"};
inline constexpr AttrSpec kGeluAttrs[] = {
    {"tanh_approx", AttrKind::Unit, false},
};
inline constexpr std::string_view kGeluGradArgs[] = {"dy", "x"};
inline constexpr std::string_view kGeluGradResults[] = {"dx"};
inline constexpr AttrSpec kGeluGradAttrs[] = {
    {"tanh_approx", AttrKind::Unit, false},
};
inline constexpr std::string_view kSiluArgs[] = {"x"};
inline constexpr std::string_view kSiluResults[] = {"y"};
inline constexpr std::string_view kSiluGradArgs[] = {"dy", "x"};
inline constexpr std::string_view kSiluGradResults[] = {"dx"};
inline constexpr std::string_view kSwigluArgs[] = {"gate", "up"};
inline constexpr std::string_view kSwigluResults[] = {"y"};
inline constexpr std::string_view kSwigluGradArgs[] = {"dy", "gate", "up"};
inline constexpr std::string_view kSwigluGradResults[] = {"dgate", "dup"};
inline constexpr std::string_view kRopeArgs[] = {"x"};
inline constexpr std::string_view kRopeResults[] = {"y"};
inline constexpr AttrSpec kRopeAttrs[] = {
    {"theta", AttrKind::Float, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kRopeGradArgs[] = {"dy"};
inline constexpr std::string_view kRopeGradResults[] = {"dx"};
inline constexpr AttrSpec kRopeGradAttrs[] = {
    {"theta", AttrKind::Float, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kRopeLocalArgs[] = {"x", "shard"};
inline constexpr std::string_view kRopeLocalResults[] = {"y"};
inline constexpr AttrSpec kRopeLocalAttrs[] = {
    {"theta", AttrKind::Float, true},
    {"seq_len", AttrKind::Int, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kRopeLocalGradArgs[] = {"dy", "shard"};
inline constexpr std::string_view kRopeLocalGradResults[] = {"dx"};
inline constexpr AttrSpec kRopeLocalGradAttrs[] = {
    {"theta", AttrKind::Float, true},
    {"seq_len", AttrKind::Int, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kReshapeArgs[] = {"x"};
inline constexpr std::string_view kReshapeResults[] = {"y"};
inline constexpr std::string_view kDropoutArgs[] = {"x", "step", "layer"};
inline constexpr std::string_view kDropoutResults[] = {"y"};
inline constexpr AttrSpec kDropoutAttrs[] = {
    {"rate", AttrKind::Float, true},
    {"site", AttrKind::Int, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kDropoutGradArgs[] = {"dy", "step", "layer"};
inline constexpr std::string_view kDropoutGradResults[] = {"dx"};
inline constexpr AttrSpec kDropoutGradAttrs[] = {
    {"rate", AttrKind::Float, true},
    {"site", AttrKind::Int, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kDropoutLocalArgs[] = {"x", "step", "layer", "shards"};
inline constexpr std::string_view kDropoutLocalResults[] = {"y"};
inline constexpr AttrSpec kDropoutLocalAttrs[] = {
    {"rate", AttrKind::Float, true},
    {"site", AttrKind::Int, true},
    {"global_shape", AttrKind::IntArray, true},
    {"shard_dims", AttrKind::IntArray, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kDropoutLocalGradArgs[] = {"dy", "step", "layer", "shards"};
inline constexpr std::string_view kDropoutLocalGradResults[] = {"dx"};
inline constexpr AttrSpec kDropoutLocalGradAttrs[] = {
    {"rate", AttrKind::Float, true},
    {"site", AttrKind::Int, true},
    {"global_shape", AttrKind::IntArray, true},
    {"shard_dims", AttrKind::IntArray, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kAttentionArgs[] = {"q", "k", "v"};
inline constexpr std::string_view kAttentionResults[] = {"out", "lse"};
inline constexpr AttrSpec kAttentionAttrs[] = {
    {"causal", AttrKind::Unit, false},
    {"scale", AttrKind::Float, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kAttentionGradArgs[] = {"dout", "q", "k", "v", "out", "lse"};
inline constexpr std::string_view kAttentionGradResults[] = {"dq", "dk", "dv"};
inline constexpr AttrSpec kAttentionGradAttrs[] = {
    {"causal", AttrKind::Unit, false},
    {"scale", AttrKind::Float, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kAttentionBlockArgs[] = {"q", "k", "v", "chunk"};
inline constexpr std::string_view kAttentionBlockResults[] = {"out", "lse"};
inline constexpr AttrSpec kAttentionBlockAttrs[] = {
    {"causal", AttrKind::Unit, false},
    {"scale", AttrKind::Float, true},
    {"kv_step", AttrKind::Int, true},
    {"num_chunks", AttrKind::Int, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kAttentionBlockGradArgs[] = {"dout", "q", "k", "v", "out", "lse", "chunk"};
inline constexpr std::string_view kAttentionBlockGradResults[] = {"dq", "dk", "dv"};
inline constexpr AttrSpec kAttentionBlockGradAttrs[] = {
    {"causal", AttrKind::Unit, false},
    {"scale", AttrKind::Float, true},
    {"kv_step", AttrKind::Int, true},
    {"num_chunks", AttrKind::Int, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kAttentionMergeArgs[] = {"out_a", "lse_a", "out_b", "lse_b"};
inline constexpr std::string_view kAttentionMergeResults[] = {"out", "lse"};
inline constexpr std::string_view kCrossEntropyArgs[] = {"logits", "labels"};
inline constexpr std::string_view kCrossEntropyResults[] = {"loss"};
inline constexpr AttrSpec kCrossEntropyAttrs[] = {
    {"vocab_size", AttrKind::Int, false},
};
inline constexpr std::string_view kCrossEntropyGradArgs[] = {"dloss", "logits", "labels"};
inline constexpr std::string_view kCrossEntropyGradResults[] = {"dlogits"};
inline constexpr AttrSpec kCrossEntropyGradAttrs[] = {
    {"vocab_size", AttrKind::Int, false},
};
inline constexpr std::string_view kMoeRouterArgs[] = {"logits"};
inline constexpr std::string_view kMoeRouterResults[] = {"gates", "expert_ids"};
inline constexpr AttrSpec kMoeRouterAttrs[] = {
    {"top_k", AttrKind::Int, true},
    {"renormalize", AttrKind::Unit, false},
};
inline constexpr std::string_view kMoeRouterGradArgs[] = {"dgates", "logits", "expert_ids"};
inline constexpr std::string_view kMoeRouterGradResults[] = {"dlogits"};
inline constexpr AttrSpec kMoeRouterGradAttrs[] = {
    {"renormalize", AttrKind::Unit, false},
};
inline constexpr std::string_view kMoeAuxLossArgs[] = {"logits", "expert_ids"};
inline constexpr std::string_view kMoeAuxLossResults[] = {"loss"};
inline constexpr std::string_view kMoeAuxLossGradArgs[] = {"dloss", "logits", "expert_ids"};
inline constexpr std::string_view kMoeAuxLossGradResults[] = {"dlogits"};
inline constexpr std::string_view kMoeDispatchArgs[] = {"x", "expert_ids"};
inline constexpr std::string_view kMoeDispatchResults[] = {"buf"};
inline constexpr AttrSpec kMoeDispatchAttrs[] = {
    {"num_experts", AttrKind::Int, true},
    {"capacity", AttrKind::Int, true},
    {"dropless", AttrKind::Unit, false},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kMoeDispatchGradArgs[] = {"dbuf", "expert_ids"};
inline constexpr std::string_view kMoeDispatchGradResults[] = {"dx"};
inline constexpr AttrSpec kMoeDispatchGradAttrs[] = {
    {"capacity", AttrKind::Int, true},
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kMoeCombineArgs[] = {"buf", "gates", "expert_ids"};
inline constexpr std::string_view kMoeCombineResults[] = {"y"};
inline constexpr AttrSpec kMoeCombineAttrs[] = {
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kMoeCombineGradArgs[] = {"dy", "buf", "gates", "expert_ids"};
inline constexpr std::string_view kMoeCombineGradResults[] = {"dbuf", "dgates"};
inline constexpr AttrSpec kMoeCombineGradAttrs[] = {
    {"zigzag_chunks", AttrKind::Int, false},
};
inline constexpr std::string_view kSumSquaresArgs[] = {"inputs"};
inline constexpr std::string_view kSumSquaresResults[] = {"result"};
inline constexpr std::string_view kClipCoefArgs[] = {"sumsq"};
inline constexpr std::string_view kClipCoefResults[] = {"coef", "norm"};
inline constexpr AttrSpec kClipCoefAttrs[] = {
    {"max_norm", AttrKind::Float, true},
};
inline constexpr std::string_view kAdamwArgs[] = {"param", "grad", "m", "v", "lr", "step", "grad_scale"};
inline constexpr std::string_view kAdamwResults[] = {"new_param", "new_m", "new_v"};
inline constexpr AttrSpec kAdamwAttrs[] = {
    {"beta1", AttrKind::Float, true},
    {"beta2", AttrKind::Float, true},
    {"epsilon", AttrKind::Float, true},
    {"weight_decay", AttrKind::Float, true},
};
inline constexpr std::string_view kVocabEmbeddingArgs[] = {"ids", "table", "shard"};
inline constexpr std::string_view kVocabEmbeddingResults[] = {"out"};
inline constexpr std::string_view kVocabEmbeddingGradArgs[] = {"ids", "dy", "shard"};
inline constexpr std::string_view kVocabEmbeddingGradResults[] = {"dtable"};
inline constexpr AttrSpec kVocabEmbeddingGradAttrs[] = {
    {"num_embeddings", AttrKind::Int, true},
};
inline constexpr std::string_view kVocabCeMaxArgs[] = {"logits", "shard"};
inline constexpr std::string_view kVocabCeMaxResults[] = {"max"};
inline constexpr AttrSpec kVocabCeMaxAttrs[] = {
    {"vocab_size", AttrKind::Int, true},
};
inline constexpr std::string_view kVocabCeStatsArgs[] = {"logits", "labels", "max", "shard"};
inline constexpr std::string_view kVocabCeStatsResults[] = {"stats"};
inline constexpr AttrSpec kVocabCeStatsAttrs[] = {
    {"vocab_size", AttrKind::Int, true},
};
inline constexpr std::string_view kVocabCeLossArgs[] = {"stats", "max"};
inline constexpr std::string_view kVocabCeLossResults[] = {"loss"};
inline constexpr AttrSpec kVocabCeLossAttrs[] = {
    {"num_tokens", AttrKind::Int, true},
};
inline constexpr std::string_view kVocabCeGradArgs[] = {"dloss", "logits", "labels", "max", "stats", "shard"};
inline constexpr std::string_view kVocabCeGradResults[] = {"dlogits"};
inline constexpr AttrSpec kVocabCeGradAttrs[] = {
    {"vocab_size", AttrKind::Int, true},
    {"num_tokens", AttrKind::Int, true},
};
inline constexpr std::string_view kDistAllGatherArgs[] = {"input"};
inline constexpr std::string_view kDistAllGatherResults[] = {"result"};
inline constexpr AttrSpec kDistAllGatherAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"gather_dim", AttrKind::Int, true},
};
inline constexpr std::string_view kDistAllReduceArgs[] = {"input"};
inline constexpr std::string_view kDistAllReduceResults[] = {"result"};
inline constexpr AttrSpec kDistAllReduceAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"reduction", AttrKind::String, true},
};
inline constexpr std::string_view kDistAllToAllArgs[] = {"input"};
inline constexpr std::string_view kDistAllToAllResults[] = {"result"};
inline constexpr AttrSpec kDistAllToAllAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"split_dim", AttrKind::Int, true},
    {"concat_dim", AttrKind::Int, true},
    {"ragged_dim", AttrKind::Int, false},
};
inline constexpr std::string_view kDistBroadcastArgs[] = {"input"};
inline constexpr std::string_view kDistBroadcastResults[] = {"result"};
inline constexpr AttrSpec kDistBroadcastAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"root", AttrKind::Int, true},
};
inline constexpr std::string_view kDistPpermuteArgs[] = {"input"};
inline constexpr std::string_view kDistPpermuteResults[] = {"result"};
inline constexpr AttrSpec kDistPpermuteAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"pairs", AttrKind::IntArray, true},
};
inline constexpr std::string_view kDistReduceScatterArgs[] = {"input"};
inline constexpr std::string_view kDistReduceScatterResults[] = {"result"};
inline constexpr AttrSpec kDistReduceScatterAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"scatter_dim", AttrKind::Int, true},
    {"reduction", AttrKind::String, true},
};
inline constexpr std::string_view kDistAllGatherStartArgs[] = {"input"};
inline constexpr std::string_view kDistAllGatherStartResults[] = {"result"};
inline constexpr AttrSpec kDistAllGatherStartAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"gather_dim", AttrKind::Int, true},
    {"handle", AttrKind::Int, true},
};
inline constexpr std::string_view kDistAllReduceStartArgs[] = {"input"};
inline constexpr std::string_view kDistAllReduceStartResults[] = {"result"};
inline constexpr AttrSpec kDistAllReduceStartAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"reduction", AttrKind::String, true},
    {"handle", AttrKind::Int, true},
};
inline constexpr std::string_view kDistAllToAllStartArgs[] = {"input"};
inline constexpr std::string_view kDistAllToAllStartResults[] = {"result"};
inline constexpr AttrSpec kDistAllToAllStartAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"split_dim", AttrKind::Int, true},
    {"concat_dim", AttrKind::Int, true},
    {"ragged_dim", AttrKind::Int, false},
    {"handle", AttrKind::Int, true},
};
inline constexpr std::string_view kDistBroadcastStartArgs[] = {"input"};
inline constexpr std::string_view kDistBroadcastStartResults[] = {"result"};
inline constexpr AttrSpec kDistBroadcastStartAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"root", AttrKind::Int, true},
    {"handle", AttrKind::Int, true},
};
inline constexpr std::string_view kDistPpermuteStartArgs[] = {"input"};
inline constexpr std::string_view kDistPpermuteStartResults[] = {"result"};
inline constexpr AttrSpec kDistPpermuteStartAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"pairs", AttrKind::IntArray, true},
    {"handle", AttrKind::Int, true},
};
inline constexpr std::string_view kDistReduceScatterStartArgs[] = {"input"};
inline constexpr std::string_view kDistReduceScatterStartResults[] = {"result"};
inline constexpr AttrSpec kDistReduceScatterStartAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"scatter_dim", AttrKind::Int, true},
    {"reduction", AttrKind::String, true},
    {"handle", AttrKind::Int, true},
};
inline constexpr std::string_view kDistSendArgs[] = {"input"};
inline constexpr AttrSpec kDistSendAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"peer", AttrKind::Int, true},
};
inline constexpr std::string_view kDistSendStartArgs[] = {"input"};
inline constexpr AttrSpec kDistSendStartAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"peer", AttrKind::Int, true},
    {"handle", AttrKind::Int, true},
};
inline constexpr std::string_view kDistRecvResults[] = {"result"};
inline constexpr AttrSpec kDistRecvAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"peer", AttrKind::Int, true},
};
inline constexpr std::string_view kDistRecvStartResults[] = {"result"};
inline constexpr AttrSpec kDistRecvStartAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"peer", AttrKind::Int, true},
    {"handle", AttrKind::Int, true},
};
inline constexpr std::string_view kDistWaitArgs[] = {"buffers"};
inline constexpr std::string_view kDistWaitResults[] = {"result"};
inline constexpr AttrSpec kDistWaitAttrs[] = {
    {"handle", AttrKind::Int, true},
};
inline constexpr std::string_view kDistShardSliceArgs[] = {"input"};
inline constexpr std::string_view kDistShardSliceResults[] = {"result"};
inline constexpr AttrSpec kDistShardSliceAttrs[] = {
    {"axes", AttrKind::StringArray, true},
    {"dim", AttrKind::Int, true},
};
inline constexpr std::string_view kDistAxisIndexResults[] = {"result"};
inline constexpr AttrSpec kDistAxisIndexAttrs[] = {
    {"axes", AttrKind::StringArray, true},
};
inline constexpr std::string_view kDistPackArgs[] = {"inputs"};
inline constexpr std::string_view kDistPackResults[] = {"result"};
inline constexpr AttrSpec kDistPackAttrs[] = {
    {"num_groups", AttrKind::Int, false},
    {"scatter_dims", AttrKind::IntArray, false},
};
inline constexpr std::string_view kDistUnpackArgs[] = {"input"};
inline constexpr std::string_view kDistUnpackResults[] = {"results"};
inline constexpr AttrSpec kDistUnpackAttrs[] = {
    {"num_groups", AttrKind::Int, false},
    {"scatter_dims", AttrKind::IntArray, false},
};
} // namespace op_table_detail

/// Every kernel an artifact may name: the tfm ops in TfmOps.td order,
/// then the dist ops in DistOps.td order.
inline constexpr OpSpec kOpTable[] = {
    {"matmul", {op_table_detail::kMatmulArgs, 3}, 2, 3,
     {op_table_detail::kMatmulResults, 2}, 1, 2,
     {op_table_detail::kMatmulAttrs, 4}},
    {"matmul_wgrad", {op_table_detail::kMatmulWgradArgs, 2}, 2, 2,
     {op_table_detail::kMatmulWgradResults, 1}, 1, 1,
     {}},
    {"add", {op_table_detail::kAddArgs, 2}, 2, 2,
     {op_table_detail::kAddResults, 1}, 1, 1,
     {}},
    {"sub", {op_table_detail::kSubArgs, 2}, 2, 2,
     {op_table_detail::kSubResults, 1}, 1, 1,
     {}},
    {"mul", {op_table_detail::kMulArgs, 2}, 2, 2,
     {op_table_detail::kMulResults, 1}, 1, 1,
     {}},
    {"scale", {op_table_detail::kScaleArgs, 1}, 1, 1,
     {op_table_detail::kScaleResults, 1}, 1, 1,
     {op_table_detail::kScaleAttrs, 1}},
    {"reduce_sum", {op_table_detail::kReduceSumArgs, 1}, 1, 1,
     {op_table_detail::kReduceSumResults, 1}, 1, 1,
     {op_table_detail::kReduceSumAttrs, 1}},
    {"broadcast", {op_table_detail::kBroadcastArgs, 1}, 1, 1,
     {op_table_detail::kBroadcastResults, 1}, 1, 1,
     {op_table_detail::kBroadcastAttrs, 1}},
    {"cast", {op_table_detail::kCastArgs, 1}, 1, 1,
     {op_table_detail::kCastResults, 1}, 1, 1,
     {}},
    {"embedding", {op_table_detail::kEmbeddingArgs, 2}, 2, 2,
     {op_table_detail::kEmbeddingResults, 1}, 1, 1,
     {}},
    {"embedding_grad", {op_table_detail::kEmbeddingGradArgs, 2}, 2, 2,
     {op_table_detail::kEmbeddingGradResults, 1}, 1, 1,
     {op_table_detail::kEmbeddingGradAttrs, 1}},
    {"microbatch", {op_table_detail::kMicrobatchArgs, 1}, 1, 1,
     {op_table_detail::kMicrobatchResults, 1}, 1, 1,
     {op_table_detail::kMicrobatchAttrs, 2}},
    {"position_embedding", {op_table_detail::kPositionEmbeddingArgs, 1}, 1, 1,
     {op_table_detail::kPositionEmbeddingResults, 1}, 1, 1,
     {op_table_detail::kPositionEmbeddingAttrs, 2}},
    {"position_embedding_grad", {op_table_detail::kPositionEmbeddingGradArgs, 1}, 1, 1,
     {op_table_detail::kPositionEmbeddingGradResults, 1}, 1, 1,
     {op_table_detail::kPositionEmbeddingGradAttrs, 2}},
    {"layer_norm", {op_table_detail::kLayerNormArgs, 3}, 2, 3,
     {op_table_detail::kLayerNormResults, 1}, 1, 1,
     {op_table_detail::kLayerNormAttrs, 1}},
    {"layer_norm_grad", {op_table_detail::kLayerNormGradArgs, 3}, 3, 3,
     {op_table_detail::kLayerNormGradResults, 3}, 3, 3,
     {op_table_detail::kLayerNormGradAttrs, 1}},
    {"rms_norm", {op_table_detail::kRmsNormArgs, 2}, 2, 2,
     {op_table_detail::kRmsNormResults, 1}, 1, 1,
     {op_table_detail::kRmsNormAttrs, 1}},
    {"rms_norm_grad", {op_table_detail::kRmsNormGradArgs, 3}, 3, 3,
     {op_table_detail::kRmsNormGradResults, 2}, 2, 2,
     {op_table_detail::kRmsNormGradAttrs, 1}},
    {"gelu", {op_table_detail::kGeluArgs, 1}, 1, 1,
     {op_table_detail::kGeluResults, 1}, 1, 1,
     {op_table_detail::kGeluAttrs, 1}},
    {"gelu_grad", {op_table_detail::kGeluGradArgs, 2}, 2, 2,
     {op_table_detail::kGeluGradResults, 1}, 1, 1,
     {op_table_detail::kGeluGradAttrs, 1}},
    {"silu", {op_table_detail::kSiluArgs, 1}, 1, 1,
     {op_table_detail::kSiluResults, 1}, 1, 1,
     {}},
    {"silu_grad", {op_table_detail::kSiluGradArgs, 2}, 2, 2,
     {op_table_detail::kSiluGradResults, 1}, 1, 1,
     {}},
    {"swiglu", {op_table_detail::kSwigluArgs, 2}, 2, 2,
     {op_table_detail::kSwigluResults, 1}, 1, 1,
     {}},
    {"swiglu_grad", {op_table_detail::kSwigluGradArgs, 3}, 3, 3,
     {op_table_detail::kSwigluGradResults, 2}, 2, 2,
     {}},
    {"rope", {op_table_detail::kRopeArgs, 1}, 1, 1,
     {op_table_detail::kRopeResults, 1}, 1, 1,
     {op_table_detail::kRopeAttrs, 2}},
    {"rope_grad", {op_table_detail::kRopeGradArgs, 1}, 1, 1,
     {op_table_detail::kRopeGradResults, 1}, 1, 1,
     {op_table_detail::kRopeGradAttrs, 2}},
    {"rope_local", {op_table_detail::kRopeLocalArgs, 2}, 2, 2,
     {op_table_detail::kRopeLocalResults, 1}, 1, 1,
     {op_table_detail::kRopeLocalAttrs, 3}},
    {"rope_local_grad", {op_table_detail::kRopeLocalGradArgs, 2}, 2, 2,
     {op_table_detail::kRopeLocalGradResults, 1}, 1, 1,
     {op_table_detail::kRopeLocalGradAttrs, 3}},
    {"reshape", {op_table_detail::kReshapeArgs, 1}, 1, 1,
     {op_table_detail::kReshapeResults, 1}, 1, 1,
     {}},
    {"dropout", {op_table_detail::kDropoutArgs, 3}, 3, 3,
     {op_table_detail::kDropoutResults, 1}, 1, 1,
     {op_table_detail::kDropoutAttrs, 3}},
    {"dropout_grad", {op_table_detail::kDropoutGradArgs, 3}, 3, 3,
     {op_table_detail::kDropoutGradResults, 1}, 1, 1,
     {op_table_detail::kDropoutGradAttrs, 3}},
    {"dropout_local", {op_table_detail::kDropoutLocalArgs, 4}, 3, -1,
     {op_table_detail::kDropoutLocalResults, 1}, 1, 1,
     {op_table_detail::kDropoutLocalAttrs, 5}},
    {"dropout_local_grad", {op_table_detail::kDropoutLocalGradArgs, 4}, 3, -1,
     {op_table_detail::kDropoutLocalGradResults, 1}, 1, 1,
     {op_table_detail::kDropoutLocalGradAttrs, 5}},
    {"attention", {op_table_detail::kAttentionArgs, 3}, 3, 3,
     {op_table_detail::kAttentionResults, 2}, 2, 2,
     {op_table_detail::kAttentionAttrs, 3}},
    {"attention_grad", {op_table_detail::kAttentionGradArgs, 6}, 6, 6,
     {op_table_detail::kAttentionGradResults, 3}, 3, 3,
     {op_table_detail::kAttentionGradAttrs, 3}},
    {"attention_block", {op_table_detail::kAttentionBlockArgs, 4}, 4, 4,
     {op_table_detail::kAttentionBlockResults, 2}, 2, 2,
     {op_table_detail::kAttentionBlockAttrs, 5}},
    {"attention_block_grad", {op_table_detail::kAttentionBlockGradArgs, 7}, 7, 7,
     {op_table_detail::kAttentionBlockGradResults, 3}, 3, 3,
     {op_table_detail::kAttentionBlockGradAttrs, 5}},
    {"attention_merge", {op_table_detail::kAttentionMergeArgs, 4}, 4, 4,
     {op_table_detail::kAttentionMergeResults, 2}, 2, 2,
     {}},
    {"cross_entropy", {op_table_detail::kCrossEntropyArgs, 2}, 2, 2,
     {op_table_detail::kCrossEntropyResults, 1}, 1, 1,
     {op_table_detail::kCrossEntropyAttrs, 1}},
    {"cross_entropy_grad", {op_table_detail::kCrossEntropyGradArgs, 3}, 3, 3,
     {op_table_detail::kCrossEntropyGradResults, 1}, 1, 1,
     {op_table_detail::kCrossEntropyGradAttrs, 1}},
    {"moe_router", {op_table_detail::kMoeRouterArgs, 1}, 1, 1,
     {op_table_detail::kMoeRouterResults, 2}, 2, 2,
     {op_table_detail::kMoeRouterAttrs, 2}},
    {"moe_router_grad", {op_table_detail::kMoeRouterGradArgs, 3}, 3, 3,
     {op_table_detail::kMoeRouterGradResults, 1}, 1, 1,
     {op_table_detail::kMoeRouterGradAttrs, 1}},
    {"moe_aux_loss", {op_table_detail::kMoeAuxLossArgs, 2}, 2, 2,
     {op_table_detail::kMoeAuxLossResults, 1}, 1, 1,
     {}},
    {"moe_aux_loss_grad", {op_table_detail::kMoeAuxLossGradArgs, 3}, 3, 3,
     {op_table_detail::kMoeAuxLossGradResults, 1}, 1, 1,
     {}},
    {"moe_dispatch", {op_table_detail::kMoeDispatchArgs, 2}, 2, 2,
     {op_table_detail::kMoeDispatchResults, 1}, 1, 1,
     {op_table_detail::kMoeDispatchAttrs, 4}},
    {"moe_dispatch_grad", {op_table_detail::kMoeDispatchGradArgs, 2}, 2, 2,
     {op_table_detail::kMoeDispatchGradResults, 1}, 1, 1,
     {op_table_detail::kMoeDispatchGradAttrs, 2}},
    {"moe_combine", {op_table_detail::kMoeCombineArgs, 3}, 3, 3,
     {op_table_detail::kMoeCombineResults, 1}, 1, 1,
     {op_table_detail::kMoeCombineAttrs, 1}},
    {"moe_combine_grad", {op_table_detail::kMoeCombineGradArgs, 4}, 4, 4,
     {op_table_detail::kMoeCombineGradResults, 2}, 2, 2,
     {op_table_detail::kMoeCombineGradAttrs, 1}},
    {"sum_squares", {op_table_detail::kSumSquaresArgs, 1}, 1, -1,
     {op_table_detail::kSumSquaresResults, 1}, 1, 1,
     {}},
    {"clip_coef", {op_table_detail::kClipCoefArgs, 1}, 1, 1,
     {op_table_detail::kClipCoefResults, 2}, 2, 2,
     {op_table_detail::kClipCoefAttrs, 1}},
    {"adamw", {op_table_detail::kAdamwArgs, 7}, 7, 7,
     {op_table_detail::kAdamwResults, 3}, 3, 3,
     {op_table_detail::kAdamwAttrs, 4}},
    {"vocab_embedding", {op_table_detail::kVocabEmbeddingArgs, 3}, 3, 3,
     {op_table_detail::kVocabEmbeddingResults, 1}, 1, 1,
     {}},
    {"vocab_embedding_grad", {op_table_detail::kVocabEmbeddingGradArgs, 3}, 3, 3,
     {op_table_detail::kVocabEmbeddingGradResults, 1}, 1, 1,
     {op_table_detail::kVocabEmbeddingGradAttrs, 1}},
    {"vocab_ce_max", {op_table_detail::kVocabCeMaxArgs, 2}, 2, 2,
     {op_table_detail::kVocabCeMaxResults, 1}, 1, 1,
     {op_table_detail::kVocabCeMaxAttrs, 1}},
    {"vocab_ce_stats", {op_table_detail::kVocabCeStatsArgs, 4}, 4, 4,
     {op_table_detail::kVocabCeStatsResults, 1}, 1, 1,
     {op_table_detail::kVocabCeStatsAttrs, 1}},
    {"vocab_ce_loss", {op_table_detail::kVocabCeLossArgs, 2}, 2, 2,
     {op_table_detail::kVocabCeLossResults, 1}, 1, 1,
     {op_table_detail::kVocabCeLossAttrs, 1}},
    {"vocab_ce_grad", {op_table_detail::kVocabCeGradArgs, 6}, 6, 6,
     {op_table_detail::kVocabCeGradResults, 1}, 1, 1,
     {op_table_detail::kVocabCeGradAttrs, 2}},
    {"dist.all_gather", {op_table_detail::kDistAllGatherArgs, 1}, 1, 1,
     {op_table_detail::kDistAllGatherResults, 1}, 1, 1,
     {op_table_detail::kDistAllGatherAttrs, 2}},
    {"dist.all_reduce", {op_table_detail::kDistAllReduceArgs, 1}, 1, 1,
     {op_table_detail::kDistAllReduceResults, 1}, 1, 1,
     {op_table_detail::kDistAllReduceAttrs, 2}},
    {"dist.all_to_all", {op_table_detail::kDistAllToAllArgs, 1}, 1, 1,
     {op_table_detail::kDistAllToAllResults, 1}, 1, 1,
     {op_table_detail::kDistAllToAllAttrs, 4}},
    {"dist.broadcast", {op_table_detail::kDistBroadcastArgs, 1}, 1, 1,
     {op_table_detail::kDistBroadcastResults, 1}, 1, 1,
     {op_table_detail::kDistBroadcastAttrs, 2}},
    {"dist.ppermute", {op_table_detail::kDistPpermuteArgs, 1}, 1, 1,
     {op_table_detail::kDistPpermuteResults, 1}, 1, 1,
     {op_table_detail::kDistPpermuteAttrs, 2}},
    {"dist.reduce_scatter", {op_table_detail::kDistReduceScatterArgs, 1}, 1, 1,
     {op_table_detail::kDistReduceScatterResults, 1}, 1, 1,
     {op_table_detail::kDistReduceScatterAttrs, 3}},
    {"dist.all_gather_start", {op_table_detail::kDistAllGatherStartArgs, 1}, 1, 1,
     {op_table_detail::kDistAllGatherStartResults, 1}, 1, 1,
     {op_table_detail::kDistAllGatherStartAttrs, 3}},
    {"dist.all_reduce_start", {op_table_detail::kDistAllReduceStartArgs, 1}, 1, 1,
     {op_table_detail::kDistAllReduceStartResults, 1}, 1, 1,
     {op_table_detail::kDistAllReduceStartAttrs, 3}},
    {"dist.all_to_all_start", {op_table_detail::kDistAllToAllStartArgs, 1}, 1, 1,
     {op_table_detail::kDistAllToAllStartResults, 1}, 1, 1,
     {op_table_detail::kDistAllToAllStartAttrs, 5}},
    {"dist.broadcast_start", {op_table_detail::kDistBroadcastStartArgs, 1}, 1, 1,
     {op_table_detail::kDistBroadcastStartResults, 1}, 1, 1,
     {op_table_detail::kDistBroadcastStartAttrs, 3}},
    {"dist.ppermute_start", {op_table_detail::kDistPpermuteStartArgs, 1}, 1, 1,
     {op_table_detail::kDistPpermuteStartResults, 1}, 1, 1,
     {op_table_detail::kDistPpermuteStartAttrs, 3}},
    {"dist.reduce_scatter_start", {op_table_detail::kDistReduceScatterStartArgs, 1}, 1, 1,
     {op_table_detail::kDistReduceScatterStartResults, 1}, 1, 1,
     {op_table_detail::kDistReduceScatterStartAttrs, 4}},
    {"dist.send", {op_table_detail::kDistSendArgs, 1}, 1, 1,
     {}, 0, 0,
     {op_table_detail::kDistSendAttrs, 2}},
    {"dist.send_start", {op_table_detail::kDistSendStartArgs, 1}, 1, 1,
     {}, 0, 0,
     {op_table_detail::kDistSendStartAttrs, 3}},
    {"dist.recv", {}, 0, 0,
     {op_table_detail::kDistRecvResults, 1}, 1, 1,
     {op_table_detail::kDistRecvAttrs, 2}},
    {"dist.recv_start", {}, 0, 0,
     {op_table_detail::kDistRecvStartResults, 1}, 1, 1,
     {op_table_detail::kDistRecvStartAttrs, 3}},
    {"dist.wait", {op_table_detail::kDistWaitArgs, 1}, 0, -1,
     {op_table_detail::kDistWaitResults, 1}, 0, 1,
     {op_table_detail::kDistWaitAttrs, 1}},
    {"dist.shard_slice", {op_table_detail::kDistShardSliceArgs, 1}, 1, 1,
     {op_table_detail::kDistShardSliceResults, 1}, 1, 1,
     {op_table_detail::kDistShardSliceAttrs, 2}},
    {"dist.axis_index", {}, 0, 0,
     {op_table_detail::kDistAxisIndexResults, 1}, 1, 1,
     {op_table_detail::kDistAxisIndexAttrs, 1}},
    {"dist.pack", {op_table_detail::kDistPackArgs, 1}, 1, -1,
     {op_table_detail::kDistPackResults, 1}, 1, 1,
     {op_table_detail::kDistPackAttrs, 2}},
    {"dist.unpack", {op_table_detail::kDistUnpackArgs, 1}, 1, 1,
     {op_table_detail::kDistUnpackResults, 1}, 1, -1,
     {op_table_detail::kDistUnpackAttrs, 2}},
};

/// The operand slots of each kernel, by ODS name: `sig.arg(ops::Matmul::lhs)`,
/// `p[ops::Matmul::result]` (a variadic group's slot is its first operand).
namespace ops {

/// `matmul` (tfm.matmul).
struct Matmul {
  static constexpr std::string_view kName = "matmul";
  static constexpr ArgSlot lhs{0, "lhs"}, rhs{1, "rhs"}, addend{2, "addend"};
  static constexpr ResultSlot result{0, "result"}, preact{1, "preact"};
};

/// `matmul_wgrad` (tfm.matmul_wgrad).
struct MatmulWgrad {
  static constexpr std::string_view kName = "matmul_wgrad";
  static constexpr ArgSlot x{0, "x"}, dy{1, "dy"};
  static constexpr ResultSlot dw{0, "dw"};
};

/// `add` (tfm.add).
struct Add {
  static constexpr std::string_view kName = "add";
  static constexpr ArgSlot lhs{0, "lhs"}, rhs{1, "rhs"};
  static constexpr ResultSlot result{0, "result"};
};

/// `sub` (tfm.sub).
struct Sub {
  static constexpr std::string_view kName = "sub";
  static constexpr ArgSlot lhs{0, "lhs"}, rhs{1, "rhs"};
  static constexpr ResultSlot result{0, "result"};
};

/// `mul` (tfm.mul).
struct Mul {
  static constexpr std::string_view kName = "mul";
  static constexpr ArgSlot lhs{0, "lhs"}, rhs{1, "rhs"};
  static constexpr ResultSlot result{0, "result"};
};

/// `scale` (tfm.scale).
struct Scale {
  static constexpr std::string_view kName = "scale";
  static constexpr ArgSlot x{0, "x"};
  static constexpr ResultSlot result{0, "result"};
};

/// `reduce_sum` (tfm.reduce_sum).
struct ReduceSum {
  static constexpr std::string_view kName = "reduce_sum";
  static constexpr ArgSlot x{0, "x"};
  static constexpr ResultSlot result{0, "result"};
};

/// `broadcast` (tfm.broadcast).
struct Broadcast {
  static constexpr std::string_view kName = "broadcast";
  static constexpr ArgSlot x{0, "x"};
  static constexpr ResultSlot result{0, "result"};
};

/// `cast` (tfm.cast).
struct Cast {
  static constexpr std::string_view kName = "cast";
  static constexpr ArgSlot x{0, "x"};
  static constexpr ResultSlot result{0, "result"};
};

/// `embedding` (tfm.embedding).
struct Embedding {
  static constexpr std::string_view kName = "embedding";
  static constexpr ArgSlot ids{0, "ids"}, table{1, "table"};
  static constexpr ResultSlot out{0, "out"};
};

/// `embedding_grad` (tfm.embedding_grad).
struct EmbeddingGrad {
  static constexpr std::string_view kName = "embedding_grad";
  static constexpr ArgSlot ids{0, "ids"}, dy{1, "dy"};
  static constexpr ResultSlot dtable{0, "dtable"};
};

/// `microbatch` (tfm.microbatch).
struct Microbatch {
  static constexpr std::string_view kName = "microbatch";
  static constexpr ArgSlot x{0, "x"};
  static constexpr ResultSlot result{0, "result"};
};

/// `position_embedding` (tfm.position_embedding).
struct PositionEmbedding {
  static constexpr std::string_view kName = "position_embedding";
  static constexpr ArgSlot table{0, "table"};
  static constexpr ResultSlot out{0, "out"};
};

/// `position_embedding_grad` (tfm.position_embedding_grad).
struct PositionEmbeddingGrad {
  static constexpr std::string_view kName = "position_embedding_grad";
  static constexpr ArgSlot dy{0, "dy"};
  static constexpr ResultSlot dtable{0, "dtable"};
};

/// `layer_norm` (tfm.layer_norm).
struct LayerNorm {
  static constexpr std::string_view kName = "layer_norm";
  static constexpr ArgSlot x{0, "x"}, gamma{1, "gamma"}, beta{2, "beta"};
  static constexpr ResultSlot y{0, "y"};
};

/// `layer_norm_grad` (tfm.layer_norm_grad).
struct LayerNormGrad {
  static constexpr std::string_view kName = "layer_norm_grad";
  static constexpr ArgSlot dy{0, "dy"}, x{1, "x"}, gamma{2, "gamma"};
  static constexpr ResultSlot dx{0, "dx"}, dgamma{1, "dgamma"}, dbeta{2, "dbeta"};
};

/// `rms_norm` (tfm.rms_norm).
struct RmsNorm {
  static constexpr std::string_view kName = "rms_norm";
  static constexpr ArgSlot x{0, "x"}, gamma{1, "gamma"};
  static constexpr ResultSlot y{0, "y"};
};

/// `rms_norm_grad` (tfm.rms_norm_grad).
struct RmsNormGrad {
  static constexpr std::string_view kName = "rms_norm_grad";
  static constexpr ArgSlot dy{0, "dy"}, x{1, "x"}, gamma{2, "gamma"};
  static constexpr ResultSlot dx{0, "dx"}, dgamma{1, "dgamma"};
};

/// `gelu` (tfm.gelu).
struct Gelu {
  static constexpr std::string_view kName = "gelu";
  static constexpr ArgSlot x{0, "x"};
  static constexpr ResultSlot y{0, "y"};
};

/// `gelu_grad` (tfm.gelu_grad).
struct GeluGrad {
  static constexpr std::string_view kName = "gelu_grad";
  static constexpr ArgSlot dy{0, "dy"}, x{1, "x"};
  static constexpr ResultSlot dx{0, "dx"};
};

/// `silu` (tfm.silu).
struct Silu {
  static constexpr std::string_view kName = "silu";
  static constexpr ArgSlot x{0, "x"};
  static constexpr ResultSlot y{0, "y"};
};

/// `silu_grad` (tfm.silu_grad).
struct SiluGrad {
  static constexpr std::string_view kName = "silu_grad";
  static constexpr ArgSlot dy{0, "dy"}, x{1, "x"};
  static constexpr ResultSlot dx{0, "dx"};
};

/// `swiglu` (tfm.swiglu).
struct Swiglu {
  static constexpr std::string_view kName = "swiglu";
  static constexpr ArgSlot gate{0, "gate"}, up{1, "up"};
  static constexpr ResultSlot y{0, "y"};
};

/// `swiglu_grad` (tfm.swiglu_grad).
struct SwigluGrad {
  static constexpr std::string_view kName = "swiglu_grad";
  static constexpr ArgSlot dy{0, "dy"}, gate{1, "gate"}, up{2, "up"};
  static constexpr ResultSlot dgate{0, "dgate"}, dup{1, "dup"};
};

/// `rope` (tfm.rope).
struct Rope {
  static constexpr std::string_view kName = "rope";
  static constexpr ArgSlot x{0, "x"};
  static constexpr ResultSlot y{0, "y"};
};

/// `rope_grad` (tfm.rope_grad).
struct RopeGrad {
  static constexpr std::string_view kName = "rope_grad";
  static constexpr ArgSlot dy{0, "dy"};
  static constexpr ResultSlot dx{0, "dx"};
};

/// `rope_local` (tfm.rope_local).
struct RopeLocal {
  static constexpr std::string_view kName = "rope_local";
  static constexpr ArgSlot x{0, "x"}, shard{1, "shard"};
  static constexpr ResultSlot y{0, "y"};
};

/// `rope_local_grad` (tfm.rope_local_grad).
struct RopeLocalGrad {
  static constexpr std::string_view kName = "rope_local_grad";
  static constexpr ArgSlot dy{0, "dy"}, shard{1, "shard"};
  static constexpr ResultSlot dx{0, "dx"};
};

/// `reshape` (tfm.reshape).
struct Reshape {
  static constexpr std::string_view kName = "reshape";
  static constexpr ArgSlot x{0, "x"};
  static constexpr ResultSlot y{0, "y"};
};

/// `dropout` (tfm.dropout).
struct Dropout {
  static constexpr std::string_view kName = "dropout";
  static constexpr ArgSlot x{0, "x"}, step{1, "step"}, layer{2, "layer"};
  static constexpr ResultSlot y{0, "y"};
};

/// `dropout_grad` (tfm.dropout_grad).
struct DropoutGrad {
  static constexpr std::string_view kName = "dropout_grad";
  static constexpr ArgSlot dy{0, "dy"}, step{1, "step"}, layer{2, "layer"};
  static constexpr ResultSlot dx{0, "dx"};
};

/// `dropout_local` (tfm.dropout_local).
struct DropoutLocal {
  static constexpr std::string_view kName = "dropout_local";
  static constexpr ArgSlot x{0, "x"}, step{1, "step"}, layer{2, "layer"}, shards{3, "shards"};
  static constexpr ResultSlot y{0, "y"};
};

/// `dropout_local_grad` (tfm.dropout_local_grad).
struct DropoutLocalGrad {
  static constexpr std::string_view kName = "dropout_local_grad";
  static constexpr ArgSlot dy{0, "dy"}, step{1, "step"}, layer{2, "layer"}, shards{3, "shards"};
  static constexpr ResultSlot dx{0, "dx"};
};

/// `attention` (tfm.attention).
struct Attention {
  static constexpr std::string_view kName = "attention";
  static constexpr ArgSlot q{0, "q"}, k{1, "k"}, v{2, "v"};
  static constexpr ResultSlot out{0, "out"}, lse{1, "lse"};
};

/// `attention_grad` (tfm.attention_grad).
struct AttentionGrad {
  static constexpr std::string_view kName = "attention_grad";
  static constexpr ArgSlot dout{0, "dout"}, q{1, "q"}, k{2, "k"}, v{3, "v"}, out{4, "out"}, lse{5, "lse"};
  static constexpr ResultSlot dq{0, "dq"}, dk{1, "dk"}, dv{2, "dv"};
};

/// `attention_block` (tfm.attention_block).
struct AttentionBlock {
  static constexpr std::string_view kName = "attention_block";
  static constexpr ArgSlot q{0, "q"}, k{1, "k"}, v{2, "v"}, chunk{3, "chunk"};
  static constexpr ResultSlot out{0, "out"}, lse{1, "lse"};
};

/// `attention_block_grad` (tfm.attention_block_grad).
struct AttentionBlockGrad {
  static constexpr std::string_view kName = "attention_block_grad";
  static constexpr ArgSlot dout{0, "dout"}, q{1, "q"}, k{2, "k"}, v{3, "v"}, out{4, "out"}, lse{5, "lse"}, chunk{6, "chunk"};
  static constexpr ResultSlot dq{0, "dq"}, dk{1, "dk"}, dv{2, "dv"};
};

/// `attention_merge` (tfm.attention_merge).
struct AttentionMerge {
  static constexpr std::string_view kName = "attention_merge";
  static constexpr ArgSlot out_a{0, "out_a"}, lse_a{1, "lse_a"}, out_b{2, "out_b"}, lse_b{3, "lse_b"};
  static constexpr ResultSlot out{0, "out"}, lse{1, "lse"};
};

/// `cross_entropy` (tfm.cross_entropy).
struct CrossEntropy {
  static constexpr std::string_view kName = "cross_entropy";
  static constexpr ArgSlot logits{0, "logits"}, labels{1, "labels"};
  static constexpr ResultSlot loss{0, "loss"};
};

/// `cross_entropy_grad` (tfm.cross_entropy_grad).
struct CrossEntropyGrad {
  static constexpr std::string_view kName = "cross_entropy_grad";
  static constexpr ArgSlot dloss{0, "dloss"}, logits{1, "logits"}, labels{2, "labels"};
  static constexpr ResultSlot dlogits{0, "dlogits"};
};

/// `moe_router` (tfm.moe_router).
struct MoeRouter {
  static constexpr std::string_view kName = "moe_router";
  static constexpr ArgSlot logits{0, "logits"};
  static constexpr ResultSlot gates{0, "gates"}, expert_ids{1, "expert_ids"};
};

/// `moe_router_grad` (tfm.moe_router_grad).
struct MoeRouterGrad {
  static constexpr std::string_view kName = "moe_router_grad";
  static constexpr ArgSlot dgates{0, "dgates"}, logits{1, "logits"}, expert_ids{2, "expert_ids"};
  static constexpr ResultSlot dlogits{0, "dlogits"};
};

/// `moe_aux_loss` (tfm.moe_aux_loss).
struct MoeAuxLoss {
  static constexpr std::string_view kName = "moe_aux_loss";
  static constexpr ArgSlot logits{0, "logits"}, expert_ids{1, "expert_ids"};
  static constexpr ResultSlot loss{0, "loss"};
};

/// `moe_aux_loss_grad` (tfm.moe_aux_loss_grad).
struct MoeAuxLossGrad {
  static constexpr std::string_view kName = "moe_aux_loss_grad";
  static constexpr ArgSlot dloss{0, "dloss"}, logits{1, "logits"}, expert_ids{2, "expert_ids"};
  static constexpr ResultSlot dlogits{0, "dlogits"};
};

/// `moe_dispatch` (tfm.moe_dispatch).
struct MoeDispatch {
  static constexpr std::string_view kName = "moe_dispatch";
  static constexpr ArgSlot x{0, "x"}, expert_ids{1, "expert_ids"};
  static constexpr ResultSlot buf{0, "buf"};
};

/// `moe_dispatch_grad` (tfm.moe_dispatch_grad).
struct MoeDispatchGrad {
  static constexpr std::string_view kName = "moe_dispatch_grad";
  static constexpr ArgSlot dbuf{0, "dbuf"}, expert_ids{1, "expert_ids"};
  static constexpr ResultSlot dx{0, "dx"};
};

/// `moe_combine` (tfm.moe_combine).
struct MoeCombine {
  static constexpr std::string_view kName = "moe_combine";
  static constexpr ArgSlot buf{0, "buf"}, gates{1, "gates"}, expert_ids{2, "expert_ids"};
  static constexpr ResultSlot y{0, "y"};
};

/// `moe_combine_grad` (tfm.moe_combine_grad).
struct MoeCombineGrad {
  static constexpr std::string_view kName = "moe_combine_grad";
  static constexpr ArgSlot dy{0, "dy"}, buf{1, "buf"}, gates{2, "gates"}, expert_ids{3, "expert_ids"};
  static constexpr ResultSlot dbuf{0, "dbuf"}, dgates{1, "dgates"};
};

/// `sum_squares` (tfm.sum_squares).
struct SumSquares {
  static constexpr std::string_view kName = "sum_squares";
  static constexpr ArgSlot inputs{0, "inputs"};
  static constexpr ResultSlot result{0, "result"};
};

/// `clip_coef` (tfm.clip_coef).
struct ClipCoef {
  static constexpr std::string_view kName = "clip_coef";
  static constexpr ArgSlot sumsq{0, "sumsq"};
  static constexpr ResultSlot coef{0, "coef"}, norm{1, "norm"};
};

/// `adamw` (tfm.adamw).
struct Adamw {
  static constexpr std::string_view kName = "adamw";
  static constexpr ArgSlot param{0, "param"}, grad{1, "grad"}, m{2, "m"}, v{3, "v"}, lr{4, "lr"}, step{5, "step"}, grad_scale{6, "grad_scale"};
  static constexpr ResultSlot new_param{0, "new_param"}, new_m{1, "new_m"}, new_v{2, "new_v"};
};

/// `vocab_embedding` (tfm.vocab_embedding).
struct VocabEmbedding {
  static constexpr std::string_view kName = "vocab_embedding";
  static constexpr ArgSlot ids{0, "ids"}, table{1, "table"}, shard{2, "shard"};
  static constexpr ResultSlot out{0, "out"};
};

/// `vocab_embedding_grad` (tfm.vocab_embedding_grad).
struct VocabEmbeddingGrad {
  static constexpr std::string_view kName = "vocab_embedding_grad";
  static constexpr ArgSlot ids{0, "ids"}, dy{1, "dy"}, shard{2, "shard"};
  static constexpr ResultSlot dtable{0, "dtable"};
};

/// `vocab_ce_max` (tfm.vocab_ce_max).
struct VocabCeMax {
  static constexpr std::string_view kName = "vocab_ce_max";
  static constexpr ArgSlot logits{0, "logits"}, shard{1, "shard"};
  static constexpr ResultSlot max{0, "max"};
};

/// `vocab_ce_stats` (tfm.vocab_ce_stats).
struct VocabCeStats {
  static constexpr std::string_view kName = "vocab_ce_stats";
  static constexpr ArgSlot logits{0, "logits"}, labels{1, "labels"}, max{2, "max"}, shard{3, "shard"};
  static constexpr ResultSlot stats{0, "stats"};
};

/// `vocab_ce_loss` (tfm.vocab_ce_loss).
struct VocabCeLoss {
  static constexpr std::string_view kName = "vocab_ce_loss";
  static constexpr ArgSlot stats{0, "stats"}, max{1, "max"};
  static constexpr ResultSlot loss{0, "loss"};
};

/// `vocab_ce_grad` (tfm.vocab_ce_grad).
struct VocabCeGrad {
  static constexpr std::string_view kName = "vocab_ce_grad";
  static constexpr ArgSlot dloss{0, "dloss"}, logits{1, "logits"}, labels{2, "labels"}, max{3, "max"}, stats{4, "stats"}, shard{5, "shard"};
  static constexpr ResultSlot dlogits{0, "dlogits"};
};

/// `dist.all_gather` (dist.all_gather).
struct DistAllGather {
  static constexpr std::string_view kName = "dist.all_gather";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.all_reduce` (dist.all_reduce).
struct DistAllReduce {
  static constexpr std::string_view kName = "dist.all_reduce";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.all_to_all` (dist.all_to_all).
struct DistAllToAll {
  static constexpr std::string_view kName = "dist.all_to_all";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.broadcast` (dist.broadcast).
struct DistBroadcast {
  static constexpr std::string_view kName = "dist.broadcast";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.ppermute` (dist.ppermute).
struct DistPpermute {
  static constexpr std::string_view kName = "dist.ppermute";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.reduce_scatter` (dist.reduce_scatter).
struct DistReduceScatter {
  static constexpr std::string_view kName = "dist.reduce_scatter";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.all_gather_start` (dist.all_gather_start).
struct DistAllGatherStart {
  static constexpr std::string_view kName = "dist.all_gather_start";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.all_reduce_start` (dist.all_reduce_start).
struct DistAllReduceStart {
  static constexpr std::string_view kName = "dist.all_reduce_start";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.all_to_all_start` (dist.all_to_all_start).
struct DistAllToAllStart {
  static constexpr std::string_view kName = "dist.all_to_all_start";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.broadcast_start` (dist.broadcast_start).
struct DistBroadcastStart {
  static constexpr std::string_view kName = "dist.broadcast_start";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.ppermute_start` (dist.ppermute_start).
struct DistPpermuteStart {
  static constexpr std::string_view kName = "dist.ppermute_start";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.reduce_scatter_start` (dist.reduce_scatter_start).
struct DistReduceScatterStart {
  static constexpr std::string_view kName = "dist.reduce_scatter_start";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.send` (dist.send).
struct DistSend {
  static constexpr std::string_view kName = "dist.send";
  static constexpr ArgSlot input{0, "input"};
};

/// `dist.send_start` (dist.send_start).
struct DistSendStart {
  static constexpr std::string_view kName = "dist.send_start";
  static constexpr ArgSlot input{0, "input"};
};

/// `dist.recv` (dist.recv).
struct DistRecv {
  static constexpr std::string_view kName = "dist.recv";
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.recv_start` (dist.recv_start).
struct DistRecvStart {
  static constexpr std::string_view kName = "dist.recv_start";
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.wait` (dist.wait).
struct DistWait {
  static constexpr std::string_view kName = "dist.wait";
  static constexpr ArgSlot buffers{0, "buffers"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.shard_slice` (dist.shard_slice).
struct DistShardSlice {
  static constexpr std::string_view kName = "dist.shard_slice";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.axis_index` (dist.axis_index).
struct DistAxisIndex {
  static constexpr std::string_view kName = "dist.axis_index";
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.pack` (dist.pack).
struct DistPack {
  static constexpr std::string_view kName = "dist.pack";
  static constexpr ArgSlot inputs{0, "inputs"};
  static constexpr ResultSlot result{0, "result"};
};

/// `dist.unpack` (dist.unpack).
struct DistUnpack {
  static constexpr std::string_view kName = "dist.unpack";
  static constexpr ArgSlot input{0, "input"};
  static constexpr ResultSlot results{0, "results"};
};

} // namespace ops
} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_OPTABLE_H

// clang-format on
