//===- TokenDataset.cpp - A prepared token directory, memory-mapped -------===//

#include "autoshard/runtime/train/TokenDataset.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace autoshard::runtime {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

/// A field of meta.json, with a clear error when absent or mistyped.
const Json &field(const Json &obj, const std::string &key,
                  const std::string &where, const std::string &path,
                  Json::value_t type) {
  std::string at = where.empty() ? key : where + "." + key;
  if (!obj.is_object() || !obj.contains(key))
    throw DataError("data '" + path + "': field '" + at + "' is missing");
  const Json &v = obj[key];
  bool ok = v.type() == type ||
            (type == Json::value_t::number_integer && v.is_number_unsigned());
  if (!ok)
    throw DataError("data '" + path + "': field '" + at +
                    "' has the wrong type: " + v.dump());
  return v;
}

int64_t nonNegative(const Json &obj, const std::string &key,
                    const std::string &where, const std::string &path) {
  const Json &v = field(obj, key, where, path, Json::value_t::number_integer);
  if (v.is_number_integer() && v.get<int64_t>() < 0)
    throw DataError("data '" + path + "': field '" +
                    (where.empty() ? key : where + "." + key) +
                    "' must be >= 0, found " + v.dump());
  return v.get<int64_t>();
}

std::string fromHex(const std::string &hex, int64_t id,
                    const std::string &path) {
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    throw DataError("data '" + path + "': token_bytes[" + std::to_string(id) +
                    "] is not hex: \"" + hex + "\"");
  };
  if (hex.size() % 2 != 0)
    throw DataError("data '" + path + "': token_bytes[" + std::to_string(id) +
                    "] has an odd number of hex digits: \"" + hex + "\"");
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2)
    out.push_back(static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1])));
  return out;
}

} // namespace

TokenDataset TokenDataset::open(const std::string &dir) {
  TokenDataset d(dir);
  std::string metaPath = (fs::path(dir) / "meta.json").string();
  std::ifstream in(metaPath);
  std::error_code ec;
  if (!in || fs::is_directory(metaPath, ec))
    throw DataError("data directory '" + dir +
                    "' has no meta.json file (prepare it with `python -m "
                    "autoshard.data prepare TEXT... -o " +
                    dir + "`)");
  std::stringstream text;
  try {
    text << in.rdbuf();
  } catch (const std::exception &e) {
    throw DataError("data '" + metaPath + "': cannot read it: " + e.what());
  }
  Json m = Json::parse(text.str(), nullptr, false);
  if (m.is_discarded() || !m.is_object())
    throw DataError("data '" + metaPath + "' is not a JSON object");
  using VT = Json::value_t;
  std::string format = field(m, "format", "", metaPath, VT::string);
  if (format != "autoshard-tokens")
    throw DataError("data '" + metaPath + "': format \"" + format +
                    "\" is not \"autoshard-tokens\"");
  int64_t version = nonNegative(m, "version", "", metaPath);
  if (version > kTokenDataVersion)
    throw DataError("data '" + metaPath + "': format version " +
                    std::to_string(version) +
                    " is newer than this shard-run reads (" +
                    std::to_string(kTokenDataVersion) + ")");
  std::string dtype = field(m, "dtype", "", metaPath, VT::string);
  if (dtype == "uint16")
    d.elemBytes = 2;
  else if (dtype == "uint32")
    d.elemBytes = 4;
  else
    throw DataError("data '" + metaPath + "': dtype \"" + dtype +
                    "\" is not uint16 or uint32");
  d.vocab = nonNegative(m, "vocab_size", "", metaPath);
  if (d.vocab < 1 || (d.elemBytes == 2 && d.vocab > 65536))
    throw DataError("data '" + metaPath + "': vocab_size " +
                    std::to_string(d.vocab) + " does not fit dtype " + dtype);
  const Json &tok = field(m, "tokenizer", "", metaPath, VT::object);
  d.kind = field(tok, "kind", "tokenizer", metaPath, VT::string);
  d.spec = tok.contains("spec") && tok["spec"].is_string()
               ? tok["spec"].get<std::string>()
               : d.kind;
  if (tok.contains("eot_id") && !tok["eot_id"].is_null()) {
    int64_t e = nonNegative(tok, "eot_id", "tokenizer", metaPath);
    if (e >= d.vocab)
      throw DataError("data '" + metaPath + "': tokenizer.eot_id " +
                      std::to_string(e) + " is outside the vocabulary of " +
                      std::to_string(d.vocab));
    d.eot = static_cast<int32_t>(e);
  }
  const Json &bytes = field(m, "token_bytes", "", metaPath, VT::array);
  if (static_cast<int64_t>(bytes.size()) != d.vocab)
    throw DataError("data '" + metaPath + "': token_bytes has " +
                    std::to_string(bytes.size()) + " entries, vocab_size is " +
                    std::to_string(d.vocab));
  d.tokenBytes.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!bytes[i].is_string())
      throw DataError("data '" + metaPath + "': token_bytes[" +
                      std::to_string(i) + "] is not a string");
    d.tokenBytes.push_back(fromHex(bytes[i].get<std::string>(),
                                   static_cast<int64_t>(i), metaPath));
  }

  const char *names[2] = {"train", "val"};
  for (int k = 0; k < 2; ++k) {
    const Json &s = field(m, names[k], "", metaPath, VT::object);
    std::string file = field(s, "file", names[k], metaPath, VT::string);
    if (file.empty() || fs::path(file).has_parent_path())
      throw DataError("data '" + metaPath + "': " + names[k] + ".file \"" +
                      file + "\" must be a file name in the directory");
    MappedSplit &ms = d.splits[k];
    ms.path = (fs::path(dir) / file).string();
    ms.tokens = nonNegative(s, "tokens", names[k], metaPath);
    int fd = ::open(ms.path.c_str(), O_RDONLY);
    if (fd < 0)
      throw DataError("data '" + dir + "': cannot open '" + ms.path +
                      "': " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      throw DataError("data '" + dir + "': cannot stat '" + ms.path +
                      "': " + std::strerror(err));
    }
    int64_t want = ms.tokens * d.elemBytes;
    if (st.st_size != want) {
      ::close(fd);
      throw DataError("data '" + dir + "': '" + ms.path + "' has " +
                      std::to_string(st.st_size) + " bytes, meta.json says " +
                      std::to_string(ms.tokens) + " " + dtype + " tokens (" +
                      std::to_string(want) + " bytes)" +
                      (st.st_size < want ? ": truncated" : ""));
    }
    if (want > 0) {
      void *p = ::mmap(nullptr, static_cast<size_t>(want), PROT_READ,
                       MAP_SHARED, fd, 0);
      int err = errno;
      ::close(fd);
      if (p == MAP_FAILED)
        throw DataError("data '" + dir + "': cannot map '" + ms.path +
                        "': " + std::strerror(err));
      // Windows are read at random offsets: no readahead past them.
      ::madvise(p, static_cast<size_t>(want), MADV_RANDOM);
      ms.data = static_cast<const unsigned char *>(p);
      ms.mappedBytes = static_cast<size_t>(want);
    } else {
      ::close(fd);
    }
  }
  return d;
}

