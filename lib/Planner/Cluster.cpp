//===- Cluster.cpp - Cluster descriptions for the planner -----------------===//

#include "autoshard/Planner/Cluster.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <set>

namespace autoshard::planner {
namespace json = llvm::json;

namespace {

/// `v` as a message shows it: the shortest %g text that reads back as `v`
/// (-1, 0.3, 1e+20, and 1.00000001 rather than a 6-digit "1", which a
/// message "must be <= 1, got 1" would contradict).
std::string shortNumber(double v) {
  std::string text;
  for (int digits = 6; digits <= 17; ++digits) {
    text = llvm::formatv("{0}", llvm::format("%.*g", digits, v)).str();
    if (std::strtod(text.c_str(), nullptr) == v)
      break;
  }
  return text;
}

/// Reads numeric fields of a JSON object, collecting the first error.
class Reader {
public:
  Reader(llvm::StringRef source) : source(source) {}

  /// The number at `path` (dotted) in `root`; `fallback` when absent and
  /// not required. Checks lo <= value <= hi (lo exclusive if `positive`).
  double number(const json::Object &root, llvm::StringRef path,
                std::optional<double> fallback, bool positive, double hi) {
    if (!error.empty())
      return 0;
    const json::Object *obj = &root;
    llvm::StringRef rest = path;
    while (rest.contains('.')) {
      auto [head, tail] = rest.split('.');
      const json::Value *section = obj->get(head);
      obj = obj->getObject(head);
      rest = tail;
      if (section && !obj) {
        // Present but not an object: an error, never the defaults.
        std::string text;
        llvm::raw_string_ostream os(text);
        os << *section;
        fail(llvm::formatv("field '{0}' must be an object, got {1}",
                           path.take_front(path.size() - rest.size() - 1),
                           text));
        return 0;
      }
      if (!obj) {
        if (fallback)
          return *fallback;
        fail(llvm::formatv("missing object '{0}' (needed for '{1}')", head,
                           path));
        return 0;
      }
    }
    const json::Value *value = obj->get(rest);
    if (!value) {
      if (fallback)
        return *fallback;
      fail(llvm::formatv("missing required field '{0}'", path));
      return 0;
    }
    std::optional<double> n = value->getAsNumber();
    if (!n) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << *value;
      fail(llvm::formatv("field '{0}' must be a number, got {1}", path, text));
      return 0;
    }
    if ((positive && !(*n > 0)) || (!positive && !(*n >= 0)) || *n > hi) {
      fail(llvm::formatv("field '{0}' must be a {1} number{2}, got {3}", path,
                         positive ? "positive" : "non-negative",
                         hi < 1e300 ? " <= " + shortNumber(hi) : std::string(),
                         shortNumber(*n)));
      return 0;
    }
    return *n;
  }

  void fail(const llvm::Twine &message) {
    if (error.empty())
      error = (source + ": " + message).str();
  }

  llvm::StringRef source;
  std::string error;
};

/// Reads `efficiency.gemm_tiles`: a non-empty array of [m, n] pairs of
/// positive integers.
void readTiles(const json::Value &value, Reader &r,
               std::vector<std::pair<int64_t, int64_t>> &tiles) {
  auto bad = [&](const json::Value &what) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << what;
    r.fail(llvm::formatv("field 'efficiency.gemm_tiles' must be a non-empty "
                         "array of [m, n] pairs of positive integers, got {0}",
                         text));
  };
  const json::Array *list = value.getAsArray();
  if (!list || list->empty())
    return bad(value);
  std::vector<std::pair<int64_t, int64_t>> read;
  for (const json::Value &tile : *list) {
    const json::Array *pair = tile.getAsArray();
    if (!pair || pair->size() != 2)
      return bad(value);
    std::optional<int64_t> m = (*pair)[0].getAsInteger();
    std::optional<int64_t> n = (*pair)[1].getAsInteger();
    if (!m || !n || *m <= 0 || *n <= 0)
      return bad(value);
    read.emplace_back(*m, *n);
  }
  tiles = std::move(read);
}

