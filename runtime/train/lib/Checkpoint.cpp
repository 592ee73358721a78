//===- Checkpoint.cpp - Sharded, atomic, reshardable checkpoints ----------===//

#include "autoshard/runtime/train/Checkpoint.h"
#include "autoshard/runtime/train/Safetensors.h"

#include <nlohmann/json.hpp>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

namespace autoshard::runtime {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char *kFormat = "autoshard-checkpoint";
constexpr const char *kManifest = "manifest.json";

double nowS() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(v));
  return buf;
}

std::string stateKindName(StateKind k) {
  switch (k) {
  case StateKind::Param:
    return "param";
  case StateKind::OptM:
    return "opt_m";
  case StateKind::OptV:
    return "opt_v";
  }
  return "?";
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t product(const std::vector<int64_t> &v) {
  int64_t n = 1;
  for (int64_t d : v)
    n *= d;
  return n;
}

std::string stepDirName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "step-%06lld", static_cast<long long>(step));
  return buf;
}

std::string rankFileName(int64_t rank) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "rank-%05lld.safetensors",
                static_cast<long long>(rank));
  return buf;
}

/// A box of a global tensor: per-dim start and extent.
struct Box {
  std::vector<int64_t> offset, shape;
};

/// The box of state `s` that `rank` holds.
Box blockOf(const Artifact &a, const StateSpec &s, int64_t rank) {
  Box b;
  b.shape = s.type.shape;
  b.offset = a.mesh.blockIndex(s.sharding, rank, b.shape.size());
  for (size_t d = 0; d < b.shape.size(); ++d)
    b.offset[d] *= b.shape[d];
  return b;
}

bool holds(const Artifact &a, const StateSpec &s, int64_t rank) {
  return s.heldBy(a.pipelineStage(rank));
}

/// For every state and rank, whether the rank writes its block: it holds it
/// and no lower rank holds the same block (so each distinct block is written
/// exactly once, by a writer every rank can name without communication).
class Writers {
public:
  explicit Writers(const Artifact &a) {
    for (const StateSpec &s : a.state) {
      std::vector<char> w(a.worldSize, 0);
      std::set<std::vector<int64_t>> seen; // blocks with a writer
      for (int64_t r = 0; r < a.worldSize; ++r)
        if (holds(a, s, r) &&
            seen.insert(a.mesh.blockIndex(s.sharding, r, s.type.shape.size()))
                .second)
          w[r] = 1;
      table.push_back(std::move(w));
    }
  }
  bool writes(size_t state, int64_t rank) const {
    return table[state][rank] != 0;
  }

private:
  std::vector<std::vector<char>> table;
};

/// The safetensors layout of `rank`'s file at `step` (deterministic, so rank
/// 0 knows every file's byte offsets without being told). Tensor keys are
/// the state names; "__metadata__" gives each chunk's global box.
SafetensorsLayout fileLayout(const Artifact &a, const Writers &writers,
                             int64_t rank, int64_t step) {
  std::vector<SafetensorsTensor> tensors;
  std::map<std::string, std::string> meta = {
      {"autoshard.format", "autoshard-checkpoint-shard"},
      {"autoshard.step", std::to_string(step)},
      {"autoshard.rank", std::to_string(rank)}};
  for (size_t i = 0; i < a.state.size(); ++i) {
    const StateSpec &s = a.state[i];
    if (!writers.writes(i, rank))
      continue;
    Box b = blockOf(a, s, rank);
    tensors.push_back({s.name, s.type.dtype, b.shape, 0, 0});
    meta[s.name] =
        Json{{"global_shape", s.globalShape}, {"offset", b.offset}}.dump();
  }
  return layoutSafetensors(std::move(tensors), meta);
}

/// Fixed-size per-rank status exchanged with an all-gather.
struct RankStatus {
  int64_t ok = 1;
  int64_t bytes = 0;
  uint64_t checksum = 0;
  int64_t wroteFile = 0;
  char message[992] = {};
  void fail(const std::string &m) {
    ok = 0;
    std::snprintf(message, sizeof(message), "%s", m.c_str());
  }
};
static_assert(sizeof(RankStatus) == 1024, "fixed record");

int64_t worldSize(const Executor &ex) {
  return ex.comm() ? ex.comm()->world().size() : 1;
}

/// Every rank's `mine`, in world-rank order.
template <typename T>
std::vector<T> allGather(const Executor &ex, const std::vector<T> &mine) {
  int64_t w = worldSize(ex);
  if (w == 1)
    return mine;
  std::vector<T> all(mine.size() * w);
  ex.comm()
      ->all()
      .allGather(mine.data(), all.data(),
                 static_cast<int64_t>(mine.size() * sizeof(T)))
      ->wait();
  return all;
}

std::string osError(const std::string &what, const std::string &path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

/// Writes all of `data` at the current position; throws std::runtime_error.
void writeAll(int fd, const void *data, size_t n, const std::string &path) {
  const char *p = static_cast<const char *>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      throw std::runtime_error(osError("writing", path));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

/// Reads exactly `n` bytes at `offset`; throws CheckpointError (truncated).
void preadAll(int fd, void *data, size_t n, int64_t offset,
              const std::string &path) {
  char *p = static_cast<char *>(data);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, offset);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      throw CheckpointError(osError("reading", path));
    if (r == 0)
      throw CheckpointError("'" + path + "' is truncated: no data at byte " +
                            std::to_string(offset));
    p += r;
    n -= static_cast<size_t>(r);
    offset += r;
  }
}

void fsyncPath(const std::string &path, bool directory) {
  int fd =
      ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0)
    throw std::runtime_error(osError("opening", path));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) {
    errno = err;
    throw std::runtime_error(osError("fsync of", path));
  }
}

