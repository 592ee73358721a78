//===- CharDataset.h - Character-level text dataset -------------*- C++ -*-===//
//
// Character-level tokenisation and batch sampling as in nanoGPT's
// `data/shakespeare_char/prepare.py` and `train.py:get_batch`, made
// deterministic per (seed, step, row) so that every parallel plan sees the
// same global batch at a given step and each rank reads only its rows.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_CHARDATASET_H
#define AUTOSHARD_RUNTIME_TRAIN_CHARDATASET_H

#include "autoshard/runtime/train/Dataset.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace autoshard::runtime {

/// Vocabulary = the sorted set of distinct bytes of a text; token id = index
/// in that list (nanoGPT's `stoi`/`itos`).
class CharVocab {
public:
  /// Builds the vocabulary of `text`. Throws DataError if `text` is empty.
  static CharVocab fromText(std::string_view text);

  /// Number of distinct characters.
  int64_t size() const { return static_cast<int64_t>(chars.size()); }
  /// Token id of `c`; throws DataError if `c` is not in the vocabulary.
  int32_t encode(char c) const;
  /// Character of token `id`; throws std::out_of_range outside [0, size()).
  char decode(int32_t id) const;
  /// Decodes a token sequence to text.
  std::string decode(const std::vector<int32_t> &ids) const;

private:
  std::vector<char> chars; // sorted distinct characters
  int32_t index[256] = {}; // byte -> id + 1 (0 = absent)
};

/// A text file tokenised by character (nanoGPT's shakespeare_char), split
/// 90/10 into train and validation tokens.
class CharDataset : public Dataset {
public:
  /// Reads and tokenises `path`; the first `1 - valFraction` of the tokens
  /// are the train split, the rest validation.
  /// Throws DataError naming the path if the file is missing or unreadable
  /// or empty.
  static CharDataset load(const std::string &path, double valFraction = 0.1);
  /// Same, from text in memory (`name` is used in error messages).
  static CharDataset fromText(std::string_view text, double valFraction = 0.1,
                              std::string name = "<text>");

  const CharVocab &vocab() const { return vocab_; }
  const std::vector<int32_t> &tokens(Split split) const {
    return split == Split::Train ? train_ : val_;
  }

  int64_t tokenCount(Split split) const override {
    return static_cast<int64_t>(tokens(split).size());
  }
  int64_t vocabSize() const override { return vocab_.size(); }
  void read(Split split, int64_t offset, int64_t n,
            int32_t *out) const override;
  std::string decode(int32_t id) const override;
  int32_t sampleStart() const override;
  std::string describe() const override;

protected:
  std::string vocabWhat() const override { return "distinct characters"; }

private:
  explicit CharDataset(std::string name) : Dataset(std::move(name)) {}
  CharVocab vocab_;
  std::vector<int32_t> train_, val_;
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_CHARDATASET_H
