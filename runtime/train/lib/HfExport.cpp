//===- HfExport.cpp - Parameters as a Hugging Face model directory --------===//
//
// `shard-run --save-hf DIR` (docs/hf-checkpoints.md, "Export"): the ranks
// gather the parameters the weight map names, one at a time; rank 0
// assembles each Hugging Face tensor from its parts and writes it at its
// place in its file, then publishes the directory atomically.
//
//===----------------------------------------------------------------------===//

#include "HfCommon.h"

#include "autoshard/runtime/train/StateGather.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <regex>

namespace autoshard::runtime {

using namespace checkpoint;

namespace {

namespace fs = std::filesystem;

/// "model-00002-of-00003.safetensors".
std::string shardName(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

bool isExportFile(const std::string &name) {
  static const std::regex shard("model-[0-9]{5}-of-[0-9]{5}\\.safetensors");
  return name == hf::kConfig || name == hf::kSingleFile || name == hf::kIndex ||
         std::regex_match(name, shard);
}

/// Why `dir` (which exists) may not be replaced by an export; "" if it may.
std::string notAnExport(const std::string &dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return "it exists and is not a directory";
  bool empty = true, config = false;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    empty = false;
    config = config || name == hf::kConfig;
    if (!isExportFile(name) || !e.is_regular_file(ec))
      return "it holds '" + name + "', which an export does not write";
  }
  if (ec)
    return "it cannot be listed: " + ec.message();
  if (!empty && !config)
    return "it holds no config.json";
  return "";
}

/// Opens `path` for writing; closes on destruction.
struct OutFile {
  std::string path;
  int fd = -1;
  explicit OutFile(std::string p) : path(std::move(p)) {
    fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
      throw std::runtime_error(osError("creating", path));
  }
  ~OutFile() {
    if (fd >= 0)
      ::close(fd);
  }
  void writeAt(const void *data, size_t n, int64_t offset) {
    if (::lseek(fd, static_cast<off_t>(offset), SEEK_SET) < 0)
      throw std::runtime_error(osError("seeking in", path));
    writeAll(fd, data, n, path);
  }
  /// fsyncs and closes.
  void finish() { fsyncAndClose(fd, path); }
};

void writeTextFile(const std::string &path, const std::string &text) {
  OutFile f(path);
  f.writeAt(text.data(), text.size(), 0);
  f.finish();
}

std::string torchDType(DType d) {
  switch (d) {
  case DType::BF16:
    return "bfloat16";
  case DType::F16:
    return "float16";
  case DType::F64:
    return "float64";
  default:
    return "float32";
  }
}

/// The parameter every non-zero part of `t` names, or -1 (none, or several).
int64_t onlyParam(const HfTensor &t) {
  int64_t only = -1;
  for (const HfPart &p : t.parts) {
    if (p.stateIndex < 0)
      continue;
    if (only >= 0 && only != p.stateIndex)
      return -1;
    only = p.stateIndex;
  }
  return only;
}

/// The order tensors are built in: map order, except that the tensors made
/// of one parameter only follow the first such tensor (Mixtral's experts:
/// the [E, H, F] parameter is gathered once for its E tensors).
std::vector<size_t> buildOrder(const HfWeightMap &m) {
  std::vector<size_t> order;
  std::vector<bool> done(m.tensors.size(), false);
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    if (done[i])
      continue;
    order.push_back(i);
    done[i] = true;
    int64_t p = onlyParam(m.tensors[i]);
    for (size_t j = i + 1; p >= 0 && j < m.tensors.size(); ++j)
      if (!done[j] && onlyParam(m.tensors[j]) == p) {
        order.push_back(j);
        done[j] = true;
      }
  }
  return order;
}

/// dst[i * dstRow + j] = src[i * srcRow + j * srcCol] for i < rows, j <
/// cols (elements of E bytes), in 64 x 64 tiles.
template <size_t E>
void copyTiled(unsigned char *dst, int64_t dstRow, const unsigned char *src,
               int64_t srcRow, int64_t srcCol, int64_t rows, int64_t cols) {
  hf::forEachTile(rows, cols,
                  [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
                    for (int64_t i = i0; i < i1; ++i)
                      for (int64_t j = j0; j < j1; ++j)
                        std::memcpy(dst + (i * dstRow + j) * E,
                                    src + (i * srcRow + j * srcCol) * E, E);
                  });
}

void copyTiled(unsigned char *dst, int64_t dstRow, const unsigned char *src,
               int64_t srcRow, int64_t srcCol, int64_t rows, int64_t cols,
               int64_t elem) {
  switch (elem) {
  case 2:
    return copyTiled<2>(dst, dstRow, src, srcRow, srcCol, rows, cols);
  case 4:
    return copyTiled<4>(dst, dstRow, src, srcRow, srcCol, rows, cols);
  default:
    return copyTiled<8>(dst, dstRow, src, srcRow, srcCol, rows, cols);
  }
}

/// Zeroes the box of part `p` in `out`, the row-major tensor of shape
/// `tshape`.
void copyZeros(const HfPart &p, unsigned char *out,
               const std::vector<int64_t> &tshape, int64_t elem) {
  size_t k = tshape.size();
  if (k == 0) {
    std::memset(out, 0, elem);
    return;
  }
  std::vector<int64_t> tstride(k, 1), idx(k, 0);
  for (size_t d = k; d-- > 1;)
    tstride[d - 1] = tstride[d] * tshape[d];
  int64_t width = p.hfShape[k - 1];
  int64_t rows = width ? product(p.hfShape) / width : 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t dst = 0;
    for (size_t d = 0; d < k; ++d)
      dst += (p.hfBegin[d] + idx[d]) * tstride[d];
    std::memset(out + dst * elem, 0, width * elem);
    for (size_t d = k - 1; d-- > 0;) {
      if (++idx[d] < p.hfShape[d])
        break;
      idx[d] = 0;
    }
  }
}

