//===- OneDnnEltwise.cpp - oneDNN's eltwise primitives for f32 ------------===//

#include "OneDnnEltwise.h"

#include <cstdlib>
#include <cstring>

#if AUTOSHARD_HAVE_ONEDNN
#include <dnnl.hpp>

#include <map>
#include <mutex>
#include <utility>
#endif

namespace autoshard::runtime::cpu::detail {

bool hasOneDnn() {
#if !AUTOSHARD_HAVE_ONEDNN
  return false;
#else
  static const bool value = [] {
    const char *scalar = std::getenv("AUTOSHARD_SCALAR_KERNELS");
    return !(scalar && std::strcmp(scalar, "1") == 0);
  }();
  return value;
#endif
}

#if AUTOSHARD_HAVE_ONEDNN
namespace {

/// The engine and the primitives built so far, one pair per length (a
/// program has a handful of distinct lengths; building one takes ~0.1 ms).
class GeluPrimitives {
public:
  static GeluPrimitives &get() {
    static GeluPrimitives instance;
    return instance;
  }

  struct Pair {
    dnnl::memory::desc md;
    dnnl::eltwise_forward forward;
    dnnl::eltwise_backward backward;
  };

  const Pair &forLength(int64_t n) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(n);
    if (it != cache.end())
      return it->second;
    dnnl::memory::desc md({n}, dnnl::memory::data_type::f32,
                          dnnl::memory::format_tag::a);
    const auto alg = dnnl::algorithm::eltwise_gelu_erf;
    dnnl::eltwise_forward::primitive_desc fwd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, md,
                                    0.f, 0.f),
        engine);
    dnnl::eltwise_backward::primitive_desc bwd(
        dnnl::eltwise_backward::desc(alg, md, md, 0.f, 0.f), engine, fwd);
    return cache
        .emplace(n, Pair{md, dnnl::eltwise_forward(fwd),
                         dnnl::eltwise_backward(bwd)})
        .first->second;
  }

  /// The calling thread's stream (a stream must not run two primitives at
  /// once; making one per call cost a few microseconds each time).
  dnnl::stream &stream() {
    thread_local dnnl::stream perThread(engine);
    return perThread;
  }

  dnnl::engine engine{dnnl::engine::kind::cpu, 0};

private:
  std::mutex mutex;
  std::map<int64_t, Pair> cache;
};

dnnl::memory wrap(const dnnl::memory::desc &md, const dnnl::engine &engine,
                  const float *data) {
  return dnnl::memory(md, engine, const_cast<float *>(data));
}

} // namespace

void oneDnnGeluErf(const float *x, float *y, int64_t n) {
  if (n <= 0)
    return;
  GeluPrimitives &p = GeluPrimitives::get();
  const GeluPrimitives::Pair &pair = p.forLength(n);
  dnnl::stream &stream = p.stream();
  pair.forward.execute(stream, {{DNNL_ARG_SRC, wrap(pair.md, p.engine, x)},
                                {DNNL_ARG_DST, wrap(pair.md, p.engine, y)}});
  stream.wait();
}

void oneDnnGeluErfGrad(const float *dy, const float *x, float *dx, int64_t n) {
  if (n <= 0)
    return;
  GeluPrimitives &p = GeluPrimitives::get();
  const GeluPrimitives::Pair &pair = p.forLength(n);
  dnnl::stream &stream = p.stream();
  pair.backward.execute(stream,
                        {{DNNL_ARG_SRC, wrap(pair.md, p.engine, x)},
                         {DNNL_ARG_DIFF_DST, wrap(pair.md, p.engine, dy)},
                         {DNNL_ARG_DIFF_SRC, wrap(pair.md, p.engine, dx)}});
  stream.wait();
}
#endif

} // namespace autoshard::runtime::cpu::detail
