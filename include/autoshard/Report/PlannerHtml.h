//===- PlannerHtml.h - dist-auto-plan's report as HTML ----------*- C++ -*-===//
//
// The planner's report (docs/planner.md) as one self-contained HTML page:
// the top candidates as stacked bars of compute / exposed communication /
// bubble / optimizer time and of their memory against the device, the
// candidate table, and why each rejected family lost. The same SearchResult
// the text and JSON reports print (planner::formatReport).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_REPORT_PLANNERHTML_H
#define AUTOSHARD_REPORT_PLANNERHTML_H

#include "autoshard/Planner/Cluster.h"
#include "autoshard/Planner/Planner.h"

#include "llvm/Support/raw_ostream.h"

namespace autoshard::report {

/// Writes the HTML report of a search: at most `top` candidates.
void writePlannerHtml(const planner::Cluster &cluster,
                      const planner::ModelInfo &model,
                      const planner::SearchResult &result,
                      const planner::SearchOptions &options, int64_t top,
                      llvm::raw_ostream &os);

} // namespace autoshard::report

#endif // AUTOSHARD_REPORT_PLANNERHTML_H
