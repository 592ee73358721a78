//===- HfImport.cpp - Parameters from a Hugging Face checkpoint -----------===//
//
// `shard-run --init-from DIR` (docs/hf-checkpoints.md, "Import"): every rank
// checks the directory against the weight map, then reads, for each
// parameter block it holds, the rows (or row segments) of the Hugging Face
// boxes that meet it, and writes them into its state.
//
//===----------------------------------------------------------------------===//

#include "HfCommon.h"

#include "autoshard/runtime/HalfFloat.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <type_traits>

namespace autoshard::runtime {

using namespace checkpoint;

namespace {

namespace fs = std::filesystem;

std::string joinPath(const std::string &dir, const std::string &name) {
  return (fs::path(dir) / name).string();
}

/// Reads a whole JSON file; throws CheckpointError naming it.
Json readJsonFile(const std::string &path, const std::string &what) {
  std::ifstream in(path);
  if (!in)
    throw CheckpointError("cannot open " + what + " '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  Json doc = Json::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    throw CheckpointError("'" + path + "' is not a JSON object");
  return doc;
}

/// JSON values that mean the same configuration: numbers compared as
/// numbers (8 == 8.0, 1e-5 == 0.00001), everything else exactly.
bool sameValue(const Json &x, const Json &y) {
  if (x.is_number() && y.is_number())
    return x.get<double>() == y.get<double>();
  if (x.is_array() && y.is_array()) {
    if (x.size() != y.size())
      return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!sameValue(x[i], y[i]))
        return false;
    return true;
  }
  if (x.is_object() && y.is_object()) {
    if (x.size() != y.size())
      return false;
    for (auto &[k, v] : x.items())
      if (!y.contains(k) || !sameValue(v, y[k]))
        return false;
    return true;
  }
  return x == y;
}

void checkConfig(const HfWeightMap &m, const std::string &dir) {
  std::string path = joinPath(dir, hf::kConfig);
  Json cfg = readJsonFile(path, "the Hugging Face config");
  // Another family first: its keys would not say so as clearly.
  if (cfg.contains("model_type") && m.config.contains("model_type") &&
      cfg["model_type"] != m.config["model_type"])
    throw CheckpointError(
        path + ": 'model_type' is " + cfg["model_type"].dump() +
        ", but the model was built as " + m.config["model_type"].dump());
  for (const std::string &key : m.check) {
    const Json &built = m.config[key];
    if (cfg.contains(key)) {
      if (!sameValue(cfg[key], built))
        throw CheckpointError(path + ": '" + key + "' is " + cfg[key].dump() +
                              ", but the model was built with " + built.dump());
    } else if (m.defaults.contains(key)) {
      if (!sameValue(m.defaults[key], built))
        throw CheckpointError(
            path + ": '" + key + "' is absent, so transformers' default " +
            m.defaults[key].dump() + " applies, but the model was built with " +
            built.dump());
    } else {
      throw CheckpointError(path + ": '" + key +
                            "' is absent (and has no default), but the model "
                            "was built with " +
                            built.dump());
    }
  }
}

/// One tensor of the checkpoint.
struct FileTensor {
  size_t file = 0; ///< Index into Checkpoint::files.
  const SafetensorsTensor *header = nullptr;
  bool used = false; ///< Matched by the weight map.
};

/// The checkpoint's safetensors files, each header parsed once.
struct Checkpoint {
  std::string dir;
  std::vector<SafetensorsHeader> files;
  std::map<std::string, FileTensor> tensors;
  /// The file of `t` (for messages).
  const std::string &path(const FileTensor &t) const {
    return files[t.file].path;
  }
};

Checkpoint openCheckpoint(const std::string &dir) {
  Checkpoint c;
  c.dir = dir;
  std::error_code ec;
  std::string single = joinPath(dir, hf::kSingleFile);
  std::string index = joinPath(dir, hf::kIndex);
  std::vector<std::string> names; // files, in first-mention order
  Json weightMap = Json::object();
  if (fs::exists(single, ec)) {
    names.push_back(hf::kSingleFile);
  } else if (fs::exists(index, ec)) {
    Json doc = readJsonFile(index, "the safetensors index");
    if (!doc.contains("weight_map") || !doc["weight_map"].is_object())
      throw CheckpointError("'" + index + "' has no 'weight_map' object");
    weightMap = doc["weight_map"];
    for (auto &[tensor, file] : weightMap.items()) {
      if (!file.is_string() || file.get<std::string>().empty())
        throw CheckpointError("'" + index + "': tensor '" + tensor +
                              "' maps to " + file.dump() + ", not a file name");
      std::string f = file.get<std::string>();
      if (f[0] == '/' || f.find("..") != std::string::npos)
        throw CheckpointError("'" + index + "': tensor '" + tensor +
                              "' maps to '" + f +
                              "', which is not a file of the directory");
      if (std::find(names.begin(), names.end(), f) == names.end())
        names.push_back(f);
    }
    for (const std::string &f : names)
      if (!fs::is_regular_file(joinPath(dir, f), ec))
        throw CheckpointError("'" + index + "' names '" + f +
                              "', which does not exist in '" + dir + "'");
  } else {
    throw CheckpointError("Hugging Face checkpoint '" + dir + "' has neither " +
                          hf::kSingleFile + " nor " + hf::kIndex +
                          " (a PyTorch .bin checkpoint? save it with "
                          "safe_serialization=True)");
  }
  c.files.reserve(names.size());
  for (const std::string &f : names)
    c.files.push_back(readSafetensorsHeader(joinPath(dir, f)));
  for (size_t i = 0; i < c.files.size(); ++i)
    for (const auto &[name, t] : c.files[i].tensors) {
      auto [it, fresh] = c.tensors.insert({name, FileTensor{i, &t, false}});
      if (!fresh)
        throw CheckpointError("Hugging Face checkpoint '" + dir +
                              "': tensor '" + name + "' is in both '" +
                              c.path(it->second) + "' and '" + c.files[i].path +
                              "'");
    }
  for (auto &[tensor, file] : weightMap.items()) {
    auto it = c.tensors.find(tensor);
    if (it == c.tensors.end() ||
        c.path(it->second) != joinPath(dir, file.get<std::string>()))
      throw CheckpointError("'" + index + "' puts tensor '" + tensor +
                            "' in '" + file.get<std::string>() +
                            "', which does not hold it");
  }
  return c;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Matches every map tensor to a checkpoint tensor (checking shape and
/// dtype) and refuses checkpoint tensors the map does not explain.
std::vector<FileTensor *> matchTensors(const HfWeightMap &m, Checkpoint &c,
                                       const Artifact &a) {
  std::vector<FileTensor *> out;
  for (const HfTensor &t : m.tensors) {
    auto it = c.tensors.find(t.name);
    std::string bare;
    if (!m.prefix.empty() && t.name.rfind(m.prefix, 0) == 0) {
      bare = t.name.substr(m.prefix.size());
      if (it == c.tensors.end())
        it = c.tensors.find(bare);
    }
    if (it == c.tensors.end()) {
      std::string param;
      for (const HfPart &p : t.parts)
        if (!p.param.empty()) {
          param = " (it holds parameter '" + p.param + "')";
          break;
        }
      throw CheckpointError(
          "Hugging Face checkpoint '" + c.dir + "' has no tensor '" + t.name +
          "'" + (bare.empty() ? "" : " (nor '" + bare + "')") + param +
          ": a checkpoint of another architecture or configuration?");
    }
    FileTensor &ft = it->second;
    const SafetensorsTensor &h = *ft.header;
    ft.used = true;
    if (h.shape != t.shape)
      throw CheckpointError("'" + c.path(ft) + "': tensor '" + h.name +
                            "' has shape " + shapeStr(h.shape) +
                            ", but the model needs " + shapeStr(t.shape));
    bool widen = t.dtype == DType::F32 &&
                 (h.dtype == DType::BF16 || h.dtype == DType::F16);
    if (h.dtype != t.dtype && !widen)
      throw CheckpointError(
          "'" + c.path(ft) + "': tensor '" + h.name + "' is " +
          safetensorsDType(h.dtype) + ", but the model's parameters are " +
          safetensorsDType(t.dtype) +
          (t.dtype == DType::F32 ? " (F32, BF16 or F16 are read)"
                                 : " (read as is only)"));
    out.push_back(&ft);
  }
  auto isTied = [&](const std::string &name) {
    for (const std::string &tied : m.tied)
      if (name == tied || m.prefix + name == tied ||
          (!m.prefix.empty() && name == m.prefix + tied))
        return true;
    return false;
  };
  for (const auto &[name, ft] : c.tensors) {
    if (ft.used || isTied(name) ||
        std::any_of(m.ignore.begin(), m.ignore.end(),
                    [&](const std::string &s) { return endsWith(name, s); }))
      continue;
    throw CheckpointError("'" + c.path(ft) + "': tensor '" + name +
                          "' is not part of the model of artifact '" +
                          a.source +
                          "' (a checkpoint of another architecture or "
                          "configuration?)");
  }
  return out;
}

/// An open safetensors file.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// `rows` row segments of a box, `n` elements each (the file's dtype): the
/// first at `src`, the next ones `srcRow` elements apart; the first
/// element's coordinates relative to the box are `idx`, the rows follow it
/// along the second-to-last dim.
using RowFn = std::function<void(const unsigned char *src, int64_t srcRow,
                                 const std::vector<int64_t> &idx, int64_t rows,
                                 int64_t n)>;

/// Reads the box `box` of tensor `t` (data at byte `dataStart` of the open
/// file `fd` at `path`) row by row: consecutive rows close together in the
/// file are read at once (at most `buffer.size()` bytes), a row longer than
/// the buffer in pieces. Calls `row` for each piece; returns bytes read.
int64_t readBox(int fd, const std::string &path, int64_t dataStart,
                const SafetensorsTensor &t, const Box &box,
                std::vector<unsigned char> &buffer, const RowFn &row) {
  int64_t elem = dtypeSize(t.dtype);
  size_t k = t.shape.size();
  int64_t base = dataStart + t.begin;
  if (k == 0) {
    preadAll(fd, buffer.data(), elem, base, path);
    row(buffer.data(), 0, {}, 1, 1);
    return elem;
  }
  // Row-major strides (elements) of the file tensor.
  std::vector<int64_t> stride(k, 1);
  for (size_t d = k - 1; d-- > 0;)
    stride[d] = stride[d + 1] * t.shape[d + 1];
  int64_t width = box.shape[k - 1], rowBytes = width * elem;
  int64_t rows = product(box.shape) / std::max<int64_t>(width, 1);
  if (width == 0 || rows == 0)
    return 0;
  std::vector<int64_t> idx(k, 0); // of the current row (last coordinate 0)
  auto offsetOf = [&](const std::vector<int64_t> &i) {
    int64_t e = 0;
    for (size_t d = 0; d < k; ++d)
      e += (box.offset[d] + i[d]) * stride[d];
    return base + e * elem;
  };
  auto next = [&](std::vector<int64_t> &i) {
    for (size_t d = k - 1; d-- > 0;) {
      if (++i[d] < box.shape[d])
        return;
      i[d] = 0;
    }
  };
  // Rows closer than this in the file are read at once: reading the gap
  // (at most as much as the row, or a page) costs less than a call.
  const int64_t maxGap = std::max<int64_t>(rowBytes, 4096);
  int64_t capacity = static_cast<int64_t>(buffer.size()), total = 0;
  for (int64_t r = 0; r < rows;) {
    int64_t start = offsetOf(idx);
    if (rowBytes > capacity) { // one long row, in pieces
      for (int64_t off = 0; off < rowBytes;) {
        int64_t n = std::min(capacity / elem * elem, rowBytes - off);
        preadAll(fd, buffer.data(), n, start + off, path);
        std::vector<int64_t> at = idx;
        at[k - 1] = off / elem;
        row(buffer.data(), 0, at, 1, n / elem);
        off += n;
        total += n;
      }
      next(idx);
      ++r;
      continue;
    }
    // Rows [r, last] read as one span.
    std::vector<int64_t> first = idx, probe = idx;
    int64_t last = r, end = start + rowBytes;
    while (last + 1 < rows) {
      next(probe);
      int64_t o = offsetOf(probe);
      if (o - end > maxGap || o + rowBytes - start > capacity)
        break;
      ++last;
      end = o + rowBytes;
    }
    preadAll(fd, buffer.data(), end - start, start, path);
    total += end - start;
    // Rows that differ only in the second-to-last dim go together.
    int64_t rowStride = k >= 2 ? stride[k - 2] : 0;
    for (int64_t j = r; j <= last;) {
      int64_t n = 1;
      if (k >= 2)
        n = std::min(last - j + 1, box.shape[k - 2] - idx[k - 2]);
      row(buffer.data() + (offsetOf(idx) - start), rowStride, idx, n, width);
      for (int64_t q = 0; q < n; ++q)
        next(idx);
      j += n;
    }
    r = last + 1;
  }
  return total;
}

/// Element `i` of `n` 16/32-bit floats at `src` as f32.
float loadFloat(const unsigned char *src, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::F32: {
    float f;
    std::memcpy(&f, src + 4 * i, 4);
    return f;
  }
  case DType::BF16:
  case DType::F16: {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    return dtype == DType::BF16 ? bf16ToFloat(h) : f16ToFloat(h);
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, src + 8 * i, 8);
    return static_cast<float>(v);
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, src + 4 * i, 4);
    return static_cast<float>(v);
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, src + 8 * i, 8);
    return static_cast<float>(v);
  }
  }
  return 0;
}

