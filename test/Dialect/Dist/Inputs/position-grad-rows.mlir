// position_embedding_grad with S == P whose result rows are split while its
// `dy` is not (used by dist-sharding-quality.mlir): the hook must split `dy`
// like the rows (a local slice) and sum only the local rows.
module {
  dist.mesh @mesh [dp = 2, tp = 2]
  func.func @f(%dy: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}], partial = {dp: sum}>})
      -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp, dp}, {}]>}) {
    %0 = tfm.position_embedding_grad %dy {dist.sharding = #dist.sharding<@mesh, [{tp}, {}], partial = {dp: sum}>, num_positions = 8 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}
