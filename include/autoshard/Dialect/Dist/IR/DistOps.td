//===- DistOps.td - Distribution ops -----------------------*- tablegen -*-===//
//
// Mesh, sharding annotation and collective ops of the `dist` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTOPS_TD
#define AUTOSHARD_DIALECT_DIST_IR_DISTOPS_TD

include "autoshard/Dialect/Dist/IR/DistAttrs.td"
include "autoshard/Dialect/Dist/IR/DistDialect.td"
include "autoshard/Dialect/Dist/IR/DistInterfaces.td"
include "autoshard/Dialect/Dist/IR/DistTypes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/SymbolInterfaces.td"

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

def Dist_MeshOp : Dist_Op<"mesh", [Symbol]> {
  let summary = "a named device mesh with ordered, named axes";
  let description = [{
    Declares a device mesh. Axes are listed major to minor; device ids are
    assigned row-major, so the last axis varies fastest (tensor parallelism
    on the last axis stays inside a node). An axis of size 1 is allowed, so
    that a plan can name a degree it does not use.

    ```mlir
    dist.mesh @m [pp = 2, dp = 2, cp = 1, tp = 2]
    dist.mesh @mesh [dp = 2 : data, tp = 2 : tensor]
    ```

    Each axis may name its role (`#dist.axis_role`: data, context, tensor,
    expert, pipeline), the parallelism it carries; passes find axes by role,
    never by name. `dist-apply-plan` gives every axis of the mesh it builds
    a role. Either every axis has a role or none has.

    Rules: at least one axis, names unique, sizes at least 1, the device
    count (the product of the sizes) at most 2^24 = 16,777,216
    (`kMaxMeshDevices` in MeshLimits.h: far above any machine, and low
    enough that a pass may hold a few words per device), and a role belongs
    to at most one axis.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$axis_sizes,
                       OptionalAttr<TypedArrayAttrBase<Dist_AxisRoleAttr,
                           "one role per axis">>:$axis_roles);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of axes.
    unsigned getNumAxes() { return getAxisSizes().size(); }
    /// Position of `axis` in the mesh, if it is one of its axes.
    std::optional<unsigned> getAxisIndex(::llvm::StringRef axis);
    /// Size of `axis`; it must be one of the mesh's axes.
    int64_t getAxisSize(::llvm::StringRef axis);
    /// Role of `axis`; nullopt if it is not an axis of the mesh or the mesh
    /// gives no roles.
    std::optional<AxisRole> getAxisRole(::llvm::StringRef axis);
    /// True if `axis` is the mesh's axis of role `role`.
    bool hasAxisRole(::llvm::StringRef axis, AxisRole role) {
      return getAxisRole(axis) == role;
    }
    /// The axis of role `role`; null if the mesh has none.
    ::mlir::StringAttr getAxisWithRole(AxisRole role);
    /// Total number of devices (product of all axis sizes). The mesh must
    /// verify (which guarantees that the product fits in int64).
    int64_t getNumDevices();
    /// Size of the device group spanned by `axes` (product of their sizes);
    /// every element must be a StringAttr naming an axis of the mesh, and
    /// the mesh must verify.
    int64_t getGroupSize(::llvm::ArrayRef<::mlir::Attribute> axes);
    int64_t getGroupSize(::mlir::ArrayAttr axes) {
      return getGroupSize(axes.getValue());
    }
    /// As getGroupSize, for verifiers that may see a mesh that does not
    /// verify: reports through `emitError` and fails if an axis of `axes`
    /// has a size below 1 or the product does not fit in int64.
    ::mlir::FailureOr<int64_t>
    verifyGroupSize(::llvm::ArrayRef<::mlir::Attribute> axes,
                    ::llvm::function_ref<::mlir::InFlightDiagnostic()>
                        emitError);
    /// Coordinates (one per axis) of device `device`, row-major.
    ::llvm::SmallVector<int64_t> getDeviceCoords(int64_t device);
    /// Inverse of getDeviceCoords.
    int64_t getDeviceId(::llvm::ArrayRef<int64_t> coords);
    /// Index of `device` within its group over `axes`: its coordinates on
    /// `axes`, linearised in the listed order (first = major).
    int64_t getIndexInGroup(int64_t device, ::mlir::ArrayAttr axes);
    /// Devices of the group over `axes` that contains `device` (those whose
    /// coordinates differ from its only on `axes`), ordered by their index
    /// in the group.
    ::llvm::SmallVector<int64_t> getDeviceGroup(int64_t device,
                                                ::mlir::ArrayAttr axes);
  }];
}