/// Creates `path`, lets `body` write to its descriptor, fsyncs and closes
/// it; throws std::runtime_error naming the path and the OS error.
void writeFileSynced(const std::string &path,
                     const std::function<void(int fd)> &body) {
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0)
    throw std::runtime_error(osError("creating", path));
  try {
    body(fd);
    if (::fsync(fd) != 0)
      throw std::runtime_error(osError("fsync of", path));
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0)
    throw std::runtime_error(osError("closing", path));
}

/// Writes this rank's chunks to `path`; returns bytes and checksum.
std::pair<int64_t, uint64_t> writeRankFile(const Executor &ex,
                                           const SafetensorsLayout &layout,
                                           const std::string &path) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> h(XXH3_createState(),
                                                             &XXH3_freeState);
  XXH3_64bits_reset(h.get());
  writeFileSynced(path, [&](int fd) {
    writeAll(fd, layout.header.data(), layout.header.size(), path);
    XXH3_64bits_update(h.get(), layout.header.data(), layout.header.size());
    for (const SafetensorsTensor &t : layout.tensors) {
      std::vector<unsigned char> staged;
      const void *data = ex.stateHostPointer(t.name);
      size_t n = static_cast<size_t>(t.end - t.begin);
      if (!data) {
        staged = ex.readState(t.name);
        data = staged.data();
      }
      writeAll(fd, data, n, path);
      XXH3_64bits_update(h.get(), data, n);
    }
  });
  return {layout.fileBytes, XXH3_64bits_digest(h.get())};
}

/// Writes `text` to `path` and fsyncs it.
void writeTextFile(const std::string &path, const std::string &text) {
  writeFileSynced(
      path, [&](int fd) { writeAll(fd, text.data(), text.size(), path); });
}

Json scheduleJson(const LRSchedule &s) {
  return Json{{"max_lr", s.maxLR},
              {"min_lr", s.minLR},
              {"warmup_steps", s.warmupSteps},
              {"decay_steps", s.decaySteps}};
}

Json buildManifest(const Artifact &a, const Writers &writers,
                   const TrainingProgress &p,
                   const std::vector<RankStatus> &status,
                   const std::vector<uint64_t> &hashes) {
  Json m;
  m["format"] = kFormat;
  m["version"] = kCheckpointVersion;
  m["step"] = p.step;
  m["model"] = {{"name", a.model.name},
                {"vocab_size", a.model.vocabSize},
                {"padded_vocab_size", a.model.paddedVocabSize},
                {"seq", a.model.seq},
                {"batch", a.model.batch},
                {"fingerprint", modelFingerprint(a)}};
  Json plan = Json::parse(a.planJson, nullptr, false);
  m["plan"] = plan.is_discarded() ? Json(a.planJson) : plan;
  m["mesh"] = {{"axes", a.mesh.axes}, {"sizes", a.mesh.sizes}};
  m["world_size"] = a.worldSize;
  m["data"] = {{"source", p.dataSource},
               {"train_tokens", p.dataTrainTokens},
               {"seed", p.seed},
               {"next_step", p.step}};
  Json sched = scheduleJson(p.schedule);
  sched["next_step"] = p.step;
  m["lr_schedule"] = sched;
  int64_t w = static_cast<int64_t>(status.size());
  std::vector<SafetensorsLayout> layouts;
  for (int64_t r = 0; r < w; ++r)
    layouts.push_back(fileLayout(a, writers, r, p.step));
  // Each layout lists its rank's chunks in state order: walk them along.
  std::vector<size_t> next(w, 0);
  Json tensors = Json::object();
  for (size_t i = 0; i < a.state.size(); ++i) {
    const StateSpec &s = a.state[i];
    Json chunks = Json::array();
    for (int64_t r = 0; r < w; ++r) {
      if (!writers.writes(i, r))
        continue;
      const SafetensorsLayout &l = layouts[r];
      const SafetensorsTensor &t = l.tensors[next[r]++]; // in state order
      Box b = blockOf(a, s, r);
      chunks.push_back({{"file", rankFileName(r)},
                        {"byte_offset", l.dataStart() + t.begin},
                        {"offset", b.offset},
                        {"shape", b.shape},
                        {"xxh3_64", hex64(hashes[r * a.state.size() + i])}});
    }
    tensors[s.name] = {{"kind", stateKindName(s.kind)},
                       {"of", s.of},
                       {"dtype", std::string(dtypeName(s.type.dtype))},
                       {"global_shape", s.globalShape},
                       {"chunks", chunks}};
  }
  m["tensors"] = tensors;
  Json files = Json::object();
  for (int64_t r = 0; r < w; ++r)
    if (status[r].wroteFile)
      files[rankFileName(r)] = {{"bytes", status[r].bytes},
                                {"xxh3_64", hex64(status[r].checksum)}};
  m["files"] = files;
  return m;
}

