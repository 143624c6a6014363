module @jit_nested_jit_and_slices attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x3xf32>, %arg1: tensor<i32>) -> (tensor<4x3xf32> {jax.result_info = "result"}) {
    %0 = call @_inner(%arg0) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = call @_pad(%0, %c) : (tensor<4x3xf32>, tensor<i32>) -> tensor<7x4xf32>
    %2 = call @_flip(%1) : (tensor<7x4xf32>) -> tensor<7x4xf32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.compare LT, %arg1, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_1 = stablehlo.constant dense<7> : tensor<i32>
    %4 = stablehlo.add %arg1, %c_1 : tensor<i32>
    %5 = stablehlo.select %3, %4, %arg1 : tensor<i1>, tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.dynamic_slice %2, %5, %c_2, sizes = [2, 3] : (tensor<7x4xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %8 = stablehlo.multiply %6, %7 : tensor<2x3xf32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.dynamic_update_slice %arg0, %8, %c_3, %c_4 : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<4x3xf32>
    %10 = stablehlo.iota dim = 0 : tensor<3xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<4x3xf32>
    %13 = stablehlo.add %9, %12 : tensor<4x3xf32>
    return %13 : tensor<4x3xf32>
  }
  func.func private @_inner(%arg0: tensor<4x3xf32>) -> tensor<4x3xf32> {
    %0 = stablehlo.exponential %arg0 : tensor<4x3xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %2 = stablehlo.subtract %0, %1 : tensor<4x3xf32>
    return %2 : tensor<4x3xf32>
  }
  func.func private @_pad(%arg0: tensor<4x3xf32>, %arg1: tensor<i32>) -> tensor<7x4xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [2, 1], interior = [0, 0] : (tensor<4x3xf32>, tensor<f32>) -> tensor<7x4xf32>
    return %1 : tensor<7x4xf32>
  }
  func.func private @_flip(%arg0: tensor<7x4xf32>) -> tensor<7x4xf32> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<7x4xf32>
    return %0 : tensor<7x4xf32>
  }
}
