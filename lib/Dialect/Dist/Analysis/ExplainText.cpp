//===- ExplainText.cpp - The dist-explain report as text ------------------===//

#include "autoshard/Dialect/Dist/Analysis/ExplainReport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;
using namespace autoshard::dist;
using namespace autoshard::dist::explain;

void explain::writeText(const Report &r, llvm::raw_ostream &os) {
  os << "dist-explain: "
     << (r.modelName.empty() ? std::string("(unnamed model)") : r.modelName)
     << "\n";
  os << "plan: ";
  if (!r.hasPlan) {
    os << "none (no dist.plan)";
  } else {
    // The keys of this strategies first, then the others.
    SmallVector<StringRef> main = {"dp", "tp", "sp", "zero"};
    for (auto &[k, value] : r.plan)
      if (k == "ep" && value != "1")
        main.push_back("ep");
    auto valueOf = [&](StringRef key) {
      for (auto &[k, value] : r.plan)
        if (k == key)
          return StringRef(value);
      return StringRef();
    };
    if (valueOf("cp") != "1" && !valueOf("cp").empty())
      main.insert(main.begin() + 1, "cp");
    if (valueOf("pp") != "1" && !valueOf("pp").empty())
      main.insert(main.begin(), {"pp", "vpp", "schedule"});
    if (valueOf("mb") != "1" && !valueOf("mb").empty())
      main.push_back("mb");
    SmallVector<std::string> parts, others;
    for (StringRef key : main)
      for (auto &[k, value] : r.plan)
        if (k == key)
          parts.push_back(k + "=" + value);
    for (auto &[k, value] : r.plan)
      if (!llvm::is_contained(main, k))
        others.push_back(k + "=" + value);
    os << llvm::join(parts, ",");
    if (!others.empty())
      os << " (also " << llvm::join(others, ",") << ")";
  }
  os << "\nmesh: ";
  if (r.mesh.empty()) {
    os << "none";
  } else {
    SmallVector<std::string> parts;
    for (auto &[name, size] : r.mesh)
      parts.push_back(name + "=" + std::to_string(size));
    os << "[" << llvm::join(parts, ", ") << "]";
  }
  os << ", world size " << r.worldSize << "\n";
  if (const json::Value *params = r.model.get("num_parameters"))
    if (auto n = params->getAsInteger()) {
      os << "model: " << *n << " parameters";
      for (StringRef key : {"num_layers", "hidden_size", "num_heads"})
        if (auto v = r.model.getInteger(key))
          os << ", " << key << " " << *v;
      if (auto b = r.model.getInteger("batch"))
        if (auto s = r.model.getInteger("seq_len"))
          os << ", batch " << *b << " x seq " << *s;
      os << "\n";
    }

  os << "\nstrategies (what is split on which axis, from the entry's "
        "shardings";
  os << (r.rolesFromEntries ? "; roles from tfm.role" : "") << ")\n";
  if (r.strategies.empty())
    os << "  none: every tensor is replicated\n";
  for (auto &[label, axis, text] : r.strategies)
    os << "  " << llvm::left_justify(label, 7) << " "
       << llvm::left_justify(axis, 5) << " " << text << "\n";

  os << "\ncollectives per " << r.entry << r.entryNote
     << (r.entryNote.empty() ? "" : ",")
     << " per rank (calls expanded; bytes = local operand)\n";
  os << "  " << llvm::left_justify("strategy", 15) << " "
     << llvm::left_justify("op", 15) << " " << llvm::left_justify("axes", 6)
     << " " << llvm::right_justify("count", 6) << " "
     << llvm::right_justify("bytes/step", 12) << "\n";
  int64_t totalCount = 0, totalBytes = 0;
  for (auto &[key, row] : r.rows) {
    auto &[rank, cause, op, axes] = key;
    os << "  " << llvm::left_justify(cause, 15) << " "
       << llvm::left_justify(op, 15) << " " << llvm::left_justify(axes, 6)
       << " " << llvm::right_justify(std::to_string(row.count), 6) << " "
       << llvm::right_justify(formatBytes(row.bytes), 12) << "\n";
    totalCount += row.count;
    totalBytes += row.bytes;
  }
  os << "  " << llvm::left_justify("total", 38) << " "
     << llvm::right_justify(std::to_string(totalCount), 6) << " "
     << llvm::right_justify(formatBytes(totalBytes), 12) << "\n";
  if (!r.perFunction.empty()) {
    os << "  per call:\n";
    for (const Report::PerFunction &f : r.perFunction) {
      SmallVector<std::string> parts;
      for (auto &[key, count] : f.perCall)
        parts.push_back(key + " x" + std::to_string(count));
      os << "    " << f.name << " (called " << f.calls
         << "x): " << llvm::join(parts, ", ") << "\n";
    }
  }
  for (auto &[name, count, bytes] : r.otherEntries)
    os << "  entry " << name << ": " << count << " collectives, "
       << formatBytes(bytes) << " per call\n";

  os << "\nmemory per rank (" << r.entry << r.entryNote << ")";
  os << "\n  " << llvm::left_justify("", 24) << " "
     << llvm::right_justify("with plan", 12) << " "
     << llvm::right_justify("without", 12) << " "
     << llvm::right_justify("ratio", 6) << "\n";
  for (const MemoryRow &row : getMemoryRows(r)) {
    os << "  " << llvm::left_justify(row.label, 24) << " "
       << llvm::right_justify(formatBytes(row.with), 12) << " "
       << llvm::right_justify(
              row.without ? formatBytes(*row.without) : std::string("n/a"), 12);
    if (row.without && *row.without > 0)
      os << " "
         << llvm::right_justify(
                llvm::formatv("{0:F2}", double(row.with) / double(*row.without))
                    .str(),
                6);
    os << "\n";
  }
  os << "  without = one rank: state from the global shapes x element size";
  if (r.baseline.present)
    os << "; transient from " << r.baseline.path << " (world size "
       << r.baseline.worldSize << ", state there "
       << formatBytes(r.baseline.stateBytes) << ")";
  else if (r.memory.planned)
    os << "; transient n/a (pass baseline=<one-rank artifact.json>)";
  os << "\n";
  if (!r.memory.planned)
    os << "  transient: not planned\n";
}