/// Reads `efficiency.memory_ops`: an object of positive numbers, one per
/// runtime kernel name.
void readMemoryOps(const json::Value &value, Reader &r,
                   std::map<std::string, double, std::less<>> &ops) {
  // Numbers as written (%g: -0.3, not its binary expansion).
  auto text = [](const json::Value &v) {
    if (std::optional<double> n = v.getAsNumber())
      return shortNumber(*n);
    std::string out;
    llvm::raw_string_ostream os(out);
    os << v;
    return out;
  };
  const json::Object *object = value.getAsObject();
  if (!object)
    return r.fail(llvm::formatv("field 'efficiency.memory_ops' must be an "
                                "object of kernel names to positive numbers, "
                                "got {0}",
                                text(value)));
  std::map<std::string, double, std::less<>> read;
  for (const auto &[kernel, v] : *object) {
    std::optional<double> n = v.getAsNumber();
    if (!n || !(*n > 0) || !std::isfinite(*n))
      return r.fail(llvm::formatv("field 'efficiency.memory_ops.{0}' must be "
                                  "a positive number, got {1}",
                                  kernel.str(), text(v)));
    read[kernel.str()] = *n;
  }
  ops = std::move(read);
}

} // namespace

llvm::StringRef runtimeKernelName(llvm::StringRef opName) {
  llvm::StringRef name = opName;
  name.consume_front("tfm.");
  return name;
}

double Cluster::memoryEfficiencyOf(llvm::StringRef opName) const {
  if (memoryOpEfficiency.empty() || opName.empty())
    return memoryEfficiency;
  auto it = memoryOpEfficiency.find(runtimeKernelName(opName));
  return it == memoryOpEfficiency.end() ? memoryEfficiency : it->second;
}

namespace {

/// `base` with `overlay`'s fields: objects merged field by field (an
/// overlay object over a base object), any other value replaced.
json::Object mergeObjects(const json::Object &base,
                          const json::Object &overlay) {
  json::Object merged = base;
  for (const auto &entry : overlay) {
    const json::Object *over = entry.second.getAsObject();
    const json::Object *under = merged.getObject(entry.first);
    if (over && under)
      merged[entry.first] = mergeObjects(*under, *over);
    else
      merged[entry.first] = entry.second;
  }
  return merged;
}

llvm::Expected<Cluster> parseClusterObject(const json::Object &root,
                                           llvm::StringRef source);

/// Reads `by_ranks_per_node` (gpu.shares_node clusters): each entry R is
/// the cluster as measured with R ranks on the node, written as the fields
/// that differ from the file's own (measured with gpus_per_node ranks).
llvm::Error readRankProfiles(const json::Object &root, llvm::StringRef source,
                             Cluster &c) {
  const json::Value *value = root.get("by_ranks_per_node");
  if (!value)
    return llvm::Error::success();
  auto fail = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   (source + ": " + message).str().c_str());
  };
  const json::Object *profiles = value->getAsObject();
  if (!profiles)
    return fail(llvm::formatv("field 'by_ranks_per_node' must be an object "
                              "of ranks per node -> cluster fields, got {0}",
                              *value));
  if (!c.sharesNode)
    return fail("field 'by_ranks_per_node' needs 'gpu.shares_node' true (it "
                "describes ranks that time-share one node)");
  json::Object base = root;
  base.erase("by_ranks_per_node");
  for (const auto &entry : *profiles) {
    llvm::StringRef key = entry.first;
    int64_t ranks = 0;
    // Plain digits only: "01" would be a second key for the profile of 1.
    if (key.getAsInteger(10, ranks) || ranks < 1 || ranks >= c.gpusPerNode ||
        key != std::to_string(ranks))
      return fail(llvm::formatv(
          "field 'by_ranks_per_node' has key '{0}': expected a rank count "
          "from 1 to gpus_per_node - 1 = {1}, written without leading zeros",
          key, c.gpusPerNode - 1));
    const json::Object *fields = entry.second.getAsObject();
    if (!fields)
      return fail(llvm::formatv("field 'by_ranks_per_node.{0}' must be an "
                                "object of cluster fields, got {1}",
                                key, entry.second));
    for (llvm::StringRef forbidden :
         {"by_ranks_per_node", "gpus_per_node", "nodes", "inter_node"})
      if (fields->get(forbidden))
        return fail(llvm::formatv("field 'by_ranks_per_node.{0}.{1}' is not "
                                  "allowed (a profile describes the same "
                                  "node with fewer ranks)",
                                  key, forbidden));
    json::Object merged = mergeObjects(base, *fields);
    llvm::Expected<Cluster> profile = parseClusterObject(
        merged, (source + ": by_ranks_per_node." + key).str());
    if (!profile)
      return profile.takeError();
    if (!profile->sharesNode)
      return fail(llvm::formatv("field 'by_ranks_per_node.{0}.gpu.shares_node' "
                                "must stay true, got false",
                                key));
    if (!fields->get("name"))
      profile->name = c.name + " (by_ranks_per_node." + key.str() + ")";
    c.rankProfiles[ranks] =
        std::make_shared<const Cluster>(std::move(*profile));
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<Cluster> parseCluster(llvm::StringRef text,
                                     llvm::StringRef source) {
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s: invalid JSON: %s", source.str().c_str(),
                                   llvm::toString(parsed.takeError()).c_str());
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s: the top level must be an object",
                                   source.str().c_str());
  llvm::Expected<Cluster> c = parseClusterObject(*root, source);
  if (!c)
    return c.takeError();
  if (llvm::Error e = readRankProfiles(*root, source, *c))
    return std::move(e);
  return c;
}

