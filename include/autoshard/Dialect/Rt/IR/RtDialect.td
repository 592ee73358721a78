//===- RtDialect.td - Per-rank runtime program dialect -----*- tablegen -*-===//
//
// The `rt` dialect: the per-rank program as the runtime executes it. It
// mirrors the artifact (docs/artifact-format.md) one to one, so that
// `rt-export` is a printer and never has to make a decision.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_RT_IR_RTDIALECT_TD
#define AUTOSHARD_DIALECT_RT_IR_RTDIALECT_TD

include "mlir/IR/OpBase.td"

def Rt_Dialect : Dialect {
  let name = "rt";
  let cppNamespace = "::autoshard::rt";
  let summary = "Per-rank instruction streams over explicitly planned buffers";
  let description = [{
    The `rt` dialect is the lowest level of the compiler: one rank's program
    written as the runtime sees it. It mirrors the artifact format
    (`docs/artifact-format.md`) one to one: every artifact buffer kind has a
    buffer-producing op, every artifact instruction has an op, and
    `rt-export` only prints.

    A program is a set of `rt.func`s. A function is a straight-line
    instruction stream (`rt.kernel`, `rt.call`) over SSA values of type
    `!rt.buffer<shape x elt>`. A buffer value names memory, not a value:
    kernels write their results into buffers passed to them (destination
    passing), so the same buffer may be written by one instruction and read
    by later ones, and a state buffer may be updated in place.

    Where a buffer lives:

    * `rt.alloc`: a transient buffer in the function's *frame*; after
      `rt-plan-memory` it carries its byte `offset` in the frame, and the
      function its `frame_bytes`;
    * `rt.view`: the same bytes as another buffer, another shape (reshape);
    * `rt.state`: a persistent tensor declared by `rt.state_def` (parameters
      and optimizer states, shared by all entries);
    * `rt.const`: a compile-time constant of the constant pool;
    * `rt.input` / `rt.output`: an entry's I/O slot, placed in the entry's
      frame like a local (the runtime fills inputs before the call and reads
      outputs after it);
    * function arguments: the caller's buffers (callee results are written
      into buffers the caller passes after the inputs).

    A call places the callee's frame at `frame_offset` inside the caller's
    frame: a function body is planned once, however often it is called.

    Pass order: `rt-lower` (tfm functions on tensors to rt functions),
    optionally `rt-fuse-epilogues` (an add that consumes a GEMM folded into
    it), `rt-plan-memory` (offsets, frame sizes, peak breakdown),
    `rt-export` (the JSON artifact).
  }];
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Alignment in bytes of every planned offset and frame size.
    static constexpr int64_t kAlignment = 64;
  }];
}

class Rt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Rt_Dialect, mnemonic, traits>;

#endif // AUTOSHARD_DIALECT_RT_IR_RTDIALECT_TD
