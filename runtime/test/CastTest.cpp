//===- CastTest.cpp - tfm.cast and bf16/f16 operands on the CPU backend ---===//
//
// The `cast` kernel's conversions (round to nearest even, NaN, infinities,
// f16 subnormals) and the binding of ops with 16-bit float operands through
// their f32 kernels (CpuLowPrecision.h).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "autoshard/runtime/CpuBackend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

using namespace autoshard::runtime;

namespace {

TensorType tensor(DType dtype, std::vector<int64_t> shape) {
  TensorType t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

BoundKernel bindOp(CpuBackend &backend, const char *op, const AttrMap &attrs,
                   std::vector<TensorType> args,
                   std::vector<TensorType> results) {
  return backend.bind(
      test::signatureOf(op, attrs, std::move(args), std::move(results)));
}

/// Runs cast f32 -> `to` on `values` and returns the 16-bit patterns.
std::vector<uint16_t> narrow(DType to, const std::vector<float> &values) {
  CpuBackend backend;
  AttrMap attrs;
  int64_t n = static_cast<int64_t>(values.size());
  BoundKernel k = bindOp(backend, "cast", attrs, {tensor(DType::F32, {n})},
                         {tensor(to, {n})});
  std::vector<uint16_t> out(values.size());
  void *ptrs[] = {const_cast<float *>(values.data()), out.data()};
  k(ptrs);
  return out;
}

std::vector<float> widen(DType from, const std::vector<uint16_t> &bits) {
  CpuBackend backend;
  AttrMap attrs;
  int64_t n = static_cast<int64_t>(bits.size());
  BoundKernel k = bindOp(backend, "cast", attrs, {tensor(from, {n})},
                         {tensor(DType::F32, {n})});
  std::vector<float> out(bits.size());
  void *ptrs[] = {const_cast<uint16_t *>(bits.data()), out.data()};
  k(ptrs);
  return out;
}

TEST(CastTest, Bf16RoundsToNearestEven) {
  float inf = std::numeric_limits<float>::infinity();
  float nan = std::numeric_limits<float>::quiet_NaN();
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1); 1 + 3 *
  // 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  std::vector<float> in = {
      1.0f, -2.5f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1.8p-8f, inf,
      -inf, 0.0f};
  std::vector<uint16_t> got = narrow(DType::BF16, in);
  EXPECT_EQ(got, (std::vector<uint16_t>{0x3F80, 0xC020, 0x3F80, 0x3F82, 0x3F81,
                                        0x7F80, 0xFF80, 0x0000}));
  std::vector<uint16_t> n = narrow(DType::BF16, {nan});
  EXPECT_EQ(n[0] & 0x7F80, 0x7F80);
  EXPECT_NE(n[0] & 0x007F, 0);
  std::vector<float> back = widen(DType::BF16, got);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -2.5f);
  EXPECT_EQ(back[3], 1.0f + 0x1p-6f);
  EXPECT_EQ(back[5], inf);
}

TEST(CastTest, F16NormalsSubnormalsAndOverflow) {
  std::vector<float> in = {1.0f,     -2.0f,    65504.0f, 65520.0f,
                           0x1p-24f, 0x1p-14f, 0x1p-25f, 1.0f + 0x1p-11f};
  std::vector<uint16_t> got = narrow(DType::F16, in);
  // 65520 rounds up to infinity; 2^-25 is halfway to 2^-24: ties to even
  // (0); 1 + 2^-11 ties to even (1).
  EXPECT_EQ(got, (std::vector<uint16_t>{0x3C00, 0xC000, 0x7BFF, 0x7C00, 0x0001,
                                        0x0400, 0x0000, 0x3C00}));
  std::vector<float> back = widen(DType::F16, got);
  EXPECT_EQ(back[2], 65504.0f);
  EXPECT_TRUE(std::isinf(back[3]));
  EXPECT_EQ(back[4], 0x1p-24f);
  EXPECT_EQ(back[5], 0x1p-14f);
}

TEST(CastTest, RejectsShapeChangesAndIntegers) {
  CpuBackend backend;
  AttrMap attrs;
  EXPECT_THROW(bindOp(backend, "cast", attrs, {tensor(DType::F32, {4})},
                      {tensor(DType::BF16, {2, 2})}),
               ArtifactError);
  EXPECT_THROW(bindOp(backend, "cast", attrs, {tensor(DType::I32, {4})},
                      {tensor(DType::BF16, {4})}),
               ArtifactError);
}

