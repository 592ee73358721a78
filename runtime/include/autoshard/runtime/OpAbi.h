//===- OpAbi.h - The types of the generated op table ------------*- C++ -*-===//
//
// What the runtime knows of each kernel an artifact may name: its operand
// and result names with their counts, and its attributes with their
// artifact forms. The table itself (OpTable.h, kOpTable and the ops::*
// slot structs) is generated from the ODS (RtKernels.td) and shared with
// rt-export, so that both sides check instructions against one ABI. Plain
// C++17: no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_OPABI_H
#define AUTOSHARD_RUNTIME_OPABI_H

#include <cstdint>
#include <string_view>

namespace autoshard::runtime {

/// The position of a named operand among an instruction's args (a
/// variadic group: its first operand).
struct ArgSlot {
  int index;
  std::string_view name; ///< The ODS name, for messages.
};
/// The position of a named result among an instruction's results.
struct ResultSlot {
  int index;
  std::string_view name; ///< The ODS name, for messages.
};

/// The artifact (JSON) form of an attribute: a unit attribute is `true`
/// when present; enums (reduction kinds) are strings.
enum class AttrKind : uint8_t {
  Unit,
  Bool,
  Int,
  Float,
  String,
  IntArray,
  StringArray
};

/// One attribute of a kernel.
struct AttrSpec {
  std::string_view name;
  AttrKind kind;
  bool required; ///< Neither optional nor defaulted in the ODS.
};

/// A constant array of the table (C++17 has no std::span).
template <typename T> struct ConstSpan {
  const T *data = nullptr;
  int size = 0;
  constexpr const T *begin() const { return data; }
  constexpr const T *end() const { return data + size; }
  constexpr const T &operator[](int i) const { return data[i]; }
};

/// The ABI of one kernel.
struct OpSpec {
  std::string_view name; ///< "matmul", "dist.all_reduce", ...
  /// Operand names in order; an optional or variadic one comes last.
  ConstSpan<std::string_view> args;
  int minArgs;
  int maxArgs; ///< -1: variadic (any count >= minArgs).
  ConstSpan<std::string_view> results;
  int minResults;
  int maxResults; ///< -1: variadic (any count >= minResults).
  ConstSpan<AttrSpec> attrs;

  /// The attribute `name`, or nullptr.
  constexpr const AttrSpec *findAttr(std::string_view attr) const {
    for (const AttrSpec &a : attrs)
      if (a.name == attr)
        return &a;
    return nullptr;
  }
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_OPABI_H
