//===- RtOps.td - Runtime program ops ----------------------*- tablegen -*-===//
//
// Ops of the `rt` dialect. Each buffer kind and each instruction of the
// artifact (docs/artifact-format.md) has exactly one op here.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_RT_IR_RTOPS_TD
#define AUTOSHARD_DIALECT_RT_IR_RTOPS_TD

include "autoshard/Dialect/Rt/IR/RtDialect.td"
include "autoshard/Dialect/Rt/IR/RtTypes.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Rt_Category : I32EnumAttr<"Category", "memory category of a buffer", [
      I32EnumAttrCase<"Activation", 0, "activation">,
      I32EnumAttrCase<"Grad", 1, "grad">,
      I32EnumAttrCase<"Workspace", 2, "workspace">,
      I32EnumAttrCase<"Io", 3, "io">]> {
  let cppNamespace = "::autoshard::rt";
}

def Rt_StateKind : I32EnumAttr<"StateKind", "kind of a persistent state", [
      I32EnumAttrCase<"Param", 0, "param">,
      I32EnumAttrCase<"OptM", 1, "opt_m">,
      I32EnumAttrCase<"OptV", 2, "opt_v">]> {
  let cppNamespace = "::autoshard::rt";
}

def Rt_InitKind : I32EnumAttr<"InitKind", "how a state is initialised", [
      I32EnumAttrCase<"Normal", 0, "normal">,
      I32EnumAttrCase<"Zeros", 1, "zeros">,
      I32EnumAttrCase<"Ones", 2, "ones">]> {
  let cppNamespace = "::autoshard::rt";
}

// A byte offset or size; signed in C++ so that offset arithmetic does not
// mix signedness.
def Rt_Offset : ConfinedAttr<I64Attr, [IntNonNegative]> {
  let returnType = "int64_t";
  let convertFromStorage = "$_self.getInt()";
}

//===----------------------------------------------------------------------===//
// Program structure
//===----------------------------------------------------------------------===//

def Rt_StateDefOp : Rt_Op<"state_def", [
    Symbol, HasParent<"::mlir::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "declares a persistent state tensor (parameter or optimizer state)";
  let description = [{
    Declares one entry of the artifact's state table: a tensor that lives
    across steps and entries, held by the runtime outside every frame.
    Functions refer to it with `rt.state`. `init` says how the runtime
    initialises it (`normal` with `std` from the counter-based RNG, `zeros`,
    `ones`); optimizer states name the parameter they belong to with `of`;
    `decay` marks parameters that AdamW decays. `logical` is the shape of
    the unpadded tensor when the (global) tensor is padded, e.g. an LM head
    `[H, Vp]` of a vocabulary padded from `V` to `Vp` has `logical [H, V]`:
    the init keys each element on its row-major index in that shape and
    zeroes the padding (docs/artifact-format.md, "Initialisation").

    ```mlir
    rt.state_def @wte param init normal std 2.000000e-02 decay : !rt.buffer<65x128xf32>
    rt.state_def @"wte.exp_avg" opt_m of @wte init zeros : !rt.buffer<65x128xf32>
    rt.state_def @lm_head param init normal std 2.000000e-02 logical [128, 65] decay : !rt.buffer<128x128xf32>
    ```

    Rules: `std` is given exactly when `init` is `normal` and is at least 0;
    a `param` has no `of` while an `opt_m`/`opt_v` names a `param` state of
    the same type; only a `param` may have `decay`; `logical` has the
    buffer's rank and dims >= 0 (rt-export checks that it fits in the
    global shape).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Rt_StateKind:$kind,
                       OptionalAttr<FlatSymbolRefAttr>:$of, Rt_InitKind:$init,
                       OptionalAttr<F64Attr>:$init_std,
                       OptionalAttr<DenseI64ArrayAttr>:$logical_shape,
                       UnitAttr:$weight_decay,
                       TypeAttrOf<Rt_BufferType>:$type);
  let assemblyFormat = [{
    $sym_name $kind (`of` $of^)? `init` $init (`std` $init_std^)?
    (`logical` $logical_shape^)? (`decay` $weight_decay^)? attr-dict `:` $type
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::autoshard::rt::BufferType getBufferType() {
      return ::llvm::cast<::autoshard::rt::BufferType>(getType());
    }
  }];
}