/// An op with bf16 operands runs its f32 kernel on the widened values and
/// rounds the result once.
TEST(CastTest, Bf16OperandsRunTheF32Kernel) {
  CpuBackend backend;
  AttrMap attrs;
  BoundKernel add =
      bindOp(backend, "add", attrs,
             {tensor(DType::BF16, {2, 2}), tensor(DType::BF16, {2})},
             {tensor(DType::BF16, {2, 2})});
  std::vector<float> a = {1.0f, 2.0f, 3.0f, 256.0f}, b = {0.5f, 1.0f};
  std::vector<uint16_t> a16 = narrow(DType::BF16, a),
                        b16 = narrow(DType::BF16, b);
  std::vector<uint16_t> out(4, 0xFFFF);
  void *ptrs[] = {a16.data(), b16.data(), out.data()};
  add(ptrs);
  // 256 + 1 = 257 is not a bf16 (8 bits of mantissa): rounds to even, 256.
  EXPECT_EQ(widen(DType::BF16, out),
            (std::vector<float>{1.5f, 3.0f, 3.5f, 256.0f}));
  // A NaN in bf16 storage is seen by the memory check.
  uint16_t nan16 = 0x7FC0;
  EXPECT_TRUE(backend.hasNaN(&nan16, DType::BF16, 1));
  EXPECT_FALSE(backend.hasNaN(out.data(), DType::BF16, 4));
}

/// Mixed operand types: an f32 AdamW update reading a bf16 gradient.
TEST(CastTest, MixedF32AndBf16Operands) {
  CpuBackend backend;
  AttrMap attrs;
  attrs.set("beta1", 0.9);
  attrs.set("beta2", 0.95);
  attrs.set("epsilon", 1e-8);
  attrs.set("weight_decay", 0.0);
  TensorType f = tensor(DType::F32, {3}), g = tensor(DType::BF16, {3});
  BoundKernel adamw = bindOp(backend, "adamw", attrs,
                             {f, g, f, f, tensor(DType::F32, {}),
                              tensor(DType::I64, {}), tensor(DType::F32, {})},
                             {f, f, f});
  std::vector<float> p = {1, 2, 3}, m(3, 0.0f), v(3, 0.0f);
  std::vector<uint16_t> grad = narrow(DType::BF16, {1.0f, -1.0f, 0.0f});
  float lr = 0.1f, scale = 1.0f;
  int64_t step = 1;
  void *ptrs[] = {p.data(), grad.data(), m.data(), v.data(), &lr,
                  &step,    &scale,      p.data(), m.data(), v.data()};
  adamw(ptrs);
  // First step: the update is lr * sign(g).
  EXPECT_NEAR(p[0], 0.9f, 1e-6);
  EXPECT_NEAR(p[1], 2.1f, 1e-6);
  EXPECT_NEAR(p[2], 3.0f, 1e-6);
}

/// A fused matmul (rt-fuse-epilogues) with bf16 operands runs the f32
/// matmulAdd on the widened values and rounds the result once, so it is
/// within half a bf16 ulp (2^-8 relative) of the exact value, plus f32
/// accumulation error; matmul then add rounds twice (product, then sum).
/// In place (addend and result one buffer) as well.
TEST(CastTest, Bf16FusedMatmulRoundsOnce) {
  const int64_t rows = 6, k = 16, n = 8;
  std::vector<float> lhs(rows * k), rhs(k * n), full(rows * n), bias(n);
  uint32_t state = 1;
  auto next = [&] { // small deterministic values in [-1, 1)
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / float(1 << 23) - 1.0f;
  };
  for (std::vector<float> *v : {&lhs, &rhs, &full, &bias})
    for (float &x : *v)
      x = next();
  std::vector<uint16_t> lhs16 = narrow(DType::BF16, lhs),
                        rhs16 = narrow(DType::BF16, rhs);
  std::vector<float> a = widen(DType::BF16, lhs16),
                     b = widen(DType::BF16, rhs16);
  CpuBackend backend;
  for (bool isBias : {false, true}) {
    AttrMap attrs;
    if (isBias)
      attrs.set("epilogue", std::string("bias"));
    std::vector<uint16_t> add16 = narrow(DType::BF16, isBias ? bias : full);
    std::vector<float> c = widen(DType::BF16, add16);
    BoundKernel matmul =
        bindOp(backend, "matmul", attrs,
               {tensor(DType::BF16, {2, 3, k}), tensor(DType::BF16, {k, n}),
                tensor(DType::BF16, isBias ? std::vector<int64_t>{n}
                                           : std::vector<int64_t>{2, 3, n})},
               {tensor(DType::BF16, {2, 3, n})});
    std::vector<uint16_t> out(rows * n, 0xFFFF), inPlace = add16;
    void *ptrs[] = {lhs16.data(), rhs16.data(), add16.data(), out.data()};
    matmul(ptrs);
    std::vector<std::vector<uint16_t> *> results = {&out};
    if (!isBias) {
      void *same[] = {lhs16.data(), rhs16.data(), inPlace.data(),
                      inPlace.data()};
      matmul(same);
      results.push_back(&inPlace);
    }
    for (std::vector<uint16_t> *r : results) {
      std::vector<float> got = widen(DType::BF16, *r);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double exact = c[isBias ? j : i * n + j];
          for (int64_t p = 0; p < k; ++p)
            exact += double(a[i * k + p]) * b[p * n + j];
          EXPECT_NEAR(got[i * n + j], exact, 0x1p-8 * std::fabs(exact) + 1e-6)
              << (isBias ? "bias" : "full") << " row " << i << " col " << j;
        }
    }
  }
}

} // namespace
