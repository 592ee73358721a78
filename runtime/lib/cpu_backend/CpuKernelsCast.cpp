//===- CpuKernelsCast.cpp - tfm.cast and 16-bit float storage -------------===//
//
// The `cast` kernel (any of f32, f64, bf16, f16 to any other) and the
// binding of instructions with bf16/f16 operands through the f32 kernels
// (CpuLowPrecision.h).
//
//===----------------------------------------------------------------------===//

#include "CpuKernels.h"
#include "CpuLowPrecision.h"

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/HalfFloat.h"
#include "autoshard/runtime/Ops.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace autoshard::runtime::cpu_kernels {
namespace {

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep it a (quiet) NaN
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  bits += 0x7FFFu + ((bits >> 16) & 1u); // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t floatToF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) // NaN
    return static_cast<uint16_t>(sign | 0x7E00u);
  if (abs >= 0x477FF000u) // rounds to >= 65520: infinity
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (abs < 0x38800000u) { // below the smallest normal (2^-14): subnormal
    float a;
    std::memcpy(&a, &abs, 4);
    // Units of 2^-24, rounded to nearest even by the FPU (nearbyint under
    // the default rounding mode).
    auto units = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, 24)));
    return static_cast<uint16_t>(sign | units); // 1024 units: smallest normal
  }
  // Normal: rebias the exponent (127 -> 15) and round the mantissa to 10
  // bits, to nearest even (a carry into the exponent is correct).
  uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

/// Element `i` of a float buffer of `dtype`, as double.
double load(const void *p, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::F32:
    return static_cast<const float *>(p)[i];
  case DType::F64:
    return static_cast<const double *>(p)[i];
  case DType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::F16:
    return f16ToFloat(static_cast<const uint16_t *>(p)[i]);
  default:
    return 0;
  }
}

void store(void *p, DType dtype, int64_t i, double v) {
  switch (dtype) {
  case DType::F32:
    static_cast<float *>(p)[i] = static_cast<float>(v);
    return;
  case DType::F64:
    static_cast<double *>(p)[i] = v;
    return;
  case DType::BF16:
    static_cast<uint16_t *>(p)[i] = floatToBf16(static_cast<float>(v));
    return;
  case DType::F16:
    static_cast<uint16_t *>(p)[i] = floatToF16(static_cast<float>(v));
    return;
  default:
    return;
  }
}

bool is16(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16; }

void from16(const void *src, DType dtype, float *dst, int64_t n) {
  const auto *h = static_cast<const uint16_t *>(src);
  if (dtype == DType::BF16)
    for (int64_t i = 0; i < n; ++i)
      dst[i] = bf16ToFloat(h[i]);
  else
    for (int64_t i = 0; i < n; ++i)
      dst[i] = f16ToFloat(h[i]);
}

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

} // namespace

template <> BoundKernel bind<ops::Cast>(const KernelSignature &sig) {
  using Op = ops::Cast;
  const TensorType &x = sig.arg(Op::x), &y = sig.result(Op::result);
  if (!isFloat(x.dtype) || !isFloat(y.dtype))
    sig.fail("cast converts between f32, f64, bf16 and f16, found " + x.str() +
             " -> " + y.str());
  if (x.shape != y.shape)
    sig.fail("result " + y.str() + " must have the shape of x " + x.str());
  int64_t n = x.numel();
  DType from = x.dtype, to = y.dtype;
  if (from == to)
    return bindOperands(sig, [bytes = x.bytes()](Operands o) {
      if (o[Op::x] != o[Op::result])
        std::memmove(o[Op::result], o[Op::x], bytes);
    });
  if (from == DType::F32 && is16(to))
    return bindOperands(sig, [n, to](Operands o) {
      floatsTo16(o.in<float>(Op::x), o[Op::result], to, n);
    });
  if (is16(from) && to == DType::F32)
    return bindOperands(sig, [n, from](Operands o) {
      from16(o[Op::x], from, o.out<float>(Op::result), n);
    });
  return bindOperands(sig, [n, from, to](Operands o) {
    for (int64_t i = 0; i < n; ++i)
      store(o[Op::result], to, i, load(o[Op::x], from, i));
  });
}

