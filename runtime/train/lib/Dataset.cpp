//===- Dataset.cpp - Token streams that training batches come from --------===//

#include "autoshard/runtime/train/Dataset.h"
#include "autoshard/runtime/Philox.h"
#include "autoshard/runtime/train/CharDataset.h"
#include "autoshard/runtime/train/TokenDataset.h"

#include <algorithm>
#include <filesystem>

namespace autoshard::runtime {

namespace {

/// Offset of row `row`'s window for `step`, uniform in [0, windows). A
/// Philox block keyed on the seed (domain-separated from the dropout and
/// init streams by the key's high word) and counted by (row, step, split)
/// makes the draw independent of how rows are spread over ranks. The modulo
/// bias is below windows / 2^64.
uint64_t sampleOffset(uint64_t seed, Split split, int64_t step, int64_t row,
                      uint64_t windows) {
  PhiloxKey key = philoxKey(seed);
  key.word[1] ^= 0x44415441u; // "DATA"
  PhiloxBlock counter{{static_cast<uint32_t>(row), static_cast<uint32_t>(step),
                       static_cast<uint32_t>(uint64_t(step) >> 32),
                       split == Split::Train ? 0u : 1u}};
  PhiloxBlock r = philox4x32_10(counter, key);
  uint64_t bits = uint64_t(r.word[0]) | (uint64_t(r.word[1]) << 32);
  return bits % windows;
}

} // namespace

void Dataset::validate(int64_t seq, int64_t modelVocab) const {
  if (seq < 1)
    throw DataError("sequence length must be >= 1, found " +
                    std::to_string(seq));
  for (Split s : {Split::Train, Split::Val}) {
    int64_t n = tokenCount(s);
    if (n < seq + 1)
      throw DataError("data '" + name() + "': the " +
                      (s == Split::Train ? "train" : "validation") +
                      " split has " + std::to_string(n) +
                      " tokens, fewer than one sequence of " +
                      std::to_string(seq) + " plus its next-token label");
  }
  if (modelVocab < vocabSize())
    throw DataError("model vocabulary (" + std::to_string(modelVocab) +
                    ") does not cover the " + std::to_string(vocabSize()) +
                    " " + vocabWhat() + " of '" + name() + "'");
}

void Dataset::batch(Split split, uint64_t seed, int64_t step, int64_t seq,
                    int64_t rowBegin, int64_t rowEnd, int32_t *ids,
                    int32_t *labels) const {
  uint64_t windows =
      static_cast<uint64_t>(tokenCount(split)) - static_cast<uint64_t>(seq);
  std::vector<int32_t> window(seq + 1);
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    uint64_t offset = sampleOffset(seed, split, step, r, windows);
    read(split, static_cast<int64_t>(offset), seq + 1, window.data());
    int64_t i = r - rowBegin;
    std::copy_n(window.begin(), seq, ids + i * seq);
    std::copy_n(window.begin() + 1, seq, labels + i * seq);
  }
}

std::unique_ptr<Dataset> openDataset(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return std::make_unique<TokenDataset>(TokenDataset::open(path));
  return std::make_unique<CharDataset>(CharDataset::load(path));
}

} // namespace autoshard::runtime
