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

namespace autoshard::runtime::cuda::kernels {
namespace {

template <typename From, typename To>
__global__ void castKernel(const From *x, To *y, int64_t n) {
  AUTOSHARD_GRID_LOOP(i, n) { y[i] = fromF<To>(toF(x[i])); }
}

} // namespace

template <> BoundKernel bind<ops::Cast>(const KernelSignature &sig) {
  using Op = ops::Cast;
  const TensorType &x = sig.arg(Op::x), &y = sig.result(Op::result);
  if (x.shape != y.shape)
    sig.fail("result " + y.str() + " must have the shape of x " + x.str());
  int64_t n = x.numel();
  cudaStream_t s = currentContext().stream;
  if (x.dtype == y.dtype) {
    int64_t bytes = x.bytes();
    return withFloat.bind(sig, Op::x, [=](auto, Operands o) {
      if (bytes > 0 && o[Op::x] != o[Op::result])
        AUTOSHARD_CUDA(cudaMemcpyAsync(o[Op::result], o[Op::x], bytes,
                                       cudaMemcpyDeviceToDevice, s));
    });
  }
  return withFloat(sig, x.dtype, "x", [&](auto from) -> BoundKernel {
    return withFloat.bind(sig, Op::result, [=](auto to, Operands o) {
      launchGridLoop(n, s, castKernel<decltype(from), decltype(to)>,
                     o.in(Op::x, from), o.out(Op::result, to), n);
    });
  });
}

void registerCastKernels(KernelTable &t) { addBinders<ops::Cast>(t); }

} // namespace autoshard::runtime::cuda::kernels
