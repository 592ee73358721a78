//===- shard-gradcheck.cpp - Finite-difference check of a train step ------===//
//
// shard-gradcheck ARTIFACT [options]: checks the gradients that a compiled
// train_step feeds to AdamW against central finite differences of the
// compiled `eval` entry, end to end (builder -> tfm-autodiff -> rt-lower ->
// rt-plan-memory -> rt-export -> executor -> CPU kernels). It validates every
// VJP rule the model uses, on the real model.
//
// Observing the gradient without a new entry: the artifact must be compiled
// with `--tfm-autodiff="max-grad-norm=1e30 ..."` (so the clip coefficient is
// exactly 1). From freshly initialised state (opt_m = 0) one train_step with
// lr = 0 and step = 1 leaves opt_m = (1 - beta1) * grad (the adamw kernel:
// m' = beta1 m + (1 - beta1) * clip_coef * g) and the parameters unchanged
// (p' = p (1 - lr wd) - lr (...) = p). Both facts are checked here: the
// parameters bit for bit, the clip coefficient through max_norm > grad_norm,
// and the recovered gradients through their global norm vs the grad_norm
// output.
//
// Then, per parameter tensor and per direction d (unit norm), the
// directional derivative <grad, d> is compared with
//   fd(h) = (L(p + h d) - L(p - h d)) / (2 h)
// where L is the eval entry's loss. Tolerances (see also kTarget, kRelTol):
//  - The eval loss is f32 (the artifact contract: loss is tensor<f32>) even
//    for an f64 model, so each L carries a rounding error of about half an
//    f32 ulp of L (~1.2e-7 at L ~ 2.4) plus a few ulps from the f32 aux-loss
//    scalars of MoE models. The step h is therefore chosen so that the loss
//    moves by kTarget = 1e-3 (1e-3 * |L| when |L| > 1): h = kTarget /
//    |<grad, d>|, capped at 0.1 * max(1, |p|) for tensors whose gradient is
//    (near) zero. The resulting rounding error of fd is
//    ~ulp(L) / (2h) ~ 1e-4 relative, which we allow for explicitly
//    (noise(h) = 8 ulp(L) / (2h) absolute); the O(h^2) truncation error at
//    such a small loss change is far smaller.
//  - A direction passes when |fd - <grad, d>| <= kRelTol * |<grad, d>| +
//    noise(h), with kRelTol = 1e-2 (default; --tol). The report gives the
//    relative error |fd - <grad, d>| / |<grad, d>|.
//  - Directions: d = normalize(r + s * grad / |grad|) with r a random unit
//    Gaussian vector (seeded by the tensor name) and s = +1, -1, ...: the
//    derivative is about +-|grad| / sqrt(2), never tiny, while the random
//    part probes the components of an error orthogonal to grad.
//  - A tensor whose gradient is zero up to round-off (|grad| <= 1e-12 of
//    the global norm; GPT-2's key bias) is checked along a random d with
//    h = 0.1 * max(1, |p|): the loss must not move beyond noise(h).
//  - Piecewise losses (MoE top-k routing: a routing decision that flips
//    inside [p - h d, p + h d] makes the loss jump): fd is also computed
//    with h / 2, and the f64 `logits` entry is evaluated at p +- h d and
//    p +- h/2 d. When the two loss estimates disagree by more than the
//    tolerance, or the two central differences of the logits vector differ
//    by more than 1e-3 of its norm (O(h^2) for a smooth function, ~jump / 2h
//    across a flip; the f32 loss alone can miss a flip whose jumps cancel),
//    the direction is redrawn, and every second time h is divided by 4 (up
//    to kMaxRedraws times; counted in the report). A direction that is still
//    not smooth at h / 16 is skipped (reported: a routing decision is that
//    close to a tie), and a tensor whose every direction was skipped
//    fails. A wrong VJP does not make the loss non-smooth, so
//    redrawing or skipping cannot hide it; it only costs coverage.
//
// Output: one line per parameter tensor ("ok" or "FAIL"), a summary line
// with the largest relative error, and "PASS" or "FAIL"; exit status 0 on
// PASS, 1 on FAIL or error, 2 on a bad command line. MLIR-free: links only
// the runtime core and the CPU backend.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/Executor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace autoshard::runtime;

