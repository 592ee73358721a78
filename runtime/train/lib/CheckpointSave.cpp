//===- CheckpointSave.cpp - Writing sharded, atomic checkpoints -----------===//

#include "CheckpointCommon.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <thread>

namespace autoshard::runtime {

using namespace checkpoint;

namespace {

namespace fs = std::filesystem;

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

/// A run of bytes of this rank's file (after the header), in file order.
struct Segment {
  const unsigned char *data;
  size_t size;
};

/// Direct I/O wants buffers, file offsets and lengths in multiples of the
/// logical block size; 4096 covers every common device.
constexpr size_t kDirectAlign = 4096;

/// Streams bytes into a file through an aligned piece buffer, written with
/// O_DIRECT where the file system allows it: the data goes from the buffer
/// to the device without a copy into (and a flush of) the page cache, which
/// on this kind of machine writes faster and far less variably than
/// buffered writes and fsync (bench/checkpoint). Falls back to buffered
/// writes where O_DIRECT is refused (tmpfs, some network file systems).
class DirectWriter {
public:
  explicit DirectWriter(const std::string &path) : path(path) {
    fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_DIRECT, 0644);
    direct = fd >= 0;
    if (!direct)
      fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
      throw std::runtime_error(osError("creating", path));
    piece = static_cast<unsigned char *>(
        std::aligned_alloc(kDirectAlign, kIOPieceBytes));
    if (!piece) {
      ::close(fd);
      throw std::runtime_error("writing '" + path +
                               "': cannot allocate the write buffer");
    }
  }
  ~DirectWriter() {
    std::free(piece);
    if (fd >= 0)
      ::close(fd);
  }

  void append(const unsigned char *data, size_t n) {
    while (n > 0) {
      size_t k = std::min(n, static_cast<size_t>(kIOPieceBytes) - filled);
      std::memcpy(piece + filled, data, k);
      filled += k;
      data += k;
      n -= k;
      if (filled == static_cast<size_t>(kIOPieceBytes))
        flush(filled);
    }
  }

  /// Writes what is left, sets the exact size, fsyncs and closes.
  void finish() {
    size_t size = written + filled;
    if (filled > 0) { // pad the last piece to whole blocks, then truncate
      size_t padded = (filled + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
      std::memset(piece + filled, 0, padded - filled);
      flush(direct ? padded : filled);
      if (direct && ::ftruncate(fd, static_cast<off_t>(size)) != 0)
        throw std::runtime_error(osError("truncating", path));
    }
    fsyncAndClose(fd, path);
  }

private:
  void flush(size_t n) {
    const unsigned char *p = piece;
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0 && errno == EINVAL && direct) {
        // The file system took O_DIRECT at open but refuses these writes.
        direct = false;
        int flags = ::fcntl(fd, F_GETFL);
        if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0)
          throw std::runtime_error(osError("writing", path));
        continue;
      }
      if (w <= 0)
        throw std::runtime_error(osError("writing", path));
      p += w;
      n -= static_cast<size_t>(w);
    }
    written += filled;
    filled = 0;
  }

  std::string path;
  int fd = -1;
  bool direct = false;
  unsigned char *piece = nullptr;
  size_t filled = 0, written = 0;
};

/// Creates `path` and writes the header and `segments` (hashing each piece
/// while it is in cache), fsyncs and closes it. Returns the file's XXH3-64.
/// Throws std::runtime_error naming the path and the OS error, or
/// "cancelled" when `cancel` turns true between pieces.
uint64_t writeRankFile(const SafetensorsLayout &layout,
                       const std::vector<Segment> &segments,
                       const std::string &path,
                       const std::atomic<bool> &cancel) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> h(XXH3_createState(),
                                                             &XXH3_freeState);
  XXH3_64bits_reset(h.get());
  DirectWriter out(path);
  auto header = reinterpret_cast<const unsigned char *>(layout.header.data());
  out.append(header, layout.header.size());
  XXH3_64bits_update(h.get(), header, layout.header.size());
  for (const Segment &s : segments)
    for (size_t off = 0; off < s.size;) {
      if (cancel.load(std::memory_order_relaxed))
        throw std::runtime_error("writing '" + path + "': cancelled");
      size_t n = std::min<size_t>(s.size - off, kIOPieceBytes);
      out.append(s.data + off, n);
      XXH3_64bits_update(h.get(), s.data + off, n);
      off += n;
    }
  out.finish();
  return XXH3_64bits_digest(h.get());
}

