// rt-export checks every kernel against the runtime's op table (OpTable.h,
// generated from RtKernels.td), which the runtime's loader also checks:
// the name, the operand counts, the required attributes and their kinds.
// RUN: shard-opt %s --rt-plan-memory --rt-export=output=- -o /dev/null | FileCheck %s
// RUN: sed -e 's/"gelu"/"nope"/' %s | not shard-opt --rt-plan-memory --rt-export -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: sed -e 's/"add"(%x, %b)/"add"(%x, %a, %x)/' -e 's/(!rt.buffer<8xf32>, !rt.buffer<8xf32>) -> !rt.buffer<8xf32>/(!rt.buffer<8xf32>, !rt.buffer<8xf32>, !rt.buffer<8xf32>) -> !rt.buffer<8xf32>/' %s | not shard-opt --rt-plan-memory --rt-export -o /dev/null 2>&1 | FileCheck %s --check-prefix=ARGS
// RUN: sed -e 's/attrs {factor = 5.000000e-01 : f64}//' %s | not shard-opt --rt-plan-memory --rt-export -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: sed -e 's/factor = 5.000000e-01 : f64/factor = "half"/' %s | not shard-opt --rt-plan-memory --rt-export -o /dev/null 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: sed -e 's/factor = 5.000000e-01 : f64/factor = 5.000000e-01 : f64, fast/' %s | not shard-opt --rt-plan-memory --rt-export -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXTRA

// CHECK: {"args":[0],"attrs":{},"op":"gelu","results":[2]},
// CHECK: {"args":[2],"attrs":{"factor":0.5},"op":"scale","results":[3]},
// CHECK: {"args":[0,3],"attrs":{},"op":"add","results":[1]}
// UNKNOWN: error: 'rt.kernel' op names kernel 'nope', which the runtime's op table (RtKernels.td) does not have
// ARGS: error: 'rt.kernel' op has 3 args; 'add' has 2
// MISSING: error: 'rt.kernel' op 'scale' needs attribute 'factor'
// KIND: error: 'rt.kernel' op attribute 'factor' of 'scale' has the wrong kind: "half"
// EXTRA: error: 'rt.kernel' op 'scale' has no attribute 'fast' in the runtime's op table

module attributes {tfm.model = {vocab_size = 8 : i64, padded_vocab_size = 8 : i64, batch = 1 : i64, seq = 8 : i64}} {
  rt.func @main() attributes {entry = "eval"} {
    %x = rt.input "x" : !rt.buffer<8xf32>
    %y = rt.output "y" : !rt.buffer<8xf32>
    %a = rt.alloc activation : !rt.buffer<8xf32>
    %b = rt.alloc activation : !rt.buffer<8xf32>
    rt.kernel "gelu"(%x) -> (%a) : (!rt.buffer<8xf32>) -> !rt.buffer<8xf32>
    rt.kernel "scale"(%a) -> (%b) attrs {factor = 5.000000e-01 : f64} : (!rt.buffer<8xf32>) -> !rt.buffer<8xf32>
    rt.kernel "add"(%x, %b) -> (%y) : (!rt.buffer<8xf32>, !rt.buffer<8xf32>) -> !rt.buffer<8xf32>
    rt.return
  }
}
