//===- Comm.cu - Communication kernels of the CUDA backend ----------------===//
//
// The `dist.*` kernels (docs/artifact-format.md, "Communication") on device
// memory. The collectives are core's (CommKernels.h) over CudaCommDevice:
// block packing with cudaMemcpy2DAsync into device staging buffers
// allocated at bind time, on the compute stream, with the Communicator of
// the instruction's group (the NCCL communicator, NcclWorld.cpp, which
// orders its own stream against the compute stream with events). The
// local ones (shard_slice, axis_index, pack, unpack) are here.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/CommKernels.h"
#include "autoshard/runtime/Communicator.h"

#include "CudaCommon.h"

#include <algorithm>

namespace autoshard::runtime::cuda::kernels {
namespace {

/// `rows` rows of `rowBytes` from src (pitch srcPitch) to dst (dstPitch).
void copyRows(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
              int64_t rows, int64_t rowBytes, cudaStream_t s) {
  if (rows <= 0 || rowBytes <= 0)
    return;
  AUTOSHARD_CUDA(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, rowBytes, rows,
                                   cudaMemcpyDeviceToDevice, s));
}

/// counts[slot] = 1 + the last row of the slot with a nonzero 32-bit word
/// (0 for a slot of zeros): one block per slot, its threads over the rows.
/// Rows are whole 32-bit words (`words` per row), as every float row is.
__global__ void usedRowsKernel(const uint32_t *src, int64_t rows, int64_t words,
                               int64_t *counts) {
  __shared__ unsigned long long last;
  if (threadIdx.x == 0)
    last = 0;
  __syncthreads();
  const uint32_t *slot = src + blockIdx.x * rows * words;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const uint32_t *row = slot + r * words;
    bool nonzero = false;
    for (int64_t w = 0; w < words && !nonzero; ++w)
      nonzero = row[w] != 0;
    if (nonzero)
      atomicMax(&last, static_cast<unsigned long long>(r + 1));
  }
  __syncthreads();
  if (threadIdx.x == 0)
    counts[blockIdx.x] = static_cast<int64_t>(last);
}

/// Device memory for the shared collectives (CommKernels.h), on the stream
/// of the backend that binds.
class CudaCommDevice : public comm_kernels::CommDevice {
public:
  explicit CudaCommDevice(cudaStream_t stream) : stream(stream) {}
  void copyRows(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
                int64_t rows, int64_t rowBytes) const override {
    cuda::kernels::copyRows(dst, dstPitch, src, srcPitch, rows, rowBytes,
                            stream);
  }
  void zero(void *dst, int64_t bytes) const override {
    AUTOSHARD_CUDA(cudaMemsetAsync(dst, 0, bytes, stream));
  }
  std::shared_ptr<void> scratch(int64_t bytes) const override {
    Scratch buffer = cuda::scratch(bytes);
    return std::shared_ptr<void>(buffer, buffer->data());
  }
  void usedRows(const void *src, int64_t slots, int64_t rows, int64_t rowBytes,
                int64_t *counts) const override {
    if (slots <= 0)
      return;
    if (rowBytes % 4 != 0 || reinterpret_cast<uintptr_t>(src) % 4 != 0)
      throw CommError("ragged all_to_all: rows of " + std::to_string(rowBytes) +
                      " bytes are not whole 32-bit words");
    if (slots > 0x7fffffff)
      throw CommError("ragged all_to_all: " + std::to_string(slots) +
                      " slots exceed one grid");
    Scratch device = cuda::scratch(slots * sizeof(int64_t));
    usedRowsKernel<<<static_cast<unsigned>(slots), 256, 0, stream>>>(
        static_cast<const uint32_t *>(src), rows, rowBytes / 4,
        device->as<int64_t>());
    AUTOSHARD_CUDA_LAUNCHED();
    download(counts, device->data(), slots * sizeof(int64_t));
  }
  void upload(void *dst, const void *host, int64_t bytes) const override {
    AUTOSHARD_CUDA(
        cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream));
    AUTOSHARD_CUDA(cudaStreamSynchronize(stream));
  }
  void download(void *host, const void *src, int64_t bytes) const override {
    AUTOSHARD_CUDA(
        cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream));
    AUTOSHARD_CUDA(cudaStreamSynchronize(stream));
  }

private:
  cudaStream_t stream;
};

std::shared_ptr<const comm_kernels::CommDevice> bindingDevice() {
  return std::make_shared<const CudaCommDevice>(currentContext().stream);
}

void expectReducible(const KernelSignature &sig, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::I32 &&
      dtype != DType::I64 && dtype != DType::F64)
    sig.fail("cannot reduce " + std::string(dtypeName(dtype)));
}