namespace {

/// Loss change aimed at by the finite-difference step (relative to |L| when
/// |L| > 1).
constexpr double kTarget = 1e-3;
/// Default relative tolerance on a directional derivative.
constexpr double kRelTol = 1e-2;
/// How often a non-smooth direction (a routing flip) may be redrawn (with
/// a smaller step every second time).
constexpr int kMaxRedraws = 5;

struct Options {
  std::string artifact;
  uint64_t seed = 1337;    ///< Weight init (Executor seed).
  uint64_t dataSeed = 7;   ///< Random tokens and labels.
  int directions = 2;      ///< Directions per parameter tensor.
  double tol = kRelTol;    ///< Relative tolerance.
  double target = kTarget; ///< Loss change aimed at by the step.
  std::string only;        ///< Check only tensors whose name contains this.
};

class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

const char *kUsage =
    "usage: shard-gradcheck ARTIFACT [--seed N] [--data-seed N] "
    "[--directions K] [--tol T] [--target DL] [--only SUBSTR]\n";

Options parseOptions(int argc, char **argv) {
  Options o;
  auto value = [&](int &i) -> std::string {
    if (i + 1 >= argc)
      throw UsageError(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  auto integer = [&](int &i) -> long long {
    std::string flag = argv[i], v = value(i);
    char *end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end)
      throw UsageError(flag + " expects an integer, found '" + v + "'");
    return n;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(integer(i));
    } else if (a == "--data-seed") {
      o.dataSeed = static_cast<uint64_t>(integer(i));
    } else if (a == "--directions") {
      long long k = integer(i);
      if (k < 1)
        throw UsageError("--directions must be >= 1");
      o.directions = static_cast<int>(k);
    } else if (a == "--tol") {
      std::string v = value(i);
      char *end = nullptr;
      o.tol = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(o.tol > 0))
        throw UsageError("--tol expects a positive number, found '" + v + "'");
    } else if (a == "--target") {
      std::string v = value(i);
      char *end = nullptr;
      o.target = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(o.target > 0))
        throw UsageError("--target expects a positive number, found '" + v +
                         "'");
    } else if (a == "--only") {
      o.only = value(i);
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option '" + a + "'");
    } else if (o.artifact.empty()) {
      o.artifact = a;
    } else {
      throw UsageError("more than one artifact given ('" + o.artifact + "', '" +
                       a + "')");
    }
  }
  if (o.artifact.empty())
    throw UsageError("an artifact is required");
  return o;
}

/// Host bytes for every slot of one entry, filled by role.
class EntryBuffers {
public:
  EntryBuffers(Executor &ex, const std::string &name) : ex(ex), name(name) {
    const EntrySpec &e = ex.artifact().entries[ex.entryIndex(name)];
    for (const Slot &s : e.inputs)
      inputs[s.role] = {s.type, std::vector<unsigned char>(s.type.bytes())};
    for (const Slot &s : e.outputs)
      outputs[s.role] = {s.type, std::vector<unsigned char>(s.type.bytes())};
  }

  bool hasInput(const std::string &role) const { return inputs.count(role); }

  void setIds(const std::string &role, const std::vector<int64_t> &ids) {
    Buf &b = input(role);
    if (b.type.numel() != static_cast<int64_t>(ids.size()))
      throw std::runtime_error("entry '" + name + "': input '" + role +
                               "' is " + b.type.str() + ", expected " +
                               std::to_string(ids.size()) + " ids");
    for (size_t i = 0; i < ids.size(); ++i) {
      if (b.type.dtype == DType::I32) {
        int32_t v = static_cast<int32_t>(ids[i]);
        std::memcpy(b.data.data() + 4 * i, &v, 4);
      } else if (b.type.dtype == DType::I64) {
        std::memcpy(b.data.data() + 8 * i, &ids[i], 8);
      } else {
        throw std::runtime_error("entry '" + name + "': input '" + role +
                                 "' is " + b.type.str() + ", expected ids");
      }
    }
  }

