//===- Goldens.h - Golden pipeline schedules for tests ----------*- C++ -*-===//
//
// Per-rank orders for p = 4, m = 8 copied verbatim from
// /work/shared/reference/algorithms.md §1.5 (produced there by a line-by-line
// re-derivation of torch schedules.py and Megatron-Core schedules.py), with
// the §1.5 unit-cost simulation figures as comments.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_UNITTESTS_PIPELINE_GOLDENS_H
#define AUTOSHARD_UNITTESTS_PIPELINE_GOLDENS_H

namespace autoshard::pipeline::goldens {

/// GPipe. Unit-cost sim: makespan=33, busy/rank=24,
/// idle/busy=0.3750, idle/makespan=0.2727; peak in-flight
/// activations [8, 8, 8, 8].
constexpr const char *kGPipe =
    "rank0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 0F7 0B0 0B1 0B2 0B3 0B4 0B5 0B6 0B7\n"
    "rank1: 1F0 1F1 1F2 1F3 1F4 1F5 1F6 1F7 1B0 1B1 1B2 1B3 1B4 1B5 1B6 1B7\n"
    "rank2: 2F0 2F1 2F2 2F3 2F4 2F5 2F6 2F7 2B0 2B1 2B2 2B3 2B4 2B5 2B6 2B7\n"
    "rank3: 3F0 3F1 3F2 3F3 3F4 3F5 3F6 3F7 3B0 3B1 3B2 3B3 3B4 3B5 3B6 3B7\n";

/// 1F1B. Unit-cost sim: makespan=33, busy/rank=24,
/// idle/busy=0.3750, idle/makespan=0.2727; peak in-flight
/// activations [4, 3, 2, 1].
constexpr const char *kOneFOneB =
    "rank0: 0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0F6 0B3 0F7 0B4 0B5 0B6 0B7\n"
    "rank1: 1F0 1F1 1F2 1B0 1F3 1B1 1F4 1B2 1F5 1B3 1F6 1B4 1F7 1B5 1B6 1B7\n"
    "rank2: 2F0 2F1 2B0 2F2 2B1 2F3 2B2 2F4 2B3 2F5 2B4 2F6 2B5 2F7 2B6 2B7\n"
    "rank3: 3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5 3F6 3B6 3F7 3B7\n";

/// Interleaved 1F1B, v=2. Unit-cost sim: makespan=57, busy/rank=48,
/// idle/busy=0.1875, idle/makespan=0.1579; peak in-flight
/// activations [11, 9, 7, 5].
constexpr const char *kInterleaved =
    "rank0: 0F0 0F1 0F2 0F3 4F0 4F1 4F2 4F3 0F4 0F5 0F6 4B0 0F7 4B1 4F4 4B2 "
    "4F5 4B3 4F6 0B0 4F7 0B1 0B2 0B3 4B4 4B5 4B6 4B7 0B4 0B5 0B6 0B7\n"
    "rank1: 1F0 1F1 1F2 1F3 5F0 5F1 5F2 5F3 1F4 5B0 1F5 5B1 1F6 5B2 1F7 5B3 "
    "5F4 1B0 5F5 1B1 5F6 1B2 5F7 1B3 5B4 5B5 5B6 5B7 1B4 1B5 1B6 1B7\n"
    "rank2: 2F0 2F1 2F2 2F3 6F0 6F1 6F2 6B0 6F3 6B1 2F4 6B2 2F5 6B3 2F6 2B0 "
    "2F7 2B1 6F4 2B2 6F5 2B3 6F6 6B4 6F7 6B5 6B6 6B7 2B4 2B5 2B6 2B7\n"
    "rank3: 3F0 3F1 3F2 3F3 7F0 7B0 7F1 7B1 7F2 7B2 7F3 7B3 3F4 3B0 3F5 3B1 "
    "3F6 3B2 3F7 3B3 7F4 7B4 7F5 7B5 7F6 7B6 7F7 7B7 3B4 3B5 3B6 3B7\n";

/// Looped BFS, v=2. Unit-cost sim: makespan=57, busy/rank=48,
/// idle/busy=0.1875, idle/makespan=0.1579; peak in-flight
/// activations [16, 16, 16, 16].
constexpr const char *kLoopedBFS =
    "rank0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 0F7 4F0 4F1 4F2 4F3 4F4 4F5 4F6 4F7 "
    "4B7 4B6 4B5 4B4 4B3 4B2 4B1 4B0 0B7 0B6 0B5 0B4 0B3 0B2 0B1 0B0\n"
    "rank1: 1F0 1F1 1F2 1F3 1F4 1F5 1F6 1F7 5F0 5F1 5F2 5F3 5F4 5F5 5F6 5F7 "
    "5B7 5B6 5B5 5B4 5B3 5B2 5B1 5B0 1B7 1B6 1B5 1B4 1B3 1B2 1B1 1B0\n"
    "rank2: 2F0 2F1 2F2 2F3 2F4 2F5 2F6 2F7 6F0 6F1 6F2 6F3 6F4 6F5 6F6 6F7 "
    "6B7 6B6 6B5 6B4 6B3 6B2 6B1 6B0 2B7 2B6 2B5 2B4 2B3 2B2 2B1 2B0\n"
    "rank3: 3F0 3F1 3F2 3F3 3F4 3F5 3F6 3F7 7F0 7F1 7F2 7F3 7F4 7F5 7F6 7F7 "
    "7B7 7B6 7B5 7B4 7B3 7B2 7B1 7B0 3B7 3B6 3B5 3B4 3B3 3B2 3B1 3B0\n";

/// ZB-H1. Unit-cost sim: makespan=27, busy/rank=24,
/// idle/busy=0.1250, idle/makespan=0.1111; peak in-flight
/// activations [4, 4, 4, 4].
constexpr const char *kZBH1 =
    "rank0: 0F0 0F1 0F2 0F3 0I0 0W0 0F4 0I1 0W1 0F5 0I2 0W2 0F6 0I3 0W3 0F7 "
    "0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7\n"
    "rank1: 1F0 1F1 1F2 1I0 1F3 1I1 1W0 1F4 1I2 1W1 1F5 1I3 1W2 1F6 1I4 1W3 "
    "1F7 1I5 1W4 1I6 1W5 1I7 1W6 1W7\n"
    "rank2: 2F0 2F1 2I0 2F2 2I1 2F3 2I2 2W0 2F4 2I3 2W1 2F5 2I4 2W2 2F6 2I5 "
    "2W3 2F7 2I6 2W4 2I7 2W5 2W6 2W7\n"
    "rank3: 3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3W0 3F4 3I4 3W1 3F5 3I5 3W2 3F6 "
    "3I6 3W3 3F7 3I7 3W4 3W5 3W6 3W7\n";

/// ZB-V. Unit-cost sim: makespan=51, busy/rank=48,
/// idle/busy=0.0625, idle/makespan=0.0588; peak in-flight
/// activations [8, 8, 8, 8].
constexpr const char *kZBV =
    "rank0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7I0 7W0 7F1 7I1 7W1 7F2 7I2 7W2 "
    "7F3 7I3 7W3 0F7 0I0 0W0 7F4 7I4 7W4 0I1 0W1 7F5 7I5 7W5 0I2 0W2 7F6 7I6 "
    "7W6 0I3 0W3 7F7 7I7 7W7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7\n"
    "rank1: 1F0 1F1 1F2 1F3 1F4 6F0 1F5 6F1 6I0 6W0 6F2 6I1 6W1 6F3 6I2 6W2 "
    "1F6 1I0 1W0 6F4 6I3 6W3 1F7 1I1 1W1 6F5 6I4 6W4 1I2 1W2 6F6 6I5 6W5 1I3 "
    "1W3 6F7 6I6 6W6 1I4 6I7 1I5 1W4 1I6 1W5 1I7 1W6 6W7 1W7\n"
    "rank2: 2F0 2F1 2F2 5F0 2F3 5F1 2F4 5F2 5I0 5W0 5F3 5I1 5W1 2F5 2I0 2W0 "
    "5F4 5I2 5W2 2F6 2I1 2W1 5F5 5I3 5W3 2F7 2I2 2W2 5F6 5I4 5W4 2I3 2W3 5F7 "
    "5I5 5W5 2I4 5I6 2I5 5I7 2I6 2W4 2I7 2W5 5W6 5W7 2W6 2W7\n"
    "rank3: 3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 4I0 4W0 3F4 3I0 3W0 4F4 4I1 4W1 "
    "3F5 3I1 3W1 4F5 4I2 4W2 3F6 3I2 3W2 4F6 4I3 4W3 3F7 3I3 3W3 4F7 4I4 4W4 "
    "3I4 4I5 3I5 4I6 3I6 4I7 3I7 3W4 4W5 4W6 4W7 3W5 3W6 3W7\n";

} // namespace autoshard::pipeline::goldens

#endif // AUTOSHARD_UNITTESTS_PIPELINE_GOLDENS_H
