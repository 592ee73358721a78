//===- Sampler.cpp - Text generation with the logits entry ----------------===//

#include "Sampler.h"

#include "autoshard/runtime/Philox.h"
#include "autoshard/runtime/SequencePositions.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace autoshard::shardrun {

using namespace autoshard::runtime;

namespace {

/// Uniform in [0, 1) with 53 random bits from the Philox block of `index`.
double uniform(uint64_t seed, uint64_t index) {
  PhiloxKey key = philoxKey(seed);
  key.word[1] ^= 0x534D504Cu; // "SMPL": separate from init/data/dropout
  PhiloxBlock w = philox4x32_10({{static_cast<uint32_t>(index),
                                  static_cast<uint32_t>(index >> 32), 0, 0}},
                                key);
  uint64_t bits = (uint64_t(w.word[0]) << 21) ^ (uint64_t(w.word[1]) >> 11);
  return static_cast<double>(bits & ((uint64_t(1) << 53) - 1)) /
         9007199254740992.0;
}

/// Draws a class from `logits` (n real classes) as nanoGPT's sample.py.
int32_t draw(const float *logits, int64_t n, const SampleOptions &o, double u) {
  std::vector<double> l(logits, logits + n);
  for (double &x : l)
    x /= o.temperature;
  int64_t k = std::min(o.topK, n);
  std::vector<double> sorted = l;
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(),
                   std::greater<double>());
  double kth = sorted[k - 1];
  double maxLogit = *std::max_element(l.begin(), l.end());
  double total = 0;
  for (double &x : l) {
    x = x < kth ? 0.0 : std::exp(x - maxLogit);
    total += x;
  }
  double target = u * total, acc = 0;
  int32_t last = 0;
  for (int64_t c = 0; c < n; ++c) {
    if (l[c] == 0.0)
      continue;
    acc += l[c];
    last = static_cast<int32_t>(c);
    if (acc > target)
      return last;
  }
  return last;
}

} // namespace

namespace {
/// `bytes` with every byte that does not start or continue a well-formed
/// UTF-8 sequence replaced by U+FFFD, as Python's decode(errors="replace")
/// and the tokenizers library do: a byte-level model may sample half a
/// character, and the sample is printed as text.
std::string validUtf8(const std::string &bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto *b = reinterpret_cast<const unsigned char *>(bytes.data());
  size_t n = bytes.size();
  for (size_t i = 0; i < n;) {
    unsigned c = b[i];
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2) &&
              !(len == 4 && c > 0xF4);
    for (size_t k = 1; ok && k < len; ++k)
      ok = (b[i + k] & 0xC0) == 0x80;
    if (ok && len == 3) { // no overlong forms, no surrogates
      unsigned c1 = b[i + 1];
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    }
    if (ok && len == 4) {
      unsigned c1 = b[i + 1];
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (!ok) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    out.append(bytes, i, len);
    i += len;
  }
  return out;
}
} // namespace

namespace {
EntryIO logitsEntry(Executor &executor) {
  if (!executor.hasEntry("logits"))
    throw ArtifactError("artifact '" + executor.artifact().source +
                        "' has no entry 'logits' (needed for --sample; "
                        "pass --sample 0 to skip)");
  return EntryIO(executor, "logits");
}
} // namespace

Sampler::Sampler(Executor &executor, const Dataset &data,
                 const SampleOptions &options)
    : data(data), options(options), model(executor.artifact().model),
      io(logitsEntry(executor)) {
  if (!io.hasInput("tokens") || !io.hasOutput("logits"))
    throw ArtifactError("artifact '" + executor.artifact().source +
                        "': entry 'logits' needs input 'tokens' and output "
                        "'logits'");
  // Every rank runs the entry (its collectives need all ranks) with the
  // context in each of its rows and samples from its local row 0; rank 0's
  // draw is then broadcast so that all ranks keep the same context.
  const Slot &logits = io.outputSlot("logits");
  for (size_t d = 1; d < logits.sharding.dims.size(); ++d)
    if (!logits.sharding.dims[d].empty())
      throw ArtifactError(
          "artifact '" + executor.artifact().source +
          "': sampling reads whole rows of 'logits', which is sharded " +
          logits.sharding.str() + " (pass --sample 0)");
  if (!io.inputSlot("tokens").sharding.dims.empty() &&
      io.inputSlot("tokens").sharding.dims.size() > 1 &&
      !io.inputSlot("tokens").sharding.dims[1].empty())
    throw ArtifactError("artifact '" + executor.artifact().source +
                        "': sampling needs whole sequences in 'tokens', which "
                        "is sharded " +
                        io.inputSlot("tokens").sharding.str() +
                        " (pass --sample 0)");
  comm = executor.comm();
}

std::string Sampler::generate() {
  int64_t classes = std::min(model.vocabSize, data.vocabSize());
  std::vector<int32_t> context{data.sampleStart()};
  prompt_ = context;
  tokens_.clear();
  const TensorType &local = io.inputSlot("tokens").type;
  int64_t rows = local.shape[0];
  std::vector<int32_t> tokens(local.numel(), 0);
  std::string text;
  for (int64_t n = 0; n < options.count; ++n) {
    int64_t len = std::min<int64_t>(context.size(), model.seq);
    // Zig-zag cp: row p of the program's sequence holds original position
    // zigzagPosition(p); the last context position's logits are at its row.
    const int64_t zigzag = io.zigzagChunks();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t p = 0; p < model.seq; ++p) {
        int64_t pos = zigzagPosition(p, model.seq, zigzag);
        tokens[r * model.seq + p] =
            pos < len ? context[context.size() - len + pos] : 0;
      }
    io.setIds("tokens", tokens);
    io.run();
    const float *row =
        io.f32("logits") +
        zigzagIndex(len - 1, model.seq, zigzag) * model.paddedVocabSize;
    int32_t next = draw(row, classes, options, uniform(options.seed, n));
    if (comm && comm->mesh().numDevices() > 1)
      comm->all().broadcast(&next, sizeof(next), 0)->wait();
    context.push_back(next);
    tokens_.push_back(next);
    text += data.decode(next);
  }
  return validUtf8(text);
}

} // namespace autoshard::shardrun
