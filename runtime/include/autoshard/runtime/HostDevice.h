//===- HostDevice.h - Functions compiled for the host and the GPU -*- C++ -*-=//
//
// AUTOSHARD_HOST_DEVICE marks the inline functions that host code and CUDA
// kernels share (Philox.h, SequencePositions.h): __host__ __device__ under
// nvcc, nothing in a plain C++ compile.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_HOSTDEVICE_H
#define AUTOSHARD_RUNTIME_HOSTDEVICE_H

#if defined(__CUDACC__)
#define AUTOSHARD_HOST_DEVICE __host__ __device__
#else
#define AUTOSHARD_HOST_DEVICE
#endif

#endif // AUTOSHARD_RUNTIME_HOSTDEVICE_H
