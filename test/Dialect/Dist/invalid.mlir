// RUN: shard-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// dist.mesh
//===----------------------------------------------------------------------===//

// expected-error @+1 {{axis 'dp' is declared twice}}
dist.mesh @m [dp = 2, dp = 2]

// -----

// expected-error @+1 {{axis 'tp' must have size >= 1, found 0}}
dist.mesh @m [dp = 2, tp = 0]

// -----

// expected-error @+1 {{must have at least one axis}}
dist.mesh @m []

// -----

// expected-error @+1 {{role 'data' is given to axes 'dp' and 'edp'}}
dist.mesh @m [dp = 2 : data, edp = 2 : data]

// -----

// expected-error @+1 {{axis 'tp' has no role but an earlier axis has one; either every axis of a mesh has a role or none has}}
dist.mesh @m [dp = 2 : data, tp = 2]

// -----

// expected-error @+1 {{axis 'tp' has a role but an earlier axis has none}}
dist.mesh @m [dp = 2, tp = 2 : tensor]

// -----

// expected-error @+1 {{unknown axis role 'model' (known: data, context, tensor, expert, pipeline)}}
dist.mesh @m [tp = 2 : model]

// -----

// expected-error @+1 {{has 2 axes but 1 axis roles}}
"dist.mesh"() <{axis_names = ["dp", "tp"], axis_roles = [#dist.axis_role<data>], axis_sizes = array<i64: 2, 2>, sym_name = "m"}> : () -> ()

// -----

// expected-error @+1 {{has 1 axis names but 2 axis sizes}}
"dist.mesh"() <{axis_names = ["dp"], axis_sizes = array<i64: 2, 2>, sym_name = "m"}> : () -> ()

// -----

// expected-error @+1 {{device count (product of the axis sizes a = 4294967296 × b = 4294967296) must be at most 16777216 (2^24), found more than int64 holds}}
dist.mesh @m [a = 4294967296, b = 4294967296]

// -----

// A wrapped product would be 0 here.
// expected-error @+1 {{device count (product of the axis sizes a = 4294967296 × b = 4294967296 × c = 4) must be at most 16777216 (2^24), found more than int64 holds}}
dist.mesh @m [a = 4294967296, b = 4294967296, c = 4]
func.func @f(%x: tensor<16xf32>) {
  %0 = dist.all_gather %x on @m axes = [a, b, c] gather_dim = 0 : tensor<16xf32> -> tensor<16xf32>
  return
}

// -----

// The mesh is reported; the sharding over its overflowing axes is not
// divided by a wrapped (zero) shard count.
// expected-error @+1 {{device count (product of the axis sizes a = 4294967296 × b = 4294967296) must be at most 16777216 (2^24), found more than int64 holds}}
dist.mesh @m [a = 4294967296, b = 4294967296]
func.func @f(%x: tensor<16xf32>, %y: tensor<0xf32>) {
  %0 = dist.sharding_constraint %x to <@m, [{a, b}]> : tensor<16xf32>
  %1 = dist.sharding_constraint %y to <@m, [{a, b}]> : tensor<0xf32>
  return
}

// -----

// At most 2^24 devices (issue 19: a mesh of 2^32 devices made
// dist-verify-comm run out of memory).
dist.mesh @m [a = 4096, b = 4096]
// expected-error @+1 {{device count (product of the axis sizes a = 4096 × b = 4097) must be at most 16777216 (2^24), found 16781312}}
dist.mesh @n [a = 4096, b = 4097]

// -----

// expected-error @+1 {{device count (product of the axis sizes pp = 4294967296) must be at most 16777216 (2^24), found 4294967296}}
dist.mesh @mesh [pp = 4294967296]

// -----

// expected-error @+1 {{'dist.mesh' op needs a name, found an empty one (@"")}}
dist.mesh @"" [dp = 2]

// -----

dist.mesh @m [dp = 2]
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown mesh @"" (an empty name)}}
  %0 = dist.all_reduce %x on @"" axes = [dp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

dist.mesh @m [dp = 2]
// expected-error @+1 {{sharding needs a mesh symbol, found an empty name (@"")}}
func.func private @f() attributes {a.s = #dist.sharding<@"", [{dp}]>}

//===----------------------------------------------------------------------===//
// #dist.sharding on its own
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [dp = 2, tp = 2]
// expected-error @+1 {{sharding uses axis 'dp' twice (dim 0 and dim 1)}}
func.func private @f() attributes {a.s = #dist.sharding<@m, [{dp}, {dp}]>}

// -----

dist.mesh @m [dp = 2, tp = 2]
// expected-error @+1 {{sharding uses axis 'tp' twice in dim 0}}
func.func private @f() attributes {a.s = #dist.sharding<@m, [{tp, tp}]>}

// -----

dist.mesh @m [dp = 2, tp = 2]
// expected-error @+1 {{sharding uses axis 'tp' twice (dim 1 and partial)}}
func.func private @f() attributes {a.s = #dist.sharding<@m, [{}, {tp}], partial = {tp: sum}>}

// -----

dist.mesh @m [dp = 2, tp = 2]
// expected-error @+1 {{sharding uses axis 'tp' twice in the partial axes}}
func.func private @f() attributes {a.s = #dist.sharding<@m, [{}], partial = {tp: sum, tp: max}>}

// -----

dist.mesh @m [dp = 2, tp = 2]
// expected-error @+1 {{expected reduction 'sum' or 'max', found 'min'}}
func.func private @f() attributes {a.s = #dist.sharding<@m, [{}], partial = {tp: min}>}

//===----------------------------------------------------------------------===//
// Sharding against a mesh and a type (dist.sharding_constraint, dist.reshard)
//===----------------------------------------------------------------------===//

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown mesh @nope}}
  %0 = dist.sharding_constraint %x to <@nope, [{dp}]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func private @m()
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{symbol @m is not a dist.mesh (found func.func)}}
  %0 = dist.sharding_constraint %x to <@m, [{dp}]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @m [dp = 2, tp = 2]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown axis 'sp' for mesh @m}}
  %0 = dist.sharding_constraint %x to <@m, [{sp}]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @m [dp = 2, tp = 2]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown axis 'cp' for mesh @m}}
  %0 = dist.reshard %x to <@m, [{}], partial = {cp: sum}> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @m [dp = 2, tp = 2]
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{sharding has 1 dims but the tensor has rank 2 ('tensor<8x4xf32>')}}
  %0 = dist.reshard %x to <@m, [{dp}]> : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