/// Writes `text` to `path` and fsyncs it.
void writeTextFile(const std::string &path, const std::string &text) {
  std::atomic<bool> never{false};
  SafetensorsLayout none; // no header: the text is the whole file
  writeRankFile(
      none,
      {{reinterpret_cast<const unsigned char *>(text.data()), text.size()}},
      path, never);
}

/// XXH3-64 of `n` bytes at `src`, copying them to `dst` on the way when it
/// is not null (in pieces, so each is hashed while still in cache).
uint64_t hashCopy(const unsigned char *src, size_t n, unsigned char *dst) {
  if (!dst)
    return XXH3_64bits(src, n);
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> h(XXH3_createState(),
                                                             &XXH3_freeState);
  XXH3_64bits_reset(h.get());
  constexpr size_t kPiece = 1 << 20;
  for (size_t off = 0; off < n; off += kPiece) {
    size_t k = std::min(kPiece, n - off);
    std::memcpy(dst + off, src + off, k);
    XXH3_64bits_update(h.get(), dst + off, k);
  }
  return XXH3_64bits_digest(h.get());
}

/// Per-state XXH3 hash of this rank's block (0 where not held). A block
/// whose entry in `copyTo` is not null is also copied there.
std::vector<uint64_t>
stateHashes(const Executor &ex,
            const std::vector<unsigned char *> &copyTo = {}) {
  const Artifact &a = ex.artifact();
  std::vector<uint64_t> h(a.state.size(), 0);
  for (size_t i = 0; i < a.state.size(); ++i) {
    const StateSpec &s = a.state[i];
    if (!ex.holdsState(s.name))
      continue;
    unsigned char *dst = i < copyTo.size() ? copyTo[i] : nullptr;
    if (const void *p = ex.stateHostPointer(s.name)) {
      h[i] =
          hashCopy(static_cast<const unsigned char *>(p), s.type.bytes(), dst);
      continue;
    }
    std::vector<unsigned char> bytes = ex.readState(s.name);
    h[i] = hashCopy(bytes.data(), bytes.size(), dst);
  }
  return h;
}

/// Removes leftovers of saves that crashed (step-N.tmp, step-N.old).
void removeLeftovers(const std::string &saveDir) {
  std::error_code ec;
  for (const fs::directory_entry &e : fs::directory_iterator(saveDir, ec)) {
    std::string n = e.path().filename().string();
    if (n.rfind("step-", 0) == 0 &&
        (n.size() > 4 && (n.compare(n.size() - 4, 4, ".tmp") == 0 ||
                          n.compare(n.size() - 4, 4, ".old") == 0)))
      fs::remove_all(e.path(), ec);
  }
}

} // namespace

/// One save, from the step boundary where it began to its publication.
struct CheckpointSaver::Pending {
  TrainingProgress progress;
  fs::path tmpDir, finalDir;
  std::vector<uint64_t> hashes; ///< Every rank's, world-rank major.
  double start = 0, stall = 0, snapshot = 0;
  std::thread writer;
  std::atomic<bool> done{false}, cancel{false};
  RankStatus mine;
};

