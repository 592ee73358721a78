//===- Sampler.h - Text generation with the logits entry --------*- C++ -*-===//

#ifndef AUTOSHARD_TOOLS_SHARDRUN_SAMPLER_H
#define AUTOSHARD_TOOLS_SHARDRUN_SAMPLER_H

#include "EntryIO.h"

#include "autoshard/runtime/Executor.h"
#include "autoshard/runtime/train/Dataset.h"

#include <cstdint>
#include <string>
#include <vector>

namespace autoshard::shardrun {

/// Sampling settings (nanoGPT sample.py: temperature 0.8, top-k 200).
struct SampleOptions {
  int64_t count = 200; ///< Tokens to generate.
  double temperature = 0.8;
  int64_t topK = 200;
  uint64_t seed = 1337;
};

/// Generates text autoregressively from a newline: each new token runs the
/// `logits` entry with the context (its last `seq` tokens) in row 0 and
/// reads the logits at the context's last position (causal attention makes
/// the padding after it irrelevant). Classes outside the real vocabulary
/// (ids >= vocab_size, or unseen in the data) are masked; logits are divided
/// by the temperature, cut to the top-k and sampled with a Philox draw keyed
/// on (seed, token index).
class Sampler {
public:
  /// Throws ArtifactError if the artifact has no usable `logits` entry.
  Sampler(runtime::Executor &executor, const runtime::Dataset &data,
          const SampleOptions &options);
  /// Generates options.count characters with the current weights.
  std::string generate();
  /// The start context and the token ids of the last generate().
  const std::vector<int32_t> &prompt() const { return prompt_; }
  const std::vector<int32_t> &tokens() const { return tokens_; }

private:
  const runtime::Dataset &data;
  SampleOptions options;
  runtime::ModelInfo model;
  EntryIO io;
  runtime::CommContext *comm = nullptr;
  std::vector<int32_t> prompt_, tokens_;
};

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_SAMPLER_H