  void setScalar(const std::string &role, double value) {
    Buf &b = input(role);
    if (b.type.numel() != 1)
      throw std::runtime_error("entry '" + name + "': input '" + role +
                               "' is " + b.type.str() + ", expected a scalar");
    switch (b.type.dtype) {
    case DType::F32: {
      float v = static_cast<float>(value);
      std::memcpy(b.data.data(), &v, 4);
      break;
    }
    case DType::F64:
      std::memcpy(b.data.data(), &value, 8);
      break;
    case DType::I64: {
      int64_t v = static_cast<int64_t>(value);
      std::memcpy(b.data.data(), &v, 8);
      break;
    }
    case DType::I32: {
      int32_t v = static_cast<int32_t>(value);
      std::memcpy(b.data.data(), &v, 4);
      break;
    }
    default:
      throw std::runtime_error("entry '" + name + "': input '" + role +
                               "' has an unsupported type " + b.type.str());
    }
  }

  /// A f32 or f64 scalar output, as double.
  double scalar(const std::string &role) const {
    auto it = outputs.find(role);
    if (it == outputs.end())
      throw std::runtime_error("entry '" + name + "' has no output '" + role +
                               "'");
    const Buf &b = it->second;
    if (b.type == TensorType{DType::F32, {}}) {
      float v;
      std::memcpy(&v, b.data.data(), 4);
      return v;
    }
    if (b.type == TensorType{DType::F64, {}}) {
      double v;
      std::memcpy(&v, b.data.data(), 8);
      return v;
    }
    throw std::runtime_error("entry '" + name + "': output '" + role + "' is " +
                             b.type.str() + ", expected a scalar");
  }

  /// A f32 or f64 output, as doubles.
  std::vector<double> values(const std::string &role) const {
    auto it = outputs.find(role);
    if (it == outputs.end())
      throw std::runtime_error("entry '" + name + "' has no output '" + role +
                               "'");
    const Buf &b = it->second;
    std::vector<double> out(b.type.numel());
    for (size_t i = 0; i < out.size(); ++i) {
      if (b.type.dtype == DType::F32) {
        float v;
        std::memcpy(&v, b.data.data() + 4 * i, 4);
        out[i] = v;
      } else if (b.type.dtype == DType::F64) {
        std::memcpy(&out[i], b.data.data() + 8 * i, 8);
      } else {
        throw std::runtime_error("entry '" + name + "': output '" + role +
                                 "' is " + b.type.str() + ", expected floats");
      }
    }
    return out;
  }

  void run() {
    std::map<std::string, const void *> in;
    std::map<std::string, void *> out;
    for (auto &[role, b] : inputs)
      in[role] = b.data.data();
    for (auto &[role, b] : outputs)
      out[role] = b.data.data();
    ex.run(name, in, out);
  }

private:
  struct Buf {
    TensorType type;
    std::vector<unsigned char> data;
  };
  Buf &input(const std::string &role) {
    auto it = inputs.find(role);
    if (it == inputs.end())
      throw std::runtime_error("entry '" + name + "' has no input '" + role +
                               "'");
    return it->second;
  }

  Executor &ex;
  std::string name;
  std::map<std::string, Buf> inputs, outputs;
};

/// What the train step's optimizer does with one parameter.
struct ParamInfo {
  std::string name;
  TensorType type;
  std::string optM; ///< The opt_m state the adamw of this param updates.
  double beta1 = 0.0;
};

std::string stateName(const Artifact &a, const Function &fn, int64_t id) {
  const BufferSpec &b = fn.buffers[rootBuffer(fn, id)];
  if (b.kind != BufferKind::State)
    return "";
  return a.state[b.stateIndex].name;
}