/// dst[i * dstRow + j * dstCol] = src[i * srcRow + j] for i < rows, j <
/// cols, element by element through `load` (SE source bytes to DE
/// destination bytes); in 64 x 64 tiles when the destination is strided, so
/// that a transposing copy stays in cache.
template <size_t SE, size_t DE, typename Load>
void copyBlock(const unsigned char *src, int64_t srcRow, unsigned char *dst,
               int64_t dstRow, int64_t dstCol, int64_t rows, int64_t cols,
               Load load) {
  if (dstCol == 1) {
    for (int64_t i = 0; i < rows; ++i) {
      const unsigned char *s = src + i * srcRow * SE;
      unsigned char *d = dst + i * dstRow * DE;
      for (int64_t j = 0; j < cols; ++j)
        load(s + j * SE, d + j * DE);
    }
    return;
  }
  hf::forEachTile(rows, cols,
                  [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
                    for (int64_t j = j0; j < j1; ++j)
                      for (int64_t i = i0; i < i1; ++i)
                        load(src + (i * srcRow + j) * SE,
                             dst + (i * dstRow + j * dstCol) * DE);
                  });
}

/// copyBlock from the file's dtype `from` to the parameter's `to`: as is,
/// or BF16/F16 widened to F32.
void copyRows(const unsigned char *src, DType from, int64_t srcRow,
              unsigned char *dst, DType to, int64_t dstRow, int64_t dstCol,
              int64_t rows, int64_t cols) {
  auto widen = [](auto f) {
    return [f](const unsigned char *s, unsigned char *d) {
      uint16_t h;
      std::memcpy(&h, s, 2);
      float v = f(h);
      std::memcpy(d, &v, 4);
    };
  };
  auto same = [](auto size) {
    return [](const unsigned char *s, unsigned char *d) {
      std::memcpy(d, s, decltype(size)::value);
    };
  };
  if (from == to && dstCol == 1) { // rows as they are
    int64_t e = dtypeSize(to);
    for (int64_t i = 0; i < rows; ++i)
      std::memcpy(dst + i * dstRow * e, src + i * srcRow * e, cols * e);
    return;
  }
  if (from == DType::BF16 && to == DType::F32)
    return copyBlock<2, 4>(src, srcRow, dst, dstRow, dstCol, rows, cols,
                           widen(bf16ToFloat));
  if (from == DType::F16 && to == DType::F32)
    return copyBlock<2, 4>(src, srcRow, dst, dstRow, dstCol, rows, cols,
                           widen(f16ToFloat));
  switch (dtypeSize(to)) { // the same dtype
  case 2:
    return copyBlock<2, 2>(src, srcRow, dst, dstRow, dstCol, rows, cols,
                           same(std::integral_constant<size_t, 2>()));
  case 4:
    return copyBlock<4, 4>(src, srcRow, dst, dstRow, dstCol, rows, cols,
                           same(std::integral_constant<size_t, 4>()));
  default:
    return copyBlock<8, 8>(src, srcRow, dst, dstRow, dstCol, rows, cols,
                           same(std::integral_constant<size_t, 8>()));
  }
}