/// Complete checkpoints under `saveDir`, by step.
std::vector<std::pair<int64_t, std::string>>
completeCheckpoints(const std::string &saveDir) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  for (const fs::directory_entry &e : fs::directory_iterator(saveDir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) != 0 || name.size() <= 5)
      continue;
    std::string digits = name.substr(5);
    if (!std::all_of(digits.begin(), digits.end(),
                     [](char c) { return c >= '0' && c <= '9'; }))
      continue; // step-N.tmp and others
    if (!fs::exists(e.path() / kManifest, ec))
      continue;
    out.push_back({std::stoll(digits), e.path().string()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Exchanges the status of a step that only rank 0 performed.
void agreeOnRank0(const Executor &ex, RankStatus &st) {
  if (worldSize(ex) > 1)
    ex.comm()->all().broadcast(&st, sizeof(st), 0)->wait();
}

/// Per-state XXH3 hash of this rank's block (0 where not held).
std::vector<uint64_t> stateHashes(const Executor &ex) {
  const Artifact &a = ex.artifact();
  std::vector<uint64_t> h(a.state.size(), 0);
  for (size_t i = 0; i < a.state.size(); ++i) {
    if (!ex.holdsState(a.state[i].name))
      continue;
    const StateSpec &s = a.state[i];
    if (const void *p = ex.stateHostPointer(s.name)) {
      h[i] = XXH3_64bits(p, s.type.bytes());
      continue;
    }
    std::vector<unsigned char> bytes = ex.readState(s.name);
    h[i] = XXH3_64bits(bytes.data(), bytes.size());
  }
  return h;
}

// --- Loading ---------------------------------------------------------------

struct ManifestChunk {
  std::string file;
  int64_t byteOffset = 0;
  Box box;
  uint64_t checksum = 0; ///< XXH3-64 of the chunk's bytes.
};

struct ManifestTensor {
  std::string kind;
  DType dtype = DType::F32;
  std::vector<int64_t> globalShape;
  std::vector<ManifestChunk> chunks;
};

struct ManifestFile {
  int64_t bytes = 0;
  uint64_t checksum = 0;
};

/// Not copyable: byFile points into tensors.
struct Manifest {
  Manifest() = default;
  Manifest(Manifest &&) = default;
  Manifest(const Manifest &) = delete;
  std::string dir;
  int64_t step = 0;
  Json doc;
  std::map<std::string, ManifestTensor> tensors;
  std::map<std::string, ManifestFile> files;
  /// file -> the (tensor name, chunk) pairs it holds.
  std::map<std::string,
           std::vector<std::pair<std::string, const ManifestChunk *>>>
      byFile;
};

/// A field of the manifest, with a clear error when absent or mistyped.
const Json &field(const Json &obj, const std::string &key,
                  const std::string &where, const std::string &manifest,
                  Json::value_t type) {
  auto fail = [&](const std::string &what) {
    return CheckpointError("checkpoint manifest '" + manifest + "': " + where +
                           (where.empty() ? "" : ": ") + "field '" + key +
                           "' " + what);
  };
  if (!obj.is_object() || !obj.contains(key))
    throw fail("is missing");
  const Json &v = obj[key];
  bool ok = v.type() == type ||
            (type == Json::value_t::number_integer && v.is_number_unsigned()) ||
            (type == Json::value_t::number_float && v.is_number());
  if (!ok)
    throw fail("has the wrong type: " + v.dump());
  return v;
}

std::vector<int64_t> intList(const Json &v, const std::string &what,
                             const std::string &manifest) {
  std::vector<int64_t> out;
  for (const Json &x : v) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0)
      throw CheckpointError("checkpoint manifest '" + manifest + "': " + what +
                            " must list integers >= 0, found " + v.dump());
    out.push_back(x.get<int64_t>());
  }
  return out;
}