namespace {

/// The fields of a cluster file (docs/cluster-format.md), per section;
/// "" is the top level. Besides them: informational keys the planner never
/// reads (`name`, `description`, `link`, `software`, `calibration`, `measured`,
/// `gpu.measured_bf16_gemm_tflops`), and sections whose keys are names
/// (`efficiency.memory_ops`, `by_ranks_per_node`, `measured`).
const std::map<std::string, std::set<std::string>> &knownFields() {
  static const std::map<std::string, std::set<std::string>> fields = {
      {"",
       {"name", "gpus_per_node", "gpu", "memory", "collective_latency_us",
        "collective_bandwidth_scale", "intra_node", "inter_node", "efficiency",
        "host", "overlap", "recompute", "zero", "grad_accumulation",
        "by_ranks_per_node", "description", "software", "calibration",
        "measured"}},
      {"gpu",
       {"name", "peak_bf16_tflops", "hbm_gib", "hbm_tb_per_s", "reserved_gib",
        "fragmentation", "sms", "shares_node", "kernel_fixed_us",
        "measured_bf16_gemm_tflops"}},
      {"memory",
       {"grad_bytes", "optimizer_state_bytes", "master_weight_bytes",
        "grad_buffer", "dropout_mask_bytes", "comm_buffer_mib_per_group"}},
      {"collective_bandwidth_scale",
       {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"}},
      {"intra_node",
       {"gb_per_s_per_direction_per_gpu", "latency_us", "efficiency", "link"}},
      {"inter_node",
       {"gb_per_s_per_direction_per_gpu", "latency_us", "efficiency", "link"}},
      {"efficiency",
       {"gemm", "gemm_tiles", "gemm_k0", "attention", "memory", "memory_ops",
        "attention_score_bytes", "gemm_overhead_us", "attention_score_ns",
        "attention_grad_score_ns", "attention_tile_us",
        "attention_grad_tile_us", "attention_query_block",
        "attention_key_block", "kernel_overhead_us"}},
      {"host",
       {"op_overhead_us", "step_overhead_ms", "sync_slowdown",
        "sync_latency_us", "wakeup_latency_us", "speedup_half_waiting",
        "speedup_others_waiting", "pinned_cores"}},
      {"overlap", {"tp", "dp", "dp_bucket_params", "p2p"}},
      {"recompute", {"full", "selective"}},
      {"zero", {"grad_reduce"}},
  };
  return fields;
}

/// Fails on a key the format does not have at the top level or in one of
/// its sections: a misspelt optional field (`host.sync_latency` for
/// `host.sync_latency_us`) would otherwise be ignored and its default
/// used without a word.
void checkKnownFields(const json::Object &root, Reader &r) {
  const auto &fields = knownFields();
  auto check = [&](const json::Object &object, const std::string &section) {
    const std::set<std::string> &known = fields.at(section);
    for (const auto &entry : object) {
      std::string key = entry.first.str();
      if (known.count(key))
        continue;
      std::string list;
      for (const std::string &k : known)
        list += (list.empty() ? "" : ", ") + k;
      r.fail(llvm::formatv(
          "unknown field '{0}{1}' (the fields of {2}: {3}; "
          "docs/cluster-format.md)",
          section.empty() ? "" : section + ".", key,
          section.empty() ? "the top level" : "'" + section + "'", list));
      return;
    }
  };
  check(root, "");
  for (const auto &entry : fields)
    if (const std::string &section = entry.first; !section.empty())
      if (const json::Object *object = root.getObject(section))
        if (r.error.empty())
          check(*object, section);
}

llvm::Expected<Cluster> parseClusterObject(const json::Object &rootObject,
                                           llvm::StringRef source) {
  const json::Object *root = &rootObject;
  constexpr double inf = 1e308;
  constexpr double GB = 1e9, GiB = 1024.0 * 1024 * 1024;
  Reader r(source);
  Cluster c;
  if (auto name = root->getString("name"))
    c.name = name->str();
  else
    c.name = source.str();
  double gpn = r.number(*root, "gpus_per_node", std::nullopt, true, 1e6);
  if (r.error.empty() && gpn != static_cast<double>(int64_t(gpn)))
    r.fail(llvm::formatv("field 'gpus_per_node' must be an integer, got {0}",
                         shortNumber(gpn)));
  c.gpusPerNode = static_cast<int64_t>(gpn);
  c.peakFlops =
      r.number(*root, "gpu.peak_bf16_tflops", std::nullopt, true, inf) * 1e12;
  c.hbmBytes = r.number(*root, "gpu.hbm_gib", std::nullopt, true, inf) * GiB;
  c.hbmBandwidth =
      r.number(*root, "gpu.hbm_tb_per_s", std::nullopt, true, inf) * 1e12;
  c.reservedBytes = r.number(*root, "gpu.reserved_gib", 0.0, false, inf) * GiB;
  if (r.error.empty() && c.reservedBytes >= c.hbmBytes)
    r.fail(llvm::formatv("field 'gpu.reserved_gib' ({0}) must be smaller than "
                         "'gpu.hbm_gib' ({1})",
                         shortNumber(c.reservedBytes / GiB),
                         shortNumber(c.hbmBytes / GiB)));
  c.fragmentation = r.number(*root, "gpu.fragmentation", 0.0, false, 1);
  double sms = r.number(*root, "gpu.sms", 0.0, false, 1e6);
  if (r.error.empty() && sms != static_cast<double>(int64_t(sms)))
    r.fail(llvm::formatv("field 'gpu.sms' must be an integer, got {0}",
                         shortNumber(sms)));
  c.sms = static_cast<int64_t>(sms);
  c.gradBytes = r.number(*root, "memory.grad_bytes", 2.0, true, 8);
  c.optimizerStateBytes =
      r.number(*root, "memory.optimizer_state_bytes", 8.0, false, 64);
  if (const json::Object *mem = root->getObject("memory"))
    if (mem->get("master_weight_bytes"))
      c.masterWeightBytes =
          r.number(*root, "memory.master_weight_bytes", 0.0, false, 8);
  c.dropoutMaskBytes =
      r.number(*root, "memory.dropout_mask_bytes", 0.0, false, 8);
  // A string field `section.key` of two values, `first` (the default) or
  // `second`: `isSecond` tells which; any other value is an error.
  auto choice = [&](llvm::StringRef section, llvm::StringRef key,
                    llvm::StringRef first, llvm::StringRef second,
                    bool &isSecond) {
    const json::Object *obj = root->getObject(section);
    const json::Value *v = obj ? obj->get(key) : nullptr;
    if (!v)
      return;
    std::optional<llvm::StringRef> s = v->getAsString();
    if (s && (*s == first || *s == second))
      isSecond = *s == second;
    else
      r.fail(llvm::formatv("field '{0}.{1}' must be \"{2}\" or \"{3}\", "
                           "got {4}",
                           section, key, first, second, *v));
  };
  choice("memory", "grad_buffer", "persistent", "frame", c.gradBufferInFrame);
  c.commBufferBytesPerGroup =
      r.number(*root, "memory.comm_buffer_mib_per_group", 0.0, false, inf) *
      1048576.0;
  c.intraNode.bandwidth =
      r.number(*root, "intra_node.gb_per_s_per_direction_per_gpu", std::nullopt,
               true, inf) *
      GB;
  c.intraNode.latency =
      r.number(*root, "intra_node.latency_us", 10.0, false, inf) * 1e-6;
  c.collectiveLatency =
      r.number(*root, "collective_latency_us", 0.0, false, inf) * 1e-6;
  llvm::SmallVector<llvm::StringRef> kinds;
  for (size_t i = 0; i < kNumCollectiveKinds; ++i)
    kinds.push_back(getCollectiveKindName(static_cast<CollectiveKind>(i)));
  if (const json::Object *scale = root->getObject("collective_bandwidth_scale"))
    for (const auto &entry : *scale)
      if (!llvm::is_contained(kinds, llvm::StringRef(entry.first)))
        r.fail(llvm::formatv("field 'collective_bandwidth_scale' has an "
                             "unknown collective '{0}' (known: {1})",
                             entry.first.str(), llvm::join(kinds, ", ")));
  for (size_t i = 0; i < kNumCollectiveKinds; ++i)
    c.collectiveBandwidthScale[i] = r.number(
        *root, (llvm::Twine("collective_bandwidth_scale.") + kinds[i]).str(),
        1.0, true, inf);
  c.intraNode.efficiency =
      r.number(*root, "intra_node.efficiency", 0.8, true, 1);
  // No `inter_node`: the cluster is one node (plans larger than a node
  // are rejected by the planner).
  c.singleNode = !root->getObject("inter_node");
  if (c.singleNode) {
    c.interNode = c.intraNode;
  } else {
    c.interNode.bandwidth =
        r.number(*root, "inter_node.gb_per_s_per_direction_per_gpu",
                 std::nullopt, true, inf) *
        GB;
    c.interNode.latency =
        r.number(*root, "inter_node.latency_us", 25.0, false, inf) * 1e-6;
    c.interNode.efficiency =
        r.number(*root, "inter_node.efficiency", 0.8, true, 1);
  }
  c.gemmEfficiency = r.number(*root, "efficiency.gemm", 0.75, true, 1);
  c.attentionEfficiency = r.number(*root, "efficiency.attention", 0.5, true, 1);
  c.memoryEfficiency = r.number(*root, "efficiency.memory", 0.7, true, 1);
  c.attentionScoreBytes =
      r.number(*root, "efficiency.attention_score_bytes", 0.0, false, inf);
  // At most a millisecond per score and a second per tile: anything more
  // is a unit mistake that would rank plans by it alone.
  c.attentionScoreTime =
      r.number(*root, "efficiency.attention_score_ns", 0.0, false, 1e6) * 1e-9;
  c.attentionGradScoreTime =
      r.number(*root, "efficiency.attention_grad_score_ns", 0.0, false, 1e6) *
      1e-9;
  c.attentionTileTime =
      r.number(*root, "efficiency.attention_tile_us", 0.0, false, 1e6) * 1e-6;
  c.attentionGradTileTime =
      r.number(*root, "efficiency.attention_grad_tile_us", 0.0, false, 1e6) *
      1e-6;
  for (auto [name, block] :
       {std::pair{"attention_query_block", &c.attentionQueryBlock},
        {"attention_key_block", &c.attentionKeyBlock}}) {
    std::string path = (llvm::Twine("efficiency.") + name).str();
    *block = r.number(*root, path, 128.0, true, 1e6);
    if (r.error.empty() && (*block < 1 || *block != std::floor(*block)))
      r.fail(llvm::formatv("field '{0}' must be a whole number "
                           "(at least 1), got {1}",
                           path, shortNumber(*block)));
  }
  c.gemmOverhead =
      r.number(*root, "efficiency.gemm_overhead_us", 0.0, false, inf) * 1e-6;
  c.gemmK0 = r.number(*root, "efficiency.gemm_k0", 0.0, false, inf);
  if (r.error.empty())
    if (const json::Object *eff = root->getObject("efficiency"))
      if (const json::Value *tiles = eff->get("gemm_tiles"))
        readTiles(*tiles, r, c.gemmTiles);
  if (r.error.empty())
    if (const json::Object *eff = root->getObject("efficiency"))
      if (const json::Value *ops = eff->get("memory_ops"))
        readMemoryOps(*ops, r, c.memoryOpEfficiency);
  c.kernelOverhead =
      r.number(*root, "efficiency.kernel_overhead_us", 0.0, false, inf) * 1e-6;
  if (const json::Object *gpu = root->getObject("gpu"))
    if (gpu->get("kernel_fixed_us")) {
      const json::Object *eff = root->getObject("efficiency");
      if (eff && eff->get("kernel_overhead_us"))
        r.fail("fields 'gpu.kernel_fixed_us' and "
               "'efficiency.kernel_overhead_us' both give the fixed cost per "
               "kernel; keep one");
      c.kernelOverhead =
          r.number(*root, "gpu.kernel_fixed_us", 0.0, false, inf) * 1e-6;
    }
  c.hostOpOverhead =
      r.number(*root, "host.op_overhead_us", 0.0, false, inf) * 1e-6;
  c.hostStepOverhead =
      r.number(*root, "host.step_overhead_ms", 0.0, false, inf) * 1e-3;
  // At most 10 (kernels 11x slower): shard-calibrate wrote 0-0.2 with 7
  // repeats on 2 cores (1.3 once with one repeat under load); far more is a
  // broken measurement or a typo, and 1e308 turned every step time into inf.
  c.syncSlowdown =
      r.number(*root, "host.sync_slowdown", 0.0, false, kMaxSyncSlowdown);
  c.syncLatency =
      r.number(*root, "host.sync_latency_us", 0.0, false, kMaxSyncLatencyUs) *
      1e-6;
  c.wakeupLatency =
      r.number(*root, "host.wakeup_latency_us", 0.0, false, kMaxSyncLatencyUs) *
      1e-6;
  // At most 1000: a rank's share of a node's cores grows at most by the
  // node's rank count, and far more is a broken measurement.
  // A number below 1 (negative included) is named by the one rule it
  // breaks, before the generic range check.
  const json::Object *host = root->getObject("host");
  bool slower = false;
  for (const char *key : {"speedup_half_waiting", "speedup_others_waiting"})
    if (std::optional<double> v = host ? host->getNumber(key) : std::nullopt;
        v && *v < 1) {
      r.fail(llvm::formatv("field 'host.{0}' must be at least 1 (a rank "
                           "does not run slower because others wait), got "
                           "{1}",
                           key, json::Value(*v)));
      slower = true;
    }
  if (!slower) {
    c.halfWaitingSpeedup =
        r.number(*root, "host.speedup_half_waiting", 1.0, false, 1000);
    c.othersWaitingSpeedup =
        r.number(*root, "host.speedup_others_waiting", 1.0, false, 1000);
  }
  {
    // A count of cores: a fraction or a huge value is a typo, not a node.
    double cores = r.number(*root, "host.pinned_cores", 0.0, false, 4096);
    if (cores != std::floor(cores))
      r.fail(llvm::formatv("field 'host.pinned_cores' must be a whole number "
                           "of cores, got {0}",
                           json::Value(cores)));
    else
      c.pinnedCores = int64_t(cores);
  }
  c.tpOverlap = r.number(*root, "overlap.tp", 0.0, false, 1);
  c.dpOverlap = r.number(*root, "overlap.dp", 0.0, false, 1);
  c.p2pOverlap = r.number(*root, "overlap.p2p", 0.0, false, 1);
  c.dpBucketParams =
      r.number(*root, "overlap.dp_bucket_params", 0.0, false, inf);
  if (const json::Object *gpu = root->getObject("gpu"))
    if (const json::Value *v = gpu->get("shares_node")) {
      std::optional<bool> b = v->getAsBoolean();
      if (!b)
        r.fail(llvm::formatv("field 'gpu.shares_node' must be true or false, "
                             "got {0}",
                             *v));
      else
        c.sharesNode = *b;
    }
  if (const json::Object *rc = root->getObject("recompute")) {
    // The software's recomputation: one of two values per mode.
    auto mode = [&](llvm::StringRef key, llvm::StringRef other, bool &flag) {
      const json::Value *v = rc->get(key);
      if (!v)
        return;
      std::optional<llvm::StringRef> s = v->getAsString();
      if (s && (*s == "compiled" || *s == other)) {
        flag = *s == other;
        return;
      }
      r.fail(llvm::formatv("field 'recompute.{0}' must be \"compiled\" or "
                           "\"{1}\", got {2}",
                           key, other, *v));
    };
    mode("full", "whole_layer", c.fullRecomputeRerunsForward);
    mode("selective", "attention", c.selectiveRecomputesAttention);
  }
  choice("zero", "grad_reduce", "last_microbatch", "every_microbatch",
         c.zeroReducesEveryMicrobatch);
  if (const json::Value *v = root->get("grad_accumulation")) {
    std::optional<llvm::StringRef> s = v->getAsString();
    if (s && (*s == "separate" || *s == "fused"))
      c.gradAccumulationFused = *s == "fused";
    else
      r.fail(llvm::formatv("field 'grad_accumulation' must be \"separate\" "
                           "or \"fused\", got {0}",
                           *v));
  }
  if (r.error.empty())
    checkKnownFields(*root, r);
  if (!r.error.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   r.error.c_str());
  return c;
}

} // namespace

namespace {
/// forWorld without its synchronisation rule: the profile or share.
Cluster shareForWorld(const Cluster &cluster, int64_t world) {
  if (!cluster.sharesNode || world <= 0 || world >= cluster.gpusPerNode)
    return cluster;
  // The fewest measured ranks per node that are at least `world`: that
  // profile itself, or its share scaled to `world` ranks.
  int64_t measured = cluster.gpusPerNode;
  const Cluster *from = &cluster;
  auto it = cluster.rankProfiles.lower_bound(world);
  if (it != cluster.rankProfiles.end()) {
    measured = it->first;
    from = it->second.get();
  }
  Cluster c = *from;
  c.rankProfiles = cluster.rankProfiles;
  if (measured == world)
    return c;
  // Reports name the cluster: a profile's name alone would claim R ranks'
  // own measurements where its figures are scaled, and the file's name its
  // own rank count's (e.g. 6 ranks on a file measured with 8).
  if (from == &cluster)
    c.name += " (" + std::to_string(measured) + " ranks)";
  c.name += " scaled to " + std::to_string(world) + " ranks";
  double share = double(measured) / double(world);
  c.peakFlops *= share;
  c.hbmBandwidth *= share;
  c.hbmBytes *= share;
  c.intraNode.bandwidth *= share;
  if (c.singleNode)
    c.interNode = c.intraNode;
  return c;
}
} // namespace

Cluster forWorld(const Cluster &cluster, int64_t world) {
  Cluster c = shareForWorld(cluster, world);
  // One rank never waits for another, whatever the file (a GPU file with
  // the field, a node of one rank, a 1-rank profile that inherits the
  // node's field).
  if (world == 1) {
    c.syncSlowdown = 0;
    c.syncLatency = 0;
    c.wakeupLatency = 0;
    c.halfWaitingSpeedup = c.othersWaitingSpeedup = 1;
  } else if (c.sharesNode) {
    c.alone = std::make_shared<const Cluster>(forWorld(cluster, 1));
  }
  return c;
}

llvm::Expected<Cluster> loadCluster(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(
        buffer.getError(), "cannot read cluster file '%s': %s",
        path.str().c_str(), buffer.getError().message().c_str());
  return parseCluster((*buffer)->getBuffer(), path);
}

llvm::StringRef getCollectiveKindName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::P2P:
    return "p2p";
  }
  return "";
}

} // namespace autoshard::planner