namespace {

//===----------------------------------------------------------------------===//
// 16-bit operands through the f32 kernels
//===----------------------------------------------------------------------===//

/// The f32 scratch of one 16-bit operand.
struct Staged {
  size_t operand; ///< Index in the kernel's operand list (args, results).
  DType dtype;    ///< bf16 or f16.
  std::vector<float> data;
};

struct Staging {
  std::vector<Staged> args, results;
  size_t numOperands = 0;
};

} // namespace

void floatsTo16(const float *src, void *dst, DType dtype, int64_t numel) {
  auto *h = static_cast<uint16_t *>(dst);
  if (dtype == DType::BF16)
    for (int64_t i = 0; i < numel; ++i)
      h[i] = floatToBf16(src[i]);
  else
    for (int64_t i = 0; i < numel; ++i)
      h[i] = floatToF16(src[i]);
}

bool anyNaN16(const void *data, DType dtype, int64_t numel) {
  const auto *h = static_cast<const uint16_t *>(data);
  // bf16: exponent 0xFF (bits 7-14); f16: exponent 0x1F (bits 10-14); NaN
  // when the mantissa is non-zero.
  uint16_t expMask = dtype == DType::BF16 ? 0x7F80u : 0x7C00u;
  uint16_t mantMask = dtype == DType::BF16 ? 0x007Fu : 0x03FFu;
  for (int64_t i = 0; i < numel; ++i)
    if ((h[i] & expMask) == expMask && (h[i] & mantMask) != 0)
      return true;
  return false;
}

void registerCastKernels(KernelTable &t) { addBinders<ops::Cast>(t); }

BoundKernel bindWithLowPrecision(const KernelTable &table,
                                 const KernelSignature &sig,
                                 std::string_view backendName) {
  bool any16 = false;
  for (const TensorType &t : sig.args)
    any16 |= is16(t.dtype);
  for (const TensorType &t : sig.results)
    any16 |= is16(t.dtype);
  if (!any16)
    return table.bind(sig, backendName);
  // Kernels that take 16-bit data as it is (cast, data movement: reshape,
  // gathers, permutes, pack/unpack, dist.wait) bind directly; the others
  // reject the type and are bound in f32.
  try {
    return table.bind(sig, backendName);
  } catch (const ArtifactError &) {
  }
  KernelSignature wide = sig;
  auto staging = std::make_shared<Staging>();
  staging->numOperands = sig.args.size() + sig.results.size();
  for (size_t i = 0; i < wide.args.size(); ++i)
    if (is16(wide.args[i].dtype)) {
      staging->args.push_back(
          {i, wide.args[i].dtype,
           std::vector<float>(static_cast<size_t>(wide.args[i].numel()))});
      wide.args[i].dtype = DType::F32;
    }
  for (size_t i = 0; i < wide.results.size(); ++i)
    if (is16(wide.results[i].dtype)) {
      staging->results.push_back(
          {sig.args.size() + i, wide.results[i].dtype,
           std::vector<float>(static_cast<size_t>(wide.results[i].numel()))});
      wide.results[i].dtype = DType::F32;
    }
  BoundKernel kernel = table.bind(wide, backendName);

  // An asynchronous collective completes at its dist.wait: the results are
  // converted there, after whatever the wait already does.
  CommContext::Pending *slot = nullptr;
  if (isAsyncStartOp(sig.op) && sig.comm && sig.attrs)
    slot = &sig.comm->pending(sig.function, sig.attrs->getI64("handle"));

  return [staging, kernel, slot](void *const *operands) {
    Staging &s = *staging;
    std::vector<void *> wideOperands(operands, operands + s.numOperands);
    for (Staged &a : s.args) {
      from16(operands[a.operand], a.dtype, a.data.data(),
             static_cast<int64_t>(a.data.size()));
      wideOperands[a.operand] = a.data.data();
    }
    for (Staged &r : s.results)
      wideOperands[r.operand] = r.data.data();
    kernel(wideOperands.data());
    std::vector<void *> targets;
    for (Staged &r : s.results)
      targets.push_back(operands[r.operand]);
    auto narrow = [staging, targets] {
      for (size_t k = 0; k < staging->results.size(); ++k) {
        Staged &r = staging->results[k];
        floatsTo16(r.data.data(), targets[k], r.dtype,
                   static_cast<int64_t>(r.data.size()));
      }
    };
    if (!slot)
      return narrow();
    slot->finish = [after = std::move(slot->finish), narrow] {
      if (after)
        after();
      narrow();
    };
  };
}

} // namespace autoshard::runtime::cpu_kernels
