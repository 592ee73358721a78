//===- TrainUtilsTest.cpp - Dataset, LR schedule, logs --------------------===//

#include "autoshard/runtime/train/AtomicFile.h"
#include "autoshard/runtime/train/CharDataset.h"
#include "autoshard/runtime/train/LRSchedule.h"
#include "autoshard/runtime/train/MetricsLog.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace autoshard::runtime;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/" + name;
}

TEST(CharVocab, SortedDistinctCharacters) {
  CharVocab v = CharVocab::fromText("hello world");
  EXPECT_EQ(v.size(), 8); // ' ' d e h l o r w
  EXPECT_EQ(v.encode(' '), 0);
  EXPECT_EQ(v.encode('w'), 7);
  EXPECT_EQ(v.decode(v.encode('l')), 'l');
  EXPECT_THROW(v.encode('z'), DataError);
  EXPECT_THROW(v.decode(8), std::out_of_range);
}

TEST(CharDataset, NinetyTenSplit) {
  std::string text(1000, 'a');
  for (size_t i = 0; i < text.size(); i += 7)
    text[i] = 'b';
  CharDataset d = CharDataset::fromText(text);
  EXPECT_EQ(d.tokens(Split::Train).size(), 900u);
  EXPECT_EQ(d.tokens(Split::Val).size(), 100u);
  EXPECT_EQ(d.vocab().decode(d.tokens(Split::Val)), text.substr(900));
}

TEST(CharDataset, BatchRowsIndependentOfSlicing) {
  std::string text;
  for (int i = 0; i < 5000; ++i)
    text.push_back(char('a' + (i * 31 + i / 7) % 26));
  CharDataset d = CharDataset::fromText(text);
  const int64_t seq = 16, rows = 8;
  std::vector<int32_t> ids(rows * seq), labels(rows * seq);
  d.batch(Split::Train, 1337, 5, seq, 0, rows, ids.data(), labels.data());
  // Labels are the inputs shifted by one token.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t + 1 < seq; ++t)
      EXPECT_EQ(labels[r * seq + t], ids[r * seq + t + 1]);
  // Rows 4..7 read alone (as rank 1 of dp=2 would) equal the global rows.
  std::vector<int32_t> ids2(4 * seq), labels2(4 * seq);
  d.batch(Split::Train, 1337, 5, seq, 4, 8, ids2.data(), labels2.data());
  EXPECT_TRUE(std::equal(ids2.begin(), ids2.end(), ids.begin() + 4 * seq));
  // A different step draws different windows.
  std::vector<int32_t> ids3(rows * seq), labels3(rows * seq);
  d.batch(Split::Train, 1337, 6, seq, 0, rows, ids3.data(), labels3.data());
  EXPECT_NE(ids, ids3);
}

TEST(CharDataset, OffsetsCoverTheSplit) {
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text.push_back(char('a' + i % 26));
  CharDataset d = CharDataset::fromText(text);
  std::set<int32_t> firstTokens;
  std::vector<int32_t> ids(64 * 4), labels(64 * 4);
  d.batch(Split::Val, 1, 0, 4, 0, 64, ids.data(), labels.data());
  for (int r = 0; r < 64; ++r)
    firstTokens.insert(ids[r * 4]);
  EXPECT_GT(firstTokens.size(), 15u); // uniform windows hit most letters
}

TEST(CharDataset, BadInputs) {
  EXPECT_THROW(CharDataset::load(tempPath("does-not-exist.txt")), DataError);
  std::string empty = tempPath("empty.txt");
  std::ofstream(empty).close();
  EXPECT_THROW(CharDataset::load(empty), DataError);
  CharDataset small = CharDataset::fromText("abcdefghijklmnopqrst");
  try {
    small.validate(64, 65);
    FAIL() << "expected DataError";
  } catch (const DataError &e) {
    EXPECT_NE(std::string(e.what()).find("fewer than one sequence"),
              std::string::npos)
        << e.what();
  }
  CharDataset ok = CharDataset::fromText(std::string(400, 'x') + "yz");
  EXPECT_NO_THROW(ok.validate(8, 3));
  EXPECT_THROW(ok.validate(8, 2), DataError); // vocab 3 > model vocab 2
}

TEST(LRSchedule, WarmupCosineFloor) {
  LRSchedule s{1e-3, 1e-4, 100, 2000};
  EXPECT_NEAR(s.at(0), 1e-3 / 101, 1e-12);
  EXPECT_NEAR(s.at(99), 1e-3 * 100 / 101, 1e-12);
  EXPECT_NEAR(s.at(100), 1e-3, 1e-12);
  EXPECT_NEAR(s.at(1050), 1e-4 + 0.5 * (1 + std::cos(M_PI * 0.5)) * 9e-4,
              1e-12);
  EXPECT_NEAR(s.at(2000), 1e-4, 1e-12);
  EXPECT_NEAR(s.at(5000), 1e-4, 1e-12);
  EXPECT_NO_THROW(s.validate());
  EXPECT_THROW((LRSchedule{1e-3, 2e-3, 100, 2000}.validate()),
               std::invalid_argument);
  EXPECT_THROW((LRSchedule{1e-3, 1e-4, 300, 200}.validate()),
               std::invalid_argument);
}

