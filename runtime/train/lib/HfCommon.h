//===- HfCommon.h - What Hugging Face import and export share ---*- C++ -*-===//
//
// Internal to HfWeightMap.cpp, HfImport.cpp and HfExport.cpp: the boxes of
// a part and the names of the files of a Hugging Face model directory.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_LIB_HFCOMMON_H
#define AUTOSHARD_RUNTIME_TRAIN_LIB_HFCOMMON_H

#include "CheckpointCommon.h"

#include "autoshard/runtime/train/HfCheckpoint.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace autoshard::runtime::hf {

inline constexpr const char *kConfig = "config.json";
inline constexpr const char *kSingleFile = "model.safetensors";
inline constexpr const char *kIndex = "model.safetensors.index.json";

/// The logical shape of `s` (its global shape when it has no padding).
const std::vector<int64_t> &logicalShape(const StateSpec &s);
/// The box of parameter `p.param` that part `p` maps to.
checkpoint::Box paramBox(const HfPart &p);
/// The box of its tensor that part `p` covers.
checkpoint::Box hfBox(const HfPart &p);
/// "[0:768, 768:1536]", for messages.
std::string boxStr(const checkpoint::Box &b);

/// Calls tile(i0, i1, j0, j1) for each 64 x 64 tile [i0, i1) x [j0, j1) of
/// a rows x cols plane: a transposing copy done tile by tile keeps both
/// sides in cache (a column walk of a large matrix does not).
template <typename Tile>
void forEachTile(int64_t rows, int64_t cols, Tile tile) {
  constexpr int64_t kTile = 64;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile)
      tile(i0, std::min(rows, i0 + kTile), j0, std::min(cols, j0 + kTile));
}

} // namespace autoshard::runtime::hf

#endif // AUTOSHARD_RUNTIME_TRAIN_LIB_HFCOMMON_H
