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

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace autoshard::runtime {

/// A data problem the user must fix (missing file, text too short, ...).
/// The message names the file and the value found.
class DataError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

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

/// Which part of the corpus a batch comes from.
enum class Split { Train, Val };

/// A tokenised text split 90/10 into train and validation parts.
class CharDataset {
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
  const std::string &name() const { return name_; }

  /// Checks that both splits hold at least one (seq + 1)-token window and
  /// that a model with `modelVocab` classes covers every token id.
  /// Throws DataError with the split's length or the vocab sizes.
  void validate(int64_t seq, int64_t modelVocab) const;

  /// Fills rows [rowBegin, rowEnd) of the global batch of `step`: row r is
  /// the window at offset o(seed, split, step, r) drawn uniformly from
  /// [0, len - seq); `ids[i][t] = tok[o + t]`, `labels[i][t] = tok[o + t + 1]`.
  /// `ids` and `labels` are row-major `[rowEnd - rowBegin, seq]`. The
  /// offsets depend only on (seed, split, step, r), never on the rank layout.
  void batch(Split split, uint64_t seed, int64_t step, int64_t seq,
             int64_t rowBegin, int64_t rowEnd, int32_t *ids,
             int32_t *labels) const;

private:
  std::string name_;
  CharVocab vocab_;
  std::vector<int32_t> train_, val_;
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_CHARDATASET_H
