//===- StagePartitionTest.cpp - Cost-balanced layer-to-stage split --------===//

#include "autoshard/Pipeline/StagePartition.h"

#include "gtest/gtest.h"

using namespace autoshard::pipeline;

namespace {

std::vector<int64_t> firstLayers(const std::vector<double> &costs, double first,
                                 double last, int64_t stages) {
  OrError<StagePartition> partition =
      partitionLayers(costs, first, last, stages);
  EXPECT_TRUE(partition) << partition.error();
  return partition ? partition->firstLayer : std::vector<int64_t>{};
}

TEST(StagePartition, EqualLayersSplitEvenly) {
  std::vector<double> four(4, 1.0), twelve(12, 1.0);
  EXPECT_EQ(firstLayers(four, 0, 0, 2), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(firstLayers(four, 0, 0, 4), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(firstLayers(twelve, 0, 0, 3), (std::vector<int64_t>{0, 4, 8}));
  // An uneven count: the earlier stages take the remainder (like
  // layer * S / L), so 5 layers on 2 stages are 3 + 2.
  EXPECT_EQ(firstLayers(std::vector<double>(5, 1.0), 0, 0, 2),
            (std::vector<int64_t>{0, 3}));
}

TEST(StagePartition, SmallExtrasKeepTheEvenSplit) {
  // nanoGPT-like: the head costs a tenth of a layer; the even split's
  // largest stage (2 layers + head) cannot be beaten with >= 1 layer each.
  EXPECT_EQ(firstLayers(std::vector<double>(4, 10.0), 0.5, 1.0, 2),
            (std::vector<int64_t>{0, 2}));
}

TEST(StagePartition, HeavyHeadMovesLayersOffTheLastStage) {
  // GPT-2 124M at seq 1024: the LM head + loss cost ~4.5 layers. On 4
  // stages the last stage keeps one layer and the others share the rest.
  std::vector<double> layers(12, 17.0);
  OrError<StagePartition> partition = partitionLayers(layers, 0, 77.0, 4);
  ASSERT_TRUE(partition) << partition.error();
  EXPECT_EQ(partition->firstLayer, (std::vector<int64_t>{0, 4, 8, 11}));
  EXPECT_DOUBLE_EQ(partition->stageCost[3], 17.0 + 77.0);
  EXPECT_DOUBLE_EQ(partition->stageCost[0], 4 * 17.0);
  EXPECT_EQ(partition->stageOf(0), 0);
  EXPECT_EQ(partition->stageOf(7), 1);
  EXPECT_EQ(partition->stageOf(10), 2);
  EXPECT_EQ(partition->stageOf(11), 3);
}

TEST(StagePartition, MinimizesTheLargestStage) {
  // Brute force over all splits of 7 uneven layers into 3 stages.
  std::vector<double> costs{5, 1, 1, 8, 2, 2, 3};
  OrError<StagePartition> partition = partitionLayers(costs, 1, 2, 3);
  ASSERT_TRUE(partition) << partition.error();
  double bestMax = 1e30;
  for (int a = 1; a < 6; ++a)
    for (int b = a + 1; b < 7; ++b) {
      double s0 = 1, s1 = 0, s2 = 2;
      for (int l = 0; l < 7; ++l)
        (l < a ? s0 : l < b ? s1 : s2) += costs[l];
      bestMax = std::min(bestMax, std::max({s0, s1, s2}));
    }
  double got = *std::max_element(partition->stageCost.begin(),
                                 partition->stageCost.end());
  EXPECT_DOUBLE_EQ(got, bestMax);
  double total = 0;
  for (double c : partition->stageCost)
    total += c;
  EXPECT_DOUBLE_EQ(total, 5 + 1 + 1 + 8 + 2 + 2 + 3 + 1 + 2);
}

TEST(StagePartition, Errors) {
  OrError<StagePartition> tooFew = partitionLayers({1, 1}, 0, 0, 3);
  ASSERT_FALSE(tooFew);
  EXPECT_NE(tooFew.error().find("3 stages need at least as many layers, "
                                "found 2"),
            std::string::npos)
      << tooFew.error();
  OrError<StagePartition> negative = partitionLayers({1, -2}, 0, 0, 1);
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.error().find("layer 1 has cost -2"), std::string::npos)
      << negative.error();
  EXPECT_FALSE(partitionLayers({1}, 0, 0, 0));
  EXPECT_FALSE(partitionLayers({1}, -1, 0, 1));
}

} // namespace