/// Finds every adamw instruction (param, opt_m, beta1) and the clip
/// coefficient's max_norm; fails unless every param has one adamw.
std::vector<ParamInfo> findParams(const Artifact &a, double &maxNorm) {
  std::map<std::string, ParamInfo> byName;
  maxNorm = -1.0;
  for (const Function &fn : a.functions)
    for (const Instruction &inst : fn.code) {
      if (inst.op == "clip_coef") {
        double m = inst.attrs.getF64("max_norm");
        maxNorm = maxNorm < 0 ? m : std::min(maxNorm, m);
      }
      if (inst.op != "adamw")
        continue;
      std::string p = stateName(a, fn, inst.args[0]);
      std::string m = stateName(a, fn, inst.args[2]);
      if (p.empty() || m.empty())
        throw std::runtime_error("function '" + fn.name +
                                 "': an adamw instruction does not update a "
                                 "state parameter and opt_m in place");
      ParamInfo info;
      info.name = p;
      info.optM = m;
      info.beta1 = inst.attrs.getF64("beta1");
      byName[p] = info;
    }
  std::vector<ParamInfo> params;
  for (const StateSpec &s : a.state) {
    if (s.kind != StateKind::Param)
      continue;
    auto it = byName.find(s.name);
    if (it == byName.end())
      throw std::runtime_error("parameter '" + s.name +
                               "' is not updated by any adamw instruction");
    it->second.type = s.type;
    params.push_back(it->second);
  }
  return params;
}

/// The spacing of f32 numbers around |x|.
double ulp32(double x) {
  float f = static_cast<float>(std::abs(x));
  return std::nextafter(f, INFINITY) - f;
}

double norm(const std::vector<double> &v) {
  double s = 0;
  for (double x : v)
    s += x * x;
  return std::sqrt(s);
}

double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

