// dist-propagate clones a callee per distinct sharding signature of its call
// sites (DESIGN.md §4: "cloned per distinct sharding signature, never per
// layer"): @f is called twice with rows split and once with columns split,
// so the column call gets its own clone @f_s1, the two row calls share @f,
// and dist-partition needs no collective at any call boundary. @g is
// called twice with one signature and is not cloned.
//
// RUN: shard-opt %s --dist-propagate | FileCheck %s
// RUN: shard-opt %s --dist-propagate --dist-partition | FileCheck %s --check-prefix=PART

// CHECK-LABEL: func.func private @f(
// CHECK-SAME: {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>}
// CHECK: tfm.gelu {{.*}}dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>
// CHECK-LABEL: func.func private @f_s1(
// CHECK-SAME: {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>}
// CHECK: tfm.gelu {{.*}}dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>
// CHECK-NOT: @g_s1
// CHECK-LABEL: func.func @main(
// CHECK: call @f(%arg0)
// CHECK: call @f_s1(%arg1)
// CHECK: call @f(%arg0)
// CHECK: %[[G:.*]] = call @g(%arg0)
// CHECK: call @g(%[[G]])

// PART-LABEL: func.func @main(
// PART-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// PART: return

module {
  dist.mesh @mesh [tp = 2 : tensor]
  func.func private @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %y = tfm.gelu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
  func.func private @g(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %y = tfm.gelu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
  func.func @main(%a: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>},
                  %b: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>})
      -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>},
          tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>},
          tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>},
          tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>}) {
    %0 = call @f(%a) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = call @f(%b) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %2 = call @f(%a) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %3 = call @g(%a) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %4 = call @g(%3) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %5 = tfm.add %2, %4 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %0, %1, %5, %3 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  }
}
