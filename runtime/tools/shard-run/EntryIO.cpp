//===- EntryIO.cpp - Host buffers for one entry's slots -------------------===//

#include "EntryIO.h"

#include "autoshard/runtime/EntryAbi.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace autoshard::shardrun {

using namespace autoshard::runtime;

namespace {

/// Fails unless slot `s` of `entry` has the type shard-run feeds/reads.
void checkSlot(const Artifact &a, const EntrySpec &entry, const Slot &s,
               bool input) {
  const ModelInfo &m = a.model;
  const TensorType &t = s.type;
  if (!entry_abi::isRunnerRole(s.role, input))
    throw ArtifactError("artifact '" + a.source + "': entry '" + entry.name +
                        "' has " + (input ? "input" : "output") + " '" +
                        s.role + "', which shard-run does not know");
  if (!s.partial.empty())
    throw ArtifactError("artifact '" + a.source + "': entry '" + entry.name +
                        "': " + (input ? "input '" : "output '") + s.role +
                        "' is partial, which shard-run cannot " +
                        (input ? "feed" : "read"));
  bool ok;
  std::string want;
  // The step's batch; `logits` may take one microbatch of it (a model
  // differentiated with tfm-autodiff microbatches > 1).
  int64_t batch = m.batch;
  if (entry.name == "logits" && !s.globalShape.empty() &&
      s.globalShape[0] >= 1 && m.batch % s.globalShape[0] == 0)
    batch = s.globalShape[0];
  if (input && (s.role == "tokens" || s.role == "labels")) {
    // Global shape: each rank holds its block (docs/artifact-format.md).
    ok = (t.dtype == DType::I32 || t.dtype == DType::I64) &&
         s.globalShape == std::vector<int64_t>{batch, m.seq};
    want = "i32 or i64 [" + std::to_string(batch) + ", " +
           std::to_string(m.seq) + "] (model batch, seq; global shape)";
  } else if (input && s.role == "step") {
    ok = t == TensorType{DType::I64, {}};
    want = "i64[]";
  } else if (s.role == (input ? "lr" : "loss") ||
             (!input && s.role == "grad_norm")) {
    ok = t == TensorType{DType::F32, {}};
    want = "f32[]";
  } else if (!input && s.role == "logits") {
    ok = t.dtype == DType::F32 &&
         s.globalShape == std::vector<int64_t>{batch, m.seq, m.paddedVocabSize};
    want = "f32[" + std::to_string(batch) + ", " + std::to_string(m.seq) +
           ", " + std::to_string(m.paddedVocabSize) + "]";
  } else {
    throw ArtifactError("shard-run: role '" + s.role +
                        "' of EntryAbi.h has no type check");
  }
  if (!ok)
    throw ArtifactError("artifact '" + a.source + "': entry '" + entry.name +
                        "': " + (input ? "input '" : "output '") + s.role +
                        "' is " + t.str() + ", expected " + want);
}

} // namespace

EntryIO::EntryIO(Executor &executor, const std::string &name)
    : executor(executor),
      entry(executor.artifact().entries[executor.entryIndex(name)]),
      index(executor.entryIndex(name)) {
  for (const Slot &s : entry.inputs) {
    checkSlot(executor.artifact(), entry, s, true);
    inputs.emplace_back(s.type.bytes());
    inputPtrs.push_back(inputs.back().data());
  }
  for (const Slot &s : entry.outputs) {
    checkSlot(executor.artifact(), entry, s, false);
    outputs.emplace_back(s.type.bytes());
    outputPtrs.push_back(outputs.back().data());
  }
}

const Slot &EntryIO::inputSlot(const std::string &role) const {
  return entry.inputs[inputIndex(role)];
}

const Slot &EntryIO::outputSlot(const std::string &role) const {
  return entry.outputs[outputIndex(role)];
}

bool EntryIO::hasInput(const std::string &role) const {
  return std::any_of(entry.inputs.begin(), entry.inputs.end(),
                     [&](const Slot &s) { return s.role == role; });
}

bool EntryIO::hasOutput(const std::string &role) const {
  return std::any_of(entry.outputs.begin(), entry.outputs.end(),
                     [&](const Slot &s) { return s.role == role; });
}

size_t EntryIO::inputIndex(const std::string &role) const {
  for (size_t i = 0; i < entry.inputs.size(); ++i)
    if (entry.inputs[i].role == role)
      return i;
  throw ArtifactError("entry '" + entry.name + "' has no input '" + role + "'");
}

size_t EntryIO::outputIndex(const std::string &role) const {
  for (size_t i = 0; i < entry.outputs.size(); ++i)
    if (entry.outputs[i].role == role)
      return i;
  throw ArtifactError("entry '" + entry.name + "' has no output '" + role +
                      "'");
}

void EntryIO::setIds(const std::string &role, const std::vector<int32_t> &ids) {
  size_t i = inputIndex(role);
  if (static_cast<int64_t>(ids.size()) != entry.inputs[i].type.numel())
    throw std::logic_error("entry '" + entry.name + "': input '" + role +
                           "' needs " +
                           std::to_string(entry.inputs[i].type.numel()) +
                           " ids, given " + std::to_string(ids.size()));
  unsigned char *dst = inputs[i].data();
  if (entry.inputs[i].type.dtype == DType::I32) {
    std::memcpy(dst, ids.data(), ids.size() * sizeof(int32_t));
    return;
  }
  for (size_t k = 0; k < ids.size(); ++k) {
    int64_t v = ids[k];
    std::memcpy(dst + k * sizeof(v), &v, sizeof(v));
  }
}

void EntryIO::setF32(const std::string &role, float value) {
  std::memcpy(inputs[inputIndex(role)].data(), &value, sizeof(value));
}

void EntryIO::setI64(const std::string &role, int64_t value) {
  std::memcpy(inputs[inputIndex(role)].data(), &value, sizeof(value));
}

const float *EntryIO::f32(const std::string &role) const {
  return reinterpret_cast<const float *>(outputs[outputIndex(role)].data());
}

void EntryIO::run(ExecutionTracer *tracer) {
  executor.run(index, inputPtrs.data(), outputPtrs.data(), tracer);
}

} // namespace autoshard::shardrun
