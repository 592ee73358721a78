//===- ExecutorTest.cpp - Executor and CPU backend on the tiny artifact ---===//
//
// Runs the hand-written runtime/test/data/tiny.json (embedding -> residual
// layer_norm + linear block via `call` -> tied LM head -> cross-entropy, its
// backward, global-norm clipping and AdamW) and checks the executor against
// the same computation done directly with the CPU kernels.
//
//===----------------------------------------------------------------------===//

#include "ArtifactTestUtil.h"
#include "TestUtil.h"

#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/Executor.h"
#include "autoshard/runtime/Init.h"
#include "autoshard/runtime/KernelChecks.h"
#include "autoshard/runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

using namespace autoshard::runtime;
using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;
using Vec = std::vector<float>;
using Json = nlohmann::json;
using autoshard::runtime::checks::typeOf;

namespace {

constexpr int64_t kRows = 8, kHidden = 4, kClasses = 10, kVocab = 8;
constexpr uint64_t kSeed = 7;
const std::vector<int32_t> kTokens = {1, 2, 3, 4, 5, 6, 7, 0};
const std::vector<int32_t> kLabels = {2, 3, 4, 5, 6, 7, 0, 1};

/// The model's state, computed directly with the kernels.
struct Reference {
  Vec wte = Vec(kClasses * kHidden), w1 = Vec(kHidden * kHidden),
      gamma = Vec(kHidden, 1.0f), beta = Vec(kHidden, 0.0f);
  Vec m[4], v[4];

  Reference() {
    initNormalRange(wte.data(), wte.size(), 0, 0.5, kSeed, fnv1a64("wte"));
    initNormalRange(w1.data(), w1.size(), 0, 0.5, kSeed, fnv1a64("w1"));
    Vec *params[4] = {&wte, &w1, &gamma, &beta};
    for (int i = 0; i < 4; ++i)
      m[i] = v[i] = Vec(params[i]->size(), 0.0f);
  }

  /// Forward up to the logits; keeps the activations for the backward.
  Vec e = Vec(kRows * kHidden), ln = e, h = e, logits = Vec(kRows * kClasses);
  void forward() {
    embedding(kTokens.data(), kRows, wte.data(), kClasses, kHidden, e.data());
    layerNorm(e.data(), gamma.data(), beta.data(), ln.data(), kRows, kHidden,
              1e-5);
    Vec mm(e.size());
    matmul(ln.data(), w1.data(), mm.data(), {1, kRows, kHidden, kHidden});
    add(e.data(), mm.data(), h.data(), e.size(), e.size());
    MatmulShape head{1, kRows, kClasses, kHidden};
    head.transposeRhs = true;
    matmul(h.data(), wte.data(), logits.data(), head);
  }

  float loss() {
    forward();
    return static_cast<float>(
        crossEntropy(logits.data(), kLabels.data(), {kRows, kClasses, kVocab}));
  }

  /// One train step; returns {loss, grad_norm}.
  std::pair<float, float> step(float lr, int64_t stepNo) {
    float l = loss();
    Vec dlogits(logits.size()), dwte(wte.size()), dh(e.size());
    crossEntropyGrad(1.0, logits.data(), kLabels.data(), dlogits.data(),
                     {kRows, kClasses, kVocab});
    matmulWgrad(dlogits.data(), h.data(), dwte.data(), kRows, kClasses,
                kHidden);
    matmul(dlogits.data(), wte.data(), dh.data(),
           {1, kRows, kHidden, kClasses});
    Vec dw1(w1.size()), dln(e.size()), dxln(e.size()), dx(e.size()),
        dgamma(kHidden), dbeta(kHidden), dwteEmb(wte.size());
    matmulWgrad(ln.data(), dh.data(), dw1.data(), kRows, kHidden, kHidden);
    MatmulShape back{1, kRows, kHidden, kHidden};
    back.transposeRhs = true;
    matmul(dh.data(), w1.data(), dln.data(), back);
    layerNormGrad(dln.data(), e.data(), gamma.data(), dxln.data(),
                  dgamma.data(), dbeta.data(), kRows, kHidden, 1e-5);
    add(dh.data(), dxln.data(), dx.data(), dx.size(), dx.size());
    embeddingGrad(kTokens.data(), kRows, dx.data(), kClasses, kHidden,
                  dwteEmb.data());
    add(dwte.data(), dwteEmb.data(), dwte.data(), dwte.size(), dwte.size());
    // The artifact keeps sumsq and the coefficient in f32 buffers.
    float sumsq = static_cast<float>(
        sumSquares(dwte.data(), dwte.size()) + sumSquares(dw1.data(), 16) +
        sumSquares(dgamma.data(), 4) + sumSquares(dbeta.data(), 4));
    ClipCoef clip = clipCoef(sumsq, 1.0);
    Vec *params[4] = {&wte, &w1, &gamma, &beta};
    Vec *grads[4] = {&dwte, &dw1, &dgamma, &dbeta};
    for (int i = 0; i < 4; ++i) {
      AdamWParams p{
          lr,   stepNo,           static_cast<float>(clip.coef), 0.9, 0.99,
          1e-8, i < 2 ? 0.1 : 0.0};
      adamw(params[i]->data(), grads[i]->data(), m[i].data(), v[i].data(),
            params[i]->data(), m[i].data(), v[i].data(), params[i]->size(), p);
    }
    return {l, static_cast<float>(clip.norm)};
  }
};

/// tiny.json with the block's residual add fused into its matmul, as
/// rt-fuse-epilogues writes it: matmul(ln, w1, x) -> the block's output
/// (the temporary, buffer 6, is left unused).
Json fusedTinyJson() {
  Json doc = tinyArtifactJson();
  Json &code = jsonFunction(doc, "block")["code"];
  code[1]["args"] = {5, 1, 0};
  code[1]["results"] = {4};
  code.erase(2);
  return doc;
}

/// Parameters: the executor's memory check on or off, and tiny.json as it
/// is or with the block's epilogue fused (fusedTinyJson).
class ExecutorTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {
protected:
  ExecutorTest()
      : artifact(std::get<1>(GetParam())
                     ? parseArtifact(fusedTinyJson().dump(), "fused.json")
                     : loadArtifact(tinyArtifactPath())),
        executor(artifact, backend, {kSeed, std::get<0>(GetParam())}) {
    executor.initState();
  }

