//===- CharDataset.cpp - Character-level text dataset ---------------------===//

#include "autoshard/runtime/train/CharDataset.h"
#include "autoshard/runtime/Philox.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

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

CharVocab CharVocab::fromText(std::string_view text) {
  if (text.empty())
    throw DataError("cannot build a vocabulary from empty text");
  bool seen[256] = {};
  for (char c : text)
    seen[static_cast<unsigned char>(c)] = true;
  CharVocab v;
  // Sorted by byte value, like Python's sorted(set(text)) on ASCII text.
  for (int b = 0; b < 256; ++b)
    if (seen[b]) {
      v.chars.push_back(static_cast<char>(b));
      v.index[b] = static_cast<int32_t>(v.chars.size());
    }
  return v;
}

int32_t CharVocab::encode(char c) const {
  int32_t id = index[static_cast<unsigned char>(c)];
  if (id == 0)
    throw DataError("character code " +
                    std::to_string(static_cast<unsigned char>(c)) +
                    " is not in the vocabulary");
  return id - 1;
}

char CharVocab::decode(int32_t id) const {
  if (id < 0 || id >= size())
    throw std::out_of_range("token id " + std::to_string(id) +
                            " outside the vocabulary [0, " +
                            std::to_string(size()) + ")");
  return chars[id];
}

std::string CharVocab::decode(const std::vector<int32_t> &ids) const {
  std::string s;
  s.reserve(ids.size());
  for (int32_t id : ids)
    s.push_back(decode(id));
  return s;
}

CharDataset CharDataset::load(const std::string &path, double valFraction) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw DataError("cannot open data file '" + path + "'");
  std::string text((std::istreambuf_iterator<char>(f)),
                   std::istreambuf_iterator<char>());
  if (f.bad())
    throw DataError("error reading data file '" + path + "'");
  if (text.empty())
    throw DataError("data file '" + path + "' is empty");
  return fromText(text, valFraction, path);
}

CharDataset CharDataset::fromText(std::string_view text, double valFraction,
                                  std::string name) {
  if (!(valFraction > 0 && valFraction < 1))
    throw DataError("validation fraction must be in (0, 1), found " +
                    std::to_string(valFraction));
  CharDataset d;
  d.name_ = std::move(name);
  d.vocab_ = CharVocab::fromText(text);
  // nanoGPT splits at int(n * 0.9) characters.
  size_t nTrain = static_cast<size_t>(double(text.size()) * (1 - valFraction));
  d.train_.reserve(nTrain);
  d.val_.reserve(text.size() - nTrain);
  for (size_t i = 0; i < text.size(); ++i)
    (i < nTrain ? d.train_ : d.val_).push_back(d.vocab_.encode(text[i]));
  return d;
}

void CharDataset::validate(int64_t seq, int64_t modelVocab) const {
  if (seq < 1)
    throw DataError("sequence length must be >= 1, found " +
                    std::to_string(seq));
  for (Split s : {Split::Train, Split::Val}) {
    int64_t n = static_cast<int64_t>(tokens(s).size());
    if (n < seq + 1)
      throw DataError("data file '" + name_ + "': the " +
                      (s == Split::Train ? "train" : "validation") +
                      " split has " + std::to_string(n) +
                      " tokens, fewer than one sequence of " +
                      std::to_string(seq) + " plus its next-token label");
  }
  if (modelVocab < vocab_.size())
    throw DataError("model vocabulary (" + std::to_string(modelVocab) +
                    ") does not cover the " + std::to_string(vocab_.size()) +
                    " distinct characters of '" + name_ + "'");
}

void CharDataset::batch(Split split, uint64_t seed, int64_t step, int64_t seq,
                        int64_t rowBegin, int64_t rowEnd, int32_t *ids,
                        int32_t *labels) const {
  const std::vector<int32_t> &tok = tokens(split);
  uint64_t windows = tok.size() - static_cast<uint64_t>(seq);
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    uint64_t offset = sampleOffset(seed, split, step, r, windows);
    int64_t i = r - rowBegin;
    std::copy_n(tok.begin() + offset, seq, ids + i * seq);
    std::copy_n(tok.begin() + offset + 1, seq, labels + i * seq);
  }
}

} // namespace autoshard::runtime