//===----------------------------------------------------------------------===//
// Sharding annotations (global shapes)
//===----------------------------------------------------------------------===//

// Ops that will become communication: ordered among themselves and never
// merged or dropped by CSE/DCE (a ZeRO-3 all-gather is redone at each use).
def Dist_CommResource : Resource<"::autoshard::dist::CommunicationResource">;
defvar Dist_Communicates =
    MemoryEffects<[MemRead<Dist_CommResource>, MemWrite<Dist_CommResource>]>;

// The sharding prints without its `#dist.sharding` prefix, as in Shardy: a
// qualified attribute before `:` would be ambiguous with an attribute type.
class Dist_ShardingOpBase<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits, [
        SameOperandsAndResultType,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  // `ragged_dim` (optional): along that dim the value is a ragged tensor
  // padded with zeros -- for each index of the dims before it, its valid
  // rows, then zero rows (the MoE capacity buffers `[E, B, C, H]` with
  // ragged_dim = 2). dist-partition marks every `dist.all_to_all` that moves
  // the value between the two shardings with it, so that it sends only the
  // leading rows up to the last nonzero one of each slot.
  let arguments = (ins AnyRankedTensor:$input, Dist_ShardingAttr:$sharding,
                       OptionalAttr<I64Attr>:$ragged_dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `to` $sharding (`ragged_dim` `=` $ragged_dim^)? attr-dict `:`
    type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input,
                   "::autoshard::dist::ShardingAttr":$sharding), [{
      build($_builder, $_state, input.getType(), input, sharding,
            /*ragged_dim=*/::mlir::IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return verifyRaggedDim(getOperation(), getRaggedDim(),
                             getInput().getType());
    }
    ::mlir::LogicalResult
    $cppClass::verifySymbolUses(::mlir::SymbolTableCollection &symbolTable) {
      return verifyShardingUse(getOperation(), getSharding(),
                               getInput().getType(), symbolTable);
    }
  }];
}

// A `[{...}]` block cannot contain "}]", which the sharding syntax needs: such
// examples close the block and splice "}]" in as a plain string.
def Dist_ShardingConstraintOp
    : Dist_ShardingOpBase<"sharding_constraint", [Pure]> {
  let summary = "pins the sharding of a global tensor at this point";
  let description = [{
    Returns its operand unchanged, and tells `dist-propagate` that the value
    must have `sharding` here: propagation honours it and inserts resharding
    around it if its neighbours prefer another layout. It disappears during
    partitioning.

    ```mlir
    dist.mesh @m [dp = 2, tp = 4]
    %y = dist.sharding_constraint %x to <@m, [{dp}, {tp}] # "}]" # [{>
        : tensor<16x128xf32>
    ```

    Rules: the sharding verifies against the mesh and the operand type
    (axes exist, rank matches, dims divisible).
  }];
}

def Dist_ReshardOp : Dist_ShardingOpBase<"reshard", [Dist_Communicates]> {
  let summary = "explicit change of a global tensor's layout";
  let description = [{
    The result is the operand, laid out as `sharding`; the operand keeps the
    sharding it has. `dist-partition` lowers it to the collectives that move
    between the two layouts (e.g. a partial operand resharded to a split dim
    becomes one `dist.reduce_scatter`).

    ```mlir
    dist.mesh @m [dp = 2, tp = 4]
    %y = dist.reshard %x to <@m, [{dp, tp}, {}] # "}]" # [{>
        : tensor<16x128xf32>
    ```

    Rules: as for `dist.sharding_constraint`.
  }];
}

//===----------------------------------------------------------------------===//
// Collectives (per-rank shapes)
//===----------------------------------------------------------------------===//

