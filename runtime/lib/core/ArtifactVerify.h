//===- ArtifactVerify.h - Cross-reference checks of an artifact -*- C++ -*-===//

#ifndef AUTOSHARD_RUNTIME_LIB_CORE_ARTIFACTVERIFY_H
#define AUTOSHARD_RUNTIME_LIB_CORE_ARTIFACTVERIFY_H

#include "autoshard/runtime/Artifact.h"

namespace autoshard::runtime::detail {

/// Checks everything that relates two parts of a parsed artifact: buffer
/// ids, aliases, argument and call types, frame bounds, entry slots, the
/// memory totals, the absence of recursion and of overlapping live
/// transient buffers, def-before-use over every instruction stream (calls
/// included) and that every entry writes each of its outputs; resolves each
/// entry slot's buffer id. Throws ArtifactError.
void verifyArtifact(Artifact &artifact);

} // namespace autoshard::runtime::detail

#endif // AUTOSHARD_RUNTIME_LIB_CORE_ARTIFACTVERIFY_H
