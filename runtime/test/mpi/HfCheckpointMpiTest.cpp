//===- HfCheckpointMpiTest.cpp - HF import/export on 4 ranks --------------===//
//
// Run under mpiexec -n 4. The hand-made artifact of HfTestUtil.h under a
// [pp=2, tp=2] plan: its Hugging Face export (one file, and sharded) is
// byte for byte the export of the 1-rank artifact holding the same values;
// an import gives every rank its blocks; an error seen by one rank (a zero
// part that is not zero, a write failure on rank 0) ends every rank with
// the same agreed CheckpointError instead of a hang.
//
//===----------------------------------------------------------------------===//

#include "HfTestUtil.h"

#include "MpiTestMain.h"

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/mpi/MpiWorld.h"
#include "autoshard/runtime/train/Checkpoint.h"
#include "autoshard/runtime/train/HfCheckpoint.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>

using namespace autoshard::runtime;
using namespace autoshard::runtime::hftest;
namespace fs = std::filesystem;

namespace {

CommWorld *gWorld = nullptr;

/// The 4-rank plan, with its communicators.
struct Plan {
  Artifact a =
      parse(makeArtifact(testState(2, 2), testMap(), {"pp", "tp"}, {2, 2}));
  CpuBackend backend;
  CommContext comm{a, *gWorld};
  std::unique_ptr<Executor> ex;
  Plan() {
    ExecutorOptions o;
    o.comm = &comm;
    ex = std::make_unique<Executor>(a, backend, o);
    ex->initState();
  }
  /// Every rank waits for every other.
  void barrier() {
    runAgreed(*ex, [] {});
  }
};

std::string dirNamed(const std::string &name) {
  return ::testing::TempDir() + "/hf-mpi-" + name;
}

/// Rank 0 exports the 1-rank artifact's test values to `dir`.
void exportOneRank(const std::string &dir, int64_t maxShard) {
  if (gWorld->rank() != 0)
    return;
  Artifact one = parse(makeArtifact(testState(), testMap()));
  CpuBackend backend;
  Executor ex(one, backend);
  ex.initState();
  setTestValues(ex);
  fs::remove_all(dir);
  exportHfCheckpoint(ex, dir, maxShard);
}

TEST(HfMpi, ExportEqualsTheOneRankExport) {
  ASSERT_EQ(gWorld->size(), 4);
  for (int64_t maxShard : {kHfMaxShardBytes, int64_t(130)}) {
    std::string four = dirNamed("four"), one = dirNamed("one");
    Plan p;
    if (gWorld->rank() == 0)
      fs::remove_all(four);
    setTestValues(*p.ex);
    HfExportStats st = exportHfCheckpoint(*p.ex, four, maxShard);
    EXPECT_EQ(st.tensors, 9);
    exportOneRank(one, maxShard);
    if (gWorld->rank() == 0) {
      std::vector<std::string> names;
      for (const fs::directory_entry &e : fs::directory_iterator(one))
        names.push_back(e.path().filename().string());
      EXPECT_EQ(names.size(), maxShard == 130 ? 7u : 2u);
      for (const std::string &n : names)
        EXPECT_EQ(readFile(four + "/" + n), readFile(one + "/" + n)) << n;
    }
    p.barrier();
  }
}

TEST(HfMpi, ImportGivesEachRankItsBlocks) {
  std::string dir = dirNamed("import");
  exportOneRank(dir, 130); // sharded, with an index
  Plan p;
  p.barrier();
  importHfCheckpoint(*p.ex, dir);
  const Artifact &a = p.a;
  for (size_t k = 0; k < a.state.size(); ++k) {
    const StateSpec &s = a.state[k];
    if (!p.ex->holdsState(s.name))
      continue;
    std::vector<float> want =
        s.kind == StateKind::Param
            ? blockValues(a, s, p.ex->rank(), globalValues(s, k))
            : std::vector<float>(numel(s.type.shape), 0.0f);
    EXPECT_EQ(p.ex->readStateAs<float>(s.name), want) << s.name;
  }
}

TEST(HfMpi, OneRanksErrorIsEveryRanks) {
  std::string dir = dirNamed("agree");
  exportOneRank(dir, kHfMaxShardBytes);
  if (gWorld->rank() == 0) { // a non-zero value where the model has zeros
    std::string path = dir + "/model.safetensors";
    std::vector<HfData> t = readTensors(path);
    for (HfData &d : t)
      if (d.name == "m.attn.c_attn.bias")
        d.bytes[3] = 0x3f; // 0.5 in the first element
    writeTensors(path, t);
  }
  Plan p;
  p.barrier();
  std::string err;
  try {
    importHfCheckpoint(*p.ex, dir); // only rank 0 checks the zero part
  } catch (const CheckpointError &e) {
    EXPECT_TRUE(e.agreed);
    err = e.what();
  }
  EXPECT_NE(err.find("rank 0: '" + dir +
                     "/model.safetensors': tensor "
                     "'m.attn.c_attn.bias' holds 0.500000 at [0]"),
            std::string::npos)
      << err;

  // A write failure on rank 0 stops every rank at the next gather.
  std::string out = dirNamed("full");
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old;
  getrlimit(RLIMIT_FSIZE, &old);
  if (gWorld->rank() == 0) {
    fs::remove_all(out);
    rlimit small = old;
    small.rlim_cur = 300;
    setrlimit(RLIMIT_FSIZE, &small);
  }
  err.clear();
  try {
    exportHfCheckpoint(*p.ex, out);
  } catch (const CheckpointError &e) {
    EXPECT_TRUE(e.agreed);
    err = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_NE(err.find("failed on rank 0: "), std::string::npos) << err;
  EXPECT_NE(err.find("File too large"), std::string::npos) << err;
  if (gWorld->rank() == 0) {
    EXPECT_FALSE(fs::exists(out));
  }
  p.barrier();
}

} // namespace

int main(int argc, char **argv) {
  return autoshard::runtime::test::runMpiTests(argc, argv, gWorld);
}