__global__ void storeI64Kernel(int64_t *dst, int64_t v) { *dst = v; }

} // namespace

template <> BoundKernel bind<ops::DistShardSlice>(const KernelSignature &sig) {
  using Op = ops::DistShardSlice;
  ShardSliceShape shape = checkShardSlice(sig);
  int64_t g = shape.groupSize, index = shape.index;
  CommBlocks b = shape.blocks;
  cudaStream_t s = currentContext().stream;
  Scratch tmp = scratch(shape.resultBytes);
  return bindOperands(sig, [b, g, index, s, tmp](Operands o) {
    const char *src = static_cast<char *>(o[Op::input]) + index * b.inner;
    char *dst = static_cast<char *>(o[Op::result]);
    if (o[Op::input] == o[Op::result]) { // in place: through a staging copy
      copyRows(tmp->data(), b.inner, src, g * b.inner, b.outer, b.inner, s);
      copyAsync(dst, tmp->data(), b.outer * b.inner, s);
    } else {
      copyRows(dst, b.inner, src, g * b.inner, b.outer, b.inner, s);
    }
  });
}

template <> BoundKernel bind<ops::DistAxisIndex>(const KernelSignature &sig) {
  using Op = ops::DistAxisIndex;
  int64_t index = checkAxisIndex(sig);
  cudaStream_t s = currentContext().stream;
  return bindOperands(sig, [index, s](Operands o) {
    storeI64Kernel<<<1, 1, 0, s>>>(o.out<int64_t>(Op::result), index);
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

namespace {

/// One contiguous run of the flat layout of dist.pack (see cpu/Pack.h):
/// tensor `tensor`, rows of `inner` bytes at pitch `pitch` from byte
/// `tensorOffset`, to flat byte `flatOffset` (rows consecutive there).
struct Run {
  int tensor; ///< Member of pack's inputs / unpack's results.
  int64_t tensorOffset, pitch, inner, rows, flatOffset;
};

std::vector<Run> packRuns(const KernelSignature &sig,
                          const std::vector<TensorType> &tensors,
                          const TensorType &flat, const std::string &what) {
  PackLayout layout = checkPack(sig, tensors, flat, what);
  int64_t groups = layout.groups, es = dtypeSize(flat.dtype);
  std::vector<Run> runs;
  int64_t offset = 0;
  for (int64_t g = 0; g < groups; ++g)
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::vector<int64_t> &shape = tensors[i].shape;
      int64_t outer = 1, inner = tensors[i].numel();
      if (groups > 1) {
        size_t d = static_cast<size_t>(layout.dims[i]);
        outer = product(shape, 0, d);
        inner = shape[d] / groups * product(shape, d + 1, shape.size());
      }
      runs.push_back({static_cast<int>(i), g * inner * es, groups * inner * es,
                      inner * es, outer, offset * es});
      offset += outer * inner;
    }
  return runs;
}

} // namespace

template <> BoundKernel bind<ops::DistPack>(const KernelSignature &sig) {
  using Op = ops::DistPack;
  std::vector<Run> runs =
      packRuns(sig, sig.args, sig.result(Op::result), "arg");
  cudaStream_t s = currentContext().stream;
  return bindOperands(sig, [runs, s](Operands o) {
    char *flat = static_cast<char *>(o[Op::result]);
    for (const Run &r : runs)
      copyRows(flat + r.flatOffset, r.inner,
               static_cast<char *>(o.at(Op::inputs, r.tensor)) + r.tensorOffset,
               r.pitch, r.rows, r.inner, s);
  });
}

template <> BoundKernel bind<ops::DistUnpack>(const KernelSignature &sig) {
  using Op = ops::DistUnpack;
  std::vector<Run> runs =
      packRuns(sig, sig.results, sig.arg(Op::input), "result");
  cudaStream_t s = currentContext().stream;
  return bindOperands(sig, [runs, s](Operands o) {
    const char *flat = static_cast<char *>(o[Op::input]);
    for (const Run &r : runs)
      copyRows(static_cast<char *>(o.at(Op::results, r.tensor)) +
                   r.tensorOffset,
               r.pitch, flat + r.flatOffset, r.inner, r.rows, r.inner, s);
  });
}

void registerCommKernels(KernelTable &t) {
  addBinders<ops::DistPack, ops::DistUnpack, ops::DistShardSlice,
             ops::DistAxisIndex>(t);
  comm_kernels::registerCollectiveKernels(t, {bindingDevice, expectReducible});
  comm_kernels::registerPointToPointKernels(t);
}

} // namespace autoshard::runtime::cuda::kernels