/// Copies part `p` of a tensor out of the global parameter `param` (shape
/// `pshape`) into `out`, the row-major tensor of shape `tshape`.
void copyPart(const HfPart &p, const unsigned char *param,
              const std::vector<int64_t> &pshape, unsigned char *out,
              const std::vector<int64_t> &tshape, int64_t elem) {
  size_t k = tshape.size(), prank = pshape.size();
  std::vector<int64_t> pstride(prank, 1), tstride(k, 1);
  for (size_t d = prank; d-- > 1;)
    pstride[d - 1] = pstride[d] * pshape[d];
  for (size_t d = k; d-- > 1;)
    tstride[d - 1] = tstride[d] * tshape[d];
  if (k == 0) {
    int64_t at = 0;
    for (size_t d = 0; d < prank; ++d)
      at += p.paramBegin[d] * pstride[d];
    std::memcpy(out, param + at * elem, elem);
    return;
  }
  // Plane by plane over the last two dims (one row for a 1-D tensor).
  int64_t width = p.hfShape[k - 1], height = k >= 2 ? p.hfShape[k - 2] : 1;
  int64_t planes = width && height ? product(p.hfShape) / (width * height) : 0;
  int64_t srcCol = pstride[p.paramDim(k - 1)];
  int64_t srcRow = k >= 2 ? pstride[p.paramDim(k - 2)] : 0;
  int64_t dstRow = k >= 2 ? tstride[k - 2] : 0;
  int64_t origin = 0;
  for (size_t d = 0; d < prank; ++d)
    origin += p.paramBegin[d] * pstride[d];
  size_t outerDims = k >= 2 ? k - 2 : 0;
  std::vector<int64_t> outer(k, 0);
  for (int64_t q = 0; q < planes; ++q) {
    int64_t src = origin, dst = 0;
    for (size_t d = 0; d < k; ++d) {
      src += outer[d] * pstride[p.paramDim(d)];
      dst += (p.hfBegin[d] + outer[d]) * tstride[d];
    }
    if (srcCol == 1) { // rows as they are
      for (int64_t i = 0; i < height; ++i)
        std::memcpy(out + (dst + i * dstRow) * elem,
                    param + (src + i * srcRow) * elem, width * elem);
    } else { // transposed
      copyTiled(out + dst * elem, dstRow, param + src * elem, srcRow, srcCol,
                height, width, elem);
    }
    for (size_t d = outerDims; d-- > 0;) {
      if (++outer[d] < p.hfShape[d])
        break;
      outer[d] = 0;
    }
  }
}