def Rt_FuncOp : Rt_Op<"func", [FunctionOpInterface, IsolatedFromAbove,
                               HasParent<"::mlir::ModuleOp">]> {
  let summary = "a function: an instruction stream over buffers";
  let description = [{
    A straight-line instruction stream (`rt.kernel`, `rt.call`) over buffer
    values, ended by `rt.return`. Functions have no results: a callee's
    outputs are buffers the caller passes after its inputs (destination
    passing), so that the caller decides where they live.

    An *entry* function (`entry` = `"train_step"`, `"eval"`, `"logits"`, ...)
    is what the runtime calls: it has no arguments; it reads and writes
    state buffers and its I/O slots (`rt.input`, `rt.output`), each role at
    most once.

    After `rt-plan-memory`, `frame_bytes` is the size of the function's
    frame (its locals and I/O slots at their offsets, and the frames of the
    functions it calls at their `frame_offset`), and `peak_breakdown` the
    live bytes per category at the instruction where the live transient
    bytes peak, callee frames expanded. A planned function has an offset on
    every local and slot, inside the frame.

    ```mlir
    rt.func @block(%x: !rt.buffer<2x8x128xf32>, %y: !rt.buffer<2x8x128xf32>)
        attributes {frame_bytes = 8192 : i64} {
      %t = rt.alloc activation at 0 : !rt.buffer<2x8x128xf32>
      rt.kernel "gelu"(%x) -> (%t) : (!rt.buffer<2x8x128xf32>) -> !rt.buffer<2x8x128xf32>
      rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<2x8x128xf32>, !rt.buffer<2x8x128xf32>) -> !rt.buffer<2x8x128xf32>
      rt.return
    }
    rt.func @eval() attributes {entry = "eval"} { ... }
    ```

    With pipeline parallelism (`dist-pipeline-split`) an entry has one
    function per stage, each with `pp_stage` = the stage (the coordinate on
    the mesh's `pp` axis of the ranks that run it):

    ```mlir
    rt.func @train_step__pp1() attributes {entry = "train_step", pp_stage = 1 : i64} { ... }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<StrAttr>:$sym_visibility,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs,
                       OptionalAttr<StrAttr>:$entry,
                       OptionalAttr<I64Attr>:$pp_stage,
                       OptionalAttr<Rt_Offset>:$frame_bytes,
                       OptionalAttr<DictionaryAttr>:$peak_breakdown);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
                                 "::mlir::FunctionType":$type)>];
  let extraClassDeclaration = [{
    //===------------------------------------------------------------------===//
    // FunctionOpInterface
    //===------------------------------------------------------------------===//
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    bool isDeclaration() { return false; }

    /// Whether the runtime calls this function directly.
    bool isEntry() { return getEntry().has_value(); }
    /// Whether rt-plan-memory has planned this function.
    bool isPlanned() { return getFrameBytes().has_value(); }
  }];
}

def Rt_ReturnOp : Rt_Op<"return", [Pure, Terminator, HasParent<"FuncOp">]> {
  let summary = "ends a function";
  let description = [{
    Ends the instruction stream of an `rt.func`. It has no operands: outputs
    have already been written into the caller's buffers.

    ```mlir
    rt.return
    ```
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

def Rt_AllocOp : Rt_Op<"alloc", [Pure, HasParent<"FuncOp">]> {
  let summary = "a transient buffer in the function's frame";
  let description = [{
    A local buffer of the enclosing function's frame. `category` says what
    it holds, for the memory breakdown: `activation` (forward values, saved
    or not), `grad` (gradients), `workspace` (other temporaries). After
    `rt-plan-memory` the buffer has a byte `offset` from the frame base
    (64-byte aligned); two buffers may share bytes when they are never live
    at the same time.

    ```mlir
    %h = rt.alloc activation : !rt.buffer<12x64x128xf32>
    %g = rt.alloc grad at 393216 : !rt.buffer<128x128xf32>
    ```

    Rules: the category is not `io` (that is the category of I/O slots); a
    planned offset is aligned and lies inside the function's frame.
  }];
  let arguments = (ins Rt_Category:$category, OptionalAttr<Rt_Offset>:$offset);
  let results = (outs Rt_BufferType:$result);
  let assemblyFormat = "$category (`at` $offset^)? attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

/// An entry's input or output slot.
class Rt_SlotOp<string mnemonic, string what> : Rt_Op<mnemonic,
    [Pure, HasParent<"FuncOp">]> {
  let summary = "the entry's " # what # " slot `role`";
  let description = [{
    The buffer of the entry's }] # what # [{ slot `role` (e.g. `tokens`,
    `labels`, `lr`, `step`; `loss`, `grad_norm`, `logits`). Slots live in
    the entry's frame like locals and are live for the whole call: the
    runtime fills inputs before it and reads outputs after it. After
    `rt-plan-memory` a slot has its `offset` in the frame.

    ```mlir
    %tokens = rt.input "tokens" : !rt.buffer<12x64xi32>
    %loss = rt.output "loss" at 0 : !rt.buffer<f32>
    ```

    Rules: only in entry functions; each role at most once per function and
    direction.
  }];
  let arguments = (ins StrAttr:$role, OptionalAttr<Rt_Offset>:$offset);
  let results = (outs Rt_BufferType:$result);
  let assemblyFormat = "$role (`at` $offset^)? attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def Rt_InputOp : Rt_SlotOp<"input", "input">;
def Rt_OutputOp : Rt_SlotOp<"output", "output">;

def Rt_ViewOp : Rt_Op<"view", [Pure, HasParent<"FuncOp">]> {
  let summary = "the same bytes as another buffer, another shape";
  let description = [{
    A reshape without a copy: the result is the memory of `source` read with
    another shape. Writing one writes the other.

    ```mlir
    %q4 = rt.view %q : !rt.buffer<2x8x128xf32> to !rt.buffer<2x8x4x32xf32>
    ```

    Rules: inside an `rt.func`; same element type and element count.
  }];
  let arguments = (ins Rt_BufferType:$source);
  let results = (outs Rt_BufferType:$result);
  let assemblyFormat = "$source attr-dict `:` qualified(type($source)) `to` qualified(type($result))";
  let hasVerifier = 1;
}

def Rt_StateOp : Rt_Op<"state", [
    Pure, HasParent<"FuncOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the buffer of a persistent state";
  let description = [{
    The memory of the state declared by `rt.state_def @name`. Kernels may
    read it and write it in place (e.g. `adamw` updates a parameter and its
    moments).

    ```mlir
    %wte = rt.state @wte : !rt.buffer<65x128xf32>
    ```

    Rules: inside an `rt.func`; `name` is an `rt.state_def` of the same
    type.
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Rt_BufferType:$result);
  let assemblyFormat = "$name attr-dict `:` qualified(type($result))";
}

def Rt_ConstOp : Rt_Op<"const", [Pure, HasParent<"FuncOp">]> {
  let summary = "a read-only buffer of the constant pool";
  let description = [{
    A compile-time constant (layer indices, the loss seed). `rt-export`
    puts each distinct value once in the artifact's constant pool. The
    buffer's type is that of the value.

    ```mlir
    %layer = rt.const dense<3> : tensor<i64>
    %seed = rt.const dense<1.000000e+00> : tensor<f32>
    ```

    Rules: inside an `rt.func`; the value is a dense elements attribute.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Rt_BufferType:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::ElementsAttr":$value)>];
}

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

def Rt_KernelOp : Rt_Op<"kernel", [AttrSizedOperandSegments,
                                   HasParent<"FuncOp">]> {
  let summary = "runs one kernel, writing its results into given buffers";
  let description = [{
    Runs the runtime kernel `kernel` (the `tfm` op name without prefix:
    `matmul`, `layer_norm_grad`, `adamw`, ...; `reshape` copies its
    argument into its result) on the `args` buffers and writes every
    element of the `results` buffers. `attrs` are the op's attributes,
    verbatim. Semantics, shapes and layouts are those of the `tfm` op.

    A result may be the same buffer as an argument (in-place update): the
    kernel must allow that. `matmul` may take a third argument, added to
    the product (`rt-fuse-epilogues`; a bias `[n]` with
    `epilogue = "bias"`, gelu_grad's `x` with `epilogue = "gelu_grad"`),
    or with `epilogue = "gelu"` write gelu of the product and optionally
    the product as a second result (docs/artifact-format.md); its results
    must not alias `lhs` or `rhs`.

    ```mlir
    rt.kernel "matmul"(%x, %w) -> (%y) attrs {transpose_rhs}
        : (!rt.buffer<2x8x128xf32>, !rt.buffer<65x128xf32>) -> !rt.buffer<2x8x65xf32>
    rt.kernel "adamw"(%p, %g, %m, %v, %lr, %step, %coef) -> (%p, %m, %v)
        attrs {beta1 = 9.000000e-01 : f64, ...} : (...) -> (...)
    ```

    Communication kernels are named after the `dist` op they run
    (`dist.all_reduce`, `dist.all_gather_start`, `dist.wait`, ...), with
    its attributes (`axes`, `reduction` as a string, dims, ...) and, for the
    asynchronous forms, a `handle` number pairing a `dist.*_start` with its
    `dist.wait` (docs/artifact-format.md, "Communication").

    Rules: inside an `rt.func`; the name is a non-empty `[a-z0-9_]`
    identifier, optionally prefixed by `dist.`; at least one result, except
    for `dist.` kernels (a send writes nothing); no result is a constant or
    an input slot (read-only memory).
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<Rt_BufferType>:$args,
                       Variadic<Rt_BufferType>:$results,
                       OptionalAttr<DictionaryAttr>:$attrs);
  let assemblyFormat = [{
    $kernel `(` $args `)` `->` `(` $results `)` (`attrs` $attrs^)? attr-dict
    `:` functional-type($args, $results)
  }];
  let hasVerifier = 1;
}

def Rt_CallOp : Rt_Op<"call", [
    HasParent<"FuncOp">, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "calls a function, passing buffers by reference";
  let description = [{
    Calls the non-entry function `callee` with `operands`: the buffers of
    its inputs, then the buffers it writes its outputs into. After
    `rt-plan-memory`, `frame_offset` is where the callee's frame starts in
    the caller's frame; that region is live only during the call.

    ```mlir
    rt.call @block(%h0, %layer, %w, %h1) at 4096
        : !rt.buffer<2x8x128xf32>, !rt.buffer<i64>, !rt.buffer<128x128xf32>, !rt.buffer<2x8x128xf32>
    ```

    Rules: inside an `rt.func`; the callee is an `rt.func` that is not an
    entry (`rt-plan-memory` rejects recursion: frames nest); operand count
    and types match its arguments; a planned call's callee frame lies
    inside the caller's frame.
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee,
                       Variadic<Rt_BufferType>:$operands,
                       OptionalAttr<Rt_Offset>:$frame_offset);
  let assemblyFormat = [{
    $callee `(` $operands `)` (`at` $frame_offset^)? attr-dict
    (`:` type($operands)^)?
  }];
}

#endif // AUTOSHARD_DIALECT_RT_IR_RTOPS_TD
