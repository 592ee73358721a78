//===- CheckpointLoad.cpp - Reading checkpoints under any plan ------------===//

#include "CheckpointCommon.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

namespace autoshard::runtime {

using namespace checkpoint;

namespace {

namespace fs = std::filesystem;

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
/// Reads `n` bytes at `offset` into `dst` in pieces of kIOPieceBytes,
/// hashing each piece into `hash` (if not null) while it is in cache.
void readRun(int fd, unsigned char *dst, int64_t n, int64_t offset,
             const std::string &path, XXH3_state_t *hash) {
  for (int64_t off = 0; off < n;) {
    int64_t k = std::min<int64_t>(n - off, kIOPieceBytes);
    preadAll(fd, dst + off, k, offset + off, path);
    if (hash)
      XXH3_64bits_update(hash, dst + off, k);
    off += k;
  }
}

/// Copies the part of chunk `c` (in the file open as `fd` at `path`) that
/// overlaps `dst` into `dstData` (row-major over dst.shape). Contiguous runs
/// are read straight into place; short runs go through `buffer` in spans of
/// at most its size. Hashes what it reads, in chunk order, into `hash`.
int64_t readOverlap(int fd, const std::string &path, const ManifestChunk &c,
                    const Box &dst, unsigned char *dstData, int64_t elem,
                    std::vector<unsigned char> &buffer, XXH3_state_t *hash) {
  size_t rank = dst.shape.size();
  if (rank == 0) {
    readRun(fd, dstData, elem, c.byteOffset, path, hash);
    return elem;
  }
  Box in; // the overlap, in global coordinates
  if (!intersect(c.box, dst, in))
    return 0;
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
      readRun(fd, dstData + dof * elem, runBytes, c.byteOffset + co * elem,
              path, hash);
      total += runBytes;
      ++k;
      continue;
    }
    // A span of consecutive runs that fits the buffer, read at once.
    int64_t last = k, lastCo = co;
    while (last + 1 < runs) {
      int64_t nco, ndof;
      runStart(last + 1, nco, ndof);
      if ((nco + run - co) * elem > static_cast<int64_t>(buffer.size()))
        break;
      ++last;
      lastCo = nco;
    }
    int64_t spanBytes = (lastCo + run - co) * elem;
    preadAll(fd, buffer.data(), spanBytes, c.byteOffset + co * elem, path);
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

/// Reader threads per rank: the cores of this host shared among the ranks
/// on it (as mpirun reports them), at most 4; 1 when the state is not in
/// host memory (writeState is called from one thread only).
int readerThreads(bool hostState) {
  if (!hostState)
    return 1;
  int64_t local = 1;
  for (const char *var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char *v = std::getenv(var); v && *v) {
      local = std::max<int64_t>(1, std::strtoll(v, nullptr, 10));
      break;
    }
  int64_t cores = std::max<unsigned>(1, std::thread::hardware_concurrency());
  return static_cast<int>(std::clamp<int64_t>(cores / local, 1, 4));
}

/// One unit of a rank's load: read (the overlap of) every chunk of a state
/// block it holds into the block, or, `verifyOnly`, read one chunk no rank
/// reads whole just to check its checksum.
struct ReadTask {
  const StateSpec *state;
  const ManifestTensor *tensor;
  const ManifestChunk *verifyOnly = nullptr;
  int64_t bytes = 0; ///< To schedule the largest first.
};

} // namespace

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
  const Artifact &a = ex.artifact();
  int64_t rank = ex.rank(), w = worldSize(ex);
  Manifest m = readManifest(path);
  checkModel(m, a);