Manifest readManifest(const std::string &dir) {
  Manifest m;
  m.dir = dir;
  std::string leaf = fs::path(dir).filename().string();
  if (leaf.empty())
    leaf = fs::path(dir).parent_path().filename().string();
  if (leaf.size() > 4 && (leaf.compare(leaf.size() - 4, 4, ".tmp") == 0 ||
                          leaf.compare(leaf.size() - 4, 4, ".old") == 0))
    throw CheckpointError("checkpoint '" + dir +
                          "' is a save in progress or one being replaced "
                          "(*.tmp / *.old), not a complete checkpoint");
  std::string path = (fs::path(dir) / kManifest).string();
  std::ifstream in(path);
  if (!in) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw CheckpointError("checkpoint '" + dir + "' is not a directory");
    throw CheckpointError("checkpoint '" + dir + "' has no " + kManifest +
                          " (an incomplete save?)");
  }
  std::stringstream text;
  text << in.rdbuf();
  m.doc = Json::parse(text.str(), nullptr, false);
  if (m.doc.is_discarded() || !m.doc.is_object())
    throw CheckpointError("checkpoint manifest '" + path +
                          "' is not a JSON object");
  using VT = Json::value_t;
  const std::string &format = field(m.doc, "format", "", path, VT::string)
                                  .get_ref<const std::string &>();
  if (format != kFormat)
    throw CheckpointError("checkpoint manifest '" + path + "': format is '" +
                          format + "', not '" + kFormat + "'");
  int64_t version =
      field(m.doc, "version", "", path, VT::number_integer).get<int64_t>();
  if (version > kCheckpointVersion || version < 1)
    throw CheckpointError(
        "checkpoint manifest '" + path + "': format version " +
        std::to_string(version) + " is " +
        (version < 1 ? "invalid" : "newer than this shard-run reads") +
        " (it reads versions 1 to " + std::to_string(kCheckpointVersion) + ")");
  m.step = field(m.doc, "step", "", path, VT::number_integer).get<int64_t>();
  if (m.step < 0)
    throw CheckpointError("checkpoint manifest '" + path + "': step is " +
                          std::to_string(m.step) + ", not a step count");
  for (auto &[name, f] : field(m.doc, "files", "", path, VT::object).items()) {
    std::string where = "file '" + name + "'";
    ManifestFile mf;
    mf.bytes =
        field(f, "bytes", where, path, VT::number_integer).get<int64_t>();
    const std::string &sum = field(f, "xxh3_64", where, path, VT::string)
                                 .get_ref<const std::string &>();
    mf.checksum = std::strtoull(sum.c_str(), nullptr, 16);
    if (name.find('/') != std::string::npos || name == "..")
      throw CheckpointError("checkpoint manifest '" + path + "': file name '" +
                            name + "' is not a plain file name");
    m.files[name] = mf;
  }
  for (auto &[name, t] :
       field(m.doc, "tensors", "", path, VT::object).items()) {
    std::string where = "tensor '" + name + "'";
    ManifestTensor mt;
    mt.kind = field(t, "kind", where, path, VT::string).get<std::string>();
    std::string dt =
        field(t, "dtype", where, path, VT::string).get<std::string>();
    std::optional<DType> d = parseDType(dt);
    if (!d)
      throw CheckpointError("checkpoint manifest '" + path + "': " + where +
                            " has unknown dtype '" + dt + "'");
    mt.dtype = *d;
    mt.globalShape = intList(field(t, "global_shape", where, path, VT::array),
                             where + " global_shape", path);
    for (const Json &c : field(t, "chunks", where, path, VT::array)) {
      ManifestChunk mc;
      mc.file = field(c, "file", where, path, VT::string).get<std::string>();
      mc.byteOffset = field(c, "byte_offset", where, path, VT::number_integer)
                          .get<int64_t>();
      mc.checksum = std::strtoull(field(c, "xxh3_64", where, path, VT::string)
                                      .get_ref<const std::string &>()
                                      .c_str(),
                                  nullptr, 16);
      mc.box.offset = intList(field(c, "offset", where, path, VT::array),
                              where + " chunk offset", path);
      mc.box.shape = intList(field(c, "shape", where, path, VT::array),
                             where + " chunk shape", path);
      if (mc.box.offset.size() != mt.globalShape.size() ||
          mc.box.shape.size() != mt.globalShape.size())
        throw CheckpointError(
            "checkpoint manifest '" + path + "': " + where +
            " has a chunk of rank " + std::to_string(mc.box.shape.size()) +
            ", but its global shape " + shapeStr(mt.globalShape) +
            " has rank " + std::to_string(mt.globalShape.size()));
      for (size_t k = 0; k < mt.globalShape.size(); ++k)
        if (mc.box.offset[k] + mc.box.shape[k] > mt.globalShape[k])
          throw CheckpointError(
              "checkpoint manifest '" + path + "': " + where + " chunk at " +
              shapeStr(mc.box.offset) + " of shape " + shapeStr(mc.box.shape) +
              " lies outside the global shape " + shapeStr(mt.globalShape));
      auto f = m.files.find(mc.file);
      if (f == m.files.end())
        throw CheckpointError("checkpoint manifest '" + path + "': " + where +
                              " names file '" + mc.file +
                              "', which 'files' does not list");
      int64_t bytes = product(mc.box.shape) * dtypeSize(mt.dtype);
      if (mc.byteOffset + bytes > f->second.bytes)
        throw CheckpointError("checkpoint manifest '" + path + "': " + where +
                              " chunk ends at byte " +
                              std::to_string(mc.byteOffset + bytes) + " of '" +
                              mc.file + "', which has " +
                              std::to_string(f->second.bytes) + " bytes");
      mt.chunks.push_back(std::move(mc));
    }
    // The chunks must cover the tensor exactly once: pairwise disjoint, and
    // as many elements as the tensor.
    for (size_t i = 0; i < mt.chunks.size(); ++i)
      for (size_t j = i + 1; j < mt.chunks.size(); ++j) {
        const Box &x = mt.chunks[i].box, &y = mt.chunks[j].box;
        bool meet = true;
        for (size_t k = 0; k < x.shape.size() && meet; ++k)
          meet = x.offset[k] < y.offset[k] + y.shape[k] &&
                 y.offset[k] < x.offset[k] + x.shape[k];
        if (meet)
          throw CheckpointError("checkpoint manifest '" + path + "': " + where +
                                " has overlapping chunks at " +
                                shapeStr(x.offset) + " and " +
                                shapeStr(y.offset));
      }
    int64_t covered = 0;
    for (const ManifestChunk &c : mt.chunks)
      covered += product(c.box.shape);
    if (covered != product(mt.globalShape))
      throw CheckpointError("checkpoint manifest '" + path + "': " + where +
                            "'s chunks cover " + std::to_string(covered) +
                            " elements, but its global shape " +
                            shapeStr(mt.globalShape) + " has " +
                            std::to_string(product(mt.globalShape)));
    m.tensors[name] = std::move(mt);
  }
  for (const auto &[name, t] : m.tensors)
    for (const ManifestChunk &c : t.chunks)
      m.byFile[c.file].push_back({name, &c});
  return m;
}

/// Checks that the checkpoint holds exactly the artifact's model.
void checkModel(const Manifest &m, const Artifact &a) {
  std::string where = "checkpoint '" + m.dir + "'";
  for (const StateSpec &s : a.state) {
    auto it = m.tensors.find(s.name);
    if (it == m.tensors.end())
      throw CheckpointError(where + " has no tensor '" + s.name +
                            "', which the model of artifact '" + a.source +
                            "' needs (a checkpoint of another model?)");
    const ManifestTensor &t = it->second;
    if (t.dtype != s.type.dtype || t.globalShape != s.globalShape)
      throw CheckpointError(where + ": tensor '" + s.name + "' is " +
                            TensorType{t.dtype, t.globalShape}.str() +
                            " in the checkpoint, but " +
                            TensorType{s.type.dtype, s.globalShape}.str() +
                            " in the model of '" + a.source + "'");
    if (t.kind != stateKindName(s.kind))
      throw CheckpointError(where + ": tensor '" + s.name + "' is a '" +
                            t.kind + "' in the checkpoint, but a '" +
                            stateKindName(s.kind) + "' in the model");
  }
  for (const auto &[name, t] : m.tensors)
    if (a.findState(name) < 0)
      throw CheckpointError(where + " has tensor '" + name +
                            "', which the model of artifact '" + a.source +
                            "' does not have (a checkpoint of another model?)");
  const Json &model = m.doc.contains("model") ? m.doc["model"] : Json();
  if (model.is_object() && model.contains("fingerprint") &&
      model["fingerprint"] != modelFingerprint(a))
    throw CheckpointError(where + ": model fingerprint " +
                          model["fingerprint"].dump() + " differs from " +
                          modelFingerprint(a) + " of artifact '" + a.source +
                          "' (model name, vocabulary or sequence length)");
}

