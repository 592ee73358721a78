//===- Ops.cpp - Operand signatures of the tfm ops ------------------------===//

#include "autoshard/runtime/Ops.h"

#include <algorithm>

namespace autoshard::runtime {

const std::vector<OpSignature> &allOps() {
  static const std::vector<OpSignature> ops = {
      // Linear algebra.
      // Fused epilogues (rt-fuse-epilogues): a third argument (the addend,
      // bias or gelu_grad's pre-activation), a second result (gelu's
      // pre-activation).
      {"matmul", 2, 3, 2, {}, /*minResults=*/1},
      {"matmul_wgrad", 2, 2, 1, {}},
      // Elementwise.
      {"add", 2, 2, 1, {}},
      {"sub", 2, 2, 1, {}},
      {"mul", 2, 2, 1, {}},
      {"scale", 1, 1, 1, {"factor"}},
      {"reduce_sum", 1, 1, 1, {"dims"}},
      {"broadcast", 1, 1, 1, {"dims"}},
      {"cast", 1, 1, 1, {}},
      // Embeddings.
      {"microbatch", 1, 1, 1, {"index", "count"}},
      {"embedding", 2, 2, 1, {}},
      {"embedding_grad", 2, 2, 1, {"num_embeddings"}},
      {"position_embedding", 1, 1, 1, {"seq_len"}},
      {"position_embedding_grad", 1, 1, 1, {"num_positions"}},
      // Normalisation.
      {"layer_norm", 2, 3, 1, {"epsilon"}},
      {"layer_norm_grad", 3, 3, 3, {"epsilon"}},
      {"rms_norm", 2, 2, 1, {"epsilon"}},
      {"rms_norm_grad", 3, 3, 2, {"epsilon"}},
      // Activations.
      {"gelu", 1, 1, 1, {}},
      {"gelu_grad", 2, 2, 1, {}},
      {"silu", 1, 1, 1, {}},
      {"silu_grad", 2, 2, 1, {}},
      {"swiglu", 2, 2, 1, {}},
      {"swiglu_grad", 3, 3, 2, {}},
      // Positional / shape.
      {"rope", 1, 1, 1, {"theta"}},
      {"rope_grad", 1, 1, 1, {"theta"}},
      // RoPE of a sequence block (from dist-partition, CP): x, shard.
      {"rope_local", 2, 2, 1, {"theta", "seq_len"}},
      {"rope_local_grad", 2, 2, 1, {"theta", "seq_len"}},
      {"reshape", 1, 1, 1, {}},
      // Dropout.
      {"dropout", 3, 3, 1, {"rate", "site"}},
      {"dropout_grad", 3, 3, 1, {"rate", "site"}},
      // Per-rank dropout of a block (from dist-partition): x, step, layer,
      // then one shard index per entry of shard_dims.
      {"dropout_local",
       3,
       -1,
       1,
       {"rate", "site", "global_shape", "shard_dims"}},
      {"dropout_local_grad",
       3,
       -1,
       1,
       {"rate", "site", "global_shape", "shard_dims"}},
      // Attention.
      {"attention", 3, 3, 2, {"scale"}},
      {"attention_grad", 6, 6, 3, {"scale"}},
      // Ring attention blocks and their merge (from dist-partition, CP).
      {"attention_block", 4, 4, 2, {"scale", "kv_step", "num_chunks"}},
      {"attention_block_grad", 7, 7, 3, {"scale", "kv_step", "num_chunks"}},
      {"attention_merge", 4, 4, 2, {}},
      // Loss.
      {"cross_entropy", 2, 2, 1, {}},
      {"cross_entropy_grad", 3, 3, 1, {}},
      // Vocab-parallel embedding and loss (per-rank; from dist-partition).
      {"vocab_embedding", 3, 3, 1, {}},
      {"vocab_embedding_grad", 3, 3, 1, {"num_embeddings"}},
      {"vocab_ce_max", 2, 2, 1, {"vocab_size"}},
      {"vocab_ce_stats", 4, 4, 1, {"vocab_size"}},
      {"vocab_ce_loss", 2, 2, 1, {"num_tokens"}},
      {"vocab_ce_grad", 6, 6, 1, {"vocab_size", "num_tokens"}},
      // Mixture of experts.
      {"moe_router", 1, 1, 2, {"top_k"}},
      {"moe_router_grad", 3, 3, 1, {}},
      {"moe_aux_loss", 2, 2, 1, {}},
      {"moe_aux_loss_grad", 3, 3, 1, {}},
      {"moe_dispatch", 2, 2, 1, {"num_experts", "capacity"}},
      {"moe_dispatch_grad", 2, 2, 1, {"capacity"}},
      {"moe_combine", 3, 3, 1, {}},
      {"moe_combine_grad", 4, 4, 2, {}},
      // Optimizer.
      {"sum_squares", 1, -1, 1, {}},
      {"clip_coef", 1, 1, 2, {"max_norm"}},
      {"adamw", 7, 7, 3, {"beta1", "beta2", "epsilon", "weight_decay"}},
      // Communication (docs/artifact-format.md, "Communication"); each
      // `_start` form also needs the `handle` its `dist.wait` names.
      {"dist.all_reduce", 1, 1, 1, {"axes", "reduction"}},
      {"dist.all_gather", 1, 1, 1, {"axes", "gather_dim"}},
      {"dist.reduce_scatter", 1, 1, 1, {"axes", "scatter_dim", "reduction"}},
      {"dist.all_to_all", 1, 1, 1, {"axes", "split_dim", "concat_dim"}},
      {"dist.broadcast", 1, 1, 1, {"axes", "root"}},
      {"dist.ppermute", 1, 1, 1, {"axes", "pairs"}},
      {"dist.send", 1, 1, 0, {"axes", "peer"}},
      {"dist.recv", 0, 0, 1, {"axes", "peer"}},
      {"dist.all_reduce_start", 1, 1, 1, {"axes", "reduction", "handle"}},
      {"dist.all_gather_start", 1, 1, 1, {"axes", "gather_dim", "handle"}},
      {"dist.reduce_scatter_start",
       1,
       1,
       1,
       {"axes", "scatter_dim", "reduction", "handle"}},
      {"dist.all_to_all_start",
       1,
       1,
       1,
       {"axes", "split_dim", "concat_dim", "handle"}},
      {"dist.broadcast_start", 1, 1, 1, {"axes", "root", "handle"}},
      {"dist.ppermute_start", 1, 1, 1, {"axes", "pairs", "handle"}},
      {"dist.send_start", 1, 1, 0, {"axes", "peer", "handle"}},
      {"dist.recv_start", 0, 0, 1, {"axes", "peer", "handle"}},
      {"dist.wait", 0, -1, 1, {"handle"}, /*minResults=*/0},
      // Local ops on the rank's mesh coordinates (no communication).
      {"dist.shard_slice", 1, 1, 1, {"axes", "dim"}},
      {"dist.axis_index", 0, 0, 1, {"axes"}},
      // Flat buffers of bucketed collectives (local copies; `num_groups`
      // and `scatter_dims` are optional, default 1 and none).
      {"dist.pack", 1, -1, 1, {}},
      {"dist.unpack", 1, 1, -1, {}},
  };
  return ops;
}

bool isCommOp(std::string_view op) {
  return op.substr(0, kCommPrefix.size()) == kCommPrefix;
}

bool isAsyncStartOp(std::string_view op) {
  constexpr std::string_view suffix = "_start";
  return isCommOp(op) && op.size() > suffix.size() &&
         op.substr(op.size() - suffix.size()) == suffix;
}

const OpSignature *lookupOp(std::string_view name) {
  const std::vector<OpSignature> &ops = allOps();
  auto it = std::find_if(ops.begin(), ops.end(), [&](const OpSignature &op) {
    return op.name == name;
  });
  return it == ops.end() ? nullptr : &*it;
}

} // namespace autoshard::runtime
