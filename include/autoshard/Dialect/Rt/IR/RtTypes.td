//===- RtTypes.td - Runtime program types ------------------*- tablegen -*-===//

#ifndef AUTOSHARD_DIALECT_RT_IR_RTTYPES_TD
#define AUTOSHARD_DIALECT_RT_IR_RTTYPES_TD

include "autoshard/Dialect/Rt/IR/RtDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Rt_BufferType : TypeDef<Rt_Dialect, "Buffer"> {
  let mnemonic = "buffer";
  let summary = "a dense, row-major region of memory with a static shape";
  let description = [{
    A buffer names memory holding a dense row-major tensor of a static shape
    and element type; it is the only value type of `rt` functions. Where the
    memory lives (frame, state, constant pool, I/O slot, caller) is given by
    the op that defines the value, not by the type. A rank-0 buffer holds a
    scalar.

    ```mlir
    !rt.buffer<12x64x128xf32>
    !rt.buffer<f32>            // a scalar
    ```

    Rules: static dims (no `?`), each at least 0; the element type is an
    integer or float of a whole number of bytes.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilderWithInferredContext<(ins "::mlir::ShapedType":$like), [{
      return $_get(like.getContext(), like.getShape(), like.getElementType());
    }]>
  ];
  let extraClassDeclaration = [{
    /// Number of elements (1 for a scalar).
    int64_t getNumElements() const;
    /// Size of the contents in bytes.
    int64_t getSizeInBytes() const;
    /// The tensor type with the same shape and element type.
    ::mlir::RankedTensorType getTensorType() const;
  }];
}

#endif // AUTOSHARD_DIALECT_RT_IR_RTTYPES_TD