/// The (tensor, chunk) pairs file `name` holds (none if it holds none).
const std::vector<std::pair<std::string, const ManifestChunk *>> &
chunksIn(const Manifest &m, const std::string &name) {
  static const std::vector<std::pair<std::string, const ManifestChunk *>> none;
  auto it = m.byFile.find(name);
  return it == m.byFile.end() ? none : it->second;
}

/// An open file of the checkpoint, its header checked once.
struct OpenFile {
  int fd = -1;
  std::string path;
  ~OpenFile() {
    if (fd >= 0)
      ::close(fd);
  }
};

OpenFile &openChecked(std::map<std::string, std::unique_ptr<OpenFile>> &open,
                      const Manifest &m, const std::string &name) {
  auto it = open.find(name);
  if (it != open.end())
    return *it->second;
  auto f = std::make_unique<OpenFile>();
  f->path = (fs::path(m.dir) / name).string();
  f->fd = ::open(f->path.c_str(), O_RDONLY);
  if (f->fd < 0)
    throw CheckpointError("checkpoint '" + m.dir +
                          "': " + osError("cannot open", f->path));
  struct stat st;
  if (::fstat(f->fd, &st) != 0)
    throw CheckpointError(osError("cannot stat", f->path));
  int64_t expected = m.files.at(name).bytes;
  if (st.st_size != expected)
    throw CheckpointError("checkpoint '" + m.dir + "': file '" + name +
                          "' has " + std::to_string(st.st_size) +
                          " bytes, the manifest says " +
                          std::to_string(expected) + " (truncated?)");
  // The file's own header must agree with the manifest on every chunk it
  // holds: a manifest edited or mixed up with other files fails here.
  SafetensorsHeader h;
  try {
    h = readSafetensorsHeader(f->path);
  } catch (const SafetensorsError &e) {
    throw CheckpointError("checkpoint '" + m.dir + "': " + e.what());
  }
  auto meta = h.metadata.find("autoshard.step");
  if (meta == h.metadata.end() || meta->second != std::to_string(m.step))
    throw CheckpointError(
        "checkpoint '" + m.dir + "': file '" + name + "' was saved at step " +
        (meta == h.metadata.end() ? std::string("?") : meta->second) +
        ", the manifest says step " + std::to_string(m.step));
  for (const auto &[tname, chunk] : chunksIn(m, name)) {
    const ManifestTensor &t = m.tensors.at(tname);
    const ManifestChunk &c = *chunk;
    auto it = h.tensors.find(tname);
    std::string offset;
    if (auto md = h.metadata.find(tname); md != h.metadata.end()) {
      nlohmann::json j = nlohmann::json::parse(md->second, nullptr, false);
      if (j.is_object() && j.contains("offset"))
        offset = j["offset"].dump();
    }
    if (it == h.tensors.end() || it->second.dtype != t.dtype ||
        it->second.shape != c.box.shape ||
        h.dataStart + it->second.begin != c.byteOffset ||
        offset != nlohmann::json(c.box.offset).dump())
      throw CheckpointError(
          "checkpoint '" + m.dir + "': the manifest's chunk of '" + tname +
          "' (" + TensorType{t.dtype, c.box.shape}.str() + " at global " +
          shapeStr(c.box.offset) + ", byte " + std::to_string(c.byteOffset) +
          ") disagrees with file '" + name + "'s header" +
          (it == h.tensors.end()
               ? " (no such tensor)"
               : " (" + TensorType{it->second.dtype, it->second.shape}.str() +
                     " at global " + offset + ", byte " +
                     std::to_string(h.dataStart + it->second.begin) + ")"));
  }
  return *open.emplace(name, std::move(f)).first->second;
}

