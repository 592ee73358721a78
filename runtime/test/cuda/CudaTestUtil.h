//===- CudaTestUtil.h - Run one op on the CPU and CUDA backends -*- C++ -*-===//
//
// The conformance harness: an op with its attributes and operand types is
// bound on the CPU backend (the oracle) and on the CUDA backend, run on the
// same random inputs, and every result compared. In bf16 mode the float
// tensors (rank >= 1, except listed f32 operands such as lse) are bf16 on the
// GPU; the CPU runs f32 on the bf16-rounded inputs.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TEST_CUDA_CUDATESTUTIL_H
#define AUTOSHARD_RUNTIME_TEST_CUDA_CUDATESTUTIL_H

#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/cuda/CudaBackend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>

namespace autoshard::runtime::cuda::test {

/// Skips the current test unless a CUDA device is usable.
#define AUTOSHARD_REQUIRE_GPU()                                                \
  do {                                                                         \
    std::string why_;                                                          \
    if (!::autoshard::runtime::cuda::deviceAvailable(&why_))                   \
      GTEST_SKIP() << "no GPU: " << why_;                                      \
  } while (0)

inline TensorType tt(DType d, std::vector<int64_t> s) {
  TensorType t;
  t.dtype = d;
  t.shape = std::move(s);
  return t;
}
inline TensorType f32(std::vector<int64_t> s) { return tt(DType::F32, s); }
inline TensorType i64(std::vector<int64_t> s) { return tt(DType::I64, s); }
inline TensorType i32(std::vector<int64_t> s) { return tt(DType::I32, s); }

inline uint16_t toBf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}
inline float fromBf16Bits(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// One op to check.
struct OpCase {
  std::string op;
  AttrMap attrs;
  std::vector<TensorType> args, results;
  /// Input generators by arg index (default: uniform floats in [-1, 1)).
  std::map<size_t, std::function<void(std::vector<unsigned char> &)>> gen;
  /// Operand positions (args, then results) kept f32 in bf16 mode.
  std::set<size_t> keepF32;
  /// Rank-0 f32 operand positions that are bf16 in bf16 mode (other scalars
  /// stay f32), e.g. the result of a reduce_sum over every dim.
  std::set<size_t> bf16Scalars;
  /// Results not compared (e.g. a value defined only up to ties).
  std::set<size_t> skip;
  /// Results written in place: result index -> the arg whose buffer it is
  /// (on both backends; compared after the kernel as that result).
  std::map<size_t, size_t> inPlace;
  double rtol = 1e-4, atol = 1e-5;
};

template <typename T>
std::function<void(std::vector<unsigned char> &)> values(std::vector<T> v) {
  return [v](std::vector<unsigned char> &out) {
    std::memcpy(out.data(), v.data(),
                std::min(out.size(), v.size() * sizeof(T)));
  };
}

/// Random ids in [0, bound) of type I.
template <typename I>
std::function<void(std::vector<unsigned char> &)> ids(int64_t bound,
                                                      unsigned seed = 7) {
  return [bound, seed](std::vector<unsigned char> &out) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int64_t> d(0, bound - 1);
    I *p = reinterpret_cast<I *>(out.data());
    for (size_t i = 0; i < out.size() / sizeof(I); ++i)
      p[i] = static_cast<I>(d(rng));
  };
}

/// Float values uniform in [lo, hi).
inline std::function<void(std::vector<unsigned char> &)>
uniform(float lo, float hi, unsigned seed = 11) {
  return [=](std::vector<unsigned char> &out) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    float *p = reinterpret_cast<float *>(out.data());
    for (size_t i = 0; i < out.size() / 4; ++i)
      p[i] = d(rng);
  };
}

