//===- HfCheckpoint.h - Hugging Face checkpoints in and out -----*- C++ -*-===//
//
// `shard-run --init-from DIR` and `--save-hf DIR` (docs/hf-checkpoints.md is
// the contract): a Hugging Face model directory (config.json plus
// model.safetensors, or model.safetensors.index.json and the shards it
// names) read into, or written from, the parameters of a running job under
// any plan.
//
// The runtime has no model knowledge. The artifact's `model` object carries
// a weight map `hf` (written by python/autoshard/models/hf.py): for every
// Hugging Face tensor, in export order, the boxes ("parts") it is made of,
// each a box of one autoshard parameter, maybe transposed (the last two
// dims swapped) and with leading unit dims squeezed away, or zeros. A model
// that has no exact Hugging Face form carries `hf_incompatible` instead.
//
// Layouts: every tensor is dense and row-major, in the file and in the
// parameter. A part maps the box [hfBegin, hfBegin + hfShape) of its
// tensor onto the parameter box that starts at paramBegin and has shape
// [1] * squeeze + (transpose ? swapLastTwo(hfShape) : hfShape): the element
// at hfBegin + r goes to paramBegin + [0] * squeeze + (transpose ?
// swapLastTwo(r) : r).
//
// Errors: a bad or missing weight map is an ArtifactError naming the
// artifact, the tensor and the part; a checkpoint that does not fit (a
// missing, extra or misshapen tensor, a dtype, a config.json value, a
// corrupt file) or that cannot be written is a CheckpointError naming the
// directory, the file and the tensor. Import and export are collective and
// agree on errors (see runAgreed): every rank throws the same
// CheckpointError (agreed = true), so a job ends with one message.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_HFCHECKPOINT_H
#define AUTOSHARD_RUNTIME_TRAIN_HFCHECKPOINT_H

#include "autoshard/runtime/Executor.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace autoshard::runtime {

/// One box of a Hugging Face tensor and where it lives in a parameter.
struct HfPart {
  /// The parameter (a Param state); empty: the box is zeros (an export
  /// writes zeros, an import checks that the checkpoint holds zeros there).
  std::string param;
  int64_t stateIndex = -1; ///< Index of `param` in Artifact::state; -1: zeros.
  std::vector<int64_t> hfBegin, hfShape; ///< The box in the tensor.
  /// Where the box starts in the parameter (squeeze + rank of the tensor
  /// coordinates; empty for zeros).
  std::vector<int64_t> paramBegin;
  int64_t squeeze = 0;    ///< Leading unit dims of the parameter box.
  bool transpose = false; ///< The last two dims are swapped.

  /// The parameter dim that tensor dim `d` maps to.
  size_t paramDim(size_t d) const;
  /// Shape of the parameter box (see the file comment).
  std::vector<int64_t> paramShape() const;
};

/// One Hugging Face tensor.
struct HfTensor {
  std::string name; ///< Full name (with the base-model prefix).
  std::vector<int64_t> shape;
  std::vector<HfPart> parts; ///< Disjoint, covering `shape` exactly.
  /// dtype of the tensor on export: its parameters' (all the same).
  DType dtype = DType::F32;
};

/// The artifact's `model.hf`, parsed and checked against its state.
struct HfWeightMap {
  std::string architecture; ///< config.json "architectures"[0].
  /// The config.json an export writes (without architectures/dtype).
  nlohmann::ordered_json config;
  /// Keys of `config` an import compares with DIR/config.json.
  std::vector<std::string> check;
  /// transformers' default of checked keys (when config.json omits one).
  nlohmann::ordered_json defaults;
  std::string prefix; ///< Base-model prefix ("transformer.", "model.").
  std::vector<std::string> ignore; ///< Name suffixes an import skips.
  std::vector<std::string> tied;   ///< Names skipped on import, not written.
  std::vector<HfTensor> tensors;   ///< In export order.
};