/// Copies the part of chunk `c` (in file `f`) that overlaps `dst` into
/// `dstData` (row-major over dst.shape). Contiguous runs are read straight
/// into place; short runs go through `buffer` in spans of at most its size.
int64_t readOverlap(OpenFile &f, const ManifestChunk &c, const Box &dst,
                    unsigned char *dstData, int64_t elem,
                    std::vector<unsigned char> &buffer, XXH3_state_t *hash) {
  size_t rank = dst.shape.size();
  if (rank == 0) {
    preadAll(f.fd, dstData, elem, c.byteOffset, f.path);
    if (hash)
      XXH3_64bits_update(hash, dstData, elem);
    return elem;
  }
  Box in; // the overlap, in global coordinates
  in.offset.resize(rank);
  in.shape.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t lo = std::max(c.box.offset[d], dst.offset[d]);
    int64_t hi = std::min(c.box.offset[d] + c.box.shape[d],
                          dst.offset[d] + dst.shape[d]);
    if (hi <= lo)
      return 0;
    in.offset[d] = lo;
    in.shape[d] = hi - lo;
  }
  // Dims [m, rank) are contiguous in both layouts: one run of `run` elements.
  size_t m = rank - 1;
  int64_t run = in.shape[m];
  while (m > 0 && in.shape[m] == c.box.shape[m] &&
         in.shape[m] == dst.shape[m]) {
    --m;
    run *= in.shape[m];
  }
  // Row-major strides (elements) of both layouts.
  std::vector<int64_t> cs(rank, 1), ds(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) {
    cs[d] = cs[d + 1] * c.box.shape[d + 1];
    ds[d] = ds[d + 1] * dst.shape[d + 1];
  }
  int64_t runs = 1;
  for (size_t d = 0; d < m; ++d)
    runs *= in.shape[d];
  // Element offsets of each run in the chunk and in the destination.
  auto runStart = [&](int64_t k, int64_t &co, int64_t &dof) {
    co = 0;
    dof = 0;
    for (size_t d = m + 1; d-- > 0;) {
      int64_t idx = 0;
      if (d < m) {
        idx = k % in.shape[d];
        k /= in.shape[d];
      }
      co += (in.offset[d] - c.box.offset[d] + idx) * cs[d];
      dof += (in.offset[d] - dst.offset[d] + idx) * ds[d];
    }
  };
  int64_t runBytes = run * elem, total = 0;
  const int64_t kDirect = 1 << 18; // long runs: no staging copy
  for (int64_t k = 0; k < runs;) {
    int64_t co, dof;
    runStart(k, co, dof);
    if (runBytes >= kDirect || runBytes > static_cast<int64_t>(buffer.size())) {
      preadAll(f.fd, dstData + dof * elem, runBytes, c.byteOffset + co * elem,
               f.path);
      if (hash)
        XXH3_64bits_update(hash, dstData + dof * elem, runBytes);
      total += runBytes;
      ++k;
      continue;
    }
    // A span of consecutive runs that fits the buffer, read at once.
    int64_t last = k, lastCo = co, lastDof = dof;
    while (last + 1 < runs) {
      int64_t nco, ndof;
      runStart(last + 1, nco, ndof);
      if ((nco + run - co) * elem > static_cast<int64_t>(buffer.size()))
        break;
      ++last;
      lastCo = nco;
      lastDof = ndof;
    }
    (void)lastDof;
    int64_t spanBytes = (lastCo + run - co) * elem;
    preadAll(f.fd, buffer.data(), spanBytes, c.byteOffset + co * elem, f.path);
    for (int64_t j = k; j <= last; ++j) {
      int64_t jco, jdof;
      runStart(j, jco, jdof);
      std::memcpy(dstData + jdof * elem, buffer.data() + (jco - co) * elem,
                  runBytes);
      if (hash)
        XXH3_64bits_update(hash, buffer.data() + (jco - co) * elem, runBytes);
    }
    total += (last - k + 1) * runBytes;
    k = last + 1;
  }
  return total;
}

} // namespace

std::string modelFingerprint(const Artifact &a) {
  Json sig = {{"name", a.model.name},
              {"vocab_size", a.model.vocabSize},
              {"padded_vocab_size", a.model.paddedVocabSize},
              {"seq", a.model.seq}};
  Json tensors = Json::array();
  for (const StateSpec &s : a.state)
    tensors.push_back({s.name, stateKindName(s.kind), s.of,
                       std::string(dtypeName(s.type.dtype)), s.globalShape});
  std::sort(tensors.begin(), tensors.end());
  sig["state"] = tensors;
  std::string text = sig.dump();
  return hex64(XXH3_64bits(text.data(), text.size()));
}

namespace {
/// The replica check of checkStateReplicas on `all`, every rank's
/// stateHashes() in world-rank order.
void checkReplicaHashes(const Artifact &a, const std::vector<uint64_t> &all) {
  int64_t w = a.worldSize;
  size_t n = a.state.size();
  for (size_t i = 0; i < n; ++i) {
    const StateSpec &s = a.state[i];
    std::map<std::vector<int64_t>, int64_t> first; // block -> first holder
    for (int64_t r = 0; r < w; ++r) {
      if (!holds(a, s, r))
        continue;
      std::vector<int64_t> block =
          a.mesh.blockIndex(s.sharding, r, s.type.shape.size());
      auto [it, inserted] = first.insert({block, r});
      if (inserted || all[r * n + i] == all[it->second * n + i])
        continue;
      int64_t q = it->second;
      throw CheckpointError(
          "state '" + s.name + "': the copies of its block at global offset " +
              shapeStr(blockOf(a, s, r).offset) + " differ between rank " +
              std::to_string(q) + " (pipeline stage " +
              std::to_string(a.pipelineStage(q)) + ") and rank " +
              std::to_string(r) + " (pipeline stage " +
              std::to_string(a.pipelineStage(r)) +
              "): a copy held by several ranks was not updated alike (a "
              "compiler "
              "bug; please report it with the plan)",
          /*agreed=*/true);
    }
  }
}
} // namespace

void checkStateReplicas(const Executor &ex) {
  checkReplicaHashes(ex.artifact(), allGather(ex, stateHashes(ex)));
}

