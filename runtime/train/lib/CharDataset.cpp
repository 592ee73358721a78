//===- CharDataset.cpp - Character-level text dataset ---------------------===//

#include "autoshard/runtime/train/CharDataset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace autoshard::runtime {

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
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw DataError("data file '" + path +
                    "' is a directory (a prepared data directory holds "
                    "meta.json: docs/data-format.md)");
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw DataError("cannot open data file '" + path + "'");
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(f),
                std::istreambuf_iterator<char>());
  } catch (const std::exception &e) {
    throw DataError("error reading data file '" + path + "': " + e.what());
  }
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
  CharDataset d(std::move(name));
  d.vocab_ = CharVocab::fromText(text);
  // nanoGPT splits at int(n * 0.9) characters.
  size_t nTrain = static_cast<size_t>(double(text.size()) * (1 - valFraction));
  d.train_.reserve(nTrain);
  d.val_.reserve(text.size() - nTrain);
  for (size_t i = 0; i < text.size(); ++i)
    (i < nTrain ? d.train_ : d.val_).push_back(d.vocab_.encode(text[i]));
  return d;
}

void CharDataset::read(Split split, int64_t offset, int64_t n,
                       int32_t *out) const {
  const std::vector<int32_t> &tok = tokens(split);
  if (offset < 0 || n < 0 || offset + n > static_cast<int64_t>(tok.size()))
    throw DataError("data file '" + name() + "': tokens [" +
                    std::to_string(offset) + ", " + std::to_string(offset + n) +
                    ") are outside the split's " + std::to_string(tok.size()));
  std::copy_n(tok.begin() + offset, n, out);
}

std::string CharDataset::decode(int32_t id) const {
  try {
    return std::string(1, vocab_.decode(id));
  } catch (const std::out_of_range &e) {
    throw DataError("data file '" + name() + "': " + e.what());
  }
}

int32_t CharDataset::sampleStart() const {
  try {
    return vocab_.encode('\n');
  } catch (const DataError &) {
    return 0;
  }
}

std::string CharDataset::describe() const {
  return std::to_string(vocab_.size()) + " characters";
}

} // namespace autoshard::runtime