/// Parses and checks `artifact.modelJson`'s `hf`: types and presence of
/// every field; each tensor's name unique and its shape >= 0; each part's
/// box inside its tensor and (for a parameter) inside the parameter's
/// logical shape, of the parameter's rank, naming a Param state; the parts
/// of a tensor disjoint and covering it, of one dtype; the parts naming one
/// parameter disjoint and covering its logical shape; every parameter
/// named. Throws ArtifactError naming the artifact, the tensor and the
/// part; for an artifact with `hf_incompatible` quoting its reason; for one
/// without `hf` saying to rebuild it with the current autoshard.models.
HfWeightMap parseHfWeightMap(const Artifact &artifact);

/// What an import did (this rank's figures).
struct HfImportStats {
  std::string dir;
  int64_t tensors = 0;   ///< Tensors of the weight map.
  int64_t files = 0;     ///< safetensors files of the checkpoint.
  int64_t bytesRead = 0; ///< Tensor bytes this rank read.
  double seconds = 0;
};

/// Loads the Hugging Face checkpoint directory `dir` into the parameters of
/// `executor` (call it after initState(), or initState(true), which skips
/// the random init of the parameters: optimizer moments and the vocabulary
/// padding keep their init, zeros). Checks, on every rank and
/// before reading any tensor: the weight map (parseHfWeightMap); each
/// `check` key of the map's config against DIR/config.json (or the map's
/// default when absent; numbers numerically, everything else exactly); the
/// safetensors headers (every file of model.safetensors.index.json's
/// weight_map present, each header parsed once); every map tensor present,
/// with or without `prefix`, of its shape, of dtype F32, BF16 or F16 for an
/// F32 parameter (widened exactly) and of the parameter's dtype otherwise;
/// no other tensor besides names ending in an `ignore` suffix and `tied`
/// names. Then each rank reads with pread only the parts of the boxes that
/// meet the blocks it holds (whole row ranges in one read where
/// contiguous, else row segments, through a buffer of at most
/// `readBufferBytes`), and one rank per zero part checks that the
/// checkpoint holds zeros there. Collective. Throws CheckpointError
/// (agreed) naming the file and the tensor.
HfImportStats importHfCheckpoint(Executor &executor, const std::string &dir,
                                 int64_t readBufferBytes = 64 << 20);

/// Default shard size of an export (transformers' max_shard_size "5GB").
constexpr int64_t kHfMaxShardBytes = 5'000'000'000;

/// What an export did.
struct HfExportStats {
  std::string dir;
  int64_t tensors = 0;
  int64_t files = 0; ///< safetensors files written (1: no index).
  int64_t bytes = 0; ///< Tensor bytes written.
  double seconds = 0;
};

/// Writes the parameters of `executor` as a Hugging Face model directory
/// `dir`: the ranks gather each parameter the map needs, one at a time, in
/// the same order (memory: one gathered parameter and one Hugging Face
/// tensor beside the state, on rank 0); rank 0 writes config.json (the
/// map's config plus "architectures" and "torch_dtype"/"dtype") and
/// model.safetensors (metadata {"format": "pt"}, tensors in map order), or,
/// when the tensors hold more than `maxShardBytes`, the shards
/// model-0000i-of-0000n.safetensors and model.safetensors.index.json, into
/// `dir.tmp-<pid>`, fsyncs them and renames the directory onto `dir`
/// (replacing an earlier export there). Collective. Throws CheckpointError
/// (agreed) when any rank fails (a full disk, ...); `dir` is then
/// untouched. Call checkHfExportDir(dir) before training.
HfExportStats exportHfCheckpoint(const Executor &executor,
                                 const std::string &dir,
                                 int64_t maxShardBytes = kHfMaxShardBytes);

/// Checks that an export may be written to `dir`: its parent directory
/// exists and is writable, and `dir` is absent, an empty directory or an
/// earlier export (only config.json, model*.safetensors and
/// model.safetensors.index.json). Removes leftovers of exports to `dir`
/// that crashed (`dir.tmp-<pid>`, `dir.old-<pid>` of processes that are
/// gone). Throws CheckpointError naming the directory and the reason.
void checkHfExportDir(const std::string &dir);

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_HFCHECKPOINT_H