// Base of every collective and point-to-point op. `async` selects the
// `*_start` form, whose single result is a `!dist.async` handle instead of
// the tensor. Both forms share their verification: `verifyShapes` (one C++
// function per collective kind, defined by the subclass) runs in `verify`
// with the group-independent rules and again in `verifySymbolUses`, once the
// mesh gives the group size. `commKind` is the op's CommKind case and
// `startOp` the C++ class of its `*_start` form (CommOpInterface).
class Dist_CommOp<string mnemonic, bit async, string commKind, string startOp,
                  list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits, [
        Dist_Communicates, Dist_CommOpInterface,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>],
        !if(async, [Dist_AsyncCommunication], []))> {
  dag commonArgs = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  // The mesh and its axes, printed bare: `on @m axes = [dp, tp]`.
  string axesFormat = "`on` $mesh `axes` `=` custom<MeshAxes>($axes)";
  let hasVerifier = 1;
  code commonDecls = [{
    /// Checks the shape rules of this op's collective kind; the rules that
    /// depend on the device group only when `groupSize` is given.
    ::mlir::LogicalResult verifyShapes(std::optional<int64_t> groupSize);
    /// True for the asynchronous `*_start` form.
    static constexpr bool isAsync() { return }] # !if(async, "true", "false")
        # [{; }
    /// What the op communicates.
    static ::autoshard::dist::CommKind getCommKind() {
      return ::autoshard::dist::CommKind::}] # commKind # [{;
    }
    /// The name of the op's `*_start` form.
    static ::llvm::StringRef getStartOpName();
  }];
  code commonDefs = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return verifyCommOp(*this);
    }
    ::mlir::LogicalResult
    $cppClass::verifySymbolUses(::mlir::SymbolTableCollection &symbolTable) {
      return verifyCommOpSymbolUses(*this, symbolTable);
    }
    ::llvm::StringRef $cppClass::getStartOpName() {
      return }] # startOp # [{::getOperationName();
    }
  }];
  let extraClassDeclaration = commonDecls;
}

// A collective with an operand tensor and a result tensor (or, async, a
// handle to one). `rules` is the C++ call that checks the kind's shape rules.
class Dist_CollectiveOp<string mnemonic, bit async, string commKind,
                        string startOp, dag kindArgs, string kindFormat,
                        string rules>
    : Dist_CommOp<mnemonic, async, commKind, startOp> {
  let arguments = !con((ins AnyStaticShapeTensor:$input), commonArgs,
                       kindArgs);
  let results = !if(async, (outs Dist_AsyncType:$handle),
                           (outs AnyStaticShapeTensor:$result));
  let assemblyFormat = "$input " # axesFormat # " " # kindFormat #
      " attr-dict `:` type($input) `->` type(results)";
  let extraClassDeclaration = commonDecls # [{
    /// The tensor this collective produces (for `*_start`, once waited).
    ::mlir::RankedTensorType getResultTensorType() {
      return }] # !if(async,
          "::llvm::cast<AsyncType>(getHandle().getType()).getTensorType();",
          "::llvm::cast<::mlir::RankedTensorType>(getResult().getType());") # [{
    }
  }];
  let extraClassDefinition = commonDefs # [{
    ::mlir::LogicalResult
    $cppClass::verifyShapes(std::optional<int64_t> groupSize) {
      return }] # rules # [{;
    }
  }];
}

// The blocking and the `_start` op of one collective kind. `startExample` is
// the `_start` op's example (the blocking example's op, started and waited
// on), written indented by 6 like the descriptions and ending right after its
// last line, so that it can be dedented into the generated code block.
multiclass Dist_Collective<string mnemonic, string commKind, dag kindArgs,
                           string kindFormat, string rules, string summaryText,
                           string descriptionText, string startExample> {
  // The C++ class of the `_start` op (`Dist_AllReduceStartOp` is
  // `AllReduceStartOp`).
  defvar startOp = !subst("Dist_", "", NAME) # "StartOp";
  def Op : Dist_CollectiveOp<mnemonic, 0, commKind, startOp, kindArgs,
                             kindFormat, rules> {
    let summary = summaryText;
    let description = descriptionText;
  }
  def StartOp : Dist_CollectiveOp<mnemonic # "_start", 1, commKind, startOp,
                                   kindArgs, kindFormat, rules> {
    let summary = "asynchronous `dist." # mnemonic # "`";
    let description = "Starts a `dist." # mnemonic # "` and returns a handle; "
        # "`dist.wait` on the handle yields the collective's result. Same "
        # "attributes and rules as `dist." # mnemonic # "`, with the result "
        # "type wrapped in `!dist.async`; the operand must not be "
        # "overwritten before the wait.\n\n"
        # "```mlir" # !subst("\n      ", "\n", startExample) # "\n```";
  }
}

