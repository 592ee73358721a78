//===- Backend.h - The kernel and memory interface of a device --*- C++ -*-===//
//
// A Backend owns one kind of device memory and turns each kernel
// instruction of an artifact into a pre-bound call (its shapes and
// attributes resolved once, at load time). The executor is written against
// this interface only, so the CPU backend (fp32/fp64, OpenBLAS) and a CUDA
// backend slot in behind it. A KernelTable maps op names to binders.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_BACKEND_H
#define AUTOSHARD_RUNTIME_BACKEND_H

#include "autoshard/runtime/Artifact.h"
#include "autoshard/runtime/Ops.h"

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace autoshard::runtime {

class CommContext;

/// What a backend needs to bind one kernel instruction.
struct KernelSignature {
  std::string_view op;             ///< tfm op name, e.g. "matmul".
  const AttrMap *attrs = nullptr;  ///< The instruction's attributes.
  std::vector<TensorType> args;    ///< Operand types, in op order.
  std::vector<TensorType> results; ///< Result types, in op order.
  std::string place;               ///< For messages: function, index, op.
  uint64_t seed = 0;               ///< The run's seed (dropout masks).
  /// The groups of the job, for communication kernels (`dist.*`); null
  /// when the executor runs without one (then those kernels fail to bind).
  CommContext *comm = nullptr;
  /// The mesh and this process's rank in it (`dist.shard_slice`,
  /// `dist.axis_index` read the rank's coordinates; no communication).
  const Mesh *mesh = nullptr;
  int64_t rank = 0;
  /// The function the instruction is in (pairs `dist.*_start` with its
  /// `dist.wait`, whose handles are per function).
  std::string_view function;

  /// The type of a named operand (OpTable.h): `sig.arg(ops::Matmul::lhs)`.
  const TensorType &arg(ArgSlot slot) const { return args[slot.index]; }
  const TensorType &result(ResultSlot slot) const {
    return results[slot.index];
  }
  /// The type of either kind of slot (generic binders).
  const TensorType &type(ArgSlot slot) const { return arg(slot); }
  const TensorType &type(ResultSlot slot) const { return result(slot); }

  /// Throws ArtifactError("PLACE: message").
  [[noreturn]] void fail(const std::string &message) const;
};

/// Where the named operands of one instruction lie in the pointer array its
/// bound kernel is called with (the args, then the results):
/// `OperandIndex at(sig); ... p[at(ops::Gelu::y)]`.
class OperandIndex {
public:
  explicit OperandIndex(const KernelSignature &sig)
      : numArgs(static_cast<int>(sig.args.size())) {}
  constexpr int operator()(ArgSlot slot) const { return slot.index; }
  constexpr int operator()(ResultSlot slot) const {
    return numArgs + slot.index;
  }

private:
  int numArgs;
};

/// The device pointers of one kernel call, addressed by the op's named
/// slots (OpTable.h): `o.in(ops::Gelu::x, T{})` is operand x as `const T *`,
/// `o.out(ops::Gelu::y, T{})` result y as `T *` (or `o.in<float>(slot)`),
/// `o[slot]` the untyped pointer. A variadic group's members follow its
/// slot: `o.at(ops::DistPack::inputs, i)`.
class Operands {
public:
  Operands(OperandIndex index, void *const *pointers)
      : index(index), pointers(pointers) {}

  template <typename Slot> void *operator[](Slot slot) const {
    return pointers[index(slot)];
  }
  /// Member `offset` of the variadic group that starts at `slot`.
  template <typename Slot> void *at(Slot slot, int offset) const {
    return pointers[index(slot) + offset];
  }
  /// The members of the variadic group that starts at `slot`, as an array
  /// (kernels taking a list of buffers: `cpu::pack`).
  template <typename Slot> void *const *group(Slot slot) const {
    return pointers + index(slot);
  }
  template <typename T, typename Slot>
  const T *in(Slot slot, T /*type tag*/ = T{}) const {
    return static_cast<const T *>((*this)[slot]);
  }
  template <typename T, typename Slot>
  T *out(Slot slot, T /*type tag*/ = T{}) const {
    return static_cast<T *>((*this)[slot]);
  }

private:
  OperandIndex index;
  void *const *pointers;
};

/// A kernel with its shapes and attributes bound. Called with the device
/// pointers of the operands: args first, then results, in op order. Scalar
/// operands (lr, step, grad_scale, dloss) are read through their pointers
/// when the kernel runs. Throws (std::exception) on bad data, e.g. an id out
/// of range.
using BoundKernel = std::function<void(void *const *operands)>;

/// A kernel of no element-type dispatch (data movement, scalar kernels):
/// the bound kernel calls `run(Operands)`.
template <typename Run>
BoundKernel bindOperands(const KernelSignature &sig, Run run) {
  OperandIndex index(sig);
  return [=](void *const *p) { run(Operands(index, p)); };
}

/// Binds one op for one backend; throws ArtifactError (via
/// KernelSignature::fail) when the types or shapes do not fit the op.
/// Empty: no binder.
using KernelBinder = std::function<BoundKernel(const KernelSignature &)>;

/// Op name -> binder.
class KernelTable {
public:
  /// Registers (or replaces) the binder of `op`.
  void add(std::string_view op, KernelBinder binder);
  /// The binder of `op`, or nullptr.
  KernelBinder lookup(std::string_view op) const;
  /// Known ops (Ops.h) this table has no binder for.
  std::vector<std::string> missingOps() const;
  /// Binds `signature` with its op's binder; throws ArtifactError naming
  /// the op and `backendName` if there is none.
  BoundKernel bind(const KernelSignature &signature,
                   std::string_view backendName) const;

private:
  std::map<std::string, KernelBinder, std::less<>> binders;
};

/// Memory and kernels of one device kind. Allocation goes through
/// allocate()/deallocate(), which count the bytes, so the memory-plan test
/// can compare what the program allocated with the artifact's peak_bytes.
class Backend {
public:
  virtual ~Backend() = default;

  /// A short name for messages ("cpu").
  virtual std::string_view name() const = 0;

  /// Allocates `bytes` of device memory aligned to 64 bytes (nullptr for 0
  /// bytes) and counts them. Throws std::bad_alloc.
  void *allocate(int64_t bytes);
  /// Frees memory from allocate(); `bytes` is what was requested.
  void deallocate(void *ptr, int64_t bytes);
  /// Bytes currently allocated / the most ever allocated at once.
  int64_t allocatedBytes() const { return current; }
  int64_t peakAllocatedBytes() const { return peak; }

  /// Host -> device and device -> host copies; fill sets every byte.
  virtual void copyToDevice(void *dst, const void *src, int64_t bytes) = 0;
  virtual void copyToHost(void *dst, const void *src, int64_t bytes) = 0;
  virtual void fill(void *dst, unsigned char byte, int64_t bytes) = 0;
  /// Whether the host may read and write the backend's memory directly
  /// (then checkpoints read and write state in place, without staging).
  virtual bool hostAccessible() const { return false; }
  /// Whether `numel` elements of float type `dtype` at `data` hold a NaN.
  virtual bool hasNaN(const void *data, DType dtype, int64_t numel) = 0;
  /// Initialises state tensor `spec` at `data` (device memory) per its init
  /// kind, with the counter-based RNG of Init.h keyed on `seed`. `data`
  /// holds the local block of a tensor of spec.globalShape that starts at
  /// global coordinates `globalOffset` (one per dim; empty: all zero), so
  /// each element gets the value of its global row-major index.
  virtual void initState(void *data, const StateSpec &spec, uint64_t seed,
                         const std::vector<int64_t> &globalOffset) = 0;
  /// Binds one kernel instruction; throws ArtifactError naming the place
  /// when the op or its types are not supported.
  virtual BoundKernel bind(const KernelSignature &signature) const = 0;
  /// Waits for queued device work (a no-op on the CPU).
  virtual void synchronize() {}

protected:
  virtual void *allocateImpl(int64_t bytes) = 0;
  virtual void deallocateImpl(void *ptr) = 0;

private:
  int64_t current = 0;
  int64_t peak = 0;
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_BACKEND_H