/// Makes `tmp` the export `dir`: an earlier export there is renamed away
/// first and removed after.
void publish(const std::string &tmp, const std::string &dir) {
  std::error_code ec;
  fs::path old;
  if (fs::exists(dir, ec)) {
    if (std::string why = notAnExport(dir); !why.empty())
      throw std::runtime_error("'" + dir + "' is not an earlier export (" +
                               why + ")");
    old = dir + ".old-" + std::to_string(::getpid());
    fs::remove_all(old, ec);
    fs::rename(dir, old); // throws fs::filesystem_error
  }
  try {
    publishRename(tmp, dir);
  } catch (...) {
    if (!old.empty())
      fs::rename(old, dir, ec);
    throw;
  }
  if (!old.empty())
    fs::remove_all(old, ec);
}

} // namespace

void checkHfExportDir(const std::string &dir) {
  std::error_code ec;
  fs::path parent = fs::path(dir).parent_path();
  if (parent.empty())
    parent = ".";
  auto fail = [&](const std::string &why) {
    return CheckpointError("Hugging Face export directory '" + dir +
                           "': " + why);
  };
  if (fs::path(dir).filename().empty())
    throw fail("names no directory (drop the trailing '/')");
  if (!fs::is_directory(parent, ec))
    throw fail("its parent directory '" + parent.string() + "' does not exist");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw fail(osError("cannot write into", parent.string()));
  // Leftovers of exports that crashed: a tmp directory, or an earlier
  // export renamed away (put back if nothing replaced it).
  std::string leaf = fs::path(dir).filename().string();
  for (const fs::directory_entry &e : fs::directory_iterator(parent, ec)) {
    std::string name = e.path().filename().string();
    for (const std::string tag : {".tmp-", ".old-"}) {
      if (name.rfind(leaf + tag, 0) != 0 ||
          !isDeadPid(name.substr(leaf.size() + tag.size())))
        continue;
      std::error_code ignored;
      if (tag == ".old-" && !fs::exists(dir, ignored))
        fs::rename(e.path(), dir, ignored);
      else
        fs::remove_all(e.path(), ignored);
    }
  }
  if (fs::exists(dir, ec))
    if (std::string why = notAnExport(dir); !why.empty())
      throw fail(why + ", so it is not an earlier export that a new one may "
                       "replace: choose another directory, or remove it");
}