dist.mesh @m [dp = 2, cp = 2, tp = 3]
func.func @f(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  // expected-error @+1 {{tensor dim 0 of size 6 is not divisible by 4, the product of the sizes of its axes [dp, cp]}}
  %0 = dist.sharding_constraint %x to <@m, [{dp, cp}, {}]> : tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// -----

// Shard counts are products of axis sizes; a valid mesh keeps them at most
// 2^24.
dist.mesh @m [a = 8192, b = 2048]
func.func @f(%x: tensor<6xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{tensor dim 0 of size 6 is not divisible by 16777216, the product of the sizes of its axes [a, b]}}
  %0 = dist.sharding_constraint %x to <@m, [{a, b}]> : tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

dist.mesh @m [dp = 2, tp = 2]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "dist.reshard"(%x) <{sharding = #dist.sharding<@m, [{dp}]>}> : (tensor<8xf32>) -> tensor<4xf32>
  return %x : tensor<8xf32>
}

//===----------------------------------------------------------------------===//
// The discardable dist.sharding attribute
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<6xf32>) {
  // expected-error @+1 {{'dist.sharding': tensor dim 0 of size 6 is not divisible by 4, the product of the sizes of its axes [tp]}}
  %0 = arith.addf %x, %x {dist.sharding = #dist.sharding<@m, [{tp}]>} : tensor<6xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.sharding' has 2 shardings but the op has 1 results}}
  %0 = arith.addf %x, %x {dist.sharding = [#dist.sharding<@m, [{tp}]>, #dist.sharding<@m, [{tp}]>]} : tensor<8xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8xi32>) {
  // expected-error @+1 {{'dist.sharding' with one sharding needs an op with one result, found 2 (use an array, one sharding per result)}}
  %0:2 = arith.addui_extended %x, %x {dist.sharding = #dist.sharding<@m, [{tp}]>} : tensor<8xi32>, tensor<8xi1>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8xi32>) {
  // expected-error @+1 {{'dist.sharding' of result 1: sharding has 2 dims but the tensor has rank 1}}
  %0:2 = arith.addui_extended %x, %x {dist.sharding = [#dist.sharding<@m, [{tp}]>, #dist.sharding<@m, [{tp}, {}]>]} : tensor<8xi32>, tensor<8xi1>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.sharding': expects a #dist.sharding, found 1 : i64}}
  %0 = arith.addf %x, %x {dist.sharding = 1} : tensor<8xf32>
  return
}

// -----

func.func @f(%x: i32) {
  // expected-error @+1 {{'dist.sharding' with one sharding needs an op with one result, found 0}}
  func.return {dist.sharding = 1}
}

// -----

dist.mesh @m [dp = 2]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{unknown attribute 'dist.shardng' of the dist dialect (known: dist.sharding)}}
  %0 = arith.addf %x, %x {dist.shardng = #dist.sharding<@m, [{dp}]>} : tensor<8xf32>
  return
}

// -----

dist.mesh @m [dp = 2]
// expected-error @+1 {{sharding applies to a ranked tensor, found 'i32'}}
func.func @f(%x: i32 {dist.sharding = #dist.sharding<@m, []>}) {
  return
}

// -----

// expected-error @+1 {{'dist.sharding' of argument 0: unknown mesh @nope}}
func.func @f(%x: tensor<8xf32> {dist.sharding = #dist.sharding<@nope, [{dp}]>}) {
  return
}

// -----

// An argument's sharding is reported at the argument, not at the function.
dist.mesh @m [dp = 2]
func.func @f(%x: tensor<16xf32>,
             // expected-error @+1 {{'dist.sharding' of argument 1: tensor dim 0 of size 15 is not divisible by 2, the product of the sizes of its axes [dp]}}
             %y: tensor<15xf32> {dist.sharding = #dist.sharding<@m, [{dp}]>}) {
  return
}

// -----

func.func private @m()
// expected-error @+1 {{'dist.sharding' of argument 0: symbol @m is not a dist.mesh (found func.func)}}
func.func @f(%x: tensor<8xf32> {dist.sharding = #dist.sharding<@m, [{dp}]>}) {
  return
}

// -----

// A declaration has no argument values: reported at the function.
dist.mesh @m [dp = 2]
// expected-error @+1 {{'func.func' op 'dist.sharding' of argument 0: unknown axis 'tp' for mesh @m}}
func.func private @f(tensor<8xf32> {dist.sharding = #dist.sharding<@m, [{tp}]>})

// -----

dist.mesh @m [dp = 2, tp = 4]
// expected-error @+1 {{'dist.sharding' of result 0: tensor dim 1 of size 2 is not divisible by 4, the product of the sizes of its axes [tp]}}
func.func private @f() -> (tensor<8x2xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {tp}]>})

//===----------------------------------------------------------------------===//
// !dist.async
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{!dist.async wraps a static-shape tensor, found 'tensor<?xf32>'}}
func.func private @f(!dist.async<tensor<?xf32>>)

// -----

// expected-error @+1 {{!dist.async wraps a static-shape tensor, found 'f32'}}
func.func private @f(!dist.async<f32>)

//===----------------------------------------------------------------------===//
// Rules shared by all collectives
//===----------------------------------------------------------------------===//

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{unknown mesh @nope}}
  %0 = dist.all_reduce %x on @nope axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func private @m()
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{symbol @m is not a dist.mesh (found func.func)}}
  %0 = dist.all_reduce %x on @m axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{unknown axis 'ep' for mesh @m}}
  %0 = dist.all_gather %x on @m axes = [dp, ep] gather_dim = 0 : tensor<8xf32> -> tensor<64xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{lists axis 'dp' twice in [dp, tp, dp]}}
  %0 = dist.all_reduce %x on @m axes = [dp, tp, dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{must name at least one mesh axis}}
  %0 = dist.all_reduce %x on @m axes = [] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<?xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of any type values, but got 'tensor<?xf32>'}}
  %0 = dist.all_reduce %x on @m axes = [dp] reduction = sum : tensor<?xf32> -> tensor<?xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{result element type 'f16' must match operand element type 'f32'}}
  %0 = dist.all_gather %x on @m axes = [tp] gather_dim = 0 : tensor<2x8xf32> -> tensor<8x8xf16>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{result rank 1 must equal operand rank 2}}
  %0 = dist.all_gather %x on @m axes = [tp] gather_dim = 0 : tensor<2x8xf32> -> tensor<64xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{custom op 'dist.all_reduce' expected reduction 'sum' or 'max', found 'avg'}}
  %0 = dist.all_reduce %x on @m axes = [tp] reduction = avg : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// all_reduce
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{result type 'tensor<2x4xf32>' must equal operand type 'tensor<2x8xf32>'}}
  %0 = dist.all_reduce %x on @m axes = [tp] reduction = sum : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// all_gather
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{result dim 0 must be 16 (operand dim 0 of size 2 × group size 8 over axes [dp, tp]), found 6}}
  %0 = dist.all_gather %x on @m axes = [dp, tp] gather_dim = 0 : tensor<2x8xf32> -> tensor<6x8xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{result dim 1 must equal operand dim 1 (8), found 4}}
  %0 = dist.all_gather %x on @m axes = [tp] gather_dim = 0 : tensor<2x8xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{gather_dim 2 must be a dim of the operand, in [0, 2)}}
  %0 = dist.all_gather %x on @m axes = [tp] gather_dim = 2 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// The _start form shares the rules.
dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dist.all_gather_start' op result dim 1 must be 32 (operand dim 1 of size 8 × group size 4 over axes [tp]), found 16}}
  %0 = dist.all_gather_start %x on @m axes = [tp] gather_dim = 1 : tensor<2x8xf32> -> !dist.async<tensor<2x16xf32>>
  return
}

// -----

// 2^62 × 4 wraps to 0 in int64: the result dim cannot be computed.
dist.mesh @m [a = 4]
func.func @f(%x: tensor<4611686018427387904xf32>) {
  // expected-error @+1 {{result dim 0 would be operand dim 0 of size 4611686018427387904 × group size 4 over axes [a], which overflows int64}}
  %0 = dist.all_gather %x on @m axes = [a] gather_dim = 0 : tensor<4611686018427387904xf32> -> tensor<0xf32>
  return
}

//===----------------------------------------------------------------------===//
// reduce_scatter
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error @+1 {{operand dim 1 of size 6 must be divisible by the group size 4 over axes [tp]}}
  %0 = dist.reduce_scatter %x on @m axes = [tp] scatter_dim = 1 reduction = sum : tensor<2x6xf32> -> tensor<2x1xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{result dim 1 must be 2 (operand dim 1 of size 8 / group size 4 over axes [tp]), found 4}}
  %0 = dist.reduce_scatter %x on @m axes = [tp] scatter_dim = 1 reduction = sum : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{scatter_dim -1 must be a dim of the operand, in [0, 2)}}
  %0 = dist.reduce_scatter %x on @m axes = [tp] scatter_dim = -1 reduction = sum : tensor<2x8xf32> -> tensor<2x2xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter_start' op result dim 0 must be 1 (operand dim 0 of size 2 / group size 2 over axes [dp]), found 2}}
  %0 = dist.reduce_scatter_start %x on @m axes = [dp] scatter_dim = 0 reduction = max : tensor<2x8xf32> -> !dist.async<tensor<2x8xf32>>
  return
}