defm Dist_AllReduce : Dist_Collective<"all_reduce", "AllReduce",
    (ins Dist_ReductionKindAttr:$reduction), "`reduction` `=` custom<Reduction>($reduction)",
    "verifyAllReduce(getOperation(), getInput().getType(), "
    "getResultTensorType())",
    "reduce a tensor over a device group, result on every member",
    [{
      Every device of the group (the devices whose coordinates differ only
      on `axes`) contributes its `input`; each receives the element-wise
      `reduction` of all contributions.

      ```mlir
      dist.mesh @m [dp = 2, tp = 4]
      %r = dist.all_reduce %x on @m axes = [tp] reduction = sum
          : tensor<8x128xf32> -> tensor<8x128xf32>
      ```

      Rules: result type equals operand type; `axes` non-empty, without
      repeats, and axes of the mesh.
    }], [{
      dist.mesh @m [dp = 2, tp = 4]
      %h = dist.all_reduce_start %x on @m axes = [tp] reduction = sum
          : tensor<8x128xf32> -> !dist.async<tensor<8x128xf32>>
      // Compute that does not need %h's result overlaps the collective.
      %r = dist.wait %h : !dist.async<tensor<8x128xf32>>}]>;

defm Dist_AllGather : Dist_Collective<"all_gather", "AllGather",
    (ins I64Attr:$gather_dim), "`gather_dim` `=` $gather_dim",
    "verifyAllGather(getOperation(), groupSize, getInput().getType(), "
    "getResultTensorType(), getGatherDim())",
    "concatenate the group's tensors along a dim, result on every member",
    [{
      The result is the concatenation along `gather_dim` of the operands of
      every device of the group, in group order: the group index of a device
      is its coordinates on `axes` linearised in the listed order (first axis
      major). So gathering a dim sharded `{dp, tp}` uses `axes = [dp, tp]`.

      ```mlir
      dist.mesh @m [dp = 2, tp = 4]
      %g = dist.all_gather %x on @m axes = [dp, tp] gather_dim = 0
          : tensor<2x128xf32> -> tensor<16x128xf32>
      ```

      Rules: same rank and element type; `gather_dim` is a dim of the
      operand; result dim `gather_dim` = operand dim × group size, the other
      dims equal.
    }], [{
      dist.mesh @m [dp = 2, tp = 4]
      %h = dist.all_gather_start %x on @m axes = [dp, tp] gather_dim = 0
          : tensor<2x128xf32> -> !dist.async<tensor<16x128xf32>>
      // Compute that does not need %h's result overlaps the collective.
      %r = dist.wait %h : !dist.async<tensor<16x128xf32>>}]>;

defm Dist_ReduceScatter : Dist_Collective<"reduce_scatter", "ReduceScatter",
    (ins I64Attr:$scatter_dim, Dist_ReductionKindAttr:$reduction),
    "`scatter_dim` `=` $scatter_dim `reduction` `=` custom<Reduction>($reduction)",
    "verifyReduceScatter(getOperation(), groupSize, getInput().getType(), "
    "getResultTensorType(), getScatterDim())",
    "reduce over a device group, each member keeps one slice",
    [{
      Reduces the operands of the group element-wise with `reduction`, splits
      the reduced tensor along `scatter_dim` into group-size equal slices and
      gives slice `i` to the device with group index `i` (see
      `dist.all_gather` for the group order).

      ```mlir
      dist.mesh @m [dp = 2, tp = 4]
      %s = dist.reduce_scatter %x on @m axes = [tp] scatter_dim = 1
          reduction = sum : tensor<8x128xf32> -> tensor<8x32xf32>
      ```

      Rules: same rank and element type; `scatter_dim` is a dim of the
      operand and divisible by the group size; result dim `scatter_dim` =
      operand dim / group size, the other dims equal.
    }], [{
      dist.mesh @m [dp = 2, tp = 4]
      %h = dist.reduce_scatter_start %x on @m axes = [tp] scatter_dim = 1
          reduction = sum
          : tensor<8x128xf32> -> !dist.async<tensor<8x32xf32>>
      // Compute that does not need %h's result overlaps the collective.
      %r = dist.wait %h : !dist.async<tensor<8x32xf32>>}]>;

