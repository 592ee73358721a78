//===- AtomicFile.cpp - Write-temp-fsync-rename for every output ----------===//

#include "autoshard/runtime/train/AtomicFile.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace autoshard::runtime {

namespace fs = std::filesystem;

namespace {

/// The directory holding `path` ("." for a bare name).
std::string parentOf(const std::string &path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

/// The test hook: AUTOSHARD_TEST_WRITE_FAULT=MODE:TEXT[:N] names the N-th
/// (default first) temporary of this process whose target contains TEXT.
/// Returns MODE ("kill" or "fail") when `path` is that one, else "".
std::string faultFor(const std::string &path) {
  const char *env = std::getenv("AUTOSHARD_TEST_WRITE_FAULT");
  if (!env || !*env)
    return "";
  std::string spec = env;
  size_t colon = spec.find(':');
  if (colon == std::string::npos)
    return "";
  std::string mode = spec.substr(0, colon), text = spec.substr(colon + 1);
  long nth = 1;
  if (size_t c = text.rfind(':'); c != std::string::npos) {
    nth = std::strtol(text.c_str() + c + 1, nullptr, 10);
    text.resize(c);
  }
  if (text.empty() || path.find(text) == std::string::npos)
    return "";
  static std::atomic<long> seen{0};
  return ++seen == nth ? mode : "";
}
} // namespace

std::string osError(const std::string &what, const std::string &path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

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

void fsyncAndClose(int &fd, const std::string &path) {
  if (::fsync(fd) != 0)
    throw std::runtime_error(osError("fsync of", path));
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0)
    throw std::runtime_error(osError("closing", path));
}

bool isDeadPid(const std::string &digits) {
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char ch) { return ch >= '0' && ch <= '9'; }))
    return false;
  pid_t pid = static_cast<pid_t>(std::stol(digits));
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

AtomicFile::AtomicFile(std::string path)
    : target(std::move(path)),
      temp(target + ".tmp-" + std::to_string(::getpid())) {
  // Temporaries of killed writers of the same target.
  std::error_code ec;
  std::string prefix = fs::path(target).filename().string() + ".tmp-";
  for (const fs::directory_entry &e :
       fs::directory_iterator(parentOf(target), ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && isDeadPid(name.substr(prefix.size())) &&
        e.is_regular_file(ec))
      fs::remove(e.path(), ec);
  }
  fd = ::open(temp.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(osError("cannot create", temp));
  fault = faultFor(target);
}

AtomicFile::~AtomicFile() {
  if (fd >= 0)
    ::close(fd);
  if (!temp.empty())
    ::unlink(temp.c_str());
}

void AtomicFile::write(const void *data, size_t n) {
  if (fd < 0)
    throw std::runtime_error("writing '" + temp + "' after it was closed");
  if (!fault.empty() && n > 0) {
    writeAll(fd, data, n / 2, temp);
    if (fault == "kill")
      std::raise(SIGKILL);
    fault.clear();
    throw std::runtime_error(
        "writing '" + temp +
        "': test hook AUTOSHARD_TEST_WRITE_FAULT stopped the write halfway");
  }
  writeAll(fd, data, n, temp);
}

void AtomicFile::commit() {
  fsyncAndClose(fd, temp);
  publishRename(temp, target);
  temp.clear(); // nothing left to remove
}

void writeFileAtomically(const std::string &path, std::string_view content) {
  AtomicFile file(path);
  file.write(content);
  file.commit();
}

void publishRename(const std::string &from, const std::string &to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw std::runtime_error(osError("renaming '" + from + "' to", to));
  fsyncPath(parentOf(to), /*directory=*/true);
}

void checkCreatable(const std::string &path) {
  auto fail = [&](const std::string &why) {
    throw std::runtime_error("cannot write '" + path + "': " + why);
  };
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail("it is a directory");
  std::string probe = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0)
    fail(std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

} // namespace autoshard::runtime
