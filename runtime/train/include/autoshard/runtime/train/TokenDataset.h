//===- TokenDataset.h - A prepared token directory, memory-mapped -*- C++
//-*-===//
//
// Reads what `python -m autoshard.data prepare` writes (docs/data-format.md):
// `meta.json` and the flat token files `train.bin` / `val.bin` (nanoGPT's
// layout: little-endian uint16 or uint32 ids, no header). The token files
// are memory-mapped, so a rank touches only the pages of the windows its
// rows read, whatever the size of the corpus.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_TOKENDATASET_H
#define AUTOSHARD_RUNTIME_TRAIN_TOKENDATASET_H

#include "autoshard/runtime/train/Dataset.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace autoshard::runtime {

/// The meta.json format version this runtime reads.
constexpr int64_t kTokenDataVersion = 1;

/// A prepared token directory.
class TokenDataset : public Dataset {
public:
  /// Opens `dir`: parses meta.json (format "autoshard-tokens", version <=
  /// kTokenDataVersion, dtype uint16 | uint32, one hex `token_bytes` entry
  /// per id) and maps both token files, whose sizes must be their token
  /// count times the dtype's size. Throws DataError naming the file and the
  /// field or value at fault.
  static TokenDataset open(const std::string &dir);

  TokenDataset(TokenDataset &&other) noexcept;
  TokenDataset &operator=(TokenDataset &&) = delete;
  TokenDataset(const TokenDataset &) = delete;
  ~TokenDataset() override;

  int64_t tokenCount(Split split) const override {
    return splits[split == Split::Train ? 0 : 1].tokens;
  }
  int64_t vocabSize() const override { return vocab; }
  void read(Split split, int64_t offset, int64_t n,
            int32_t *out) const override;
  std::string decode(int32_t id) const override;
  int32_t sampleStart() const override;
  std::string describe() const override;

  /// The tokenizer's kind in meta.json: "char", "bpe" or "huggingface".
  const std::string &tokenizerKind() const { return kind; }
  std::optional<int32_t> eotId() const { return eot; }

protected:
  std::string vocabWhat() const override {
    return "token ids of its tokenizer";
  }

private:
  explicit TokenDataset(std::string dir) : Dataset(std::move(dir)) {}

  struct MappedSplit {
    std::string path;
    int64_t tokens = 0;
    const unsigned char *data = nullptr; ///< mmap of the file, or null.
    size_t mappedBytes = 0;
  };
  MappedSplit splits[2];
  int elemBytes = 2; ///< 2 (uint16) or 4 (uint32).
  int64_t vocab = 0;
  std::string kind, spec;
  std::optional<int32_t> eot;
  std::vector<std::string> tokenBytes; ///< id -> the bytes it decodes to.
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_TOKENDATASET_H