defm Dist_AllToAll : Dist_Collective<"all_to_all", "AllToAll",
    (ins I64Attr:$split_dim, I64Attr:$concat_dim,
         OptionalAttr<I64Attr>:$ragged_dim),
    "`split_dim` `=` $split_dim `concat_dim` `=` $concat_dim "
    "(`ragged_dim` `=` $ragged_dim^)?",
    "verifyAllToAll(getOperation(), groupSize, getInput().getType(), "
    "getResultTensorType(), getSplitDim(), getConcatDim(), getRaggedDim())",
    "exchange slices between all members of a device group",
    [{
      Each device splits its operand along `split_dim` into group-size
      slices and sends slice `j` to the device with group index `j`; each
      device concatenates what it receives along `concat_dim`, in group order.
      This is MoE token dispatch/combine and Ulysses' heads/sequence swap.

      ```mlir
      dist.mesh @m [dp = 2, ep = 4]
      %a = dist.all_to_all %x on @m axes = [ep] split_dim = 0 concat_dim = 1
          : tensor<8x16xf32> -> tensor<2x64xf32>
      ```

      With `ragged_dim` the operand is a ragged tensor padded with zeros
      along that dim (MoE capacity buffers `[E, B, C, H]`, ragged_dim = 2):
      for each index of the dims before `ragged_dim` (a slot), only the
      leading rows up to the last one with a nonzero byte are sent, after an
      exchange of those counts, and the result is zero-filled past them
      (`MPI_Alltoallv`; NCCL grouped send/recv). The result is the same as
      without it, bit for bit, whatever the values; it moves the rows in use
      rather than the whole capacity.

      ```mlir
      %b = dist.all_to_all %buf on @m axes = [ep] split_dim = 0 concat_dim = 1
          ragged_dim = 2 : tensor<8x4x16x64xf32> -> tensor<2x16x16x64xf32>
      ```

      Rules: same rank and element type; both dims are dims of the operand;
      `split_dim` is divisible by the group size; result `split_dim` =
      operand / group size and result `concat_dim` = operand × group size
      (both apply when they are the same dim, which leaves it unchanged), the
      other dims equal; `ragged_dim`, when set, is a dim after both.
    }], [{
      dist.mesh @m [dp = 2, ep = 4]
      %h = dist.all_to_all_start %x on @m axes = [ep] split_dim = 0 concat_dim = 1
          : tensor<8x16xf32> -> !dist.async<tensor<2x64xf32>>
      // Compute that does not need %h's result overlaps the collective.
      %r = dist.wait %h : !dist.async<tensor<2x64xf32>>}]>;

defm Dist_Broadcast : Dist_Collective<"broadcast", "Broadcast",
    (ins I64Attr:$root), "`root` `=` $root",
    "verifyBroadcast(getOperation(), groupSize, getInput().getType(), "
    "getResultTensorType(), getRoot())",
    "copy one member's tensor to every member of a device group",
    [{
      Every device of the group receives the operand of the device whose
      group index is `root` (see `dist.all_gather` for the group order).

      ```mlir
      dist.mesh @m [pp = 2, dp = 4]
      %b = dist.broadcast %x on @m axes = [dp] root = 0
          : tensor<128xf32> -> tensor<128xf32>
      ```

      Rules: result type equals operand type; 0 <= `root` < group size.
    }], [{
      dist.mesh @m [pp = 2, dp = 4]
      %h = dist.broadcast_start %x on @m axes = [dp] root = 0
          : tensor<128xf32> -> !dist.async<tensor<128xf32>>
      // Compute that does not need %h's result overlaps the collective.
      %r = dist.wait %h : !dist.async<tensor<128xf32>>}]>;

defm Dist_Ppermute : Dist_Collective<"ppermute", "Ppermute",
    (ins DenseI64ArrayAttr:$pairs), "`pairs` `=` custom<Pairs>($pairs)",
    "verifyPpermute(getOperation(), groupSize, getInput().getType(), "
    "getResultTensorType(), getPairs())",
    "send tensors along source -> target pairs within a device group",
    [{
      For each pair `s -> t` (group indices), the device with group index `t`
      receives the operand of the device with group index `s`. A device that
      is no pair's target gets zeros. Used for ring exchanges (context
      parallel attention) and pipeline shifts in SPMD form.

      ```mlir
      dist.mesh @m [cp = 4]
      %n = dist.ppermute %kv on @m axes = [cp]
          pairs = [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0]
          : tensor<2x64xf32> -> tensor<2x64xf32>
      ```

      Rules: result type equals operand type; every index in [0, group
      size); a device is the source of at most one pair and the target of at
      most one pair. The attribute stores the pairs flattened
      (`[s0, t0, s1, t1, ...]`).
    }], [{
      dist.mesh @m [cp = 4]
      %h = dist.ppermute_start %kv on @m axes = [cp]
          pairs = [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0]
          : tensor<2x64xf32> -> !dist.async<tensor<2x64xf32>>
      // Compute that does not need %h's result overlaps the collective.
      %r = dist.wait %h : !dist.async<tensor<2x64xf32>>}]>;

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

