//===- MeshLimits.h - How large a dist.mesh may be --------------*- C++ -*-===//
//
// The bound the dist.mesh verifier puts on the device count, and the
// structural check attribute verifiers use before reading a mesh that may
// not have been verified yet.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_MESHLIMITS_H
#define AUTOSHARD_DIALECT_DIST_IR_MESHLIMITS_H

#include <cstdint>

namespace autoshard::dist {

class MeshOp;

/// The most devices a dist.mesh may have: 2^24 = 16,777,216, far above any
/// machine, and low enough that a pass may hold a few words per device (a
/// mesh of 2^32 devices made dist-verify-comm run out of memory). Plans
/// whose world size exceeds it are refused when they are parsed.
inline constexpr int64_t kMaxMeshDevices = int64_t(1) << 24;

/// Whether `mesh` keeps the structural rules of its verifier (one size per
/// axis name, sizes >= 1, at most kMaxMeshDevices devices), so that its axis
/// and group sizes can be read. For attribute verifiers, which may run
/// before the mesh's own verifier has reported what is wrong with it.
bool isWellFormedMesh(MeshOp mesh);

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_IR_MESHLIMITS_H
