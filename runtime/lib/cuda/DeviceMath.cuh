//===- DeviceMath.cuh - Device helpers: conversions, reductions -*- CUDA
//-*-===//

#ifndef AUTOSHARD_RUNTIME_LIB_CUDA_DEVICEMATH_CUH
#define AUTOSHARD_RUNTIME_LIB_CUDA_DEVICEMATH_CUH

#include "CudaCommon.h"

#include <cstdint>

namespace autoshard::runtime::cuda {

/// Loads an element as fp32.
__device__ __forceinline__ float toF(float x) { return x; }
__device__ __forceinline__ float toF(bf16 x) { return __bfloat162float(x); }

/// Stores an fp32 value as T (round to nearest even for bf16).
template <typename T> __device__ __forceinline__ T fromF(float x);
template <> __device__ __forceinline__ float fromF<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 fromF<bf16>(float x) {
  return __float2bfloat16_rn(x);
}

/// Records `code` in the error word unless an earlier error is there.
__device__ __forceinline__ void raise(int *word, int code) {
  atomicCAS(word, kErrNone, code);
}

template <typename A> __device__ __forceinline__ A warpSum(A v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum over the block (blockDim.x a multiple of 32, at most 1024); every
/// thread gets the result. `shared` holds 32 A.
template <typename A> __device__ A blockSum(A v, A *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warpSum(v);
  __syncthreads(); // shared may be in use by a previous call
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? shared[lane] : A(0);
  return warpSum(v);
}

__device__ __forceinline__ float blockMax(float v, float *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? shared[lane] : -INFINITY;
  return warpMax(v);
}

/// Grid-stride loop over [0, n).
#define AUTOSHARD_GRID_LOOP(i, n)                                              \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n);    \
       i += int64_t(blockDim.x) * gridDim.x)

} // namespace autoshard::runtime::cuda

#endif // AUTOSHARD_RUNTIME_LIB_CUDA_DEVICEMATH_CUH