CheckpointSaveStats saveCheckpoint(const Executor &ex,
                                   const std::string &saveDir,
                                   const TrainingProgress &progress,
                                   int64_t keep) {
  double start = nowS();
  const Artifact &a = ex.artifact();
  int64_t rank = ex.rank(), w = worldSize(ex);
  std::string name = stepDirName(progress.step);
  fs::path finalDir = fs::path(saveDir) / name;
  fs::path tmpDir = fs::path(saveDir) / (name + ".tmp");

  // A checkpoint must not depend on which copy of a block it reads. The
  // same hashes are the chunks' checksums in the manifest.
  std::vector<uint64_t> hashes = allGather(ex, stateHashes(ex));
  checkReplicaHashes(a, hashes);

  // Rank 0 makes a fresh tmp directory; the others wait to hear it worked.
  RankStatus made;
  if (rank == 0) {
    std::error_code ec;
    fs::create_directories(saveDir, ec);
    if (!ec)
      fs::remove_all(tmpDir, ec);
    if (!ec)
      fs::create_directory(tmpDir, ec);
    if (ec)
      made.fail("cannot create '" + tmpDir.string() + "': " + ec.message());
  }
  agreeOnRank0(ex, made);
  if (!made.ok)
    throw CheckpointError(
        std::string("checkpoint save failed: ") + made.message, true);

  // Every writer rank writes its file.
  RankStatus mine;
  Writers writers(a);
  SafetensorsLayout layout = fileLayout(a, writers, rank, progress.step);
  if (!layout.tensors.empty()) {
    std::string path = (tmpDir / rankFileName(rank)).string();
    try {
      auto [bytes, sum] = writeRankFile(ex, layout, path);
      mine.bytes = bytes;
      mine.checksum = sum;
      mine.wroteFile = 1;
    } catch (const std::exception &e) {
      mine.fail(e.what());
    }
  }
  std::vector<RankStatus> status = allGather(ex, std::vector<RankStatus>{mine});
  std::error_code ec;
  for (int64_t r = 0; r < w; ++r)
    if (!status[r].ok) {
      if (rank == 0)
        fs::remove_all(tmpDir, ec);
      throw CheckpointError("checkpoint save failed on rank " +
                                std::to_string(r) + ": " + status[r].message +
                                " (earlier checkpoints are intact)",
                            true);
    }

  // Rank 0 publishes it: manifest, fsync, rename, retention.
  RankStatus published;
  CheckpointSaveStats stats;
  if (rank == 0) {
    try {
      writeTextFile(
          (tmpDir / kManifest).string(),
          buildManifest(a, writers, progress, status, hashes).dump(1) + "\n");
      fsyncPath(tmpDir.string(), true);
      fs::path old = fs::path(saveDir) / (name + ".old");
      if (fs::exists(finalDir)) { // saved at this step before: replace it
        fs::remove_all(old);
        fs::rename(finalDir, old);
      }
      fs::rename(tmpDir, finalDir);
      fsyncPath(saveDir, true);
      fs::remove_all(old, ec);
      // Leftovers of saves that crashed (this job's or an earlier one's).
      for (const fs::directory_entry &e : fs::directory_iterator(saveDir, ec)) {
        std::string n = e.path().filename().string();
        if (n.rfind("step-", 0) == 0 &&
            (n.size() > 4 && (n.compare(n.size() - 4, 4, ".tmp") == 0 ||
                              n.compare(n.size() - 4, 4, ".old") == 0)))
          fs::remove_all(e.path(), ec);
      }
      if (keep > 0) {
        auto done = completeCheckpoints(saveDir);
        for (size_t i = 0; i + keep < done.size(); ++i) {
          if (done[i].second == finalDir.string())
            continue;
          fs::remove_all(done[i].second, ec);
          stats.deleted.push_back(done[i].second);
        }
      }
    } catch (const std::exception &e) {
      published.fail(e.what());
    }
  }
  agreeOnRank0(ex, published);
  if (!published.ok)
    throw CheckpointError(std::string("checkpoint save failed on rank 0: ") +
                              published.message +
                              " (earlier checkpoints are intact)",
                          true);
  stats.path = finalDir.string();
  stats.bytes = mine.bytes;
  for (const RankStatus &s : status) {
    stats.bytesPerRank.push_back(s.bytes);
    stats.totalBytes += s.bytes;
  }
  stats.seconds = nowS() - start;
  return stats;
}

std::string latestCheckpoint(const std::string &saveDir) {
  std::error_code ec;
  if (!fs::is_directory(saveDir, ec))
    throw CheckpointError("--resume latest: save directory '" + saveDir +
                          "' does not exist");
  auto done = completeCheckpoints(saveDir);
  if (done.empty())
    throw CheckpointError("--resume latest: no complete checkpoint (a step-N "
                          "directory with a manifest.json) in '" +
                          saveDir + "'");
  return done.back().second;
}

void runAgreed(const Executor &ex, const std::function<void()> &body) {
  RankStatus mine;
  try {
    body();
  } catch (const CheckpointError &e) {
    mine.fail(e.what());
  } catch (const SafetensorsError &e) {
    mine.fail(e.what());
  } catch (const ArtifactError &e) {
    mine.fail(e.what());
  }
  std::vector<RankStatus> all = allGather(ex, std::vector<RankStatus>{mine});
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r].ok)
      throw CheckpointError((all.size() > 1 ? "rank " + std::to_string(r) + ": "
                                            : std::string()) +
                                all[r].message,
                            /*agreed=*/true);
}

