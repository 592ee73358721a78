//===- ScheduleTestUtil.h - Schedules the pipeline tests start from -*- C++
//-*-//
//
// The generated and parsed schedules that the pipeline tests run on,
// expected to be valid: a failure to build or parse one fails the test that
// asked for it (with the error) and yields an empty schedule.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_UNITTESTS_PIPELINE_SCHEDULETESTUTIL_H
#define AUTOSHARD_UNITTESTS_PIPELINE_SCHEDULETESTUTIL_H

#include "autoshard/Pipeline/Schedule.h"

#include "gtest/gtest.h"

namespace autoshard::pipeline::test {

/// buildSchedule(kind, p, m, v).
inline PipelineSchedule build(ScheduleKind kind, int64_t p, int64_t m,
                              int64_t v = 1) {
  OrError<PipelineSchedule> schedule = buildSchedule(kind, p, m, v);
  EXPECT_TRUE(schedule) << schedule.error();
  return schedule ? *schedule : PipelineSchedule();
}

/// parseSchedule(text).
inline PipelineSchedule parse(const char *text) {
  OrError<PipelineSchedule> schedule = parseSchedule(text);
  EXPECT_TRUE(schedule) << schedule.error();
  return schedule ? *schedule : PipelineSchedule();
}

} // namespace autoshard::pipeline::test

#endif // AUTOSHARD_UNITTESTS_PIPELINE_SCHEDULETESTUTIL_H