  std::pair<float, float> trainStep(float lr, int64_t step) {
    float loss = 0, norm = 0;
    executor.run("train_step",
                 {{"tokens", kTokens.data()},
                  {"labels", kLabels.data()},
                  {"lr", &lr},
                  {"step", &step}},
                 {{"loss", &loss}, {"grad_norm", &norm}});
    return {loss, norm};
  }

  void expectStateMatches(const Reference &ref) {
    const char *names[4] = {"wte", "w1", "ln.gamma", "ln.beta"};
    const Vec *params[4] = {&ref.wte, &ref.w1, &ref.gamma, &ref.beta};
    for (int i = 0; i < 4; ++i) {
      std::string n = names[i];
      expectAllNear(executor.readStateAs<float>(n), *params[i], 1e-6, 1e-7, n);
      expectAllNear(executor.readStateAs<float>(n + ".exp_avg"), ref.m[i], 1e-6,
                    1e-9, n + ".exp_avg");
      expectAllNear(executor.readStateAs<float>(n + ".exp_avg_sq"), ref.v[i],
                    1e-6, 1e-12, n + ".exp_avg_sq");
    }
  }

  Artifact artifact;
  CpuBackend backend;
  Executor executor;
};

TEST_P(ExecutorTest, AllocatesExactlyThePlannedPeak) {
  EXPECT_EQ(executor.allocatedBytes(), artifact.memory.peakBytes);
  EXPECT_EQ(backend.allocatedBytes(), artifact.memory.peakBytes);
  trainStep(1e-3f, 1);
  EXPECT_EQ(backend.peakAllocatedBytes(), artifact.memory.peakBytes);
}

TEST_P(ExecutorTest, InitMatchesTheRng) {
  Reference ref;
  expectStateMatches(ref);
}

TEST_P(ExecutorTest, TrainStepsMatchTheKernels) {
  Reference ref;
  for (int64_t step = 1; step <= 3; ++step) {
    float lr = 1e-2f * step;
    auto [refLoss, refNorm] = ref.step(lr, step);
    auto [loss, norm] = trainStep(lr, step);
    EXPECT_NEAR(loss, refLoss, 1e-6 * std::abs(refLoss)) << "step " << step;
    EXPECT_NEAR(norm, refNorm, 1e-6 * std::abs(refNorm)) << "step " << step;
    EXPECT_GT(norm, 0.0f);
    expectStateMatches(ref);
  }
}

TEST_P(ExecutorTest, EvalAndLogitsMatchTheKernels) {
  Reference ref;
  trainStep(5e-2f, 1);
  ref.step(5e-2f, 1);
  float loss = 0;
  executor.run("eval", {{"tokens", kTokens.data()}, {"labels", kLabels.data()}},
               {{"loss", &loss}});
  float refLoss = ref.loss();
  EXPECT_NEAR(loss, refLoss, 1e-6 * refLoss);
  Vec logits(kRows * kClasses);
  executor.run("logits", {{"tokens", kTokens.data()}},
               {{"logits", logits.data()}});
  expectAllNear(logits, ref.logits, 1e-6, 1e-6, "logits");
}

TEST_P(ExecutorTest, BadTokenNamesTheInstruction) {
  std::vector<int32_t> bad = kTokens;
  bad[3] = 12;
  float loss = 0;
  try {
    executor.run("eval", {{"tokens", bad.data()}, {"labels", kLabels.data()}},
                 {{"loss", &loss}});
    FAIL();
  } catch (const ExecutionError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "function 'eval', instruction 0 ('embedding')"),
              std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(CheckMemoryAndFused, ExecutorTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Bool()));

TEST(ExecutorCheckTest, ReadOfUnwrittenBufferIsRejectedAtLoad) {
  // eval's logits matmul writes a fresh local (never read) instead of the
  // buffer the loss reads, so the loss would read bytes nothing wrote: the
  // loader's def-before-use check refuses the program before it runs (the
  // --check-memory poisoning found it only at run time).
  Json doc = tinyArtifactJson();
  Json &eval = jsonFunction(doc, "eval");
  eval["buffers"].push_back({{"id", 12},
                             {"kind", "local"},
                             {"offset", 384},
                             {"bytes", 320},
                             {"dtype", "f32"},
                             {"shape", {2, 4, 10}},
                             {"category", "workspace"}});
  eval["buffers"][9]["offset"] = 64 + 320 + 320; // past buffer 12
  eval["frame_bytes"] = 1024;
  doc["memory"]["entries"]["eval"]["frame_bytes"] = 1024;
  eval["code"][2]["results"] = {12};
  try {
    parseArtifact(doc.dump(), "unwritten.json");
    FAIL() << "expected an ArtifactError";
  } catch (const ArtifactError &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("function 'eval', instruction 3 ('cross_entropy'): "
                       "reads buffer 10 (f32[8, 10], an alias of buffer 9)"),
              std::string::npos)
        << msg;
  }
}