//===----------------------------------------------------------------------===//
// all_to_all
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8x4x16xf32>) {
  // expected-error @+1 {{ragged_dim 1 must come after split_dim 0 and concat_dim 1}}
  %0 = dist.all_to_all %x on @m axes = [tp] split_dim = 0 concat_dim = 1 ragged_dim = 1 : tensor<8x4x16xf32> -> tensor<2x16x16xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8x4x16xf32>) {
  // expected-error @+1 {{ragged_dim 3 must be a dim of the operand, in [0, 3)}}
  %0 = dist.sharding_constraint %x to <@m, [{tp}, {}, {}]> ragged_dim = 3 : tensor<8x4x16xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<6x8xf32>) {
  // expected-error @+1 {{operand dim 0 of size 6 must be divisible by the group size 4 over axes [tp]}}
  %0 = dist.all_to_all %x on @m axes = [tp] split_dim = 0 concat_dim = 1 : tensor<6x8xf32> -> tensor<1x32xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{result dim 0 must be 2 (operand split_dim 0 of size 8 / group size 4 over axes [tp]), found 8}}
  %0 = dist.all_to_all %x on @m axes = [tp] split_dim = 0 concat_dim = 1 : tensor<8x8xf32> -> tensor<8x32xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{result dim 1 must be 32 (operand concat_dim 1 of size 8 × group size 4 over axes [tp]), found 8}}
  %0 = dist.all_to_all %x on @m axes = [tp] split_dim = 0 concat_dim = 1 : tensor<8x8xf32> -> tensor<2x8xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{result dim 0 must be 8 (split and concatenated over the group size 4 over axes [tp]), found 2}}
  %0 = dist.all_to_all %x on @m axes = [tp] split_dim = 0 concat_dim = 0 : tensor<8x8xf32> -> tensor<2x8xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{concat_dim 2 must be a dim of the operand, in [0, 2)}}
  %0 = dist.all_to_all %x on @m axes = [tp] split_dim = 0 concat_dim = 2 : tensor<8x8xf32> -> tensor<2x32xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8x8x3xf32>) {
  // expected-error @+1 {{result dim 2 must equal operand dim 2 (3), found 4}}
  %0 = dist.all_to_all_start %x on @m axes = [tp] split_dim = 0 concat_dim = 1 : tensor<8x8x3xf32> -> !dist.async<tensor<2x32x4xf32>>
  return
}