TEST(MetricsLog, OneJsonObjectPerLine) {
  std::string path = tempPath("metrics.jsonl");
  {
    MetricsLog log(path);
    log.write({{"step", 0}, {"train_loss", 4.17}});
    log.write({{"step", 1}, {"train_loss", 3.9}, {"val_loss", 3.95}});
  }
  std::ifstream f(path);
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(f, line))
    rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["step"], 1);
  EXPECT_DOUBLE_EQ(rows[1]["val_loss"].get<double>(), 3.95);
  EXPECT_THROW(MetricsLog("/nonexistent-dir/x.jsonl"), std::runtime_error);
}

std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(AtomicFile, TargetChangesOnlyAtCommit) {
  std::string path = tempPath("atomic.bin");
  writeFileAtomically(path, "old content");
  {
    AtomicFile f(path);
    f.write("new");
    EXPECT_EQ(readFile(path), "old content"); // not yet
    EXPECT_TRUE(std::filesystem::exists(f.tempPath()));
    // Destroyed without commit (an error in the writer): nothing changes.
  }
  EXPECT_EQ(readFile(path), "old content");
  EXPECT_FALSE(
      std::filesystem::exists(path + ".tmp-" + std::to_string(::getpid())));
  AtomicFile f(path);
  f.write("new content");
  f.commit();
  EXPECT_EQ(readFile(path), "new content");
  EXPECT_FALSE(std::filesystem::exists(f.tempPath()));
}

TEST(AtomicFile, RemovesTemporariesOfKilledWriters) {
  // A writer killed mid-write leaves `path.tmp-<pid>`; the next write of the
  // same target removes it when that pid is gone, and leaves a live
  // process's (another writer in flight) and other targets' alone.
  std::string path = tempPath("stale.bin");
  std::string dead = path + ".tmp-999999999";
  std::string live = path + ".tmp-" + std::to_string(::getppid());
  std::string other = tempPath("other.bin") + ".tmp-999999999";
  for (const std::string &f : {dead, live, other})
    writeFileAtomically(f, "partial");
  writeFileAtomically(path, "content");
  EXPECT_EQ(readFile(path), "content");
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(other));
  std::filesystem::remove(live);
  std::filesystem::remove(other);
  EXPECT_FALSE(isDeadPid(std::to_string(::getpid())));
  EXPECT_FALSE(isDeadPid("12a"));
  EXPECT_FALSE(isDeadPid(""));
  EXPECT_TRUE(isDeadPid("999999999"));
}

TEST(AtomicFile, CheckCreatableCreatesNothing) {
  std::string path = tempPath("never-created.bin");
  std::remove(path.c_str());
  checkCreatable(path);
  EXPECT_FALSE(std::filesystem::exists(path));
  try {
    checkCreatable("/nonexistent-dir/x.bin");
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()), "cannot write '/nonexistent-dir/x.bin': "
                                     "No such file or directory");
  }
  EXPECT_THROW(checkCreatable(::testing::TempDir()), std::runtime_error);
}

TEST(MetricsLog, FirstAndLastRecordsReplaceTheFileWhole) {
  std::string path = tempPath("replaced.jsonl");
  writeFileAtomically(path, "{\"earlier\":\"run\"}\n");
  {
    MetricsLog log(path);
    EXPECT_EQ(readFile(path), "{\"earlier\":\"run\"}\n"); // until a record
    log.write({{"step", 0}});
    EXPECT_EQ(readFile(path), "{\"step\":0}\n");
    log.write({{"step", 1}});
    log.writeLast({{"final", true}});
  }
  EXPECT_EQ(readFile(path), "{\"step\":0}\n{\"step\":1}\n{\"final\":true}\n");
  // A resumed run appends.
  MetricsLog resumed(path, /*append=*/true);
  resumed.write({{"step", 2}});
  EXPECT_EQ(readFile(path),
            "{\"step\":0}\n{\"step\":1}\n{\"final\":true}\n{\"step\":2}\n");
}

TEST(ChromeTrace, WritesTraceEvents) {
  ChromeTrace t;
  t.add("matmul", "compute", 0, 12.5, 0, 0);
  t.add("all_reduce", "comm", 3, 40, 0, 1);
  std::string path = tempPath("trace.json");
  t.save(path);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  ASSERT_EQ(j["traceEvents"].size(), 2u);
  EXPECT_EQ(j["traceEvents"][1]["name"], "all_reduce");
  EXPECT_EQ(j["traceEvents"][1]["ph"], "X");
  EXPECT_EQ(j["traceEvents"][1]["tid"], 1);
}

TEST(ChromeTrace, NamesTracksAndKeepsArgs) {
  ChromeTrace t;
  t.add("all_reduce", "comm", 3, 40, 0, 1, {{"bytes", 64}});
  t.add("matmul", "compute", 0, 12.5);
  t.nameThread(1, "comm");
  t.nameThread(0, "compute");
  t.nameThread(1, "comm (renamed)"); // one name per track
  std::string path = tempPath("trace-named.json");
  t.save(path);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  const nlohmann::json &ev = j["traceEvents"];
  ASSERT_EQ(ev.size(), 6u); // 2 x (thread_name, thread_sort_index) + 2
  EXPECT_EQ(ev[0]["ph"], "M");
  EXPECT_EQ(ev[0]["name"], "thread_name");
  EXPECT_EQ(ev[0]["tid"], 1);
  EXPECT_EQ(ev[0]["args"]["name"], "comm (renamed)");
  EXPECT_EQ(ev[1]["name"], "thread_sort_index");
  EXPECT_EQ(ev[2]["args"]["name"], "compute");
  EXPECT_EQ(ev[4]["args"]["bytes"], 64);
  EXPECT_FALSE(ev[5].contains("args"));
}

} // namespace