CheckpointSaver::CheckpointSaver(const Executor &executor, std::string saveDir,
                                 int64_t keep, bool async)
    : ex(executor), saveDir(std::move(saveDir)), keep(keep), async(async) {
  if (!async)
    return;
  // The snapshot's size is fixed by the plan. Allocate it now and touch
  // every page on a thread, so that the first save does not stall the
  // training loop for the page faults (about 0.3 s per GB here).
  const Artifact &a = ex.artifact();
  SafetensorsLayout l = fileLayout(a, Writers(a), ex.rank(), 0);
  if (l.tensors.empty())
    return;
  allocateSnapshot(static_cast<size_t>(l.tensors.back().end));
  prefault = std::thread(
      [p = snapshotBuffer.get(), n = snapshotBytes] { std::memset(p, 0, n); });
}

void CheckpointSaver::allocateSnapshot(size_t bytes) {
  if (prefault.joinable())
    prefault.join();
  snapshotBuffer.reset(static_cast<unsigned char *>(std::malloc(bytes)));
  if (!snapshotBuffer)
    throw CheckpointError("checkpoint save: cannot allocate the " +
                          std::to_string(bytes) +
                          "-byte host snapshot of --async-save");
  snapshotBytes = bytes;
}

CheckpointSaver::~CheckpointSaver() {
  if (prefault.joinable())
    prefault.join();
  if (pending && pending->writer.joinable()) {
    pending->cancel = true;
    pending->writer.join();
  }
}

bool CheckpointSaver::inFlight() const { return pending != nullptr; }

void CheckpointSaver::begin(const TrainingProgress &progress) {
  if (pending)
    throw std::logic_error("CheckpointSaver::begin: a save is in flight "
                           "(poll(true) first)");
  auto p = std::make_unique<Pending>();
  p->start = nowS();
  if (prefault.joinable())
    prefault.join();
  p->progress = progress;
  const Artifact &a = ex.artifact();
  int64_t rank = ex.rank();
  std::string name = stepDirName(progress.step);
  p->finalDir = fs::path(saveDir) / name;
  p->tmpDir = fs::path(saveDir) / (name + ".tmp");

  // What this rank writes. Asynchronously (or when the state is not in host
  // memory) the blocks are copied into the snapshot buffer first, so the
  // training loop may go on changing the state.
  Writers writers(a);
  layout = fileLayout(a, writers, rank, progress.step);
  bool snapshot = async;
  for (const SafetensorsTensor &t : layout.tensors)
    snapshot = snapshot || !ex.stateHostPointer(t.name);
  size_t dataBytes = layout.tensors.empty()
                         ? 0
                         : static_cast<size_t>(layout.tensors.back().end);
  std::vector<unsigned char *> copyTo(a.state.size(), nullptr);
  std::vector<Segment> segments;
  if (snapshot && dataBytes > snapshotBytes)
    allocateSnapshot(dataBytes);
  for (const SafetensorsTensor &t : layout.tensors) {
    size_t n = static_cast<size_t>(t.end - t.begin);
    const unsigned char *src;
    if (snapshot) {
      src = snapshotBuffer.get() + t.begin;
      copyTo[a.findState(t.name)] = snapshotBuffer.get() + t.begin;
    } else {
      src = static_cast<const unsigned char *>(ex.stateHostPointer(t.name));
    }
    segments.push_back({src, n});
  }

  // A checkpoint must not depend on which copy of a block it reads. The
  // same hashes are the chunks' checksums in the manifest.
  p->hashes = allGather(ex, stateHashes(ex, copyTo));
  checkReplicaHashes(a, p->hashes);

  // Rank 0 makes a fresh tmp directory; the others wait to hear it worked.
  RankStatus made;
  if (rank == 0) {
    std::error_code ec;
    fs::create_directories(saveDir, ec);
    if (!ec)
      fs::remove_all(p->tmpDir, ec);
    if (!ec)
      fs::create_directory(p->tmpDir, ec);
    if (ec)
      made.fail("cannot create '" + p->tmpDir.string() + "': " + ec.message());
  }
  agreeOnRank0(ex, made);
  if (!made.ok)
    throw CheckpointError(
        std::string("checkpoint save failed: ") + made.message, true);

  Pending *raw = p.get();
  auto write = [raw, segments = std::move(segments), this] {
    double t0 = nowS();
    if (!layout.tensors.empty()) {
      std::string path = (raw->tmpDir / rankFileName(ex.rank())).string();
      try {
        raw->mine.checksum = writeRankFile(layout, segments, path, raw->cancel);
        raw->mine.bytes = layout.fileBytes;
        raw->mine.wroteFile = 1;
      } catch (const std::exception &e) {
        raw->mine.fail(e.what());
      }
    }
    raw->mine.seconds = nowS() - t0;
    raw->done = true;
  };
  if (async)
    p->writer = std::thread(std::move(write));
  else
    write();
  p->stall = p->snapshot = nowS() - p->start;
  pending = std::move(p);
}