// `peer` is a group index, like `root`: the device that differs from this
// one only on `axes` and has group index `peer`.
class Dist_SendOpBase<string mnemonic, bit async>
    : Dist_CommOp<mnemonic, async, "Send", "SendStartOp"> {
  let arguments = !con((ins AnyStaticShapeTensor:$input), commonArgs,
                       (ins I64Attr:$peer));
  let results = !if(async, (outs Dist_AsyncType:$handle), (outs));
  let assemblyFormat = "$input " # axesFormat #
      " `peer` `=` $peer attr-dict `:` type($input)" #
      !if(async, " `->` type($handle)", "");
  let extraClassDefinition = commonDefs # [{
    ::mlir::LogicalResult
    $cppClass::verifyShapes(std::optional<int64_t> groupSize) {
      return verifyPeer(getOperation(), groupSize, getPeer(), }] #
        !if(async, "getHandle().getType()", "nullptr") # [{);
    }
  }];
}

class Dist_RecvOpBase<string mnemonic, bit async>
    : Dist_CommOp<mnemonic, async, "Recv", "RecvStartOp"> {
  let arguments = !con(commonArgs, (ins I64Attr:$peer));
  let results = !if(async, (outs Dist_AsyncType:$handle),
                           (outs AnyStaticShapeTensor:$result));
  let assemblyFormat = axesFormat #
      " `peer` `=` $peer attr-dict `:` type(results)";
  let extraClassDefinition = commonDefs # [{
    ::mlir::LogicalResult
    $cppClass::verifyShapes(std::optional<int64_t> groupSize) {
      return verifyPeer(getOperation(), groupSize, getPeer(), }] #
        !if(async, "getHandle().getType()", "nullptr") # [{);
    }
  }];
}

def Dist_SendOp : Dist_SendOpBase<"send", 0> {
  let summary = "send a tensor to one device of a group";
  let description = [{
    Sends the operand to the device of this device's group over `axes` whose
    group index is `peer`; that device runs the matching `dist.recv`. Used
    between pipeline stages, where each stage has its own program.

    ```mlir
    dist.mesh @m [pp = 2, dp = 2]
    // In stage 0's program: to the pp = 1 device with the same dp.
    dist.send %act on @m axes = [pp] peer = 1 : tensor<4x64xf32>
    ```

    Rules: 0 <= `peer` < group size.
  }];
}

def Dist_SendStartOp : Dist_SendOpBase<"send_start", 1> {
  let summary = "asynchronous `dist.send`";
  let description = [{
    Starts a `dist.send`; the returned handle carries no value, and
    `dist.wait` on it returns nothing, once the operand may be reused.

    ```mlir
    dist.mesh @m [pp = 2, dp = 2]
    %h = dist.send_start %act on @m axes = [pp] peer = 1
        : tensor<4x64xf32> -> !dist.async
    dist.wait %h : !dist.async
    ```

    Rules: as `dist.send`; the handle type has no value type.
  }];
}

def Dist_RecvOp : Dist_RecvOpBase<"recv", 0> {
  let summary = "receive a tensor from one device of a group";
  let description = [{
    Receives the tensor that the device of this device's group over `axes`
    with group index `peer` sends with the matching `dist.send`.

    ```mlir
    dist.mesh @m [pp = 2, dp = 2]
    // In stage 1's program: from the pp = 0 device with the same dp.
    %act = dist.recv on @m axes = [pp] peer = 0 : tensor<4x64xf32>
    ```

    Rules: 0 <= `peer` < group size.
  }];
}

def Dist_RecvStartOp : Dist_RecvOpBase<"recv_start", 1> {
  let summary = "asynchronous `dist.recv`";
  let description = [{
    Starts a `dist.recv`; `dist.wait` on the handle yields the tensor.

    ```mlir
    dist.mesh @m [pp = 2, dp = 2]
    %h = dist.recv_start on @m axes = [pp] peer = 0
        : !dist.async<tensor<4x64xf32>>
    %act = dist.wait %h : !dist.async<tensor<4x64xf32>>
    ```

    Rules: as `dist.recv`; the handle wraps a static-shape tensor.
  }];
}

//===----------------------------------------------------------------------===//
// Wait
//===----------------------------------------------------------------------===//