TokenDataset::TokenDataset(TokenDataset &&o) noexcept
    : Dataset(o.name()), elemBytes(o.elemBytes), vocab(o.vocab),
      kind(std::move(o.kind)), spec(std::move(o.spec)), eot(o.eot),
      tokenBytes(std::move(o.tokenBytes)) {
  for (int k = 0; k < 2; ++k) {
    splits[k] = o.splits[k];
    o.splits[k].data = nullptr;
    o.splits[k].mappedBytes = 0;
  }
}

TokenDataset::~TokenDataset() {
  for (MappedSplit &s : splits)
    if (s.data)
      ::munmap(const_cast<unsigned char *>(s.data), s.mappedBytes);
}

void TokenDataset::read(Split split, int64_t offset, int64_t n,
                        int32_t *out) const {
  const MappedSplit &s = splits[split == Split::Train ? 0 : 1];
  if (offset < 0 || n < 0 || offset + n > s.tokens)
    throw DataError("data '" + s.path + "': tokens [" + std::to_string(offset) +
                    ", " + std::to_string(offset + n) + ") are outside its " +
                    std::to_string(s.tokens));
  for (int64_t i = 0; i < n; ++i) {
    const unsigned char *p = s.data + (offset + i) * elemBytes;
    uint32_t id = elemBytes == 2
                      ? uint32_t(p[0]) | uint32_t(p[1]) << 8
                      : uint32_t(p[0]) | uint32_t(p[1]) << 8 |
                            uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    if (id >= static_cast<uint64_t>(vocab))
      throw DataError("data '" + s.path + "': token " +
                      std::to_string(offset + i) + " is id " +
                      std::to_string(id) + ", outside the vocabulary of " +
                      std::to_string(vocab) + " (a corrupt token file?)");
    out[i] = static_cast<int32_t>(id);
  }
}

std::string TokenDataset::decode(int32_t id) const {
  if (id < 0 || id >= vocab)
    throw DataError("data '" + name() + "': token id " + std::to_string(id) +
                    " is outside the vocabulary of " + std::to_string(vocab));
  return tokenBytes[id];
}

int32_t TokenDataset::sampleStart() const {
  if (eot)
    return *eot;
  for (int64_t i = 0; i < vocab; ++i)
    if (tokenBytes[i] == "\n")
      return static_cast<int32_t>(i);
  return 0;
}

std::string TokenDataset::describe() const {
  return "tokenizer " + spec + " (" + kind + "), vocab " +
         std::to_string(vocab);
}

} // namespace autoshard::runtime
