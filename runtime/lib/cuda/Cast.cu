//===- Cast.cu - tfm.cast between f32 and bf16 ----------------------------===//
//
// The conversion `tfm-mixed-precision` inserts: f32 master weights to bf16
// at their uses, bf16 logits / norm inputs to f32 and back, and (in the
// backward) the gradients the other way. Narrowing rounds to nearest even
// (__float2bfloat16_rn), as the CPU kernel does. Equal types copy.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.h"
#include "DeviceMath.cuh"

#include <algorithm>

namespace autoshard::runtime::cuda::kernels {
namespace {

constexpr int kThreads = 256;

template <typename From, typename To>
__global__ void castKernel(const From *x, To *y, int64_t n) {
  AUTOSHARD_GRID_LOOP(i, n) { y[i] = fromF<To>(toF(x[i])); }
}

BoundKernel bindCast(const KernelSignature &sig) {
  using Op = ops::Cast;
  OperandIndex at(sig);
  const TensorType &x = sig.arg(Op::x), &y = sig.result(Op::result);
  if (x.shape != y.shape)
    sig.fail("result " + y.str() + " must have the shape of x " + x.str());
  int64_t n = x.numel();
  cudaStream_t s = currentContext().stream;
  if (x.dtype == y.dtype) {
    int64_t bytes = x.bytes();
    return withFloat(sig, x.dtype, "x", [=](auto) -> BoundKernel {
      return [=](void *const *p) {
        if (bytes > 0 && p[at(Op::x)] != p[at(Op::result)])
          AUTOSHARD_CUDA(cudaMemcpyAsync(p[at(Op::result)], p[at(Op::x)], bytes,
                                         cudaMemcpyDeviceToDevice, s));
      };
    });
  }
  unsigned blocks = std::min<unsigned>(gridFor(n, kThreads), 65535u * 8);
  return withFloat(sig, x.dtype, "x", [&](auto fromTag) -> BoundKernel {
    using From = decltype(fromTag);
    return withFloat(sig, y.dtype, "result", [&](auto toTag) -> BoundKernel {
      using To = decltype(toTag);
      return [=](void *const *p) {
        if (n == 0)
          return;
        castKernel<From, To><<<blocks, kThreads, 0, s>>>(
            in<From>(p[at(Op::x)]), out<To>(p[at(Op::result)]), n);
        AUTOSHARD_CUDA_LAUNCHED();
      };
    });
  });
}

} // namespace

void registerCastKernels(KernelTable &t) { t.add("cast", bindCast); }

} // namespace autoshard::runtime::cuda::kernels