def Dist_WaitOp : Dist_Op<"wait", [
    Dist_Communicates, Dist_AsyncCommunication,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "completes an asynchronous collective";
  let description = [{
    Blocks until the asynchronous op that returned `handle` has completed.
    If the handle wraps a tensor type (`!dist.async<tensor<...>>`, from a
    collective's `_start` form or `dist.recv_start`), the op yields that
    tensor. If it carries no value (`!dist.async`, from `dist.send_start`),
    the op has no result: it only orders the completion of the send before
    what follows (the sent operand may be reused after it).

    ```mlir
    dist.mesh @m [pp = 2, dp = 2]
    %h = dist.all_reduce_start %g on @m axes = [dp] reduction = sum
        : tensor<128xf32> -> !dist.async<tensor<128xf32>>
    // Compute that does not need the sum overlaps the all-reduce.
    %sum = dist.wait %h : !dist.async<tensor<128xf32>>

    // A send handle: the wait has no result.
    %s = dist.send_start %act on @m axes = [pp] peer = 1
        : tensor<4x64xf32> -> !dist.async
    dist.wait %s : !dist.async
    ```

    Rules: the result type is the handle's tensor type, and there is no
    result for a handle without one.
  }];
  let arguments = (ins Dist_AsyncType:$handle);
  let results = (outs Optional<AnyStaticShapeTensor>:$result);
  let assemblyFormat = "$handle attr-dict `:` qualified(type($handle))";
}

//===----------------------------------------------------------------------===//
// Local ops that depend on the rank's mesh coordinate (per-rank shapes)
//===----------------------------------------------------------------------===//

// No communication: each rank reads only its own coordinates, so these are
// pure (two identical ones may be merged).
class Dist_LocalCoordOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits, [
        Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Checks the shape rules; the rules that depend on the device group
    /// only when `groupSize` is given.
    ::mlir::LogicalResult verifyShapes(std::optional<int64_t> groupSize);
  }];
}