uint64_t hashName(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

int runMain(const Options &opts) {
  Artifact artifact = loadArtifact(opts.artifact);
  const ModelInfo &model = artifact.model;
  if (!artifact.findEntry("train_step") || !artifact.findEntry("eval"))
    throw std::runtime_error("artifact '" + opts.artifact +
                             "' needs a train_step and an eval entry");
  double maxNorm;
  std::vector<ParamInfo> params = findParams(artifact, maxNorm);
  for (const ParamInfo &p : params)
    if (p.type.dtype != DType::F64)
      throw std::runtime_error(
          "parameter '" + p.name + "' is " + p.type.str() +
          "; the gradient check needs an f64 model (build it with --dtype "
          "f64)");

  CpuBackend backend;
  ExecutorOptions exOpts;
  exOpts.seed = opts.seed;
  Executor ex(artifact, backend, exOpts);
  ex.initState();

  // One batch of random tokens and labels.
  std::mt19937_64 gen(opts.dataSeed);
  std::uniform_int_distribution<int64_t> token(0, model.vocabSize - 1);
  std::vector<int64_t> tokens(model.batch * model.seq),
      labels(model.batch * model.seq);
  for (int64_t &t : tokens)
    t = token(gen);
  for (int64_t &t : labels)
    t = token(gen);

  EntryBuffers train(ex, "train_step"), eval(ex, "eval");
  train.setIds("tokens", tokens);
  train.setIds("labels", labels);
  train.setScalar("lr", 0.0);
  train.setScalar("step", 1);
  eval.setIds("tokens", tokens);
  eval.setIds("labels", labels);
  if (eval.hasInput("step"))
    eval.setScalar("step", 1);

  std::map<std::string, std::vector<double>> p0;
  for (const ParamInfo &p : params)
    p0[p.name] = ex.readStateAs<double>(p.name);

  train.run();
  const double trainLoss = train.scalar("loss");
  const double gradNorm = train.scalar("grad_norm");
  if (!(maxNorm > gradNorm * 2))
    throw std::runtime_error(
        "the clip coefficient must be 1: compile with "
        "--tfm-autodiff=\"max-grad-norm=1e30 ...\" (max_norm is " +
        std::to_string(maxNorm) + ", grad norm " + std::to_string(gradNorm) +
        ")");

  // Gradients from opt_m; parameters must be unchanged by the lr = 0 step.
  std::map<std::string, std::vector<double>> grads;
  double sumsq = 0;
  for (const ParamInfo &p : params) {
    if (ex.readStateAs<double>(p.name) != p0[p.name])
      throw std::runtime_error("parameter '" + p.name +
                               "' changed in a train_step with lr = 0");
    std::vector<double> g = ex.readStateAs<double>(p.optM);
    const double oneMinusBeta1 = 1.0 - p.beta1;
    for (double &x : g)
      x /= oneMinusBeta1;
    sumsq += dot(g, g);
    grads[p.name] = std::move(g);
  }
  const double recoveredNorm = std::sqrt(sumsq);

  auto lossAt = [&](const ParamInfo &p, const std::vector<double> &d,
                    double h) {
    std::vector<double> x = p0[p.name];
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += h * d[i];
    ex.writeState(p.name, x.data());
    eval.run();
    return eval.scalar("loss");
  };

  // The logits entry (f64 for an f64 model) sees a routing flip far more
  // sharply than the f32 loss does; see smooth() below.
  std::optional<EntryBuffers> logits;
  if (artifact.findEntry("logits")) {
    logits.emplace(ex, "logits");
    logits->setIds("tokens", tokens);
    if (logits->hasInput("step"))
      logits->setScalar("step", 1);
  }
  auto logitsAt = [&](const ParamInfo &p, const std::vector<double> &d,
                      double h) {
    std::vector<double> x = p0[p.name];
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += h * d[i];
    ex.writeState(p.name, x.data());
    logits->run();
    return logits->values("logits");
  };
  // Whether the logits are smooth along d on [-h, h]: their central
  // differences with h and h / 2 agree to 1e-3 relative (they differ by
  // O(h^2) for a smooth function, by ~jump / 2h across a routing flip).
  auto smooth = [&](const ParamInfo &p, const std::vector<double> &d,
                    double h) {
    if (!logits)
      return true;
    std::vector<double> a = logitsAt(p, d, h), b = logitsAt(p, d, -h),
                        c = logitsAt(p, d, h / 2), e = logitsAt(p, d, -h / 2);
    std::vector<double> d1(a.size()), d2(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      d1[i] = (a[i] - b[i]) / (2 * h);
      d2[i] = (c[i] - e[i]) / h;
    }
    std::vector<double> diff(a.size());
    for (size_t i = 0; i < a.size(); ++i)
      diff[i] = d1[i] - d2[i];
    return norm(diff) <= 1e-3 * norm(d2) + 1e-9 / h;
  };

  eval.run();
  const double loss0 = eval.scalar("loss");
  std::printf("gradcheck %s: %zu parameter tensors, batch %lld, seq %lld\n",
              model.name.c_str(), params.size(),
              static_cast<long long>(model.batch),
              static_cast<long long>(model.seq));
  std::printf("loss %.6f (train_step %.6f), grad norm %.6e (from opt_m "
              "%.6e)\n",
              loss0, trainLoss, gradNorm, recoveredNorm);
  bool ok = true;
  if (std::abs(loss0 - trainLoss) > 4 * ulp32(loss0)) {
    std::printf("FAIL: eval and train_step losses differ\n");
    ok = false;
  }
  if (std::abs(recoveredNorm - gradNorm) > 1e-5 * gradNorm) {
    std::printf("FAIL: the gradients recovered from opt_m do not have the "
                "train step's grad norm\n");
    ok = false;
  }

  const double target = opts.target * std::max(1.0, std::abs(loss0));
  double maxRel = 0;
  std::string worst;
  int checked = 0, failed = 0, redrawn = 0, skipped = 0, tensors = 0;
  for (const ParamInfo &p : params) {
    if (!opts.only.empty() && p.name.find(opts.only) == std::string::npos)
      continue;
    ++tensors;
    const std::vector<double> &g = grads[p.name];
    const double gn = norm(g), pn = norm(p0[p.name]);
    // A gradient that is zero up to round-off (e.g. GPT-2's key bias: adding
    // a constant to every key of a query leaves its softmax unchanged) has no
    // meaningful relative error: check that the loss does not move instead.
    const bool zeroGrad = gn <= 1e-12 * std::max(1.0, recoveredNorm);
    const size_t n = g.size();
    std::mt19937_64 rng(hashName(p.name) ^ opts.dataSeed);
    std::normal_distribution<double> normal;
    const int skippedBefore = skipped;
    double tensorMax = 0, tensorMaxFd = 0;
    bool tensorOk = true;
    for (int j = 0; j < opts.directions; ++j) {
      const double sign = (j % 2 == 0) ? 1.0 : -1.0;
      bool done = false;
      for (int attempt = 0; attempt <= kMaxRedraws && !done; ++attempt) {
        // Attempts 0, 1 use the full step, 2, 3 a quarter of it, 4, 5 a
        // sixteenth, each with a fresh random part of d.
        const double shrink = std::ldexp(1.0, -2 * (attempt / 2));
        std::vector<double> d(n);
        for (double &x : d)
          x = normal(rng);
        double rn = norm(d);
        for (size_t i = 0; i < n; ++i)
          d[i] = d[i] / rn + (zeroGrad ? 0.0 : sign * g[i] / gn);
        double dn = norm(d);
        for (double &x : d)
          x /= dn;
        const double an = dot(g, d);
        const double hMax = 0.1 * std::max(1.0, pn);
        const double h =
            shrink * (zeroGrad ? hMax : std::min(target / std::abs(an), hMax));
        const double lp = lossAt(p, d, h), lm = lossAt(p, d, -h);
        const double lp2 = lossAt(p, d, h / 2), lm2 = lossAt(p, d, -h / 2);
        const double fd = (lp - lm) / (2 * h);
        const double fd2 = (lp2 - lm2) / h;
        const double u =
            8 * ulp32(std::max({std::abs(lp), std::abs(lm), std::abs(loss0)}));
        const double noise = u / (2 * h), noise2 = u / h;
        const double err = std::abs(fd - an);
        const double tolAbs = opts.tol * std::abs(an);
        // Non-smooth along d (e.g. a routing flip): the two estimates
        // disagree; retry with another direction and a smaller step.
        if (std::abs(fd - fd2) > tolAbs + noise + noise2 || !smooth(p, d, h)) {
          if (attempt < kMaxRedraws) {
            ++redrawn;
            continue;
          }
          done = true;
          ++skipped;
          std::printf("  %s direction %d: skipped, not smooth along any "
                      "tried direction (a routing decision flips within "
                      "h = %.3e of p: fd(h) %.9e, fd(h/2) %.9e)\n",
                      p.name.c_str(), j, h, fd, fd2);
          continue;
        }
        done = true;
        ++checked;
        if (zeroGrad) {
          tensorMaxFd = std::max(tensorMaxFd, std::abs(fd));
        } else {
          const double rel = err / std::abs(an);
          tensorMax = std::max(tensorMax, rel);
          if (rel > maxRel) {
            maxRel = rel;
            worst = p.name;
          }
        }
        if (!(err <= tolAbs + noise)) {
          tensorOk = false;
          ++failed;
          std::printf("  %s direction %d: <grad, d> = %.9e, finite "
                      "difference %.9e (h %.3e, with h/2: %.9e)\n",
                      p.name.c_str(), j, an, fd, h, fd2);
        }
      }
    }
    if (skipped == skippedBefore + opts.directions) {
      tensorOk = false;
      ++failed;
      std::printf("  %s: every direction was skipped\n", p.name.c_str());
    }
    if (zeroGrad)
      std::printf("%-36s %-16s |g| %.3e  zero gradient, |fd| %.2e  %s\n",
                  p.name.c_str(), p.type.str().c_str(), gn, tensorMaxFd,
                  tensorOk ? "ok" : "FAIL");
    else
      std::printf("%-36s %-16s |g| %.3e  max rel err %.2e  %s\n",
                  p.name.c_str(), p.type.str().c_str(), gn, tensorMax,
                  tensorOk ? "ok" : "FAIL");
    ex.writeState(p.name, p0[p.name].data());
  }
  if (tensors == 0)
    throw std::runtime_error("no parameter tensor matches --only '" +
                             opts.only + "'");
  std::printf("summary: %d tensors, %d directions, max rel error %.2e (%s), "
              "tolerance %.0e, %d failed, %d redrawn, %d skipped\n",
              tensors, checked, maxRel, worst.c_str(), opts.tol, failed,
              redrawn, skipped);
  ok = ok && failed == 0;
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  try {
    opts = parseOptions(argc, argv);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "shard-gradcheck: error: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    return runMain(opts);
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "shard-gradcheck: error: %s\n", e.what());
    return 1;
  }
}