/// Runs `c` on both backends and compares every result. `bf16`: see the
/// file comment.
inline void checkOp(const OpCase &c, bool bf16 = false) {
  size_t na = c.args.size(), nr = c.results.size();
  auto gpuType = [&](size_t pos, TensorType t) {
    if (bf16 && t.dtype == DType::F32 &&
        (!t.shape.empty() || c.bf16Scalars.count(pos)) && !c.keepF32.count(pos))
      t.dtype = DType::BF16;
    return t;
  };
  // Host inputs (f32 values; rounded to bf16 where the GPU takes bf16).
  std::vector<std::vector<unsigned char>> host(na + nr);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (size_t i = 0; i < na; ++i) {
    host[i].assign(c.args[i].bytes(), 0);
    auto g = c.gen.find(i);
    if (g != c.gen.end())
      g->second(host[i]);
    else if (c.args[i].dtype == DType::F32)
      for (size_t e = 0; e < host[i].size() / 4; ++e)
        reinterpret_cast<float *>(host[i].data())[e] = uni(rng);
    if (gpuType(i, c.args[i]).dtype == DType::BF16)
      for (size_t e = 0; e < host[i].size() / 4; ++e) {
        float &f = reinterpret_cast<float *>(host[i].data())[e];
        f = fromBf16Bits(toBf16Bits(f));
      }
  }
  KernelSignature sig;
  sig.op = c.op;
  sig.attrs = &c.attrs;
  sig.place = "test '" + c.op + "'";
  sig.seed = 42;
  Mesh mesh;
  sig.mesh = &mesh;
  // CPU.
  CpuBackend cpu;
  sig.args = c.args;
  sig.results = c.results;
  BoundKernel cpuKernel = cpu.bind(sig);
  std::vector<std::vector<unsigned char>> cpuBuf = host;
  for (size_t r = 0; r < nr; ++r)
    cpuBuf[na + r].assign(c.results[r].bytes(), 0);
  // The buffer that holds result r (its arg's when in place).
  auto resultPos = [&](size_t r) {
    auto it = c.inPlace.find(r);
    return it == c.inPlace.end() ? na + r : it->second;
  };
  std::vector<void *> cpuPtrs;
  for (size_t pos = 0; pos < na + nr; ++pos)
    cpuPtrs.push_back(cpuBuf[pos < na ? pos : resultPos(pos - na)].data());
  cpuKernel(cpuPtrs.data());
  // GPU.
  CudaBackend gpu;
  sig.args.clear();
  sig.results.clear();
  for (size_t i = 0; i < na; ++i)
    sig.args.push_back(gpuType(i, c.args[i]));
  for (size_t r = 0; r < nr; ++r)
    sig.results.push_back(gpuType(na + r, c.results[r]));
  BoundKernel gpuKernel = gpu.bind(sig);
  std::vector<void *> dev;
  auto typeAt = [&](size_t pos) {
    return pos < na ? sig.args[pos] : sig.results[pos - na];
  };
  for (size_t pos = 0; pos < na + nr; ++pos) {
    TensorType t = typeAt(pos);
    if (pos >= na && resultPos(pos - na) != pos) {
      dev.push_back(dev[resultPos(pos - na)]);
      continue;
    }
    void *d = gpu.allocate(std::max<int64_t>(t.bytes(), 1));
    if (pos < na) {
      std::vector<unsigned char> bytes = host[pos];
      if (t.dtype == DType::BF16) {
        std::vector<unsigned char> conv(t.bytes());
        for (int64_t e = 0; e < t.numel(); ++e)
          reinterpret_cast<uint16_t *>(conv.data())[e] =
              toBf16Bits(reinterpret_cast<float *>(bytes.data())[e]);
        bytes = conv;
      }
      gpu.copyToDevice(d, bytes.data(), t.bytes());
    } else {
      gpu.fill(d, 0xFF, t.bytes()); // results must be fully written
    }
    dev.push_back(d);
  }
  gpuKernel(dev.data());
  for (size_t r = 0; r < nr; ++r) {
    if (c.skip.count(r))
      continue;
    TensorType t = sig.results[r];
    std::vector<unsigned char> got(t.bytes());
    gpu.copyToHost(got.data(), dev[na + r], t.bytes());
    const std::vector<unsigned char> &want = cpuBuf[resultPos(r)];
    int64_t n = t.numel(), bad = 0;
    for (int64_t e = 0; e < n && bad < 5; ++e) {
      double g, w;
      switch (t.dtype) {
      case DType::F32:
        g = reinterpret_cast<const float *>(got.data())[e];
        w = reinterpret_cast<const float *>(want.data())[e];
        break;
      case DType::BF16:
        g = fromBf16Bits(reinterpret_cast<const uint16_t *>(got.data())[e]);
        w = reinterpret_cast<const float *>(want.data())[e];
        break;
      case DType::I32:
        g = reinterpret_cast<const int32_t *>(got.data())[e];
        w = reinterpret_cast<const int32_t *>(want.data())[e];
        break;
      default:
        g = double(reinterpret_cast<const int64_t *>(got.data())[e]);
        w = double(reinterpret_cast<const int64_t *>(want.data())[e]);
        break;
      }
      double tol = c.atol + c.rtol * std::fabs(w);
      if (!(std::fabs(g - w) <= tol) && !(std::isinf(g) && g == w)) {
        ADD_FAILURE() << c.op << (bf16 ? " (bf16)" : " (f32)") << " result "
                      << r << " element " << e << ": gpu " << g << ", cpu " << w
                      << " (tolerance " << tol << ")";
        ++bad;
      }
    }
  }
  for (size_t pos = 0; pos < dev.size(); ++pos)
    if (pos < na || resultPos(pos - na) == pos)
      gpu.deallocate(dev[pos], std::max<int64_t>(typeAt(pos).bytes(), 1));
}

} // namespace autoshard::runtime::cuda::test

#endif // AUTOSHARD_RUNTIME_TEST_CUDA_CUDATESTUTIL_H
