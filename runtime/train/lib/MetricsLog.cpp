//===- MetricsLog.cpp - JSONL metrics and Chrome traces -------------------===//

#include "autoshard/runtime/train/MetricsLog.h"
#include "autoshard/runtime/train/AtomicFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <stdexcept>

namespace autoshard::runtime {

MetricsLog::MetricsLog(const std::string &path, bool append)
    : path(path), append(append) {
  try {
    checkCreatable(path);
  } catch (const std::runtime_error &e) {
    throw std::runtime_error(std::string("metrics log: ") + e.what());
  }
}

MetricsLog::~MetricsLog() {
  if (fd >= 0)
    ::close(fd);
}

void MetricsLog::write(const nlohmann::json &record) {
  std::string line = record.dump() + '\n';
  if (fd < 0 && !append) {
    // The first line replaces an earlier log atomically.
    writeFileAtomically(path, line);
    append = true;
    line.clear();
  }
  if (fd < 0) {
    fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
      throw std::runtime_error(osError("cannot open metrics log", path));
  }
  if (!line.empty())
    writeAll(fd, line.data(), line.size(), path);
}

void MetricsLog::writeLast(const nlohmann::json &record) {
  std::string text;
  if (append) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream old;
    old << in.rdbuf();
    if (in.bad())
      throw std::runtime_error("reading metrics log '" + path + "' failed");
    text = old.str();
  }
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
  text += record.dump() + '\n';
  writeFileAtomically(path, text);
  append = true;
}

void ChromeTrace::add(std::string name, std::string category, double startUs,
                      double durUs, int pid, int tid, nlohmann::json args) {
  events.push_back({std::move(name), std::move(category), startUs, durUs, pid,
                    tid, std::move(args)});
}

void ChromeTrace::nameThread(int tid, std::string name, int pid) {
  for (ThreadName &t : threadNames)
    if (t.pid == pid && t.tid == tid) {
      t.name = std::move(name);
      return;
    }
  threadNames.push_back({pid, tid, std::move(name)});
}

void ChromeTrace::save(const std::string &path) const {
  nlohmann::json list = nlohmann::json::array();
  for (const ThreadName &t : threadNames) {
    list.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", t.pid},
                    {"tid", t.tid},
                    {"args", {{"name", t.name}}}});
    list.push_back({{"name", "thread_sort_index"},
                    {"ph", "M"},
                    {"pid", t.pid},
                    {"tid", t.tid},
                    {"args", {{"sort_index", t.tid}}}});
  }
  for (const Event &e : events) {
    nlohmann::json event = {
        {"name", e.name}, {"cat", e.category}, {"ph", "X"},   {"ts", e.startUs},
        {"dur", e.durUs}, {"pid", e.pid},      {"tid", e.tid}};
    if (e.args.is_object())
      event["args"] = e.args;
    list.push_back(std::move(event));
  }
  try {
    writeFileAtomically(path, nlohmann::json{{"traceEvents", list},
                                             {"displayTimeUnit", "ms"},
                                             {"otherData", metadata}}
                                      .dump() +
                                  '\n');
  } catch (const std::runtime_error &e) {
    throw std::runtime_error(std::string("trace file: ") + e.what());
  }
}

} // namespace autoshard::runtime
