//===- MetricsLog.cpp - JSONL metrics and Chrome traces -------------------===//

#include "autoshard/runtime/train/MetricsLog.h"

#include <stdexcept>

namespace autoshard::runtime {

MetricsLog::MetricsLog(const std::string &path, bool append)
    : out(path, append ? std::ios::app : std::ios::trunc), path(path) {
  if (!out)
    throw std::runtime_error("cannot open metrics log '" + path +
                             "' for writing");
}

void MetricsLog::write(const nlohmann::json &record) {
  out << record.dump() << '\n';
  out.flush();
  if (!out)
    throw std::runtime_error("write to metrics log '" + path + "' failed");
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
  std::ofstream f(path);
  if (!f)
    throw std::runtime_error("cannot open trace file '" + path +
                             "' for writing");
  f << nlohmann::json{{"traceEvents", list}, {"displayTimeUnit", "ms"}}.dump()
    << '\n';
  if (!f)
    throw std::runtime_error("write to trace file '" + path + "' failed");
}

} // namespace autoshard::runtime