std::optional<CheckpointSaveStats> CheckpointSaver::poll(bool wait) {
  if (!pending)
    return std::nullopt;
  double t0 = nowS();
  Pending &p = *pending;
  if (!wait) {
    // Publish only when every rank has written: the ranks agree on it.
    int32_t busy = p.done ? 0 : 1, anyBusy = busy;
    if (worldSize(ex) > 1)
      ex.comm()
          ->all()
          .allReduce(&busy, &anyBusy, 1, DType::I32, ReduceOp::Max)
          ->wait();
    if (anyBusy) {
      p.stall += nowS() - t0;
      return std::nullopt;
    }
  }
  if (p.writer.joinable())
    p.writer.join();
  std::unique_ptr<Pending> done = std::move(pending);
  CheckpointSaveStats stats = publish(*done);
  done->stall += nowS() - t0;
  stats.stallSeconds = done->stall;
  stats.beginSeconds = done->snapshot;
  stats.seconds = nowS() - done->start;
  stats.async = async;
  return stats;
}

CheckpointSaveStats CheckpointSaver::publish(Pending &p) {
  const Artifact &a = ex.artifact();
  int64_t rank = ex.rank(), w = worldSize(ex);
  std::vector<RankStatus> status =
      allGather(ex, std::vector<RankStatus>{p.mine});
  std::error_code ec;
  for (int64_t r = 0; r < w; ++r)
    if (!status[r].ok) {
      if (rank == 0)
        fs::remove_all(p.tmpDir, ec);
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
      Writers writers(a);
      writeTextFile(
          (p.tmpDir / kManifest).string(),
          buildManifest(a, writers, p.progress, status, p.hashes).dump(1) +
              "\n");
      fsyncPath(p.tmpDir.string(), true);
      fs::path old =
          fs::path(saveDir) / (p.finalDir.filename().string() + ".old");
      if (fs::exists(p.finalDir)) { // saved at this step before: replace it
        fs::remove_all(old);
        fs::rename(p.finalDir, old);
      }
      publishRename(p.tmpDir.string(), p.finalDir.string());
      fs::remove_all(old, ec);
      removeLeftovers(saveDir); // this job's or an earlier one's
      if (keep > 0) {
        auto done = completeCheckpoints(saveDir);
        for (size_t i = 0; i + keep < done.size(); ++i) {
          if (done[i].second == p.finalDir.string())
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
  stats.path = p.finalDir.string();
  stats.step = p.progress.step;
  stats.bytes = p.mine.bytes;
  for (const RankStatus &s : status) {
    stats.bytesPerRank.push_back(s.bytes);
    stats.totalBytes += s.bytes;
    stats.writeSeconds = std::max(stats.writeSeconds, s.seconds);
  }
  return stats;
}

CheckpointSaveStats saveCheckpoint(const Executor &executor,
                                   const std::string &saveDir,
                                   const TrainingProgress &progress,
                                   int64_t keep) {
  CheckpointSaver saver(executor, saveDir, keep, /*async=*/false);
  saver.begin(progress);
  return *saver.poll(/*wait=*/true);
}

void checkStateReplicas(const Executor &ex) {
  checkReplicaHashes(ex.artifact(), allGather(ex, stateHashes(ex)));
}

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

} // namespace autoshard::runtime
