//===- AtomicFile.h - Write-temp-fsync-rename for every output --*- C++ -*-===//
//
// Every file shard-run writes (--save-params, checkpoints, Hugging Face
// exports, traces, the JSONL log's first and final records) is written under
// a temporary name in its target's directory, fsynced, and renamed onto the
// target, whose directory is then fsynced: the target holds either what it
// held before or the whole new content, never a part, also when the run is
// killed or the disk fills during the write; and nothing is created at the
// target before it has content. Checkpoints and exports are directories:
// their files are written inside a temporary directory that publishRename()
// renames the same way.
//
// Test hook: AUTOSHARD_TEST_WRITE_FAULT=MODE:TEXT[:N] makes the first write
// into the N-th (default: first) temporary of the process whose target path
// contains TEXT stop halfway, MODE `kill` by SIGKILL (a killed run), `fail`
// by an error (a full disk). A killed writer leaves its `.tmp-<pid>`; the
// next AtomicFile of the same target removes it (the pid is gone).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_ATOMICFILE_H
#define AUTOSHARD_RUNTIME_TRAIN_ATOMICFILE_H

#include <cstddef>
#include <string>
#include <string_view>

namespace autoshard::runtime {

/// A file written under a temporary name and published by commit().
class AtomicFile {
public:
  /// Creates the temporary `path.tmp-<pid>` (same directory, so the rename
  /// is atomic), first removing `path.tmp-<pid>` files of processes of this
  /// host that are gone (killed writers). Throws std::runtime_error naming
  /// the temporary and the OS error.
  explicit AtomicFile(std::string path);
  /// Without commit(): closes and removes the temporary; the target is
  /// untouched.
  ~AtomicFile();
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;

  /// Appends `n` bytes; throws std::runtime_error naming the temporary.
  void write(const void *data, size_t n);
  void write(std::string_view text) { write(text.data(), text.size()); }
  /// fsyncs and closes the temporary, renames it onto the target and
  /// fsyncs the directory. Throws std::runtime_error (the temporary is
  /// removed, the target untouched).
  void commit();

  const std::string &path() const { return target; }
  const std::string &tempPath() const { return temp; }

private:
  std::string target, temp;
  int fd = -1;
  std::string fault; ///< The test hook's mode when it names this file.
};

/// Writes `content` to `path` through an AtomicFile.
void writeFileAtomically(const std::string &path, std::string_view content);

/// Renames `from` (a file or directory written under a temporary name)
/// onto `to`, in the same directory, and fsyncs that directory so that the
/// rename survives a crash. Throws std::runtime_error naming both.
void publishRename(const std::string &from, const std::string &to);

/// Checks, without creating anything at `path`, that a file can be
/// created there: its directory exists and takes a new file (probed with a
/// temporary that is removed at once) and `path` is not a directory.
/// Throws std::runtime_error "cannot write 'PATH': REASON".
void checkCreatable(const std::string &path);

/// Whether `digits` (a file name's `.tmp-<pid>` suffix) names a process of
/// this host that no longer exists; false for anything but 1-9 digits.
bool isDeadPid(const std::string &digits);

/// "what 'path': <strerror(errno)>".
std::string osError(const std::string &what, const std::string &path);
/// Writes all of `data` at the current position of `fd`; throws
/// std::runtime_error naming `path`.
void writeAll(int fd, const void *data, size_t n, const std::string &path);
/// fsyncs a file or a directory; throws std::runtime_error.
void fsyncPath(const std::string &path, bool directory);
/// fsyncs and closes the open file `fd` (set to -1) of `path`; throws
/// std::runtime_error.
void fsyncAndClose(int &fd, const std::string &path);

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_ATOMICFILE_H