TEST(ExecutorCheckTest, BindingChecksShapes) {
  Json doc = tinyArtifactJson();
  // matmul's lhs becomes the [4, 4] weight: result shape no longer fits.
  jsonFunction(doc, "block")["code"][1]["args"] = {1, 1};
  Artifact a = parseArtifact(doc.dump(), "shapes.json");
  CpuBackend backend;
  try {
    Executor ex(a, backend);
    FAIL();
  } catch (const ArtifactError &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("function 'block', instruction 1 ('matmul')"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("expected f32[4, 4]"), std::string::npos) << msg;
  }
  EXPECT_EQ(backend.allocatedBytes(), 0);
}

TEST(ExecutorEpilogueTest, BindingChecksTheAddend) {
  struct Case {
    Json args, attrs;
    std::string want;
  };
  for (const Case &c : std::vector<Case>{
           // ln.gamma [4] as a full addend, the input x as a bias.
           {{5, 1, 2},
            Json::object(),
            "addend (arg 2, added to the result) is f32[4], expected "
            "f32[2, 4, 4]"},
           {{5, 1, 0},
            {{"epilogue", "bias"}},
            "bias (arg 2) is f32[2, 4, 4], expected f32[4]"},
           {{5, 1, 0},
            {{"epilogue", "relu"}},
            "attribute 'epilogue' must be \"bias\", \"gelu\", \"gelu_grad\" "
            "or absent, found \"relu\""},
           {{5, 1},
            {{"epilogue", "bias"}},
            "epilogue \"bias\" needs the bias as a third argument"},
           {{5, 1},
            {{"epilogue", "gelu_grad"}},
            "epilogue \"gelu_grad\" needs the pre-activation x as a third "
            "argument"},
           {{5, 1, 1},
            {{"epilogue", "gelu_grad"}},
            "pre-activation x (arg 2, of the result's type) is f32[4, 4], "
            "expected f32[2, 4, 4]"},
           {{5, 1, 0},
            {{"epilogue", "gelu"}},
            "epilogue \"gelu\" takes no third argument, found f32[2, 4, 4]"},
           {{5, 1, 0},
            {{"tanh_approx", true}},
            "attribute 'tanh_approx' needs epilogue \"gelu\" or "
            "\"gelu_grad\""}}) {
    Json doc = fusedTinyJson();
    Json &matmul = jsonFunction(doc, "block")["code"][1];
    matmul["args"] = c.args;
    matmul["attrs"] = c.attrs;
    Artifact a = parseArtifact(doc.dump(), "addend.json");
    CpuBackend backend;
    try {
      Executor ex(a, backend);
      ADD_FAILURE() << "no error for " << c.want;
    } catch (const ArtifactError &e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("function 'block', instruction 1 ('matmul')"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find(c.want), std::string::npos) << msg;
    }
  }
}

TEST(CpuBackendTest, HasAKernelForEveryOp) {
  EXPECT_TRUE(CpuBackend::kernelTable().missingOps().empty());
}

