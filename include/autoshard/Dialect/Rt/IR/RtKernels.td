//===- RtKernels.td - The runtime's kernel ABI -------------*- tablegen -*-===//
//
// The kernels an artifact may name (`rt.kernel`, docs/artifact-format.md):
// every tfm op (named without its prefix) and every per-rank dist op (named
// `dist.*`), with the operands, results and attributes of its ODS as rt-lower
// lowers it: a symbol-ref attribute (the mesh) is dropped, since the artifact
// has one mesh. This file adds what the ODS cannot say, as Rt_KernelAbi
// records. cmake/gen_runtime_op_table.py turns it into the plain C++ header
// runtime/include/autoshard/runtime/OpTable.h that the runtime (loader,
// binders) and rt-export share, so that op names, arities, attribute names
// and operand names are written once.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_RT_IR_RTKERNELS_TD
#define AUTOSHARD_DIALECT_RT_IR_RTKERNELS_TD

include "autoshard/Dialect/Tfm/IR/TfmOps.td"
include "autoshard/Dialect/Dist/IR/DistOps.td"

/// How the kernel of `op` differs from `op`'s ODS.
class Rt_KernelAbi<Op op_> {
  Op op = op_;
  /// Replace the ODS operands or results when set.
  dag args = ?;
  dag results = ?;
  /// Trailing operands and results an rt pass may add (each optional, in
  /// order), and the attributes it may add (optional unless required).
  dag optionalArgs = (ins);
  dag optionalResults = (outs);
  dag extraAttrs = (ins);
  /// The fewest operands (results) of the variadic group, where the op's
  /// verifier asks for more than the ODS's 0.
  int minVariadicArgs = 0;
  int minVariadicResults = 0;
}

/// The ops that are no kernel: the mesh, and the global-shape sharding ops
/// that dist-partition removes.
class Rt_NotKernels<list<Op> ops_> {
  list<Op> ops = ops_;
}
def Rt_GlobalOnlyOps
    : Rt_NotKernels<[Dist_MeshOp, Dist_ShardingConstraintOp, Dist_ReshardOp]>;

// rt-fuse-epilogues: the addend (a bias, or gelu_grad's pre-activation) as
// a third argument; gelu's pre-activation as a second result.
def : Rt_KernelAbi<Tfm_MatmulOp> {
  let optionalArgs = (ins Tfm_FloatTensor:$addend);
  let optionalResults = (outs Tfm_FloatTensor:$preact);
  let extraAttrs = (ins OptionalAttr<StrAttr>:$epilogue,
                        UnitAttr:$tanh_approx);
}

def : Rt_KernelAbi<Tfm_SumSquaresOp> { let minVariadicArgs = 1; }
def : Rt_KernelAbi<Dist_PackOp> { let minVariadicArgs = 1; }
def : Rt_KernelAbi<Dist_UnpackOp> { let minVariadicResults = 1; }

// rt-lower: a `dist.*_start` kernel writes the results of its blocking form
// (the value its `dist.wait` yields) and carries the `handle` number that
// pairs it with the wait.
class Rt_AsyncKernel<Op start, Op blocking> : Rt_KernelAbi<start> {
  let results = blocking.results;
  let extraAttrs = (ins I64Attr:$handle);
}
def : Rt_AsyncKernel<Dist_AllReduceStartOp, Dist_AllReduceOp>;
def : Rt_AsyncKernel<Dist_AllGatherStartOp, Dist_AllGatherOp>;
def : Rt_AsyncKernel<Dist_ReduceScatterStartOp, Dist_ReduceScatterOp>;
def : Rt_AsyncKernel<Dist_AllToAllStartOp, Dist_AllToAllOp>;
def : Rt_AsyncKernel<Dist_BroadcastStartOp, Dist_BroadcastOp>;
def : Rt_AsyncKernel<Dist_PpermuteStartOp, Dist_PpermuteOp>;
def : Rt_AsyncKernel<Dist_SendStartOp, Dist_SendOp>;
def : Rt_AsyncKernel<Dist_RecvStartOp, Dist_RecvOp>;

// `dist.wait` reads the args and results of its start (its operands stay
// live until it) and writes the results again, if any.
def : Rt_KernelAbi<Dist_WaitOp> {
  let args = (ins Variadic<AnyType>:$buffers);
  let extraAttrs = (ins I64Attr:$handle);
}

#endif // AUTOSHARD_DIALECT_RT_IR_RTKERNELS_TD
