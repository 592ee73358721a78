//===- DataParallelTest.cpp - A DP=2 artifact matches the 1-rank run ------===//
//
// Run under mpiexec -n 2. runtime/test/data/tiny-dp2.json is tiny.json with
// the batch split over a dp=2 mesh: each rank gets its row of the global
// batch, the loss seed is 1/2, gradients are all-reduced (one of them with
// the async start/wait form) and so is the loss. Every rank also runs the
// 1-rank artifact on the whole batch; losses and grad norms must agree
// step by step within 1e-5 relative (DESIGN.md §6), and so must the
// parameters after the last step.
//
//===----------------------------------------------------------------------===//

#include "MpiTestMain.h"

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/Executor.h"
#include "autoshard/runtime/mpi/MpiWorld.h"
#include "autoshard/runtime/train/CharDataset.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace autoshard::runtime;

namespace {

CommWorld *gWorld = nullptr;

std::string data(const char *name) {
  return std::string(AUTOSHARD_TEST_DATA_DIR) + "/" + name;
}

struct Step {
  float loss = 0, gradNorm = 0;
};

Step trainStep(Executor &ex, const std::vector<int32_t> &ids,
               const std::vector<int32_t> &labels, float lr, int64_t step) {
  Step out;
  ex.run("train_step",
         {{"tokens", ids.data()},
          {"labels", labels.data()},
          {"lr", &lr},
          {"step", &step}},
         {{"loss", &out.loss}, {"grad_norm", &out.gradNorm}});
  return out;
}

void expectClose(double got, double want, const std::string &what) {
  EXPECT_LE(std::fabs(got - want), 1e-5 * std::fabs(want) + 1e-7)
      << what << ": " << got << " vs " << want;
}

TEST(DataParallel, MatchesOneRankStepByStep) {
  ASSERT_EQ(gWorld->size(), 2);
  Artifact single = loadArtifact(data("tiny.json"));
  Artifact dp = loadArtifact(data("tiny-dp2.json"));
  CharDataset text = CharDataset::load(data("tiny.txt"));
  CpuBackend backend;
  Executor one(single, backend);
  CommContext comm(dp, *gWorld);
  ExecutorOptions opts;
  opts.comm = &comm;
  opts.checkMemory = true; // also: poisoned memory + NaN checks around comm
  Executor two(dp, backend, opts);
  one.initState();
  two.initState();

  int64_t batch = single.model.batch, seq = single.model.seq;
  int64_t rank = gWorld->rank();
  for (int64_t it = 0; it < 6; ++it) {
    std::vector<int32_t> ids(batch * seq), labels(batch * seq);
    text.batch(Split::Train, 1337, it, seq, 0, batch, ids.data(),
               labels.data());
    std::vector<int32_t> myIds(ids.begin() + rank * seq,
                               ids.begin() + (rank + 1) * seq);
    std::vector<int32_t> myLabels(labels.begin() + rank * seq,
                                  labels.begin() + (rank + 1) * seq);
    Step a = trainStep(one, ids, labels, 1e-2f, it + 1);
    Step b = trainStep(two, myIds, myLabels, 1e-2f, it + 1);
    expectClose(b.loss, a.loss, "loss at step " + std::to_string(it));
    expectClose(b.gradNorm, a.gradNorm,
                "grad norm at step " + std::to_string(it));
  }
  for (const StateSpec &s : single.state) {
    std::vector<float> p = one.readStateAs<float>(s.name);
    std::vector<float> q = two.readStateAs<float>(s.name);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      diff += (p[i] - q[i]) * double(p[i] - q[i]);
      norm += p[i] * double(p[i]);
    }
    EXPECT_LE(std::sqrt(diff), 1e-5 * std::sqrt(norm) + 1e-7) << s.name;
  }
}

} // namespace

int main(int argc, char **argv) {
  return autoshard::runtime::test::runMpiTests(argc, argv, gWorld);
}