TEST(CpuBackendTest, BindsBroadcast) {
  AttrMap attrs;
  attrs.set("dims", std::vector<int64_t>{0, 2});
  KernelSignature sig;
  sig.op = "broadcast";
  sig.attrs = &attrs;
  sig.place = "broadcast test";
  TensorType x, y;
  x.dtype = y.dtype = DType::F64;
  x.shape = {3};
  y.shape = {2, 3, 2};
  sig.args = {x};
  sig.results = {y};
  CpuBackend backend;
  BoundKernel kernel = backend.bind(sig);
  std::vector<double> xv = {1, 2, 3}, yv(12, 0.0);
  void *ptrs[] = {xv.data(), yv.data()};
  kernel(ptrs);
  EXPECT_EQ(yv, (std::vector<double>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));

  // x must be the result's shape without `dims`.
  sig.args[0].shape = {2};
  EXPECT_THROW(backend.bind(sig), ArtifactError);
  sig.args[0].shape = {3};
  attrs.set("dims", std::vector<int64_t>{2, 0});
  EXPECT_THROW(backend.bind(sig), ArtifactError);
  attrs.set("dims", std::vector<int64_t>{0, 3});
  EXPECT_THROW(backend.bind(sig), ArtifactError);
}

/// The message binding `sig` on the CPU backend fails with ("" if it binds).
std::string bindError(const KernelSignature &sig) {
  try {
    CpuBackend().bind(sig);
  } catch (const ArtifactError &e) {
    return e.what();
  }
  return "";
}

TEST(CpuBackendTest, ElementTypeErrorsNameTheOperand) {
  const DType i32 = DType::I32, i64 = DType::I64, f32 = DType::F32;
  AttrMap rope, none;
  rope.set("theta", 10000.0);
  TensorType x = typeOf(i32, {1, 2, 1, 2});
  struct Case {
    KernelSignature sig;
    std::string want;
  };
  std::vector<Case> cases = {
      // rope_grad's float operand dy is named as rope's x.
      {signatureOf("rope_grad", rope, {x}, {x}),
       "rope_grad test: x has element type i32; the cpu backend computes in "
       "f32 or f64"},
      {signatureOf("embedding", none, {typeOf(f32, {3}), typeOf(f32, {4, 2})},
                   {typeOf(f32, {3, 2})}),
       "embedding test: ids must hold i32 or i64 ids, found f32"},
      {signatureOf("moe_aux_loss", none,
                   {typeOf(i32, {1, 2, 2}), typeOf(i64, {1, 2, 1})},
                   {typeOf(f32, {})}),
       "moe_aux_loss test: float operands has element type i32; the cpu "
       "backend computes in f32 or f64"},
      {signatureOf("moe_aux_loss", none,
                   {typeOf(f32, {1, 2, 2}), typeOf(f32, {1, 2, 1})},
                   {typeOf(f32, {})}),
       "moe_aux_loss test: expert_ids must hold i32 or i64 ids, found f32"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(bindError(c.sig), c.want);
}

TEST(CpuBackendTest, BindsVariadicOperands) {
  CpuBackend backend;
  AttrMap none;
  const DType f32 = DType::F32, f64 = DType::F64;
  // sum_squares: one term per operand, each of its own float type.
  BoundKernel sumsq = backend.bind(
      signatureOf("sum_squares", none, {typeOf(f32, {2}), typeOf(f64, {1})},
                  {typeOf(f32, {})}));
  std::vector<float> a = {1, 2};
  std::vector<double> b = {3};
  float sum = 0;
  void *sumPtrs[] = {a.data(), b.data(), &sum};
  sumsq(sumPtrs);
  EXPECT_EQ(sum, 14.0f);

  // dist.pack concatenates its inputs; dist.unpack splits them again.
  BoundKernel pack = backend.bind(
      signatureOf("dist.pack", none, {typeOf(f64, {2}), typeOf(f64, {3})},
                  {typeOf(f64, {5})}));
  BoundKernel unpack =
      backend.bind(signatureOf("dist.unpack", none, {typeOf(f64, {5})},
                               {typeOf(f64, {2}), typeOf(f64, {3})}));
  std::vector<double> x = {1, 2}, y = {3, 4, 5}, flat(5), x2(2), y2(3);
  void *packPtrs[] = {x.data(), y.data(), flat.data()};
  pack(packPtrs);
  EXPECT_EQ(flat, (std::vector<double>{1, 2, 3, 4, 5}));
  void *unpackPtrs[] = {flat.data(), x2.data(), y2.data()};
  unpack(unpackPtrs);
  EXPECT_EQ(x2, x);
  EXPECT_EQ(y2, y);
}

} // namespace
