//===- Types.cpp - Element types and tensor types -------------------------===//

#include "autoshard/runtime/Types.h"

#include <array>
#include <utility>

namespace autoshard::runtime {

namespace {
struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int64_t size;
  bool isFloat;
};
constexpr std::array<DTypeInfo, 6> kDTypes = {{
    {DType::F32, "f32", 4, true},
    {DType::F64, "f64", 8, true},
    {DType::BF16, "bf16", 2, true},
    {DType::F16, "f16", 2, true},
    {DType::I32, "i32", 4, false},
    {DType::I64, "i64", 8, false},
}};

const DTypeInfo &info(DType dtype) {
  return kDTypes[static_cast<size_t>(dtype)];
}
} // namespace

int64_t dtypeSize(DType dtype) { return info(dtype).size; }
std::string_view dtypeName(DType dtype) { return info(dtype).name; }
bool isFloat(DType dtype) { return info(dtype).isFloat; }

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &d : kDTypes)
    if (d.name == name)
      return d.dtype;
  return std::nullopt;
}

int64_t TensorType::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string TensorType::str() const {
  std::string s(dtypeName(dtype));
  s += '[';
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ']';
}

} // namespace autoshard::runtime
