//===- PhiloxTest.cpp - Philox-4x32-10 known-answer tests -----------------===//

#include "autoshard/runtime/Philox.h"

#include <gtest/gtest.h>

using namespace autoshard::runtime;

namespace {

void expectBlock(PhiloxBlock got, uint32_t w0, uint32_t w1, uint32_t w2,
                 uint32_t w3) {
  EXPECT_EQ(got.word[0], w0);
  EXPECT_EQ(got.word[1], w1);
  EXPECT_EQ(got.word[2], w2);
  EXPECT_EQ(got.word[3], w3);
}

// Known-answer vectors of Random123's kat_vectors (philox4x32, 10 rounds).
TEST(PhiloxTest, KnownAnswerZero) {
  expectBlock(philox4x32_10(PhiloxBlock{{0, 0, 0, 0}}, PhiloxKey{{0, 0}}),
              0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u);
}

TEST(PhiloxTest, KnownAnswerAllOnes) {
  expectBlock(philox4x32_10(PhiloxBlock{{0xffffffffu, 0xffffffffu, 0xffffffffu,
                                         0xffffffffu}},
                            PhiloxKey{{0xffffffffu, 0xffffffffu}}),
              0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu);
}

TEST(PhiloxTest, KnownAnswerPi) {
  expectBlock(philox4x32_10(PhiloxBlock{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu,
                                         0x03707344u}},
                            PhiloxKey{{0xa4093822u, 0x299f31d0u}}),
              0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u);
}

TEST(PhiloxTest, KeyFromSeedIsLowWordFirst) {
  PhiloxKey key = philoxKey(0x0123456789abcdefull);
  EXPECT_EQ(key.word[0], 0x89abcdefu);
  EXPECT_EQ(key.word[1], 0x01234567u);
}

TEST(PhiloxTest, Uniform24IsExactAndInUnitInterval) {
  EXPECT_EQ(uniform24(0), 0.0f);
  EXPECT_EQ(uniform24(0xffffffffu), 1.0f - 1.0f / 16777216.0f);
  EXPECT_EQ(uniform24(0x80000000u), 0.5f);
}

} // namespace