namespace {
/// loadCheckpoint's work on this rank alone (no communication).
CheckpointLoadStats loadLocal(Executor &ex, const std::string &path,
                              int64_t readBufferBytes) {
  double start = nowS();
  const Artifact &a = ex.artifact();
  int64_t rank = ex.rank(), w = worldSize(ex);
  Manifest m = readManifest(path);
  checkModel(m, a);
  std::vector<unsigned char> buffer(
      static_cast<size_t>(std::max<int64_t>(readBufferBytes, 4096)));

  CheckpointLoadStats stats;
  stats.path = path;
  // Checksums are per chunk: a rank that reads a chunk whole hashes it as
  // it reads (under the same plan every chunk, so nothing is read twice);
  // a chunk no rank reads whole is read once more, by one of the ranks that
  // read part of it (taken in turn).
  std::map<std::string, std::unique_ptr<OpenFile>> open;
  auto contains = [](const Box &outer, const Box &inner) {
    for (size_t d = 0; d < outer.shape.size(); ++d)
      if (inner.offset[d] < outer.offset[d] ||
          inner.offset[d] + inner.shape[d] > outer.offset[d] + outer.shape[d])
        return false;
    return true;
  };
  auto overlaps = [](const Box &x, const Box &y) {
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (x.offset[d] >= y.offset[d] + y.shape[d] ||
          y.offset[d] >= x.offset[d] + x.shape[d])
        return false;
    return true;
  };
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> hash(
      XXH3_createState(), &XXH3_freeState);
  auto checkSum = [&](const std::string &tensor, const ManifestChunk &c) {
    uint64_t got = XXH3_64bits_digest(hash.get());
    if (got != c.checksum)
      throw CheckpointError("checkpoint '" + path + "': file '" + c.file +
                            "': the chunk of '" + tensor + "' at global " +
                            shapeStr(c.box.offset) + " has checksum " +
                            hex64(got) + ", the manifest says " +
                            hex64(c.checksum) + " (corrupt)");
  };
  int64_t ordinal = 0; // spreads the extra reads over the partial readers
  for (const StateSpec &s : a.state) {
    const ManifestTensor &t = m.tensors.at(s.name);
    int64_t elem = dtypeSize(s.type.dtype);
    for (const ManifestChunk &c : t.chunks) {
      std::vector<int64_t> partial; // ranks that read part of it
      bool readWhole = false;
      for (int64_t r = 0; r < w && !readWhole; ++r) {
        if (!holds(a, s, r))
          continue;
        Box b = blockOf(a, s, r);
        readWhole = contains(b, c.box); // rank r hashes it as it reads
        if (!readWhole && overlaps(b, c.box))
          partial.push_back(r);
      }
      if (readWhole || partial.empty() ||
          partial[ordinal++ % partial.size()] != rank)
        continue;
      OpenFile &f = openChecked(open, m, c.file);
      int64_t bytes = product(c.box.shape) * elem;
      XXH3_64bits_reset(hash.get());
      for (int64_t off = 0; off < bytes;) {
        int64_t n = std::min<int64_t>(bytes - off, buffer.size());
        preadAll(f.fd, buffer.data(), n, c.byteOffset + off, f.path);
        XXH3_64bits_update(hash.get(), buffer.data(), n);
        off += n;
      }
      checkSum(s.name, c);
      stats.bytesVerified += bytes;
    }
  }

  for (const StateSpec &s : a.state) {
    if (!ex.holdsState(s.name))
      continue;
    const ManifestTensor &t = m.tensors.at(s.name);
    Box dst = blockOf(a, s, rank);
    int64_t elem = dtypeSize(s.type.dtype);
    // Read into the state in place where the host can (CPU), else into an
    // uninitialised staging block; every byte comes from the chunks
    // (checked below).
    std::unique_ptr<unsigned char[]> staged;
    auto *block = static_cast<unsigned char *>(ex.stateHostPointer(s.name));
    if (!block) {
      staged.reset(new unsigned char[s.type.bytes()]);
      block = staged.get();
    }
    int64_t got = 0;
    for (const ManifestChunk &c : t.chunks) {
      if (!overlaps(c.box, dst))
        continue;
      bool whole = contains(dst, c.box);
      if (whole)
        XXH3_64bits_reset(hash.get());
      got += readOverlap(openChecked(open, m, c.file), c, dst, block, elem,
                         buffer, whole ? hash.get() : nullptr);
      if (whole) {
        checkSum(s.name, c);
        stats.bytesVerified += product(c.box.shape) * elem;
      }
    }
    if (got != s.type.bytes())
      throw CheckpointError("checkpoint '" + path + "': the chunks of '" +
                            s.name + "' cover " + std::to_string(got) +
                            " of the " + std::to_string(s.type.bytes()) +
                            " bytes of its block at " + shapeStr(dst.offset));
    if (staged)
      ex.writeState(s.name, staged.get());
    stats.bytesRead += got;
  }

  using VT = Json::value_t;
  std::string mpath = (fs::path(path) / kManifest).string();
  const Json &data = field(m.doc, "data", "", mpath, VT::object);
  const Json &sched = field(m.doc, "lr_schedule", "", mpath, VT::object);
  TrainingProgress &p = stats.progress;
  p.step = m.step;
  p.seed =
      field(data, "seed", "data", mpath, VT::number_integer).get<uint64_t>();
  p.dataSource =
      field(data, "source", "data", mpath, VT::string).get<std::string>();
  p.dataTrainTokens =
      field(data, "train_tokens", "data", mpath, VT::number_integer)
          .get<int64_t>();
  p.schedule.maxLR =
      field(sched, "max_lr", "lr_schedule", mpath, VT::number_float)
          .get<double>();
  p.schedule.minLR =
      field(sched, "min_lr", "lr_schedule", mpath, VT::number_float)
          .get<double>();
  p.schedule.warmupSteps =
      field(sched, "warmup_steps", "lr_schedule", mpath, VT::number_integer)
          .get<int64_t>();
  p.schedule.decaySteps =
      field(sched, "decay_steps", "lr_schedule", mpath, VT::number_integer)
          .get<int64_t>();
  stats.savedPlan = m.doc.contains("plan") ? m.doc["plan"].dump() : "{}";
  stats.savedWorldSize =
      m.doc.contains("world_size") && m.doc["world_size"].is_number_integer()
          ? m.doc["world_size"].get<int64_t>()
          : 0;
  const Json &model = m.doc.contains("model") ? m.doc["model"] : Json();
  stats.savedBatch = model.is_object() && model.contains("batch") &&
                             model["batch"].is_number_integer()
                         ? model["batch"].get<int64_t>()
                         : 0;
  stats.seconds = nowS() - start;
  return stats;
}
} // namespace

CheckpointLoadStats loadCheckpoint(Executor &ex, const std::string &path,
                                   int64_t readBufferBytes) {
  // Every rank finishes reading (or fails) before any trains; a failure on
  // one rank ends every rank cleanly with its message.
  double start = nowS();
  CheckpointLoadStats stats;
  runAgreed(ex, [&] { stats = loadLocal(ex, path, readBufferBytes); });
  stats.seconds = nowS() - start;
  return stats;
}

} // namespace autoshard::runtime
