//===- Safetensors.h - safetensors header layout and parsing ----*- C++ -*-===//
//
// The Hugging Face safetensors format
// (https://github.com/huggingface/safetensors, "Format"): an 8-byte
// little-endian header length N, N bytes of JSON header, then the raw
// row-major, little-endian tensor data. The header maps every tensor name to
// {"dtype", "shape", "data_offsets": [begin, end)} (byte offsets from the
// start of the data) and may hold a "__metadata__" map of string to string.
//
// This file only lays out and parses headers; callers move the bytes
// (checkpoints stream them with pwrite/pread so that no tensor is copied
// twice). The Python `safetensors` package reads what we write.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_SAFETENSORS_H
#define AUTOSHARD_RUNTIME_TRAIN_SAFETENSORS_H

#include "autoshard/runtime/Types.h"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace autoshard::runtime {

/// A malformed safetensors file; the message names the file, the tensor or
/// field, and the value found.
class SafetensorsError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// safetensors' dtype spelling ("F32", "BF16", "I64", ...).
std::string safetensorsDType(DType dtype);
/// Parses a safetensors dtype; throws SafetensorsError for one the runtime
/// has no type for (e.g. "U8", "F8_E4M3").
DType parseSafetensorsDType(const std::string &name);

/// One tensor of a file: byte range [begin, end) relative to the data start.
struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;
};

/// The layout of a file to write: tensors packed in the order given.
struct SafetensorsLayout {
  std::vector<SafetensorsTensor> tensors;
  /// The 8-byte length and the JSON header, padded with spaces so that the
  /// data starts 8-byte aligned (as the reference writer does).
  std::string header;
  /// Bytes of the whole file (header + data).
  int64_t fileBytes = 0;
  /// Byte offset of the data in the file (= header.size()).
  int64_t dataStart() const { return static_cast<int64_t>(header.size()); }
};

/// Lays out `tensors` (name, dtype, shape; begin/end are assigned) back to
/// back, with `metadata` as "__metadata__". Throws SafetensorsError for a
/// duplicate or empty name, or a name that is "__metadata__".
SafetensorsLayout
layoutSafetensors(std::vector<SafetensorsTensor> tensors,
                  const std::map<std::string, std::string> &metadata);

/// A parsed file header.
struct SafetensorsHeader {
  std::string path;
  int64_t dataStart = 0; ///< Byte offset of the data in the file.
  int64_t fileBytes = 0;
  std::map<std::string, SafetensorsTensor> tensors;
  std::map<std::string, std::string> metadata;
  /// The tensor `name`; throws SafetensorsError naming the file if absent.
  const SafetensorsTensor &at(const std::string &name) const;
};

/// Reads and checks the header of `path` (reads only the header): the
/// length fits the file and is at most 100 MB, the JSON is an object,
/// every tensor has a known dtype, non-negative dims, a byte range of
/// exactly dtype size x element count inside the file, and no two ranges
/// overlap. Throws SafetensorsError naming the file and the problem (a
/// missing file included).
SafetensorsHeader readSafetensorsHeader(const std::string &path);

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_SAFETENSORS_H
