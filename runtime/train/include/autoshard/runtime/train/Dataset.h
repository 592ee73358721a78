//===- Dataset.h - Token streams that training batches come from -*- C++
//-*-===//
//
// A dataset is a train and a validation stream of token ids. Batches are
// drawn as in nanoGPT's `train.py:get_batch` (a random window per row),
// made deterministic per (seed, split, step, row), so that every parallel
// plan sees the same global batch at a step and each rank reads only its
// rows. Two kinds: a text file tokenised by character (CharDataset) and a
// directory prepared by `python -m autoshard.data prepare` (TokenDataset,
// docs/data-format.md).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_DATASET_H
#define AUTOSHARD_RUNTIME_TRAIN_DATASET_H

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace autoshard::runtime {

/// A data problem the user must fix (missing file, text too short, ...).
/// The message names the file and the value found.
class DataError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Which part of the corpus a batch comes from.
enum class Split { Train, Val };

/// A tokenised corpus: train and validation token streams.
class Dataset {
public:
  virtual ~Dataset() = default;

  /// The file or directory it was read from (for messages).
  const std::string &name() const { return name_; }
  /// Tokens in `split`.
  virtual int64_t tokenCount(Split split) const = 0;
  /// Every token id of the data is < vocabSize().
  virtual int64_t vocabSize() const = 0;
  /// Copies tokens [offset, offset + n) of `split` to `out`. Throws
  /// DataError for a range outside the split or an id >= vocabSize() (a
  /// corrupt token file), naming the file and the position.
  virtual void read(Split split, int64_t offset, int64_t n,
                    int32_t *out) const = 0;
  /// The bytes token `id` stands for (UTF-8 text, or a part of a UTF-8
  /// character for byte-level BPE); throws DataError outside [0, vocab).
  virtual std::string decode(int32_t id) const = 0;
  /// The token a generated sample starts from: end-of-text where the
  /// tokenizer has one, else a newline, else id 0.
  virtual int32_t sampleStart() const = 0;
  /// One line for the startup report, e.g. "65 characters" or "BPE
  /// tokenizer (tokenizer.json), vocab 512".
  virtual std::string describe() const = 0;

  /// Checks that both splits hold at least one (seq + 1)-token window and
  /// that a model with `modelVocab` classes covers every token id.
  /// Throws DataError with the split's length or the vocabulary sizes.
  void validate(int64_t seq, int64_t modelVocab) const;

  /// Fills rows [rowBegin, rowEnd) of the global batch of `step`: row r is
  /// the window at offset o(seed, split, step, r) drawn uniformly from
  /// [0, len - seq); `ids[i][t] = tok[o + t]`, `labels[i][t] = tok[o + t + 1]`.
  /// `ids` and `labels` are row-major `[rowEnd - rowBegin, seq]`. The
  /// offsets depend only on (seed, split, step, r), never on the rank layout.
  void batch(Split split, uint64_t seed, int64_t step, int64_t seq,
             int64_t rowBegin, int64_t rowEnd, int32_t *ids,
             int32_t *labels) const;

protected:
  explicit Dataset(std::string name) : name_(std::move(name)) {}
  /// What the vocabulary is made of, for validate()'s message
  /// ("distinct characters", "token ids of its tokenizer").
  virtual std::string vocabWhat() const = 0;

private:
  std::string name_;
};

/// A directory (a `meta.json` in it) opens as a TokenDataset; anything else
/// as a text file tokenised by character. Throws DataError.
std::unique_ptr<Dataset> openDataset(const std::string &path);

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_DATASET_H
