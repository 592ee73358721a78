//===- Types.h - Element types and tensor types of the runtime --*- C++ -*-===//
//
// The element types an artifact may name (docs/artifact-format.md, "Types")
// and a dense row-major tensor type. Backend-agnostic and MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TYPES_H
#define AUTOSHARD_RUNTIME_TYPES_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autoshard::runtime {

/// Element type of a tensor.
enum class DType { F32, F64, BF16, F16, I32, I64 };

/// Size of one element in bytes.
int64_t dtypeSize(DType dtype);
/// The artifact spelling ("f32", "i64", ...).
std::string_view dtypeName(DType dtype);
/// Parses an artifact spelling; std::nullopt if unknown.
std::optional<DType> parseDType(std::string_view name);
/// Whether `dtype` is a floating-point type.
bool isFloat(DType dtype);

/// A dense, row-major tensor type; an empty shape is a scalar (one element).
struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  /// Number of elements (1 for a scalar).
  int64_t numel() const;
  /// numel() * dtypeSize(dtype).
  int64_t bytes() const { return numel() * dtypeSize(dtype); }
  /// E.g. "f32[12, 64, 128]" (or "f32[]" for a scalar), for messages.
  std::string str() const;

  bool operator==(const TensorType &other) const {
    return dtype == other.dtype && shape == other.shape;
  }
  bool operator!=(const TensorType &other) const { return !(*this == other); }
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TYPES_H
