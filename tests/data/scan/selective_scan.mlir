module @jit_selective_scan attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x256x64xf32>, %arg1: tensor<2x256x64xf32>, %arg2: tensor<64x16xf32>, %arg3: tensor<2x256x16xf32>, %arg4: tensor<2x256x16xf32>, %arg5: tensor<64xf32>) -> (tensor<2x256x64xf32> {jax.result_info = "result"}) {
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
    return %152 : tensor<2x256x64xf32>
  }
}