HfExportStats exportHfCheckpoint(const Executor &ex, const std::string &dir,
                                 int64_t maxShardBytes) {
  double start = nowS();
  const Artifact &a = ex.artifact();
  HfWeightMap m;
  runAgreed(ex, [&] { m = parseHfWeightMap(a); });
  bool writer = ex.rank() == 0;

  // Shards: tensors in map order, a new file when the next one would make
  // the current one larger than maxShardBytes.
  std::vector<std::vector<size_t>> shards(1);
  std::vector<size_t> shardOf(m.tensors.size());
  int64_t filled = 0, total = 0;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    int64_t bytes = product(m.tensors[i].shape) * dtypeSize(m.tensors[i].dtype);
    if (!shards.back().empty() && filled + bytes > maxShardBytes) {
      shards.emplace_back();
      filled = 0;
    }
    shards.back().push_back(i);
    shardOf[i] = shards.size() - 1;
    filled += bytes;
    total += bytes;
  }
  size_t n = shards.size();
  std::vector<std::string> fileNames;
  std::vector<SafetensorsLayout> layouts;
  std::vector<size_t> slot(m.tensors.size()); // index in its file's layout
  for (size_t f = 0; f < n; ++f) {
    fileNames.push_back(n == 1 ? hf::kSingleFile : shardName(f, n));
    std::vector<SafetensorsTensor> tensors;
    for (size_t i : shards[f]) {
      slot[i] = tensors.size();
      tensors.push_back(
          {m.tensors[i].name, m.tensors[i].dtype, m.tensors[i].shape, 0, 0});
    }
    layouts.push_back(
        layoutSafetensors(std::move(tensors), {{"format", "pt"}}));
  }

  // Rank 0 writes into a fresh tmp directory; a failure stops every rank
  // at the next parameter (rank 0's status is broadcast before each).
  std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  RankStatus st;
  std::vector<std::unique_ptr<OutFile>> out;
  auto attempt = [&](const std::function<void()> &body) {
    if (!writer || !st.ok)
      return;
    try {
      body();
    } catch (const std::exception &e) {
      st.fail(e.what());
    }
  };
  attempt([&] {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    fs::create_directory(tmp);
    for (size_t f = 0; f < n; ++f) {
      out.push_back(
          std::make_unique<OutFile>((fs::path(tmp) / fileNames[f]).string()));
      out.back()->writeAt(layouts[f].header.data(), layouts[f].header.size(),
                          0);
    }
  });

  // Whether to go on, as the ranks agreed before the last gather: every
  // rank takes the same decisions, so the collectives pair up.
  bool going = true;
  int64_t cached = -1; // the parameter held gathered
  std::vector<unsigned char> param, tensor;
  const unsigned char *data = nullptr; // the gathered parameter
  for (size_t i : buildOrder(m)) {
    const HfTensor &t = m.tensors[i];
    int64_t elem = dtypeSize(t.dtype);
    if (writer) {
      // The parts cover the tensor: only zero parts need clearing.
      tensor.resize(product(t.shape) * elem);
      for (const HfPart &p : t.parts)
        if (p.stateIndex < 0)
          copyZeros(p, tensor.data(), t.shape, elem);
    }
    for (const HfPart &p : t.parts) {
      if (p.stateIndex < 0)
        continue;
      const StateSpec &s = a.state[p.stateIndex];
      if (cached != p.stateIndex) {
        agreeOnRank0(ex, st);
        going = st.ok;
        if (!going)
          break;
        param.clear();
        param.shrink_to_fit(); // one gathered parameter at a time
        // A tensor every rank holds whole is read in place where it can be.
        data = needsGather(ex, s) || !writer
                   ? nullptr
                   : static_cast<const unsigned char *>(
                         ex.stateHostPointer(s.name));
        if (!data) {
          param = gatherState(ex, s, writer);
          data = param.data();
        }
        cached = p.stateIndex;
      }
      if (writer)
        copyPart(p, data, s.globalShape, tensor.data(), t.shape, elem);
    }
    if (!going)
      break;
    attempt([&] {
      const SafetensorsLayout &l = layouts[shardOf[i]];
      out[shardOf[i]]->writeAt(tensor.data(), tensor.size(),
                               l.dataStart() + l.tensors[slot[i]].begin);
    });
  }
  param = {};
  tensor = {};

  attempt([&] {
    for (std::unique_ptr<OutFile> &f : out)
      f->finish();
    Json config = {{"architectures", Json::array({m.architecture})}};
    config.update(m.config);
    config["architectures"] = Json::array({m.architecture}); // first, ours
    std::string dtype = torchDType(m.tensors.front().dtype);
    config["torch_dtype"] = dtype;
    config["dtype"] = dtype;
    writeTextFile((fs::path(tmp) / hf::kConfig).string(),
                  config.dump(2) + "\n");
    if (n > 1) {
      Json weightMap = Json::object();
      for (size_t i = 0; i < m.tensors.size(); ++i)
        weightMap[m.tensors[i].name] = fileNames[shardOf[i]];
      Json index = {{"metadata", {{"total_size", total}}},
                    {"weight_map", weightMap}};
      writeTextFile((fs::path(tmp) / hf::kIndex).string(),
                    index.dump(2) + "\n");
    }
    fsyncPath(tmp, true);
    publish(tmp, dir);
  });
  out.clear();
  agreeOnRank0(ex, st);
  if (!st.ok) {
    if (writer) {
      std::error_code ec;
      fs::remove_all(tmp, ec);
    }
    throw CheckpointError("Hugging Face export to '" + dir +
                              "' failed on rank 0: " + st.message +
                              " (the directory is unchanged)",
                          /*agreed=*/true);
  }
  HfExportStats stats;
  stats.dir = dir;
  stats.tensors = static_cast<int64_t>(m.tensors.size());
  stats.files = static_cast<int64_t>(n);
  stats.bytes = total;
  stats.seconds = nowS() - start;
  return stats;
}

} // namespace autoshard::runtime
