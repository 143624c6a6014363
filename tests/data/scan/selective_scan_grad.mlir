module @jit_selective_scan_grad attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x256x64xf32>, %arg1: tensor<2x256x64xf32>, %arg2: tensor<64x16xf32>, %arg3: tensor<2x256x16xf32>, %arg4: tensor<2x256x16xf32>, %arg5: tensor<64xf32>) -> (tensor<2x256x64xf32> {jax.result_info = "result[0]"}, tensor<2x256x64xf32> {jax.result_info = "result[1]"}, tensor<64x16xf32> {jax.result_info = "result[2]"}, tensor<2x256x16xf32> {jax.result_info = "result[3]"}, tensor<2x256x16xf32> {jax.result_info = "result[4]"}, tensor<64xf32> {jax.result_info = "result[5]"}) {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [0, 1, 2] : (tensor<2x256x64xf32>) -> tensor<2x256x64x1xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [2, 3] : (tensor<64x16xf32>) -> tensor<1x1x64x16xf32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2, 3] : (tensor<2x256x64x1xf32>) -> tensor<2x256x64x16xf32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x1x64x16xf32>) -> tensor<2x256x64x16xf32>
    %4 = stablehlo.multiply %2, %3 : tensor<2x256x64x16xf32>
    %5 = stablehlo.exponential %4 : tensor<2x256x64x16xf32>
    %6 = stablehlo.broadcast_in_dim %arg1, dims = [0, 1, 2] : (tensor<2x256x64xf32>) -> tensor<2x256x64x1xf32>
    %7 = stablehlo.broadcast_in_dim %arg3, dims = [0, 1, 3] : (tensor<2x256x16xf32>) -> tensor<2x256x1x16xf32>
    %8 = stablehlo.broadcast_in_dim %6, dims = [0, 1, 2, 3] : (tensor<2x256x64x1xf32>) -> tensor<2x256x64x16xf32>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1, 2, 3] : (tensor<2x256x1x16xf32>) -> tensor<2x256x64x16xf32>
    %10 = stablehlo.multiply %8, %9 : tensor<2x256x64x16xf32>
    %11 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1, 2] : (tensor<2x256x64xf32>) -> tensor<2x256x64x1xf32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2, 3] : (tensor<2x256x64x1xf32>) -> tensor<2x256x64x16xf32>
    %13 = stablehlo.multiply %10, %12 : tensor<2x256x64x16xf32>
    %14 = stablehlo.slice %5 [0:2, 0:255:2, 0:64, 0:16] : (tensor<2x256x64x16xf32>) -> tensor<2x128x64x16xf32>
    %15 = stablehlo.slice %13 [0:2, 0:255:2, 0:64, 0:16] : (tensor<2x256x64x16xf32>) -> tensor<2x128x64x16xf32>
    %16 = stablehlo.slice %5 [0:2, 1:256:2, 0:64, 0:16] : (tensor<2x256x64x16xf32>) -> tensor<2x128x64x16xf32>
    %17 = stablehlo.slice %13 [0:2, 1:256:2, 0:64, 0:16] : (tensor<2x256x64x16xf32>) -> tensor<2x128x64x16xf32>
    %18 = stablehlo.multiply %14, %16 : tensor<2x128x64x16xf32>
    %19 = stablehlo.multiply %16, %15 : tensor<2x128x64x16xf32>
    %20 = stablehlo.add %19, %17 : tensor<2x128x64x16xf32>
    %21 = stablehlo.slice %18 [0:2, 0:127:2, 0:64, 0:16] : (tensor<2x128x64x16xf32>) -> tensor<2x64x64x16xf32>
    %22 = stablehlo.slice %20 [0:2, 0:127:2, 0:64, 0:16] : (tensor<2x128x64x16xf32>) -> tensor<2x64x64x16xf32>
    %23 = stablehlo.slice %18 [0:2, 1:128:2, 0:64, 0:16] : (tensor<2x128x64x16xf32>) -> tensor<2x64x64x16xf32>
    %24 = stablehlo.slice %20 [0:2, 1:128:2, 0:64, 0:16] : (tensor<2x128x64x16xf32>) -> tensor<2x64x64x16xf32>
    %25 = stablehlo.multiply %21, %23 : tensor<2x64x64x16xf32>
    %26 = stablehlo.multiply %23, %22 : tensor<2x64x64x16xf32>
    %27 = stablehlo.add %26, %24 : tensor<2x64x64x16xf32>
    %28 = stablehlo.slice %25 [0:2, 0:63:2, 0:64, 0:16] : (tensor<2x64x64x16xf32>) -> tensor<2x32x64x16xf32>
    %29 = stablehlo.slice %27 [0:2, 0:63:2, 0:64, 0:16] : (tensor<2x64x64x16xf32>) -> tensor<2x32x64x16xf32>
    %30 = stablehlo.slice %25 [0:2, 1:64:2, 0:64, 0:16] : (tensor<2x64x64x16xf32>) -> tensor<2x32x64x16xf32>
    %31 = stablehlo.slice %27 [0:2, 1:64:2, 0:64, 0:16] : (tensor<2x64x64x16xf32>) -> tensor<2x32x64x16xf32>
    %32 = stablehlo.multiply %28, %30 : tensor<2x32x64x16xf32>
    %33 = stablehlo.multiply %30, %29 : tensor<2x32x64x16xf32>
    %34 = stablehlo.add %33, %31 : tensor<2x32x64x16xf32>
    %35 = stablehlo.slice %32 [0:2, 0:31:2, 0:64, 0:16] : (tensor<2x32x64x16xf32>) -> tensor<2x16x64x16xf32>
    %36 = stablehlo.slice %34 [0:2, 0:31:2, 0:64, 0:16] : (tensor<2x32x64x16xf32>) -> tensor<2x16x64x16xf32>
    %37 = stablehlo.slice %32 [0:2, 1:32:2, 0:64, 0:16] : (tensor<2x32x64x16xf32>) -> tensor<2x16x64x16xf32>
    %38 = stablehlo.slice %34 [0:2, 1:32:2, 0:64, 0:16] : (tensor<2x32x64x16xf32>) -> tensor<2x16x64x16xf32>
    %39 = stablehlo.multiply %35, %37 : tensor<2x16x64x16xf32>
    %40 = stablehlo.multiply %37, %36 : tensor<2x16x64x16xf32>
    %41 = stablehlo.add %40, %38 : tensor<2x16x64x16xf32>
    %42 = stablehlo.slice %39 [0:2, 0:15:2, 0:64, 0:16] : (tensor<2x16x64x16xf32>) -> tensor<2x8x64x16xf32>
    %43 = stablehlo.slice %41 [0:2, 0:15:2, 0:64, 0:16] : (tensor<2x16x64x16xf32>) -> tensor<2x8x64x16xf32>
    %44 = stablehlo.slice %39 [0:2, 1:16:2, 0:64, 0:16] : (tensor<2x16x64x16xf32>) -> tensor<2x8x64x16xf32>
    %45 = stablehlo.slice %41 [0:2, 1:16:2, 0:64, 0:16] : (tensor<2x16x64x16xf32>) -> tensor<2x8x64x16xf32>
    %46 = stablehlo.multiply %42, %44 : tensor<2x8x64x16xf32>
    %47 = stablehlo.multiply %44, %43 : tensor<2x8x64x16xf32>
    %48 = stablehlo.add %47, %45 : tensor<2x8x64x16xf32>
    %49 = stablehlo.slice %46 [0:2, 0:7:2, 0:64, 0:16] : (tensor<2x8x64x16xf32>) -> tensor<2x4x64x16xf32>
    %50 = stablehlo.slice %48 [0:2, 0:7:2, 0:64, 0:16] : (tensor<2x8x64x16xf32>) -> tensor<2x4x64x16xf32>
    %51 = stablehlo.slice %46 [0:2, 1:8:2, 0:64, 0:16] : (tensor<2x8x64x16xf32>) -> tensor<2x4x64x16xf32>
    %52 = stablehlo.slice %48 [0:2, 1:8:2, 0:64, 0:16] : (tensor<2x8x64x16xf32>) -> tensor<2x4x64x16xf32>
    %53 = stablehlo.multiply %49, %51 : tensor<2x4x64x16xf32>
    %54 = stablehlo.multiply %51, %50 : tensor<2x4x64x16xf32>
    %55 = stablehlo.add %54, %52 : tensor<2x4x64x16xf32>
    %56 = stablehlo.slice %53 [0:2, 0:3:2, 0:64, 0:16] : (tensor<2x4x64x16xf32>) -> tensor<2x2x64x16xf32>
    %57 = stablehlo.slice %55 [0:2, 0:3:2, 0:64, 0:16] : (tensor<2x4x64x16xf32>) -> tensor<2x2x64x16xf32>
    %58 = stablehlo.slice %53 [0:2, 1:4:2, 0:64, 0:16] : (tensor<2x4x64x16xf32>) -> tensor<2x2x64x16xf32>
    %59 = stablehlo.slice %55 [0:2, 1:4:2, 0:64, 0:16] : (tensor<2x4x64x16xf32>) -> tensor<2x2x64x16xf32>
    %60 = stablehlo.multiply %56, %58 : tensor<2x2x64x16xf32>
    %61 = stablehlo.multiply %58, %57 : tensor<2x2x64x16xf32>
    %62 = stablehlo.add %61, %59 : tensor<2x2x64x16xf32>
    %63 = stablehlo.slice %62 [0:2, 0:1:2, 0:64, 0:16] : (tensor<2x2x64x16xf32>) -> tensor<2x1x64x16xf32>
    %64 = stablehlo.slice %60 [0:2, 1:2:2, 0:64, 0:16] : (tensor<2x2x64x16xf32>) -> tensor<2x1x64x16xf32>
    %65 = stablehlo.slice %62 [0:2, 1:2:2, 0:64, 0:16] : (tensor<2x2x64x16xf32>) -> tensor<2x1x64x16xf32>
    %66 = stablehlo.multiply %64, %63 : tensor<2x1x64x16xf32>
    %67 = stablehlo.add %66, %65 : tensor<2x1x64x16xf32>
    %68 = stablehlo.slice %67 [0:2, 0:0, 0:64, 0:16] : (tensor<2x1x64x16xf32>) -> tensor<2x0x64x16xf32>
    %69 = stablehlo.slice %60 [0:2, 2:2:2, 0:64, 0:16] : (tensor<2x2x64x16xf32>) -> tensor<2x0x64x16xf32>
    %70 = stablehlo.slice %62 [0:2, 2:2:2, 0:64, 0:16] : (tensor<2x2x64x16xf32>) -> tensor<2x0x64x16xf32>
    %71 = stablehlo.multiply %69, %68 : tensor<2x0x64x16xf32>
    %72 = stablehlo.add %71, %70 : tensor<2x0x64x16xf32>
    %73 = stablehlo.slice %62 [0:2, 0:1, 0:64, 0:16] : (tensor<2x2x64x16xf32>) -> tensor<2x1x64x16xf32>
    %74 = stablehlo.concatenate %73, %72, dim = 1 : (tensor<2x1x64x16xf32>, tensor<2x0x64x16xf32>) -> tensor<2x1x64x16xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %75 = stablehlo.pad %74, %cst, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x2x64x16xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %76 = stablehlo.pad %67, %cst_0, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x2x64x16xf32>
    %77 = stablehlo.add %75, %76 : tensor<2x2x64x16xf32>
    %78 = stablehlo.slice %77 [0:2, 0:1, 0:64, 0:16] : (tensor<2x2x64x16xf32>) -> tensor<2x1x64x16xf32>
    %79 = stablehlo.slice %53 [0:2, 2:4:2, 0:64, 0:16] : (tensor<2x4x64x16xf32>) -> tensor<2x1x64x16xf32>
    %80 = stablehlo.slice %55 [0:2, 2:4:2, 0:64, 0:16] : (tensor<2x4x64x16xf32>) -> tensor<2x1x64x16xf32>
    %81 = stablehlo.multiply %79, %78 : tensor<2x1x64x16xf32>
    %82 = stablehlo.add %81, %80 : tensor<2x1x64x16xf32>
    %83 = stablehlo.slice %55 [0:2, 0:1, 0:64, 0:16] : (tensor<2x4x64x16xf32>) -> tensor<2x1x64x16xf32>
    %84 = stablehlo.concatenate %83, %82, dim = 1 : (tensor<2x1x64x16xf32>, tensor<2x1x64x16xf32>) -> tensor<2x2x64x16xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %85 = stablehlo.pad %84, %cst_1, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x2x64x16xf32>, tensor<f32>) -> tensor<2x4x64x16xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %86 = stablehlo.pad %77, %cst_2, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x2x64x16xf32>, tensor<f32>) -> tensor<2x4x64x16xf32>
    %87 = stablehlo.add %85, %86 : tensor<2x4x64x16xf32>
    %88 = stablehlo.slice %87 [0:2, 0:3, 0:64, 0:16] : (tensor<2x4x64x16xf32>) -> tensor<2x3x64x16xf32>
    %89 = stablehlo.slice %46 [0:2, 2:8:2, 0:64, 0:16] : (tensor<2x8x64x16xf32>) -> tensor<2x3x64x16xf32>
    %90 = stablehlo.slice %48 [0:2, 2:8:2, 0:64, 0:16] : (tensor<2x8x64x16xf32>) -> tensor<2x3x64x16xf32>
    %91 = stablehlo.multiply %89, %88 : tensor<2x3x64x16xf32>
    %92 = stablehlo.add %91, %90 : tensor<2x3x64x16xf32>
    %93 = stablehlo.slice %48 [0:2, 0:1, 0:64, 0:16] : (tensor<2x8x64x16xf32>) -> tensor<2x1x64x16xf32>
    %94 = stablehlo.concatenate %93, %92, dim = 1 : (tensor<2x1x64x16xf32>, tensor<2x3x64x16xf32>) -> tensor<2x4x64x16xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %95 = stablehlo.pad %94, %cst_3, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x4x64x16xf32>, tensor<f32>) -> tensor<2x8x64x16xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %96 = stablehlo.pad %87, %cst_4, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x4x64x16xf32>, tensor<f32>) -> tensor<2x8x64x16xf32>
    %97 = stablehlo.add %95, %96 : tensor<2x8x64x16xf32>
    %98 = stablehlo.slice %97 [0:2, 0:7, 0:64, 0:16] : (tensor<2x8x64x16xf32>) -> tensor<2x7x64x16xf32>
    %99 = stablehlo.slice %39 [0:2, 2:16:2, 0:64, 0:16] : (tensor<2x16x64x16xf32>) -> tensor<2x7x64x16xf32>
    %100 = stablehlo.slice %41 [0:2, 2:16:2, 0:64, 0:16] : (tensor<2x16x64x16xf32>) -> tensor<2x7x64x16xf32>
    %101 = stablehlo.multiply %99, %98 : tensor<2x7x64x16xf32>
    %102 = stablehlo.add %101, %100 : tensor<2x7x64x16xf32>
    %103 = stablehlo.slice %41 [0:2, 0:1, 0:64, 0:16] : (tensor<2x16x64x16xf32>) -> tensor<2x1x64x16xf32>
    %104 = stablehlo.concatenate %103, %102, dim = 1 : (tensor<2x1x64x16xf32>, tensor<2x7x64x16xf32>) -> tensor<2x8x64x16xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %105 = stablehlo.pad %104, %cst_5, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x8x64x16xf32>, tensor<f32>) -> tensor<2x16x64x16xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %106 = stablehlo.pad %97, %cst_6, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x8x64x16xf32>, tensor<f32>) -> tensor<2x16x64x16xf32>
    %107 = stablehlo.add %105, %106 : tensor<2x16x64x16xf32>
    %108 = stablehlo.slice %107 [0:2, 0:15, 0:64, 0:16] : (tensor<2x16x64x16xf32>) -> tensor<2x15x64x16xf32>
    %109 = stablehlo.slice %32 [0:2, 2:32:2, 0:64, 0:16] : (tensor<2x32x64x16xf32>) -> tensor<2x15x64x16xf32>
    %110 = stablehlo.slice %34 [0:2, 2:32:2, 0:64, 0:16] : (tensor<2x32x64x16xf32>) -> tensor<2x15x64x16xf32>
    %111 = stablehlo.multiply %109, %108 : tensor<2x15x64x16xf32>
    %112 = stablehlo.add %111, %110 : tensor<2x15x64x16xf32>
    %113 = stablehlo.slice %34 [0:2, 0:1, 0:64, 0:16] : (tensor<2x32x64x16xf32>) -> tensor<2x1x64x16xf32>
    %114 = stablehlo.concatenate %113, %112, dim = 1 : (tensor<2x1x64x16xf32>, tensor<2x15x64x16xf32>) -> tensor<2x16x64x16xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %115 = stablehlo.pad %114, %cst_7, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x16x64x16xf32>, tensor<f32>) -> tensor<2x32x64x16xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %116 = stablehlo.pad %107, %cst_8, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x16x64x16xf32>, tensor<f32>) -> tensor<2x32x64x16xf32>
    %117 = stablehlo.add %115, %116 : tensor<2x32x64x16xf32>
    %118 = stablehlo.slice %117 [0:2, 0:31, 0:64, 0:16] : (tensor<2x32x64x16xf32>) -> tensor<2x31x64x16xf32>
    %119 = stablehlo.slice %25 [0:2, 2:64:2, 0:64, 0:16] : (tensor<2x64x64x16xf32>) -> tensor<2x31x64x16xf32>
    %120 = stablehlo.slice %27 [0:2, 2:64:2, 0:64, 0:16] : (tensor<2x64x64x16xf32>) -> tensor<2x31x64x16xf32>
    %121 = stablehlo.multiply %119, %118 : tensor<2x31x64x16xf32>
    %122 = stablehlo.add %121, %120 : tensor<2x31x64x16xf32>
    %123 = stablehlo.slice %27 [0:2, 0:1, 0:64, 0:16] : (tensor<2x64x64x16xf32>) -> tensor<2x1x64x16xf32>
    %124 = stablehlo.concatenate %123, %122, dim = 1 : (tensor<2x1x64x16xf32>, tensor<2x31x64x16xf32>) -> tensor<2x32x64x16xf32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %125 = stablehlo.pad %124, %cst_9, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x32x64x16xf32>, tensor<f32>) -> tensor<2x64x64x16xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %126 = stablehlo.pad %117, %cst_10, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x32x64x16xf32>, tensor<f32>) -> tensor<2x64x64x16xf32>
    %127 = stablehlo.add %125, %126 : tensor<2x64x64x16xf32>
    %128 = stablehlo.slice %127 [0:2, 0:63, 0:64, 0:16] : (tensor<2x64x64x16xf32>) -> tensor<2x63x64x16xf32>
    %129 = stablehlo.slice %18 [0:2, 2:128:2, 0:64, 0:16] : (tensor<2x128x64x16xf32>) -> tensor<2x63x64x16xf32>
    %130 = stablehlo.slice %20 [0:2, 2:128:2, 0:64, 0:16] : (tensor<2x128x64x16xf32>) -> tensor<2x63x64x16xf32>
    %131 = stablehlo.multiply %129, %128 : tensor<2x63x64x16xf32>
    %132 = stablehlo.add %131, %130 : tensor<2x63x64x16xf32>
    %133 = stablehlo.slice %20 [0:2, 0:1, 0:64, 0:16] : (tensor<2x128x64x16xf32>) -> tensor<2x1x64x16xf32>
    %134 = stablehlo.concatenate %133, %132, dim = 1 : (tensor<2x1x64x16xf32>, tensor<2x63x64x16xf32>) -> tensor<2x64x64x16xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %135 = stablehlo.pad %134, %cst_11, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x64x64x16xf32>, tensor<f32>) -> tensor<2x128x64x16xf32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %136 = stablehlo.pad %127, %cst_12, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x64x64x16xf32>, tensor<f32>) -> tensor<2x128x64x16xf32>
    %137 = stablehlo.add %135, %136 : tensor<2x128x64x16xf32>
    %138 = stablehlo.slice %137 [0:2, 0:127, 0:64, 0:16] : (tensor<2x128x64x16xf32>) -> tensor<2x127x64x16xf32>
    %139 = stablehlo.slice %5 [0:2, 2:256:2, 0:64, 0:16] : (tensor<2x256x64x16xf32>) -> tensor<2x127x64x16xf32>
    %140 = stablehlo.slice %13 [0:2, 2:256:2, 0:64, 0:16] : (tensor<2x256x64x16xf32>) -> tensor<2x127x64x16xf32>
    %141 = stablehlo.multiply %139, %138 : tensor<2x127x64x16xf32>
    %142 = stablehlo.add %141, %140 : tensor<2x127x64x16xf32>
    %143 = stablehlo.slice %13 [0:2, 0:1, 0:64, 0:16] : (tensor<2x256x64x16xf32>) -> tensor<2x1x64x16xf32>
    %144 = stablehlo.concatenate %143, %142, dim = 1 : (tensor<2x1x64x16xf32>, tensor<2x127x64x16xf32>) -> tensor<2x128x64x16xf32>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %145 = stablehlo.pad %144, %cst_13, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x128x64x16xf32>, tensor<f32>) -> tensor<2x256x64x16xf32>
    %cst_14 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %146 = stablehlo.pad %137, %cst_14, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x128x64x16xf32>, tensor<f32>) -> tensor<2x256x64x16xf32>
    %147 = stablehlo.add %145, %146 : tensor<2x256x64x16xf32>
    %148 = stablehlo.dot_general %147, %arg4, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x256x64x16xf32>, tensor<2x256x16xf32>) -> tensor<2x256x64xf32>
    %149 = stablehlo.broadcast_in_dim %arg5, dims = [2] : (tensor<64xf32>) -> tensor<1x1x64xf32>
    %150 = stablehlo.broadcast_in_dim %149, dims = [0, 1, 2] : (tensor<1x1x64xf32>) -> tensor<2x256x64xf32>
    %151 = stablehlo.multiply %150, %arg0 : tensor<2x256x64xf32>
    %152 = stablehlo.add %148, %151 : tensor<2x256x64xf32>
    %cst_15 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %153 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<2x256x64xf32>
    %154 = stablehlo.multiply %153, %152 : tensor<2x256x64xf32>
    %cst_16 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %155 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<2x256x64xf32>
    %156 = stablehlo.multiply %155, %154 : tensor<2x256x64xf32>
    %157 = stablehlo.broadcast_in_dim %149, dims = [0, 1, 2] : (tensor<1x1x64xf32>) -> tensor<2x256x64xf32>
    %158 = stablehlo.multiply %157, %156 : tensor<2x256x64xf32>
    %159 = stablehlo.multiply %156, %arg0 : tensor<2x256x64xf32>
    %cst_17 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %160 = stablehlo.reduce(%159 init: %cst_17) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x256x64xf32>, tensor<f32>) -> tensor<64xf32>
    %161 = stablehlo.reshape %160 : (tensor<64xf32>) -> tensor<1x1x64xf32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %162 = stablehlo.reduce(%161 init: %cst_18) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x64xf32>, tensor<f32>) -> tensor<64xf32>
    %163 = stablehlo.dot_general %156, %147, batching_dims = [0, 1] x [0, 1], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x256x64xf32>, tensor<2x256x64x16xf32>) -> tensor<2x256x16xf32>
    %164 = stablehlo.dot_general %156, %arg4, batching_dims = [0, 1] x [0, 1], contracting_dims = [] x [], precision = [DEFAULT, DEFAULT] : (tensor<2x256x64xf32>, tensor<2x256x16xf32>) -> tensor<2x256x64x16xf32>
    %cst_19 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %165 = stablehlo.pad %164, %cst_19, low = [0, -1, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x256x64x16xf32>, tensor<f32>) -> tensor<2x255x64x16xf32>
    %166 = stablehlo.slice %165 [0:2, 0:255:2, 0:64, 0:16] : (tensor<2x255x64x16xf32>) -> tensor<2x128x64x16xf32>
    %cst_20 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %167 = stablehlo.pad %164, %cst_20, low = [0, 0, 0, 0], high = [0, -1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x256x64x16xf32>, tensor<f32>) -> tensor<2x255x64x16xf32>
    %168 = stablehlo.slice %167 [0:2, 0:255:2, 0:64, 0:16] : (tensor<2x255x64x16xf32>) -> tensor<2x128x64x16xf32>
    %169 = stablehlo.slice %168 [0:2, 0:1, 0:64, 0:16] : (tensor<2x128x64x16xf32>) -> tensor<2x1x64x16xf32>
    %170 = stablehlo.slice %168 [0:2, 1:128, 0:64, 0:16] : (tensor<2x128x64x16xf32>) -> tensor<2x127x64x16xf32>
    %cst_21 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %171 = stablehlo.pad %169, %cst_21, low = [0, 0, 0, 0], high = [0, 255, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x256x64x16xf32>
    %172 = stablehlo.multiply %139, %170 : tensor<2x127x64x16xf32>
    %173 = stablehlo.multiply %170, %138 : tensor<2x127x64x16xf32>
    %cst_22 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %174 = stablehlo.pad %170, %cst_22, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x127x64x16xf32>, tensor<f32>) -> tensor<2x256x64x16xf32>
    %175 = stablehlo.add %171, %174 : tensor<2x256x64x16xf32>
    %cst_23 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %176 = stablehlo.pad %173, %cst_23, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x127x64x16xf32>, tensor<f32>) -> tensor<2x256x64x16xf32>
    %cst_24 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %177 = stablehlo.pad %172, %cst_24, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x127x64x16xf32>, tensor<f32>) -> tensor<2x128x64x16xf32>
    %178 = stablehlo.add %166, %177 : tensor<2x128x64x16xf32>
    %cst_25 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %179 = stablehlo.pad %178, %cst_25, low = [0, -1, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x128x64x16xf32>, tensor<f32>) -> tensor<2x127x64x16xf32>
    %180 = stablehlo.slice %179 [0:2, 0:127:2, 0:64, 0:16] : (tensor<2x127x64x16xf32>) -> tensor<2x64x64x16xf32>
    %cst_26 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %181 = stablehlo.pad %178, %cst_26, low = [0, 0, 0, 0], high = [0, -1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x128x64x16xf32>, tensor<f32>) -> tensor<2x127x64x16xf32>
    %182 = stablehlo.slice %181 [0:2, 0:127:2, 0:64, 0:16] : (tensor<2x127x64x16xf32>) -> tensor<2x64x64x16xf32>
    %183 = stablehlo.slice %182 [0:2, 0:1, 0:64, 0:16] : (tensor<2x64x64x16xf32>) -> tensor<2x1x64x16xf32>
    %184 = stablehlo.slice %182 [0:2, 1:64, 0:64, 0:16] : (tensor<2x64x64x16xf32>) -> tensor<2x63x64x16xf32>
    %cst_27 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %185 = stablehlo.pad %183, %cst_27, low = [0, 0, 0, 0], high = [0, 127, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x128x64x16xf32>
    %186 = stablehlo.multiply %129, %184 : tensor<2x63x64x16xf32>
    %187 = stablehlo.multiply %184, %128 : tensor<2x63x64x16xf32>
    %cst_28 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %188 = stablehlo.pad %184, %cst_28, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x63x64x16xf32>, tensor<f32>) -> tensor<2x128x64x16xf32>
    %189 = stablehlo.add %185, %188 : tensor<2x128x64x16xf32>
    %cst_29 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %190 = stablehlo.pad %187, %cst_29, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x63x64x16xf32>, tensor<f32>) -> tensor<2x128x64x16xf32>
    %cst_30 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %191 = stablehlo.pad %186, %cst_30, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x63x64x16xf32>, tensor<f32>) -> tensor<2x64x64x16xf32>
    %192 = stablehlo.add %180, %191 : tensor<2x64x64x16xf32>
    %cst_31 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %193 = stablehlo.pad %192, %cst_31, low = [0, -1, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x64x64x16xf32>, tensor<f32>) -> tensor<2x63x64x16xf32>
    %194 = stablehlo.slice %193 [0:2, 0:63:2, 0:64, 0:16] : (tensor<2x63x64x16xf32>) -> tensor<2x32x64x16xf32>
    %cst_32 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %195 = stablehlo.pad %192, %cst_32, low = [0, 0, 0, 0], high = [0, -1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x64x64x16xf32>, tensor<f32>) -> tensor<2x63x64x16xf32>
    %196 = stablehlo.slice %195 [0:2, 0:63:2, 0:64, 0:16] : (tensor<2x63x64x16xf32>) -> tensor<2x32x64x16xf32>
    %197 = stablehlo.slice %196 [0:2, 0:1, 0:64, 0:16] : (tensor<2x32x64x16xf32>) -> tensor<2x1x64x16xf32>
    %198 = stablehlo.slice %196 [0:2, 1:32, 0:64, 0:16] : (tensor<2x32x64x16xf32>) -> tensor<2x31x64x16xf32>
    %cst_33 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %199 = stablehlo.pad %197, %cst_33, low = [0, 0, 0, 0], high = [0, 63, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x64x64x16xf32>
    %200 = stablehlo.multiply %119, %198 : tensor<2x31x64x16xf32>
    %201 = stablehlo.multiply %198, %118 : tensor<2x31x64x16xf32>
    %cst_34 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %202 = stablehlo.pad %198, %cst_34, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x31x64x16xf32>, tensor<f32>) -> tensor<2x64x64x16xf32>
    %203 = stablehlo.add %199, %202 : tensor<2x64x64x16xf32>
    %cst_35 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %204 = stablehlo.pad %201, %cst_35, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x31x64x16xf32>, tensor<f32>) -> tensor<2x64x64x16xf32>
    %cst_36 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %205 = stablehlo.pad %200, %cst_36, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x31x64x16xf32>, tensor<f32>) -> tensor<2x32x64x16xf32>
    %206 = stablehlo.add %194, %205 : tensor<2x32x64x16xf32>
    %cst_37 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %207 = stablehlo.pad %206, %cst_37, low = [0, -1, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x32x64x16xf32>, tensor<f32>) -> tensor<2x31x64x16xf32>
    %208 = stablehlo.slice %207 [0:2, 0:31:2, 0:64, 0:16] : (tensor<2x31x64x16xf32>) -> tensor<2x16x64x16xf32>
    %cst_38 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %209 = stablehlo.pad %206, %cst_38, low = [0, 0, 0, 0], high = [0, -1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x32x64x16xf32>, tensor<f32>) -> tensor<2x31x64x16xf32>
    %210 = stablehlo.slice %209 [0:2, 0:31:2, 0:64, 0:16] : (tensor<2x31x64x16xf32>) -> tensor<2x16x64x16xf32>
    %211 = stablehlo.slice %210 [0:2, 0:1, 0:64, 0:16] : (tensor<2x16x64x16xf32>) -> tensor<2x1x64x16xf32>
    %212 = stablehlo.slice %210 [0:2, 1:16, 0:64, 0:16] : (tensor<2x16x64x16xf32>) -> tensor<2x15x64x16xf32>
    %cst_39 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %213 = stablehlo.pad %211, %cst_39, low = [0, 0, 0, 0], high = [0, 31, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x32x64x16xf32>
    %214 = stablehlo.multiply %109, %212 : tensor<2x15x64x16xf32>
    %215 = stablehlo.multiply %212, %108 : tensor<2x15x64x16xf32>
    %cst_40 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %216 = stablehlo.pad %212, %cst_40, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x15x64x16xf32>, tensor<f32>) -> tensor<2x32x64x16xf32>
    %217 = stablehlo.add %213, %216 : tensor<2x32x64x16xf32>
    %cst_41 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %218 = stablehlo.pad %215, %cst_41, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x15x64x16xf32>, tensor<f32>) -> tensor<2x32x64x16xf32>
    %cst_42 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %219 = stablehlo.pad %214, %cst_42, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x15x64x16xf32>, tensor<f32>) -> tensor<2x16x64x16xf32>
    %220 = stablehlo.add %208, %219 : tensor<2x16x64x16xf32>
    %cst_43 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %221 = stablehlo.pad %220, %cst_43, low = [0, -1, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x16x64x16xf32>, tensor<f32>) -> tensor<2x15x64x16xf32>
    %222 = stablehlo.slice %221 [0:2, 0:15:2, 0:64, 0:16] : (tensor<2x15x64x16xf32>) -> tensor<2x8x64x16xf32>
    %cst_44 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %223 = stablehlo.pad %220, %cst_44, low = [0, 0, 0, 0], high = [0, -1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x16x64x16xf32>, tensor<f32>) -> tensor<2x15x64x16xf32>
    %224 = stablehlo.slice %223 [0:2, 0:15:2, 0:64, 0:16] : (tensor<2x15x64x16xf32>) -> tensor<2x8x64x16xf32>
    %225 = stablehlo.slice %224 [0:2, 0:1, 0:64, 0:16] : (tensor<2x8x64x16xf32>) -> tensor<2x1x64x16xf32>
    %226 = stablehlo.slice %224 [0:2, 1:8, 0:64, 0:16] : (tensor<2x8x64x16xf32>) -> tensor<2x7x64x16xf32>
    %cst_45 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %227 = stablehlo.pad %225, %cst_45, low = [0, 0, 0, 0], high = [0, 15, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x16x64x16xf32>
    %228 = stablehlo.multiply %99, %226 : tensor<2x7x64x16xf32>
    %229 = stablehlo.multiply %226, %98 : tensor<2x7x64x16xf32>
    %cst_46 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %230 = stablehlo.pad %226, %cst_46, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x7x64x16xf32>, tensor<f32>) -> tensor<2x16x64x16xf32>
    %231 = stablehlo.add %227, %230 : tensor<2x16x64x16xf32>
    %cst_47 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %232 = stablehlo.pad %229, %cst_47, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x7x64x16xf32>, tensor<f32>) -> tensor<2x16x64x16xf32>
    %cst_48 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %233 = stablehlo.pad %228, %cst_48, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x7x64x16xf32>, tensor<f32>) -> tensor<2x8x64x16xf32>
    %234 = stablehlo.add %222, %233 : tensor<2x8x64x16xf32>
    %cst_49 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %235 = stablehlo.pad %234, %cst_49, low = [0, -1, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x8x64x16xf32>, tensor<f32>) -> tensor<2x7x64x16xf32>
    %236 = stablehlo.slice %235 [0:2, 0:7:2, 0:64, 0:16] : (tensor<2x7x64x16xf32>) -> tensor<2x4x64x16xf32>
    %cst_50 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %237 = stablehlo.pad %234, %cst_50, low = [0, 0, 0, 0], high = [0, -1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x8x64x16xf32>, tensor<f32>) -> tensor<2x7x64x16xf32>
    %238 = stablehlo.slice %237 [0:2, 0:7:2, 0:64, 0:16] : (tensor<2x7x64x16xf32>) -> tensor<2x4x64x16xf32>
    %239 = stablehlo.slice %238 [0:2, 0:1, 0:64, 0:16] : (tensor<2x4x64x16xf32>) -> tensor<2x1x64x16xf32>
    %240 = stablehlo.slice %238 [0:2, 1:4, 0:64, 0:16] : (tensor<2x4x64x16xf32>) -> tensor<2x3x64x16xf32>
    %cst_51 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %241 = stablehlo.pad %239, %cst_51, low = [0, 0, 0, 0], high = [0, 7, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x8x64x16xf32>
    %242 = stablehlo.multiply %89, %240 : tensor<2x3x64x16xf32>
    %243 = stablehlo.multiply %240, %88 : tensor<2x3x64x16xf32>
    %cst_52 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %244 = stablehlo.pad %240, %cst_52, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x3x64x16xf32>, tensor<f32>) -> tensor<2x8x64x16xf32>
    %245 = stablehlo.add %241, %244 : tensor<2x8x64x16xf32>
    %cst_53 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %246 = stablehlo.pad %243, %cst_53, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x3x64x16xf32>, tensor<f32>) -> tensor<2x8x64x16xf32>
    %cst_54 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %247 = stablehlo.pad %242, %cst_54, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x3x64x16xf32>, tensor<f32>) -> tensor<2x4x64x16xf32>
    %248 = stablehlo.add %236, %247 : tensor<2x4x64x16xf32>
    %cst_55 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %249 = stablehlo.pad %248, %cst_55, low = [0, -1, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x4x64x16xf32>, tensor<f32>) -> tensor<2x3x64x16xf32>
    %250 = stablehlo.slice %249 [0:2, 0:3:2, 0:64, 0:16] : (tensor<2x3x64x16xf32>) -> tensor<2x2x64x16xf32>
    %cst_56 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %251 = stablehlo.pad %248, %cst_56, low = [0, 0, 0, 0], high = [0, -1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x4x64x16xf32>, tensor<f32>) -> tensor<2x3x64x16xf32>
    %252 = stablehlo.slice %251 [0:2, 0:3:2, 0:64, 0:16] : (tensor<2x3x64x16xf32>) -> tensor<2x2x64x16xf32>
    %253 = stablehlo.slice %252 [0:2, 0:1, 0:64, 0:16] : (tensor<2x2x64x16xf32>) -> tensor<2x1x64x16xf32>
    %254 = stablehlo.slice %252 [0:2, 1:2, 0:64, 0:16] : (tensor<2x2x64x16xf32>) -> tensor<2x1x64x16xf32>
    %cst_57 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %255 = stablehlo.pad %253, %cst_57, low = [0, 0, 0, 0], high = [0, 3, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x4x64x16xf32>
    %256 = stablehlo.multiply %79, %254 : tensor<2x1x64x16xf32>
    %257 = stablehlo.multiply %254, %78 : tensor<2x1x64x16xf32>
    %cst_58 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %258 = stablehlo.pad %254, %cst_58, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x4x64x16xf32>
    %259 = stablehlo.add %255, %258 : tensor<2x4x64x16xf32>
    %cst_59 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %260 = stablehlo.pad %257, %cst_59, low = [0, 2, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x4x64x16xf32>
    %cst_60 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %261 = stablehlo.pad %256, %cst_60, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x2x64x16xf32>
    %262 = stablehlo.add %250, %261 : tensor<2x2x64x16xf32>
    %cst_61 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %263 = stablehlo.pad %262, %cst_61, low = [0, -1, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x2x64x16xf32>, tensor<f32>) -> tensor<2x1x64x16xf32>
    %264 = stablehlo.slice %263 [0:2, 0:1:2, 0:64, 0:16] : (tensor<2x1x64x16xf32>) -> tensor<2x1x64x16xf32>
    %cst_62 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %265 = stablehlo.pad %262, %cst_62, low = [0, 0, 0, 0], high = [0, -1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x2x64x16xf32>, tensor<f32>) -> tensor<2x1x64x16xf32>
    %266 = stablehlo.slice %265 [0:2, 0:1:2, 0:64, 0:16] : (tensor<2x1x64x16xf32>) -> tensor<2x1x64x16xf32>
    %267 = stablehlo.slice %266 [0:2, 0:1, 0:64, 0:16] : (tensor<2x1x64x16xf32>) -> tensor<2x1x64x16xf32>
    %268 = stablehlo.slice %266 [0:2, 1:1, 0:64, 0:16] : (tensor<2x1x64x16xf32>) -> tensor<2x0x64x16xf32>
    %cst_63 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %269 = stablehlo.pad %267, %cst_63, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x2x64x16xf32>
    %270 = stablehlo.multiply %69, %268 : tensor<2x0x64x16xf32>
    %271 = stablehlo.multiply %268, %68 : tensor<2x0x64x16xf32>
    %cst_64 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %272 = stablehlo.pad %268, %cst_64, low = [0, 2, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x0x64x16xf32>, tensor<f32>) -> tensor<2x2x64x16xf32>
    %273 = stablehlo.add %269, %272 : tensor<2x2x64x16xf32>
    %cst_65 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %274 = stablehlo.pad %271, %cst_65, low = [0, 2, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x0x64x16xf32>, tensor<f32>) -> tensor<2x2x64x16xf32>
    %cst_66 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %275 = stablehlo.pad %270, %cst_66, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x0x64x16xf32>, tensor<f32>) -> tensor<2x1x64x16xf32>
    %276 = stablehlo.add %264, %275 : tensor<2x1x64x16xf32>
    %277 = stablehlo.multiply %64, %276 : tensor<2x1x64x16xf32>
    %278 = stablehlo.multiply %276, %63 : tensor<2x1x64x16xf32>
    %cst_67 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %279 = stablehlo.pad %276, %cst_67, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x2x64x16xf32>
    %280 = stablehlo.add %273, %279 : tensor<2x2x64x16xf32>
    %cst_68 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %281 = stablehlo.pad %278, %cst_68, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x2x64x16xf32>
    %282 = stablehlo.add %274, %281 : tensor<2x2x64x16xf32>
    %cst_69 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %283 = stablehlo.pad %277, %cst_69, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x1x64x16xf32>, tensor<f32>) -> tensor<2x2x64x16xf32>
    %284 = stablehlo.add %280, %283 : tensor<2x2x64x16xf32>
    %285 = stablehlo.multiply %58, %284 : tensor<2x2x64x16xf32>
    %286 = stablehlo.multiply %284, %57 : tensor<2x2x64x16xf32>
    %287 = stablehlo.multiply %56, %282 : tensor<2x2x64x16xf32>
    %288 = stablehlo.add %286, %287 : tensor<2x2x64x16xf32>
    %289 = stablehlo.multiply %282, %58 : tensor<2x2x64x16xf32>
    %cst_70 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %290 = stablehlo.pad %284, %cst_70, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x2x64x16xf32>, tensor<f32>) -> tensor<2x4x64x16xf32>
    %291 = stablehlo.add %259, %290 : tensor<2x4x64x16xf32>
    %cst_71 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %292 = stablehlo.pad %288, %cst_71, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x2x64x16xf32>, tensor<f32>) -> tensor<2x4x64x16xf32>
    %293 = stablehlo.add %260, %292 : tensor<2x4x64x16xf32>
    %cst_72 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %294 = stablehlo.pad %285, %cst_72, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x2x64x16xf32>, tensor<f32>) -> tensor<2x4x64x16xf32>
    %295 = stablehlo.add %291, %294 : tensor<2x4x64x16xf32>
    %cst_73 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %296 = stablehlo.pad %289, %cst_73, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x2x64x16xf32>, tensor<f32>) -> tensor<2x4x64x16xf32>
    %297 = stablehlo.add %293, %296 : tensor<2x4x64x16xf32>
    %298 = stablehlo.multiply %51, %295 : tensor<2x4x64x16xf32>
    %299 = stablehlo.multiply %295, %50 : tensor<2x4x64x16xf32>
    %300 = stablehlo.multiply %49, %297 : tensor<2x4x64x16xf32>
    %301 = stablehlo.add %299, %300 : tensor<2x4x64x16xf32>
    %302 = stablehlo.multiply %297, %51 : tensor<2x4x64x16xf32>
    %cst_74 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %303 = stablehlo.pad %295, %cst_74, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x4x64x16xf32>, tensor<f32>) -> tensor<2x8x64x16xf32>
    %304 = stablehlo.add %245, %303 : tensor<2x8x64x16xf32>
    %cst_75 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %305 = stablehlo.pad %301, %cst_75, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x4x64x16xf32>, tensor<f32>) -> tensor<2x8x64x16xf32>
    %306 = stablehlo.add %246, %305 : tensor<2x8x64x16xf32>
    %cst_76 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %307 = stablehlo.pad %298, %cst_76, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x4x64x16xf32>, tensor<f32>) -> tensor<2x8x64x16xf32>
    %308 = stablehlo.add %304, %307 : tensor<2x8x64x16xf32>
    %cst_77 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %309 = stablehlo.pad %302, %cst_77, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x4x64x16xf32>, tensor<f32>) -> tensor<2x8x64x16xf32>
    %310 = stablehlo.add %306, %309 : tensor<2x8x64x16xf32>
    %311 = stablehlo.multiply %44, %308 : tensor<2x8x64x16xf32>
    %312 = stablehlo.multiply %308, %43 : tensor<2x8x64x16xf32>
    %313 = stablehlo.multiply %42, %310 : tensor<2x8x64x16xf32>
    %314 = stablehlo.add %312, %313 : tensor<2x8x64x16xf32>
    %315 = stablehlo.multiply %310, %44 : tensor<2x8x64x16xf32>
    %cst_78 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %316 = stablehlo.pad %308, %cst_78, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x8x64x16xf32>, tensor<f32>) -> tensor<2x16x64x16xf32>
    %317 = stablehlo.add %231, %316 : tensor<2x16x64x16xf32>
    %cst_79 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %318 = stablehlo.pad %314, %cst_79, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x8x64x16xf32>, tensor<f32>) -> tensor<2x16x64x16xf32>
    %319 = stablehlo.add %232, %318 : tensor<2x16x64x16xf32>
    %cst_80 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %320 = stablehlo.pad %311, %cst_80, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x8x64x16xf32>, tensor<f32>) -> tensor<2x16x64x16xf32>
    %321 = stablehlo.add %317, %320 : tensor<2x16x64x16xf32>
    %cst_81 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %322 = stablehlo.pad %315, %cst_81, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x8x64x16xf32>, tensor<f32>) -> tensor<2x16x64x16xf32>
    %323 = stablehlo.add %319, %322 : tensor<2x16x64x16xf32>
    %324 = stablehlo.multiply %37, %321 : tensor<2x16x64x16xf32>
    %325 = stablehlo.multiply %321, %36 : tensor<2x16x64x16xf32>
    %326 = stablehlo.multiply %35, %323 : tensor<2x16x64x16xf32>
    %327 = stablehlo.add %325, %326 : tensor<2x16x64x16xf32>
    %328 = stablehlo.multiply %323, %37 : tensor<2x16x64x16xf32>
    %cst_82 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %329 = stablehlo.pad %321, %cst_82, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x16x64x16xf32>, tensor<f32>) -> tensor<2x32x64x16xf32>
    %330 = stablehlo.add %217, %329 : tensor<2x32x64x16xf32>
    %cst_83 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %331 = stablehlo.pad %327, %cst_83, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x16x64x16xf32>, tensor<f32>) -> tensor<2x32x64x16xf32>
    %332 = stablehlo.add %218, %331 : tensor<2x32x64x16xf32>
    %cst_84 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %333 = stablehlo.pad %324, %cst_84, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x16x64x16xf32>, tensor<f32>) -> tensor<2x32x64x16xf32>
    %334 = stablehlo.add %330, %333 : tensor<2x32x64x16xf32>
    %cst_85 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %335 = stablehlo.pad %328, %cst_85, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x16x64x16xf32>, tensor<f32>) -> tensor<2x32x64x16xf32>
    %336 = stablehlo.add %332, %335 : tensor<2x32x64x16xf32>
    %337 = stablehlo.multiply %30, %334 : tensor<2x32x64x16xf32>
    %338 = stablehlo.multiply %334, %29 : tensor<2x32x64x16xf32>
    %339 = stablehlo.multiply %28, %336 : tensor<2x32x64x16xf32>
    %340 = stablehlo.add %338, %339 : tensor<2x32x64x16xf32>
    %341 = stablehlo.multiply %336, %30 : tensor<2x32x64x16xf32>
    %cst_86 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %342 = stablehlo.pad %334, %cst_86, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x32x64x16xf32>, tensor<f32>) -> tensor<2x64x64x16xf32>
    %343 = stablehlo.add %203, %342 : tensor<2x64x64x16xf32>
    %cst_87 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %344 = stablehlo.pad %340, %cst_87, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x32x64x16xf32>, tensor<f32>) -> tensor<2x64x64x16xf32>
    %345 = stablehlo.add %204, %344 : tensor<2x64x64x16xf32>
    %cst_88 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %346 = stablehlo.pad %337, %cst_88, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x32x64x16xf32>, tensor<f32>) -> tensor<2x64x64x16xf32>
    %347 = stablehlo.add %343, %346 : tensor<2x64x64x16xf32>
    %cst_89 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %348 = stablehlo.pad %341, %cst_89, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x32x64x16xf32>, tensor<f32>) -> tensor<2x64x64x16xf32>
    %349 = stablehlo.add %345, %348 : tensor<2x64x64x16xf32>
    %350 = stablehlo.multiply %23, %347 : tensor<2x64x64x16xf32>
    %351 = stablehlo.multiply %347, %22 : tensor<2x64x64x16xf32>
    %352 = stablehlo.multiply %21, %349 : tensor<2x64x64x16xf32>
    %353 = stablehlo.add %351, %352 : tensor<2x64x64x16xf32>
    %354 = stablehlo.multiply %349, %23 : tensor<2x64x64x16xf32>
    %cst_90 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %355 = stablehlo.pad %347, %cst_90, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x64x64x16xf32>, tensor<f32>) -> tensor<2x128x64x16xf32>
    %356 = stablehlo.add %189, %355 : tensor<2x128x64x16xf32>
    %cst_91 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %357 = stablehlo.pad %353, %cst_91, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x64x64x16xf32>, tensor<f32>) -> tensor<2x128x64x16xf32>
    %358 = stablehlo.add %190, %357 : tensor<2x128x64x16xf32>
    %cst_92 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %359 = stablehlo.pad %350, %cst_92, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x64x64x16xf32>, tensor<f32>) -> tensor<2x128x64x16xf32>
    %360 = stablehlo.add %356, %359 : tensor<2x128x64x16xf32>
    %cst_93 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %361 = stablehlo.pad %354, %cst_93, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x64x64x16xf32>, tensor<f32>) -> tensor<2x128x64x16xf32>
    %362 = stablehlo.add %358, %361 : tensor<2x128x64x16xf32>
    %363 = stablehlo.multiply %16, %360 : tensor<2x128x64x16xf32>
    %364 = stablehlo.multiply %360, %15 : tensor<2x128x64x16xf32>
    %365 = stablehlo.multiply %14, %362 : tensor<2x128x64x16xf32>
    %366 = stablehlo.add %364, %365 : tensor<2x128x64x16xf32>
    %367 = stablehlo.multiply %362, %16 : tensor<2x128x64x16xf32>
    %cst_94 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %368 = stablehlo.pad %360, %cst_94, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x128x64x16xf32>, tensor<f32>) -> tensor<2x256x64x16xf32>
    %369 = stablehlo.add %175, %368 : tensor<2x256x64x16xf32>
    %cst_95 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %370 = stablehlo.pad %366, %cst_95, low = [0, 1, 0, 0], high = [0, 0, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x128x64x16xf32>, tensor<f32>) -> tensor<2x256x64x16xf32>
    %371 = stablehlo.add %176, %370 : tensor<2x256x64x16xf32>
    %cst_96 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %372 = stablehlo.pad %363, %cst_96, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x128x64x16xf32>, tensor<f32>) -> tensor<2x256x64x16xf32>
    %373 = stablehlo.add %369, %372 : tensor<2x256x64x16xf32>
    %cst_97 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %374 = stablehlo.pad %367, %cst_97, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 1, 0, 0] : (tensor<2x128x64x16xf32>, tensor<f32>) -> tensor<2x256x64x16xf32>
    %375 = stablehlo.add %371, %374 : tensor<2x256x64x16xf32>
    %376 = stablehlo.multiply %10, %373 : tensor<2x256x64x16xf32>
    %cst_98 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %377 = stablehlo.reduce(%376 init: %cst_98) applies stablehlo.add across dimensions = [3] : (tensor<2x256x64x16xf32>, tensor<f32>) -> tensor<2x256x64xf32>
    %378 = stablehlo.reshape %377 : (tensor<2x256x64xf32>) -> tensor<2x256x64x1xf32>
    %379 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2, 3] : (tensor<2x256x64x1xf32>) -> tensor<2x256x64x16xf32>
    %380 = stablehlo.multiply %373, %379 : tensor<2x256x64x16xf32>
    %cst_99 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %381 = stablehlo.reduce(%378 init: %cst_99) applies stablehlo.add across dimensions = [3] : (tensor<2x256x64x1xf32>, tensor<f32>) -> tensor<2x256x64xf32>
    %382 = stablehlo.add %158, %381 : tensor<2x256x64xf32>
    %383 = stablehlo.broadcast_in_dim %6, dims = [0, 1, 2, 3] : (tensor<2x256x64x1xf32>) -> tensor<2x256x64x16xf32>
    %384 = stablehlo.multiply %383, %380 : tensor<2x256x64x16xf32>
    %cst_100 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %385 = stablehlo.reduce(%384 init: %cst_100) applies stablehlo.add across dimensions = [2] : (tensor<2x256x64x16xf32>, tensor<f32>) -> tensor<2x256x16xf32>
    %386 = stablehlo.reshape %385 : (tensor<2x256x16xf32>) -> tensor<2x256x1x16xf32>
    %387 = stablehlo.broadcast_in_dim %7, dims = [0, 1, 2, 3] : (tensor<2x256x1x16xf32>) -> tensor<2x256x64x16xf32>
    %388 = stablehlo.multiply %380, %387 : tensor<2x256x64x16xf32>
    %cst_101 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %389 = stablehlo.reduce(%388 init: %cst_101) applies stablehlo.add across dimensions = [3] : (tensor<2x256x64x16xf32>, tensor<f32>) -> tensor<2x256x64xf32>
    %390 = stablehlo.reshape %389 : (tensor<2x256x64xf32>) -> tensor<2x256x64x1xf32>
    %cst_102 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %391 = stablehlo.reduce(%386 init: %cst_102) applies stablehlo.add across dimensions = [2] : (tensor<2x256x1x16xf32>, tensor<f32>) -> tensor<2x256x16xf32>
    %cst_103 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %392 = stablehlo.reduce(%390 init: %cst_103) applies stablehlo.add across dimensions = [3] : (tensor<2x256x64x1xf32>, tensor<f32>) -> tensor<2x256x64xf32>
    %393 = stablehlo.multiply %375, %5 : tensor<2x256x64x16xf32>
    %394 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2, 3] : (tensor<2x256x64x1xf32>) -> tensor<2x256x64x16xf32>
    %395 = stablehlo.multiply %394, %393 : tensor<2x256x64x16xf32>
    %cst_104 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %396 = stablehlo.reduce(%395 init: %cst_104) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x256x64x16xf32>, tensor<f32>) -> tensor<64x16xf32>
    %397 = stablehlo.reshape %396 : (tensor<64x16xf32>) -> tensor<1x1x64x16xf32>
    %398 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x1x64x16xf32>) -> tensor<2x256x64x16xf32>
    %399 = stablehlo.multiply %393, %398 : tensor<2x256x64x16xf32>
    %cst_105 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %400 = stablehlo.reduce(%399 init: %cst_105) applies stablehlo.add across dimensions = [3] : (tensor<2x256x64x16xf32>, tensor<f32>) -> tensor<2x256x64xf32>
    %401 = stablehlo.reshape %400 : (tensor<2x256x64xf32>) -> tensor<2x256x64x1xf32>
    %cst_106 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %402 = stablehlo.reduce(%397 init: %cst_106) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x64x16xf32>, tensor<f32>) -> tensor<64x16xf32>
    %cst_107 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %403 = stablehlo.reduce(%401 init: %cst_107) applies stablehlo.add across dimensions = [3] : (tensor<2x256x64x1xf32>, tensor<f32>) -> tensor<2x256x64xf32>
    %404 = stablehlo.add %392, %403 : tensor<2x256x64xf32>
    return %382, %404, %402, %391, %163, %162 : tensor<2x256x64xf32>, tensor<2x256x64xf32>, tensor<64x16xf32>, tensor<2x256x16xf32>, tensor<2x256x16xf32>, tensor<64xf32>
  }
}