// -----

dist.mesh @m [a = 4]
func.func @f(%x: tensor<4x4611686018427387904xf32>) {
  // expected-error @+1 {{result dim 1 would be operand concat_dim 1 of size 4611686018427387904 × group size 4 over axes [a], which overflows int64}}
  %0 = dist.all_to_all %x on @m axes = [a] split_dim = 0 concat_dim = 1 : tensor<4x4611686018427387904xf32> -> tensor<1x0xf32>
  return
}

//===----------------------------------------------------------------------===//
// broadcast
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{root 2 must be below the group size 2 over axes [dp]}}
  %0 = dist.broadcast %x on @m axes = [dp] root = 2 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{root must be non-negative, found -1}}
  %0 = dist.broadcast_start %x on @m axes = [dp] root = -1 : tensor<8xf32> -> !dist.async<tensor<8xf32>>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{result type 'tensor<4xf32>' must equal operand type 'tensor<8xf32>'}}
  %0 = "dist.broadcast"(%x) <{mesh = @m, axes = ["dp"], root = 0 : i64}> : (tensor<8xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// ppermute
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [cp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{target 4 must be below the group size 4 over axes [cp]}}
  %0 = dist.ppermute %x on @m axes = [cp] pairs = [0 -> 1, 3 -> 4] : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

dist.mesh @m [cp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{source 0 appears in more than one pair}}
  %0 = dist.ppermute %x on @m axes = [cp] pairs = [0 -> 1, 0 -> 2] : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

dist.mesh @m [cp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{target 1 appears in more than one pair}}
  %0 = dist.ppermute_start %x on @m axes = [cp] pairs = [0 -> 1, 2 -> 1] : tensor<8xf32> -> !dist.async<tensor<8xf32>>
  return
}

// -----

dist.mesh @m [cp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{source must be non-negative, found -1}}
  %0 = dist.ppermute %x on @m axes = [cp] pairs = [-1 -> 1] : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

dist.mesh @m [cp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{pairs must hold (source, target) pairs, found an odd number of indices (3)}}
  %0 = "dist.ppermute"(%x) <{mesh = @m, axes = ["cp"], pairs = array<i64: 0, 1, 2>}> : (tensor<8xf32>) -> tensor<8xf32>
  return
}

//===----------------------------------------------------------------------===//
// send / recv
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [pp = 2, dp = 2]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{peer 2 must be below the group size 2 over axes [pp]}}
  dist.send %x on @m axes = [pp] peer = 2 : tensor<8xf32>
  return
}

// -----

dist.mesh @m [pp = 2, dp = 2]
func.func @f() {
  // expected-error @+1 {{peer must be non-negative, found -1}}
  %0 = dist.recv on @m axes = [pp] peer = -1 : tensor<8xf32>
  return
}

// -----

dist.mesh @m [pp = 2, dp = 2]
func.func @f() {
  // expected-error @+1 {{'dist.recv_start' op peer 4 must be below the group size 4 over axes [pp, dp]}}
  %0 = dist.recv_start on @m axes = [pp, dp] peer = 4 : !dist.async<tensor<8xf32>>
  return
}

// -----

dist.mesh @m [pp = 2, dp = 2]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{send handle must carry no value (!dist.async), found '!dist.async<tensor<8xf32>>'}}
  %0 = dist.send_start %x on @m axes = [pp] peer = 1 : tensor<8xf32> -> !dist.async<tensor<8xf32>>
  return
}

// -----

dist.mesh @m [pp = 2, dp = 2]
func.func @f() {
  // expected-error @+1 {{recv handle must wrap the received tensor type, found '!dist.async'}}
  %0 = dist.recv_start on @m axes = [pp] peer = 0 : !dist.async
  return
}

//===----------------------------------------------------------------------===//
// _start handles and dist.wait
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{handle must wrap the result tensor type, found '!dist.async'}}
  %0 = dist.all_reduce_start %x on @m axes = [tp] reduction = sum : tensor<8xf32> -> !dist.async
  return
}