  CheckpointLoadStats stats;
  stats.path = path;
  // What the run resumes with, checked before any tensor is read.
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
  // Checksums are per chunk: a rank that reads a chunk whole hashes it as
  // it reads (under the same plan every chunk, so nothing is read twice);
  // a chunk no rank reads whole is read once more, by one of the ranks that
  // read part of it (taken in turn).
  std::vector<ReadTask> tasks;
  int64_t ordinal = 0; // spreads the extra reads over the partial readers
  bool hostState = true;
  for (const StateSpec &s : a.state) {
    const ManifestTensor &t = m.tensors.at(s.name);
    int64_t elem = dtypeSize(s.type.dtype);
    if (ex.holdsState(s.name)) {
      tasks.push_back({&s, &t, nullptr, s.type.bytes()});
      hostState = hostState && ex.stateHostPointer(s.name) != nullptr;
    }
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
      tasks.push_back({&s, &t, &c, product(c.box.shape) * elem});
    }
  }
  // Every file this rank reads is opened and checked once, up front.
  std::map<std::string, std::unique_ptr<OpenFile>> checked;
  for (const ReadTask &task : tasks) {
    if (task.verifyOnly) {
      openChecked(checked, m, task.verifyOnly->file);
      continue;
    }
    Box dst = blockOf(a, *task.state, rank);
    for (const ManifestChunk &c : task.tensor->chunks)
      if (overlaps(c.box, dst))
        openChecked(checked, m, c.file);
  }
  std::stable_sort(
      tasks.begin(), tasks.end(),
      [](const ReadTask &x, const ReadTask &y) { return x.bytes > y.bytes; });

  // Reader threads take tasks, largest first. Each has its own descriptors
  // (the kernel's readahead follows each one's sequential stream) and its
  // share of the read buffer.
  int threads = std::min<int>(readerThreads(hostState),
                              std::max<size_t>(tasks.size(), 1));
  size_t bufferBytes =
      static_cast<size_t>(std::max<int64_t>(readBufferBytes / threads, 4096));
  std::atomic<size_t> next{0};
  std::atomic<int64_t> bytesRead{0}, bytesVerified{0};
  std::atomic<bool> failed{false};
  std::mutex errorMutex;
  std::exception_ptr error;
  auto reader = [&] {
    try {
      std::vector<unsigned char> buffer(bufferBytes);
      std::map<std::string, int> fds;
      auto fdOf = [&](const std::string &file) {
        auto it = fds.find(file);
        if (it != fds.end())
          return it->second;
        const std::string &p = checked.at(file)->path;
        int fd = ::open(p.c_str(), O_RDONLY);
        if (fd < 0)
          throw CheckpointError("checkpoint '" + m.dir +
                                "': " + osError("cannot open", p));
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        fds.emplace(file, fd);
        return fd;
      };
      struct CloseAll {
        std::map<std::string, int> &fds;
        ~CloseAll() {
          for (auto &[name, fd] : fds)
            ::close(fd);
        }
      } closeAll{fds};
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
      for (size_t i; !failed && (i = next++) < tasks.size();) {
        const ReadTask &task = tasks[i];
        const StateSpec &s = *task.state;
        int64_t elem = dtypeSize(s.type.dtype);
        if (const ManifestChunk *c = task.verifyOnly) {
          int fd = fdOf(c->file);
          const std::string &p = checked.at(c->file)->path;
          XXH3_64bits_reset(hash.get());
          for (int64_t off = 0; off < task.bytes;) {
            int64_t n = std::min<int64_t>(task.bytes - off, buffer.size());
            preadAll(fd, buffer.data(), n, c->byteOffset + off, p);
            XXH3_64bits_update(hash.get(), buffer.data(), n);
            off += n;
          }
          checkSum(s.name, *c);
          bytesVerified += task.bytes;
          continue;
        }
        Box dst = blockOf(a, s, rank);
        // Read into the state in place where the host can (CPU), else into
        // an uninitialised staging block; every byte comes from the chunks
        // (checked below).
        std::unique_ptr<unsigned char[]> staged;
        auto *block = static_cast<unsigned char *>(ex.stateHostPointer(s.name));
        if (!block) {
          staged.reset(new unsigned char[s.type.bytes()]);
          block = staged.get();
        }
        int64_t got = 0;
        for (const ManifestChunk &c : task.tensor->chunks) {
          if (!overlaps(c.box, dst))
            continue;
          bool whole = contains(dst, c.box);
          if (whole)
            XXH3_64bits_reset(hash.get());
          got += readOverlap(fdOf(c.file), checked.at(c.file)->path, c, dst,
                             block, elem, buffer, whole ? hash.get() : nullptr);
          if (whole) {
            checkSum(s.name, c);
            bytesVerified += product(c.box.shape) * elem;
          }
        }
        if (got != s.type.bytes())
          throw CheckpointError("checkpoint '" + path + "': the chunks of '" +
                                s.name + "' cover " + std::to_string(got) +
                                " of the " + std::to_string(s.type.bytes()) +
                                " bytes of its block at " +
                                shapeStr(dst.offset));
        if (staged)
          ex.writeState(s.name, staged.get());
        bytesRead += got;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(errorMutex);
      if (!error)
        error = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back(reader);
  reader();
  for (std::thread &t : pool)
    t.join();
  if (error)
    std::rethrow_exception(error);
  stats.bytesRead = bytesRead;
  stats.bytesVerified = bytesVerified;
  stats.readerThreads = threads;
  return stats;
}
} // namespace

CheckpointLoadStats loadCheckpoint(Executor &ex, const std::string &path,
                                   int64_t readBufferBytes) {
  // Every rank finishes reading (or fails) before any trains; a failure on
  // one rank ends every rank cleanly with its message.
  return timedAgreed<CheckpointLoadStats>(
      ex, [&] { return loadLocal(ex, path, readBufferBytes); });
}

} // namespace autoshard::runtime