def Dist_ShardSliceOp : Dist_LocalCoordOp<"shard_slice"> {
  let summary = "keep this rank's block of a dim (replicated -> sharded)";
  let description = [{
    Splits dim `dim` of the operand into G equal blocks, G = the size of the
    device group over `axes` (the product of their sizes), and returns block
    `i`, where `i` is this rank's index in that group: its coordinates on
    `axes` linearised in the listed order, first axis major (the group order
    of `dist.all_gather`). No communication: it is the inverse of
    `dist.all_gather` with the same `axes` and `dim`, and `dist-partition`
    emits it where a value replicated over `axes` must become sharded over
    them.

    Runtime semantics: `result = input[..., i * n : (i + 1) * n, ...]` along
    `dim`, with `n = input.shape[dim] / G` (a strided copy, or a view when
    `dim` is the outermost dim with a non-trivial size).

    ```mlir
    dist.mesh @m [dp = 2, tp = 4]
    // Device (dp = a, tp = b) keeps rows [(4 * a + b) * 2, (4 * a + b + 1) * 2).
    %y = dist.shard_slice %x on @m axes = [dp, tp] dim = 0
        : tensor<16x128xf32> -> tensor<2x128xf32>
    ```

    Rules: same rank and element type; `axes` non-empty, without repeats,
    and axes of the mesh; `dim` is a dim of the operand, divisible by the
    group size; result dim `dim` = operand dim / group size, the other dims
    equal.
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` custom<MeshAxes>($axes) `dim` `=` $dim
    attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_AxisIndexOp : Dist_LocalCoordOp<"axis_index"> {
  let summary = "this rank's index in its device group over some axes";
  let description = [{
    Returns, as a `tensor<i64>` scalar, this rank's index in its device group
    over `axes`: its coordinates on `axes` linearised in the listed order,
    first axis major (the group order of the collectives). It is the shard
    index of a dim sharded over `axes`, e.g. the vocabulary shard owned by a
    rank under vocab-parallel tensor parallelism (the partition hooks of
    `tfm.embedding` and `tfm.cross_entropy` feed it to the `tfm.vocab_*`
    ops, which multiply it by the local vocabulary size).

    Runtime semantics: with mesh coordinates `c` and axis sizes `s`,
    `index = ((c[a0] * s[a1] + c[a1]) * s[a2] + c[a2]) ...` over
    `axes = [a0, a1, a2, ...]`.

    ```mlir
    dist.mesh @m [dp = 2, tp = 4]
    // 0..3: the rank's tp coordinate.
    %i = dist.axis_index on @m axes = [tp] : tensor<i64>
    ```

    Rules: `axes` non-empty, without repeats, and axes of the mesh.
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = [{
    `on` $mesh `axes` `=` custom<MeshAxes>($axes) attr-dict `:` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Flat buffers of bucketed collectives (local, per-rank shapes)
//===----------------------------------------------------------------------===//

// The layout shared by `dist.pack` and `dist.unpack`. A `[{...}]` block
// cannot contain "}]", so the examples splice it in as a plain string.
defvar Dist_PackLayoutDoc = [{
    Layout (G = `num_groups`, tensors `t_0 .. t_{n-1}`): the flat buffer is G
    equal segments, one per group index `g = 0 .. G-1` in order; segment `g`
    holds, for each tensor `t_i` in order, block `g` of `t_i` along dim
    `scatter_dims[i]` (the block `dist.shard_slice` with group index `g`
    would keep), flattened row-major. With G = 1 there are no blocks and
    `scatter_dims` is empty: the buffer is the concatenation of the
    flattened tensors.

    So a flat `dist.reduce_scatter` (scatter dim 0, G = group size) of a
    buffer packed with G leaves on the rank with group index `r` exactly
    segment `r`: its shard of every tensor, each reduced as the tensor's own
    reduce-scatter along `scatter_dims[i]` would (unpack it with G = 1). And
    a flat `dist.all_gather` (gather dim 0) of G = 1 packs of the shards
    puts rank `g`'s shards in segment `g`, which `dist.unpack` with
    `num_groups` = group size and the gather dims as `scatter_dims` turns
    into the gathered tensors. `dist-bucket-collectives` builds these.

    Rules: at least one tensor; every tensor has the element type of the
    flat buffer, which is 1-D with as many elements as all tensors together
    (which fits int64); `num_groups` >= 1; `scatter_dims` is empty when
    `num_groups` = 1, and otherwise has one dim per tensor, each a dim of
    its tensor and divisible by `num_groups`.
}];

def Dist_PackOp : Dist_Op<"pack", [Pure]> {
  let summary = "pack tensors into one flat buffer (for a bucketed collective)";
  let description = [{
    Copies `inputs` into one 1-D buffer, laid out as described below, so
    that one collective over the buffer replaces one per tensor (buckets of
    gradients and parameters, as Megatron's distributed optimizer and FSDP2
    do). No communication.
  }] # Dist_PackLayoutDoc # [{
    ```mlir
    // Segment 0 = rows 0..1 of %a, then columns 0..1 of %b; segment 1 = rows
    // 2..3 of %a, then columns 2..3 of %b.
    %flat = dist.pack %a, %b num_groups = 2 scatter_dims = [0, 1]
        : tensor<4x8xf32>, tensor<3x4xf32> -> tensor<44xf32>
    %s = dist.reduce_scatter %flat on @m axes = [dp] scatter_dim = 0
        reduction = sum : tensor<44xf32> -> tensor<22xf32>
    %sa, %sb = dist.unpack %s : tensor<22xf32> -> tensor<2x8xf32>, tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$inputs,
                       DefaultValuedAttr<I64Attr, "1">:$num_groups,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$scatter_dims);
  let results = (outs 1DTensorOf<[AnyType]>:$result);
  let assemblyFormat = [{
    $inputs (`num_groups` `=` $num_groups^)? (`scatter_dims` `=` $scatter_dims^)?
    attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_UnpackOp : Dist_Op<"unpack", [Pure]> {
  let summary = "split a flat buffer into tensors (inverse of dist.pack)";
  let description = [{
    The inverse of `dist.pack` with the same `num_groups` and
    `scatter_dims`: result `i` is tensor `t_i` of the layout below, read
    back from the flat `input`. No communication.
  }] # Dist_PackLayoutDoc # [{
    ```mlir
    // After a flat all-gather over a group of 2: segment g holds rank g's
    // shards; result 0 is their concatenation along dim 0, result 1 along
    // dim 1.
    %flat = dist.pack %sa, %sb : tensor<2x8xf32>, tensor<3x2xf32> -> tensor<22xf32>
    %g = dist.all_gather %flat on @m axes = [dp] gather_dim = 0
        : tensor<22xf32> -> tensor<44xf32>
    %a, %b = dist.unpack %g num_groups = 2 scatter_dims = [0, 1]
        : tensor<44xf32> -> tensor<4x8xf32>, tensor<3x4xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[AnyType]>:$input,
                       DefaultValuedAttr<I64Attr, "1">:$num_groups,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$scatter_dims);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = [{
    $input (`num_groups` `=` $num_groups^)? (`scatter_dims` `=` $scatter_dims^)?
    attr-dict `:` type($input) `->` type($results)
  }];
  let hasVerifier = 1;
}

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTOPS_TD