// -----

func.func @f(%h: !dist.async<tensor<8xf32>>) {
  // expected-error @+2 {{'dist.wait' op inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "dist.wait"(%h) : (!dist.async<tensor<8xf32>>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// dist.shard_slice and dist.axis_index
//===----------------------------------------------------------------------===//

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<6x8xf32>) {
  // expected-error @+1 {{operand dim 0 of size 6 must be divisible by the group size 4 over axes [tp]}}
  %0 = dist.shard_slice %x on @m axes = [tp] dim = 0 : tensor<6x8xf32> -> tensor<1x8xf32>
  return
}

// -----

dist.mesh @m [dp = 2, tp = 4]
func.func @f(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{result dim 0 must be 2 (operand dim 0 of size 16 / group size 8 over axes [dp, tp]), found 4}}
  %0 = dist.shard_slice %x on @m axes = [dp, tp] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{dim 2 must be a dim of the operand, in [0, 2)}}
  %0 = dist.shard_slice %x on @m axes = [tp] dim = 2 : tensor<16x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{lists axis 'tp' twice in [tp, tp]}}
  %0 = dist.shard_slice %x on @m axes = [tp, tp] dim = 0 : tensor<16x8xf32> -> tensor<1x8xf32>
  return
}

// -----

dist.mesh @m [dp = 2]
func.func @f() {
  // expected-error @+1 {{unknown axis 'tp' for mesh @m}}
  %0 = dist.axis_index on @m axes = [tp] : tensor<i64>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{must name at least one mesh axis}}
  %0 = dist.axis_index on @m axes = [] : tensor<i64>
  return
}

// -----

dist.mesh @m [dp = 2]
func.func @f() {
  // expected-error @+1 {{result #0 must be 0D tensor of 64-bit signless integer values}}
  %0 = dist.axis_index on @m axes = [dp] : tensor<i32>
  return
}

//===----------------------------------------------------------------------===//
// dist.pack and dist.unpack
//===----------------------------------------------------------------------===//

func.func @f(%a: tensor<4x8xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{flat buffer must have 35 elements (the inputs together), found 36}}
  %0 = dist.pack %a, %b : tensor<4x8xf32>, tensor<3xf32> -> tensor<36xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<3xf16>) {
  // expected-error @+1 {{input 1 element type 'f16' must match the flat buffer's element type 'f32'}}
  %0 = dist.pack %a, %b : tensor<4x8xf32>, tensor<3xf16> -> tensor<35xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{scatter_dims must have one dim per input (2), found 1}}
  %0 = dist.pack %a, %b num_groups = 2 scatter_dims = [0] : tensor<4x8xf32>, tensor<3x4xf32> -> tensor<44xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{input 1 dim 0 of size 3 must be divisible by num_groups 2}}
  %0 = dist.pack %a, %b num_groups = 2 scatter_dims = [0, 0] : tensor<4x8xf32>, tensor<3x4xf32> -> tensor<44xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{scatter_dims[0] = 2 must be a dim of input 0, in [0, 2)}}
  %0 = dist.pack %a num_groups = 2 scatter_dims = [2] : tensor<4x8xf32> -> tensor<32xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{scatter_dims must be empty when num_groups is 1}}
  %0 = dist.pack %a scatter_dims = [0] : tensor<4x8xf32> -> tensor<32xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{num_groups must be at least 1, found 0}}
  %0 = dist.pack %a num_groups = 0 : tensor<4x8xf32> -> tensor<32xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{needs at least one input}}
  %0 = "dist.pack"() : () -> tensor<0xf32>
  return
}

// -----

func.func @f(%x: tensor<44xf32>) {
  // expected-error @+1 {{flat buffer must have 40 elements (the results together), found 44}}
  %0:2 = dist.unpack %x : tensor<44xf32> -> tensor<4x8xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<44xf32>) {
  // expected-error @+1 {{result 1 dim 1 of size 4 must be divisible by num_groups 3}}
  %0:2 = dist.unpack %x num_groups = 3 scatter_dims = [1, 1] : tensor<44xf32> -> tensor<4x9xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x11xf32>) {
  // expected-error @+1 {{operand #0 must be 1D tensor of any type values}}
  %0:2 = dist.unpack %x : tensor<4x11xf32> -> tensor<4x8xf32>, tensor<3x4xf32>
  return
}