/// importHfCheckpoint's work on this rank alone (no communication).
HfImportStats importLocal(Executor &ex, const std::string &dir,
                          int64_t readBufferBytes) {
  const Artifact &a = ex.artifact();
  int64_t rank = ex.rank();
  HfWeightMap m = parseHfWeightMap(a);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw CheckpointError(
        "Hugging Face checkpoint '" + dir + "' " +
        (fs::exists(dir, ec) ? "is not a directory" : "does not exist"));
  checkConfig(m, dir);
  Checkpoint c = openCheckpoint(dir);
  std::vector<FileTensor *> matched = matchTensors(m, c, a);

  HfImportStats stats;
  stats.dir = dir;
  stats.tensors = static_cast<int64_t>(m.tensors.size());
  stats.files = static_cast<int64_t>(c.files.size());
  std::vector<std::unique_ptr<Fd>> fds(c.files.size());
  auto fdOf = [&](size_t file) {
    if (!fds[file]) {
      fds[file] = std::make_unique<Fd>();
      fds[file]->fd = ::open(c.files[file].path.c_str(), O_RDONLY);
      if (fds[file]->fd < 0)
        throw CheckpointError(osError("cannot open", c.files[file].path));
    }
    return fds[file]->fd;
  };
  // The read buffer: at most readBufferBytes, and no larger than the
  // largest tensor (a small model reads no more than it holds).
  int64_t largest = 0;
  for (const FileTensor *ft : matched)
    largest = std::max(largest, ft->header->end - ft->header->begin);
  std::vector<unsigned char> buffer(static_cast<size_t>(
      std::max<int64_t>(std::min(readBufferBytes, largest), 1 << 16)));
  // Reads box `box` of map tensor `ti` row by row.
  auto read = [&](size_t ti, const Box &box, const RowFn &row) {
    const FileTensor &ft = *matched[ti];
    const SafetensorsHeader &h = c.files[ft.file];
    stats.bytesRead += readBox(fdOf(ft.file), h.path, h.dataStart, *ft.header,
                               box, buffer, row);
  };

  // Parameters, in state order: the parts that meet this rank's block.
  std::map<int64_t, std::vector<std::pair<size_t, const HfPart *>>> byParam;
  for (size_t ti = 0; ti < m.tensors.size(); ++ti)
    for (const HfPart &p : m.tensors[ti].parts)
      if (p.stateIndex >= 0)
        byParam[p.stateIndex].push_back({ti, &p});
  for (const auto &[si, parts] : byParam) {
    const StateSpec &s = a.state[si];
    if (!ex.holdsState(s.name))
      continue;
    Box block = blockOf(a, s, rank);
    size_t prank = block.shape.size();
    std::vector<int64_t> bstride(prank, 1);
    for (size_t d = prank; d-- > 1;)
      bstride[d - 1] = bstride[d] * block.shape[d];
    // In place where the state is host memory, else staged (keeping the
    // init of what no part covers: the vocabulary padding).
    std::vector<unsigned char> staged;
    auto *dst = static_cast<unsigned char *>(ex.stateHostPointer(s.name));
    if (!dst) {
      staged = ex.readState(s.name);
      dst = staged.data();
    }
    int64_t elem = dtypeSize(s.type.dtype);
    for (const auto &[ti, part] : parts) {
      const HfPart &p = *part;
      Box inter;
      if (!intersect(hf::paramBox(p), block, inter))
        continue;
      size_t k = p.hfShape.size();
      Box box{std::vector<int64_t>(k), std::vector<int64_t>(k)};
      for (size_t d = 0; d < k; ++d) {
        size_t pd = p.paramDim(d);
        box.offset[d] = p.hfBegin[d] + inter.offset[pd] - p.paramBegin[pd];
        box.shape[d] = inter.shape[pd];
      }
      // Element offset in the block of the box's origin, and the block
      // stride of each tensor dim.
      int64_t origin = 0;
      for (size_t d = 0; d < prank; ++d)
        origin += (inter.offset[d] - block.offset[d]) * bstride[d];
      std::vector<int64_t> step(k);
      for (size_t d = 0; d < k; ++d)
        step[d] = bstride[p.paramDim(d)];
      DType from = matched[ti]->header->dtype;
      read(ti, box,
           [&](const unsigned char *src, int64_t srcRow,
               const std::vector<int64_t> &idx, int64_t rows, int64_t n) {
             int64_t at = origin;
             for (size_t d = 0; d < k; ++d)
               at += idx[d] * step[d];
             copyRows(src, from, srcRow, dst + at * elem, s.type.dtype,
                      k >= 2 ? step[k - 2] : 0, k ? step[k - 1] : 1, rows, n);
           });
    }
    if (!staged.empty())
      ex.writeState(s.name, staged.data());
  }

  // Zero parts: the ranks take them in turn.
  int64_t ordinal = 0;
  for (size_t ti = 0; ti < m.tensors.size(); ++ti)
    for (const HfPart &p : m.tensors[ti].parts) {
      if (p.stateIndex >= 0 || ordinal++ % a.worldSize != rank)
        continue;
      const FileTensor &ft = *matched[ti];
      DType from = ft.header->dtype;
      Box box = hf::hfBox(p);
      read(ti, box,
           [&](const unsigned char *src, int64_t srcRow,
               const std::vector<int64_t> &idx, int64_t rows, int64_t n) {
             int64_t elem = dtypeSize(from);
             for (int64_t i = 0; i < rows * n; ++i) {
               float v = loadFloat(src + (i / n) * srcRow * elem, from, i % n);
               if (v == 0)
                 continue;
               std::vector<int64_t> at = idx;
               for (size_t d = 0; d < at.size(); ++d)
                 at[d] += box.offset[d];
               if (at.size() >= 2)
                 at[at.size() - 2] += i / n;
               if (!at.empty())
                 at.back() += i % n;
               throw CheckpointError(
                   "'" + c.path(ft) + "': tensor '" + ft.header->name +
                   "' holds " + std::to_string(v) + " at " + shapeStr(at) +
                   ", inside the box " + hf::boxStr(box) +
                   " that the model holds as zeros (it was built without "
                   "these weights, e.g. nanoGPT's bias = False): the "
                   "checkpoint needs a model built with them");
             }
           });
    }
  return stats;
}

} // namespace

HfImportStats importHfCheckpoint(Executor &executor, const std::string &dir,
                                 int64_t readBufferBytes) {
  return timedAgreed<HfImportStats>(
      executor, [&] { return importLocal(executor, dir, readBufferBytes); });
}

} // namespace autoshard::runtime
