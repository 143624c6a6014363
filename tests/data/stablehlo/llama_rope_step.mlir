module @jit_llama_rope_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32xf32>, %arg1: tensor<64x32xf32>, %arg2: tensor<32xf32>, %arg3: tensor<32xf32>, %arg4: tensor<96x32xf32>, %arg5: tensor<32x96xf32>, %arg6: tensor<32x96xf32>, %arg7: tensor<32x32xf32>, %arg8: tensor<32x32xf32>, %arg9: tensor<32x32xf32>, %arg10: tensor<32x32xf32>, %arg11: tensor<2x16xi32>, %arg12: tensor<2x16xi32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<32xf32> {jax.result_info = "result[1]['attention_gain']"}, tensor<64x32xf32> {jax.result_info = "result[1]['embedding']"}, tensor<32xf32> {jax.result_info = "result[1]['final_gain']"}, tensor<32xf32> {jax.result_info = "result[1]['mlp_gain']"}, tensor<96x32xf32> {jax.result_info = "result[1]['w_down']"}, tensor<32x96xf32> {jax.result_info = "result[1]['w_gate']"}, tensor<32x96xf32> {jax.result_info = "result[1]['w_up']"}, tensor<32x32xf32> {jax.result_info = "result[1]['wk']"}, tensor<32x32xf32> {jax.result_info = "result[1]['wo']"}, tensor<32x32xf32> {jax.result_info = "result[1]['wq']"}, tensor<32x32xf32> {jax.result_info = "result[1]['wv']"}) {
    %cst = stablehlo.constant dense<"0x803F803F803F803F803F803F803F803F0A3F733F7F3F803F803F803F803F803FD5BE4E3F7B3F7F3F803F803F803F803F7DBF153F753F7F3F803F803F803F803F27BF9A3E6C3F7E3F803F803F803F803F913E29BC613F7D3F803F803F803F803F763FA4BE533F7B3F803F803F803F803F413F19BF443F7A3F7F3F803F803F803F15BE52BF323F783F7F3F803F803F803F69BF75BF1F3F763F7F3F803F803F803F57BF80BF0A3F733F7F3F803F803F803F913B72BFE83E713F7E3F803F803F803F583F4BBFBA3E6E3F7E3F803F803F803F683F11BF893E6B3F7E3F803F803F803F0C3E90BE2E3E673F7D3F803F803F803F42BFFE3C913D643F7D3F803F803F803F"> : tensor<16x8xbf16>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [1, 3] : (tensor<16x8xbf16>) -> tensor<1x16x1x8xbf16>
    %cst_0 = stablehlo.constant dense<"0x00000000000000000000000000000000573F9F3ECC3D023D243C4F3B833AA639693F173F4B3E813DA43CCF3B033B263A113E503F973EC23DF63C1B3C453B793A42BF743FC73E013E243D4F3C833BA63A75BF803FF53E213E4D3D823CA43BCF3A8FBE723F113F413E763D9B3CC53BF93A283F4D3F253F613E8F3DB53CE53B113B7D3F133F383F803EA43DCF3C033C263BD33E953E493F903EB83DE93C133C3B3B0BBFA9BC573F9F3ECC3D023D243C4F3B80BFA9BE643FAF3EE13D0E3D343C643B09BF1CBF6F3FBE3EF53D1B3D453C793BD73E53BF773FCD3E053E283D553C873B7E3F76BF7C3FDB3E0F3E353D653C913B263F80BF7F3FEA3E193E423D763C9B3B"> : tensor<16x8xbf16>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [1, 3] : (tensor<16x8xbf16>) -> tensor<1x16x1x8xbf16>
    %cst_1 = stablehlo.constant dense<"0x803F803F803F803F803F803F803F803F0A3F733F7F3F803F803F803F803F803FD5BE4E3F7B3F7F3F803F803F803F803F7DBF153F753F7F3F803F803F803F803F27BF9A3E6C3F7E3F803F803F803F803F913E29BC613F7D3F803F803F803F803F763FA4BE533F7B3F803F803F803F803F413F19BF443F7A3F7F3F803F803F803F15BE52BF323F783F7F3F803F803F803F69BF75BF1F3F763F7F3F803F803F803F57BF80BF0A3F733F7F3F803F803F803F913B72BFE83E713F7E3F803F803F803F583F4BBFBA3E6E3F7E3F803F803F803F683F11BF893E6B3F7E3F803F803F803F0C3E90BE2E3E673F7D3F803F803F803F42BFFE3C913D643F7D3F803F803F803F"> : tensor<16x8xbf16>
    %2 = stablehlo.broadcast_in_dim %cst_1, dims = [1, 3] : (tensor<16x8xbf16>) -> tensor<1x16x1x8xbf16>
    %cst_2 = stablehlo.constant dense<"0x00000000000000000000000000000000573F9F3ECC3D023D243C4F3B833AA639693F173F4B3E813DA43CCF3B033B263A113E503F973EC23DF63C1B3C453B793A42BF743FC73E013E243D4F3C833BA63A75BF803FF53E213E4D3D823CA43BCF3A8FBE723F113F413E763D9B3CC53BF93A283F4D3F253F613E8F3DB53CE53B113B7D3F133F383F803EA43DCF3C033C263BD33E953E493F903EB83DE93C133C3B3B0BBFA9BC573F9F3ECC3D023D243C4F3B80BFA9BE643FAF3EE13D0E3D343C643B09BF1CBF6F3FBE3EF53D1B3D453C793BD73E53BF773FCD3E053E283D553C873B7E3F76BF7C3FDB3E0F3E353D653C913B263F80BF7F3FEA3E193E423D763C9B3B"> : tensor<16x8xbf16>
    %3 = stablehlo.broadcast_in_dim %cst_2, dims = [1, 3] : (tensor<16x8xbf16>) -> tensor<1x16x1x8xbf16>
    %c = stablehlo.constant dense<"0x01000000000000000000000000000000010100000000000000000000000000000101010000000000000000000000000001010101000000000000000000000000010101010100000000000000000000000101010101010000000000000000000001010101010101000000000000000000010101010101010100000000000000000101010101010101010000000000000001010101010101010101000000000000010101010101010101010100000000000101010101010101010101010000000001010101010101010101010101000000010101010101010101010101010100000101010101010101010101010101010001010101010101010101010101010101"> : tensor<16x16xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<2x16xi32>
    %5 = stablehlo.compare LT, %arg11, %4, SIGNED : (tensor<2x16xi32>, tensor<2x16xi32>) -> tensor<2x16xi1>
    %c_4 = stablehlo.constant dense<64> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<2x16xi32>
    %7 = stablehlo.add %arg11, %6 : tensor<2x16xi32>
    %8 = stablehlo.select %5, %7, %arg11 : tensor<2x16xi1>, tensor<2x16xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<2x16xi32>) -> tensor<2x16x1xi32>
    %10 = "stablehlo.gather"(%arg1, %9) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 32>}> : (tensor<64x32xf32>, tensor<2x16x1xi32>) -> tensor<2x16x32xf32>
    %11 = stablehlo.multiply %10, %10 : tensor<2x16x32xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.reduce(%11 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %cst_6 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %15 = stablehlo.divide %13, %14 : tensor<2x16x1xf32>
    %cst_7 = stablehlo.constant dense<9.99999997E-7> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %17 = stablehlo.add %15, %16 : tensor<2x16x1xf32>
    %18 = stablehlo.rsqrt %17 : tensor<2x16x1xf32>
    %19 = stablehlo.divide %18, %17 : tensor<2x16x1xf32>
    %cst_8 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %21 = stablehlo.multiply %20, %19 : tensor<2x16x1xf32>
    %22 = stablehlo.broadcast_in_dim %18, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %23 = stablehlo.multiply %10, %22 : tensor<2x16x32xf32>
    %24 = stablehlo.broadcast_in_dim %arg0, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %25 = stablehlo.broadcast_in_dim %24, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %26 = stablehlo.multiply %23, %25 : tensor<2x16x32xf32>
    %27 = stablehlo.convert %26 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %28 = stablehlo.convert %arg9 : (tensor<32x32xf32>) -> tensor<32x32xbf16>
    %29 = stablehlo.dot_general %27, %28, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x32xbf16>) -> tensor<2x16x32xbf16>
    %30 = stablehlo.convert %29 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %31 = stablehlo.convert %30 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %32 = stablehlo.reshape %31 : (tensor<2x16x32xbf16>) -> tensor<2x16x2x16xbf16>
    %33 = stablehlo.convert %26 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %34 = stablehlo.convert %arg7 : (tensor<32x32xf32>) -> tensor<32x32xbf16>
    %35 = stablehlo.dot_general %33, %34, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x32xbf16>) -> tensor<2x16x32xbf16>
    %36 = stablehlo.convert %35 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %37 = stablehlo.convert %36 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %38 = stablehlo.reshape %37 : (tensor<2x16x32xbf16>) -> tensor<2x16x2x16xbf16>
    %39 = stablehlo.convert %26 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %40 = stablehlo.convert %arg10 : (tensor<32x32xf32>) -> tensor<32x32xbf16>
    %41 = stablehlo.dot_general %39, %40, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x32xbf16>) -> tensor<2x16x32xbf16>
    %42 = stablehlo.convert %41 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %43 = stablehlo.convert %42 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %44 = stablehlo.reshape %43 : (tensor<2x16x32xbf16>) -> tensor<2x16x2x16xbf16>
    %45 = stablehlo.slice %32 [0:2, 0:16, 0:2, 0:8] : (tensor<2x16x2x16xbf16>) -> tensor<2x16x2x8xbf16>
    %46 = stablehlo.slice %32 [0:2, 0:16, 0:2, 8:16] : (tensor<2x16x2x16xbf16>) -> tensor<2x16x2x8xbf16>
    %47 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %48 = stablehlo.multiply %45, %47 : tensor<2x16x2x8xbf16>
    %49 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %50 = stablehlo.multiply %46, %49 : tensor<2x16x2x8xbf16>
    %51 = stablehlo.subtract %48, %50 : tensor<2x16x2x8xbf16>
    %52 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %53 = stablehlo.multiply %45, %52 : tensor<2x16x2x8xbf16>
    %54 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %55 = stablehlo.multiply %46, %54 : tensor<2x16x2x8xbf16>
    %56 = stablehlo.add %53, %55 : tensor<2x16x2x8xbf16>
    %57 = stablehlo.concatenate %51, %56, dim = 3 : (tensor<2x16x2x8xbf16>, tensor<2x16x2x8xbf16>) -> tensor<2x16x2x16xbf16>
    %58 = stablehlo.slice %38 [0:2, 0:16, 0:2, 0:8] : (tensor<2x16x2x16xbf16>) -> tensor<2x16x2x8xbf16>
    %59 = stablehlo.slice %38 [0:2, 0:16, 0:2, 8:16] : (tensor<2x16x2x16xbf16>) -> tensor<2x16x2x8xbf16>
    %60 = stablehlo.broadcast_in_dim %2, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %61 = stablehlo.multiply %58, %60 : tensor<2x16x2x8xbf16>
    %62 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %63 = stablehlo.multiply %59, %62 : tensor<2x16x2x8xbf16>
    %64 = stablehlo.subtract %61, %63 : tensor<2x16x2x8xbf16>
    %65 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %66 = stablehlo.multiply %58, %65 : tensor<2x16x2x8xbf16>
    %67 = stablehlo.broadcast_in_dim %2, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %68 = stablehlo.multiply %59, %67 : tensor<2x16x2x8xbf16>
    %69 = stablehlo.add %66, %68 : tensor<2x16x2x8xbf16>
    %70 = stablehlo.concatenate %64, %69, dim = 3 : (tensor<2x16x2x8xbf16>, tensor<2x16x2x8xbf16>) -> tensor<2x16x2x16xbf16>
    %71 = stablehlo.dot_general %57, %70, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>) -> tensor<2x2x16x16xbf16>
    %72 = stablehlo.convert %71 : (tensor<2x2x16x16xbf16>) -> tensor<2x2x16x16xf32>
    %cst_9 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %73 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<2x2x16x16xf32>
    %74 = stablehlo.divide %72, %73 : tensor<2x2x16x16xf32>
    %cst_10 = stablehlo.constant dense<-1.000000e+09> : tensor<f32>
    %75:2 = call @_where(%c, %74, %cst_10) : (tensor<16x16xi1>, tensor<2x2x16x16xf32>, tensor<f32>) -> (tensor<2x2x16x16xf32>, tensor<2x2x16x16xi1>)
    %cst_11 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %76 = stablehlo.reduce(%75#0 init: %cst_11) applies stablehlo.maximum across dimensions = [3] : (tensor<2x2x16x16xf32>, tensor<f32>) -> tensor<2x2x16xf32>
    %cst_12 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %77 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<2x2x16xf32>
    %78 = stablehlo.maximum %77, %76 : tensor<2x2x16xf32>
    %79 = stablehlo.broadcast_in_dim %78, dims = [0, 1, 2] : (tensor<2x2x16xf32>) -> tensor<2x2x16x1xf32>
    %80 = stablehlo.broadcast_in_dim %79, dims = [0, 1, 2, 3] : (tensor<2x2x16x1xf32>) -> tensor<2x2x16x16xf32>
    %81 = stablehlo.subtract %75#0, %80 : tensor<2x2x16x16xf32>
    %82 = stablehlo.exponential %81 : tensor<2x2x16x16xf32>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %83 = stablehlo.reduce(%82 init: %cst_13) applies stablehlo.add across dimensions = [3] : (tensor<2x2x16x16xf32>, tensor<f32>) -> tensor<2x2x16xf32>
    %84 = stablehlo.broadcast_in_dim %83, dims = [0, 1, 2] : (tensor<2x2x16xf32>) -> tensor<2x2x16x1xf32>
    %85 = stablehlo.broadcast_in_dim %84, dims = [0, 1, 2, 3] : (tensor<2x2x16x1xf32>) -> tensor<2x2x16x16xf32>
    %86 = stablehlo.divide %82, %85 : tensor<2x2x16x16xf32>
    %87 = stablehlo.multiply %84, %84 : tensor<2x2x16x1xf32>
    %cst_14 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %88 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<2x2x16x1xf32>
    %89 = stablehlo.divide %88, %87 : tensor<2x2x16x1xf32>
    %90 = stablehlo.convert %86 : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xbf16>
    %91 = stablehlo.dot_general %44, %90, batching_dims = [0, 2] x [0, 1], contracting_dims = [1] x [3], precision = [DEFAULT, DEFAULT] : (tensor<2x16x2x16xbf16>, tensor<2x2x16x16xbf16>) -> tensor<2x2x16x16xbf16>
    %92 = stablehlo.transpose %91, dims = [0, 3, 1, 2] : (tensor<2x2x16x16xbf16>) -> tensor<2x16x2x16xbf16>
    %93 = stablehlo.reshape %92 : (tensor<2x16x2x16xbf16>) -> tensor<2x16x32xbf16>
    %94 = stablehlo.convert %93 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %95 = stablehlo.convert %94 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %96 = stablehlo.convert %arg8 : (tensor<32x32xf32>) -> tensor<32x32xbf16>
    %97 = stablehlo.dot_general %95, %96, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x32xbf16>) -> tensor<2x16x32xbf16>
    %98 = stablehlo.convert %97 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %99 = stablehlo.add %10, %98 : tensor<2x16x32xf32>
    %100 = stablehlo.multiply %99, %99 : tensor<2x16x32xf32>
    %cst_15 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %101 = stablehlo.reduce(%100 init: %cst_15) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %102 = stablehlo.broadcast_in_dim %101, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %cst_16 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %103 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %104 = stablehlo.divide %102, %103 : tensor<2x16x1xf32>
    %cst_17 = stablehlo.constant dense<9.99999997E-7> : tensor<f32>
    %105 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %106 = stablehlo.add %104, %105 : tensor<2x16x1xf32>
    %107 = stablehlo.rsqrt %106 : tensor<2x16x1xf32>
    %108 = stablehlo.divide %107, %106 : tensor<2x16x1xf32>
    %cst_18 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %109 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %110 = stablehlo.multiply %109, %108 : tensor<2x16x1xf32>
    %111 = stablehlo.broadcast_in_dim %107, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %112 = stablehlo.multiply %99, %111 : tensor<2x16x32xf32>
    %113 = stablehlo.broadcast_in_dim %arg3, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %114 = stablehlo.broadcast_in_dim %113, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %115 = stablehlo.multiply %112, %114 : tensor<2x16x32xf32>
    %116 = stablehlo.convert %115 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %117 = stablehlo.convert %arg5 : (tensor<32x96xf32>) -> tensor<32x96xbf16>
    %118 = stablehlo.dot_general %116, %117, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x96xbf16>) -> tensor<2x16x96xbf16>
    %119 = stablehlo.convert %118 : (tensor<2x16x96xbf16>) -> tensor<2x16x96xf32>
    %120:3 = call @silu(%119) : (tensor<2x16x96xf32>) -> (tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>)
    %121 = stablehlo.convert %115 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %122 = stablehlo.convert %arg6 : (tensor<32x96xf32>) -> tensor<32x96xbf16>
    %123 = stablehlo.dot_general %121, %122, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x96xbf16>) -> tensor<2x16x96xbf16>
    %124 = stablehlo.convert %123 : (tensor<2x16x96xbf16>) -> tensor<2x16x96xf32>
    %125 = stablehlo.multiply %120#0, %124 : tensor<2x16x96xf32>
    %126 = stablehlo.convert %125 : (tensor<2x16x96xf32>) -> tensor<2x16x96xbf16>
    %127 = stablehlo.convert %arg4 : (tensor<96x32xf32>) -> tensor<96x32xbf16>
    %128 = stablehlo.dot_general %126, %127, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x96xbf16>, tensor<96x32xbf16>) -> tensor<2x16x32xbf16>
    %129 = stablehlo.convert %128 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %130 = stablehlo.add %99, %129 : tensor<2x16x32xf32>
    %131 = stablehlo.multiply %130, %130 : tensor<2x16x32xf32>
    %cst_19 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %132 = stablehlo.reduce(%131 init: %cst_19) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %133 = stablehlo.broadcast_in_dim %132, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %cst_20 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %134 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %135 = stablehlo.divide %133, %134 : tensor<2x16x1xf32>
    %cst_21 = stablehlo.constant dense<9.99999997E-7> : tensor<f32>
    %136 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %137 = stablehlo.add %135, %136 : tensor<2x16x1xf32>
    %138 = stablehlo.rsqrt %137 : tensor<2x16x1xf32>
    %139 = stablehlo.divide %138, %137 : tensor<2x16x1xf32>
    %cst_22 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %140 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %141 = stablehlo.multiply %140, %139 : tensor<2x16x1xf32>
    %142 = stablehlo.broadcast_in_dim %138, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %143 = stablehlo.multiply %130, %142 : tensor<2x16x32xf32>
    %144 = stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %145 = stablehlo.broadcast_in_dim %144, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %146 = stablehlo.multiply %143, %145 : tensor<2x16x32xf32>
    %147 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<64x32xf32>) -> tensor<32x64xf32>
    %148 = stablehlo.convert %146 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %149 = stablehlo.convert %147 : (tensor<32x64xf32>) -> tensor<32x64xbf16>
    %150 = stablehlo.dot_general %148, %149, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x64xbf16>) -> tensor<2x16x64xbf16>
    %151 = stablehlo.convert %150 : (tensor<2x16x64xbf16>) -> tensor<2x16x64xf32>
    %152:3 = call @log_softmax(%151) : (tensor<2x16x64xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x1xf32>)
    %153 = stablehlo.broadcast_in_dim %arg12, dims = [0, 1] : (tensor<2x16xi32>) -> tensor<2x16x1xi32>
    %154:2 = call @take_along_axis(%152#0, %153) : (tensor<2x16x64xf32>, tensor<2x16x1xi32>) -> (tensor<2x16x1xf32>, tensor<2x16x1x1xi32>)
    %cst_23 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %155 = stablehlo.reduce(%154#0 init: %cst_23) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<f32>
    %cst_24 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %156 = stablehlo.divide %155, %cst_24 : tensor<f32>
    %157 = stablehlo.negate %156 : tensor<f32>
    %cst_25 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %158 = stablehlo.negate %cst_25 : tensor<f32>
    %cst_26 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %159 = stablehlo.divide %158, %cst_26 : tensor<f32>
    %160 = stablehlo.broadcast_in_dim %159, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %161 = call @take_along_axis_0(%154#1, %160) : (tensor<2x16x1x1xi32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
    %162 = call @log_softmax_1(%152#1, %152#2, %161) : (tensor<2x16x64xf32>, tensor<2x16x1xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
    %163 = stablehlo.convert %162 : (tensor<2x16x64xf32>) -> tensor<2x16x64xbf16>
    %164 = stablehlo.dot_general %163, %148, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x64xbf16>, tensor<2x16x32xbf16>) -> tensor<64x32xbf16>
    %165 = stablehlo.transpose %164, dims = [1, 0] : (tensor<64x32xbf16>) -> tensor<32x64xbf16>
    %166 = stablehlo.dot_general %163, %149, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x64xbf16>, tensor<32x64xbf16>) -> tensor<2x16x32xbf16>
    %167 = stablehlo.convert %165 : (tensor<32x64xbf16>) -> tensor<32x64xf32>
    %168 = stablehlo.convert %166 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %169 = stablehlo.transpose %167, dims = [1, 0] : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %170 = stablehlo.multiply %143, %168 : tensor<2x16x32xf32>
    %cst_27 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %171 = stablehlo.reduce(%170 init: %cst_27) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<32xf32>
    %172 = stablehlo.reshape %171 : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %173 = stablehlo.broadcast_in_dim %144, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %174 = stablehlo.multiply %168, %173 : tensor<2x16x32xf32>
    %cst_28 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %175 = stablehlo.reduce(%172 init: %cst_28) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %176 = stablehlo.multiply %130, %174 : tensor<2x16x32xf32>
    %cst_29 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %177 = stablehlo.reduce(%176 init: %cst_29) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %178 = stablehlo.reshape %177 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %179 = stablehlo.broadcast_in_dim %138, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %180 = stablehlo.multiply %174, %179 : tensor<2x16x32xf32>
    %181 = stablehlo.multiply %178, %141 : tensor<2x16x1xf32>
    %cst_30 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %182 = stablehlo.broadcast_in_dim %cst_30, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %183 = stablehlo.divide %181, %182 : tensor<2x16x1xf32>
    %cst_31 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %184 = stablehlo.reduce(%183 init: %cst_31) applies stablehlo.add across dimensions = [2] : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16xf32>
    %185 = stablehlo.broadcast_in_dim %184, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
    %186 = stablehlo.multiply %130, %185 : tensor<2x16x32xf32>
    %187 = stablehlo.add %180, %186 : tensor<2x16x32xf32>
    %188 = stablehlo.multiply %185, %130 : tensor<2x16x32xf32>
    %189 = stablehlo.add %187, %188 : tensor<2x16x32xf32>
    %190 = stablehlo.convert %189 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %191 = stablehlo.dot_general %190, %126, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<2x16x96xbf16>) -> tensor<32x96xbf16>
    %192 = stablehlo.transpose %191, dims = [1, 0] : (tensor<32x96xbf16>) -> tensor<96x32xbf16>
    %193 = stablehlo.dot_general %190, %127, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<96x32xbf16>) -> tensor<2x16x96xbf16>
    %194 = stablehlo.convert %192 : (tensor<96x32xbf16>) -> tensor<96x32xf32>
    %195 = stablehlo.convert %193 : (tensor<2x16x96xbf16>) -> tensor<2x16x96xf32>
    %196 = stablehlo.multiply %120#0, %195 : tensor<2x16x96xf32>
    %197 = stablehlo.multiply %195, %124 : tensor<2x16x96xf32>
    %198 = stablehlo.convert %196 : (tensor<2x16x96xf32>) -> tensor<2x16x96xbf16>
    %199 = stablehlo.dot_general %198, %121, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x96xbf16>, tensor<2x16x32xbf16>) -> tensor<96x32xbf16>
    %200 = stablehlo.transpose %199, dims = [1, 0] : (tensor<96x32xbf16>) -> tensor<32x96xbf16>
    %201 = stablehlo.dot_general %198, %122, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x96xbf16>, tensor<32x96xbf16>) -> tensor<2x16x32xbf16>
    %202 = stablehlo.convert %200 : (tensor<32x96xbf16>) -> tensor<32x96xf32>
    %203 = stablehlo.convert %201 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %204 = call @silu_2(%120#1, %120#2, %119, %197) : (tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>) -> tensor<2x16x96xf32>
    %205 = stablehlo.convert %204 : (tensor<2x16x96xf32>) -> tensor<2x16x96xbf16>
    %206 = stablehlo.dot_general %205, %116, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x96xbf16>, tensor<2x16x32xbf16>) -> tensor<96x32xbf16>
    %207 = stablehlo.transpose %206, dims = [1, 0] : (tensor<96x32xbf16>) -> tensor<32x96xbf16>
    %208 = stablehlo.dot_general %205, %117, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x96xbf16>, tensor<32x96xbf16>) -> tensor<2x16x32xbf16>
    %209 = stablehlo.convert %207 : (tensor<32x96xbf16>) -> tensor<32x96xf32>
    %210 = stablehlo.convert %208 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %211 = stablehlo.add %203, %210 : tensor<2x16x32xf32>
    %212 = stablehlo.multiply %112, %211 : tensor<2x16x32xf32>
    %cst_32 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %213 = stablehlo.reduce(%212 init: %cst_32) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<32xf32>
    %214 = stablehlo.reshape %213 : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %215 = stablehlo.broadcast_in_dim %113, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %216 = stablehlo.multiply %211, %215 : tensor<2x16x32xf32>
    %cst_33 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %217 = stablehlo.reduce(%214 init: %cst_33) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %218 = stablehlo.multiply %99, %216 : tensor<2x16x32xf32>
    %cst_34 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %219 = stablehlo.reduce(%218 init: %cst_34) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %220 = stablehlo.reshape %219 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %221 = stablehlo.broadcast_in_dim %107, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %222 = stablehlo.multiply %216, %221 : tensor<2x16x32xf32>
    %223 = stablehlo.add %189, %222 : tensor<2x16x32xf32>
    %224 = stablehlo.multiply %220, %110 : tensor<2x16x1xf32>
    %cst_35 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %225 = stablehlo.broadcast_in_dim %cst_35, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %226 = stablehlo.divide %224, %225 : tensor<2x16x1xf32>
    %cst_36 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %227 = stablehlo.reduce(%226 init: %cst_36) applies stablehlo.add across dimensions = [2] : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16xf32>
    %228 = stablehlo.broadcast_in_dim %227, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
    %229 = stablehlo.multiply %99, %228 : tensor<2x16x32xf32>
    %230 = stablehlo.add %223, %229 : tensor<2x16x32xf32>
    %231 = stablehlo.multiply %228, %99 : tensor<2x16x32xf32>
    %232 = stablehlo.add %230, %231 : tensor<2x16x32xf32>
    %233 = stablehlo.convert %232 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %234 = stablehlo.dot_general %233, %95, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<2x16x32xbf16>) -> tensor<32x32xbf16>
    %235 = stablehlo.transpose %234, dims = [1, 0] : (tensor<32x32xbf16>) -> tensor<32x32xbf16>
    %236 = stablehlo.dot_general %233, %96, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x32xbf16>) -> tensor<2x16x32xbf16>
    %237 = stablehlo.convert %235 : (tensor<32x32xbf16>) -> tensor<32x32xf32>
    %238 = stablehlo.convert %236 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %239 = stablehlo.convert %238 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %240 = stablehlo.reshape %239 : (tensor<2x16x32xbf16>) -> tensor<2x16x2x16xbf16>
    %241 = stablehlo.transpose %240, dims = [0, 2, 3, 1] : (tensor<2x16x2x16xbf16>) -> tensor<2x2x16x16xbf16>
    %242 = stablehlo.dot_general %241, %44, batching_dims = [0, 1] x [0, 2], contracting_dims = [2] x [3], precision = [DEFAULT, DEFAULT] : (tensor<2x2x16x16xbf16>, tensor<2x16x2x16xbf16>) -> tensor<2x2x16x16xbf16>
    %243 = stablehlo.dot_general %241, %90, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x2x16x16xbf16>, tensor<2x2x16x16xbf16>) -> tensor<2x2x16x16xbf16>
    %244 = stablehlo.transpose %243, dims = [0, 3, 1, 2] : (tensor<2x2x16x16xbf16>) -> tensor<2x16x2x16xbf16>
    %245 = stablehlo.convert %242 : (tensor<2x2x16x16xbf16>) -> tensor<2x2x16x16xf32>
    %246 = stablehlo.broadcast_in_dim %89, dims = [0, 1, 2, 3] : (tensor<2x2x16x1xf32>) -> tensor<2x2x16x16xf32>
    %247 = stablehlo.multiply %245, %246 : tensor<2x2x16x16xf32>
    %248 = stablehlo.multiply %247, %82 : tensor<2x2x16x16xf32>
    %cst_37 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %249 = stablehlo.reduce(%248 init: %cst_37) applies stablehlo.add across dimensions = [3] : (tensor<2x2x16x16xf32>, tensor<f32>) -> tensor<2x2x16xf32>
    %250 = stablehlo.reshape %249 : (tensor<2x2x16xf32>) -> tensor<2x2x16x1xf32>
    %251 = stablehlo.negate %250 : tensor<2x2x16x1xf32>
    %252 = stablehlo.broadcast_in_dim %84, dims = [0, 1, 2, 3] : (tensor<2x2x16x1xf32>) -> tensor<2x2x16x16xf32>
    %253 = stablehlo.divide %245, %252 : tensor<2x2x16x16xf32>
    %cst_38 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %254 = stablehlo.reduce(%251 init: %cst_38) applies stablehlo.add across dimensions = [3] : (tensor<2x2x16x1xf32>, tensor<f32>) -> tensor<2x2x16xf32>
    %255 = stablehlo.broadcast_in_dim %254, dims = [0, 1, 2] : (tensor<2x2x16xf32>) -> tensor<2x2x16x16xf32>
    %256 = stablehlo.add %253, %255 : tensor<2x2x16x16xf32>
    %257 = stablehlo.multiply %256, %82 : tensor<2x2x16x16xf32>
    %258 = call @_where_3(%75#1, %257) : (tensor<2x2x16x16xi1>, tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xf32>
    %cst_39 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %259 = stablehlo.broadcast_in_dim %cst_39, dims = [] : (tensor<f32>) -> tensor<2x2x16x16xf32>
    %260 = stablehlo.divide %258, %259 : tensor<2x2x16x16xf32>
    %261 = stablehlo.convert %260 : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xbf16>
    %262 = stablehlo.dot_general %261, %57, batching_dims = [0, 1] x [0, 2], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x2x16x16xbf16>, tensor<2x16x2x16xbf16>) -> tensor<2x2x16x16xbf16>
    %263 = stablehlo.transpose %262, dims = [0, 2, 1, 3] : (tensor<2x2x16x16xbf16>) -> tensor<2x16x2x16xbf16>
    %264 = stablehlo.dot_general %261, %70, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x2x16x16xbf16>, tensor<2x16x2x16xbf16>) -> tensor<2x2x16x16xbf16>
    %265 = stablehlo.transpose %264, dims = [0, 2, 1, 3] : (tensor<2x2x16x16xbf16>) -> tensor<2x16x2x16xbf16>
    %266 = stablehlo.slice %263 [0:2, 0:16, 0:2, 0:8] : (tensor<2x16x2x16xbf16>) -> tensor<2x16x2x8xbf16>
    %267 = stablehlo.slice %263 [0:2, 0:16, 0:2, 8:16] : (tensor<2x16x2x16xbf16>) -> tensor<2x16x2x8xbf16>
    %268 = stablehlo.broadcast_in_dim %2, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %269 = stablehlo.multiply %267, %268 : tensor<2x16x2x8xbf16>
    %270 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %271 = stablehlo.multiply %267, %270 : tensor<2x16x2x8xbf16>
    %272 = stablehlo.negate %266 : tensor<2x16x2x8xbf16>
    %273 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %274 = stablehlo.multiply %272, %273 : tensor<2x16x2x8xbf16>
    %275 = stablehlo.add %269, %274 : tensor<2x16x2x8xbf16>
    %276 = stablehlo.broadcast_in_dim %2, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %277 = stablehlo.multiply %266, %276 : tensor<2x16x2x8xbf16>
    %278 = stablehlo.add %271, %277 : tensor<2x16x2x8xbf16>
    %cst_40 = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
    %279 = stablehlo.pad %275, %cst_40, low = [0, 0, 0, 8], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x16x2x8xbf16>, tensor<bf16>) -> tensor<2x16x2x16xbf16>
    %cst_41 = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
    %280 = stablehlo.pad %278, %cst_41, low = [0, 0, 0, 0], high = [0, 0, 0, 8], interior = [0, 0, 0, 0] : (tensor<2x16x2x8xbf16>, tensor<bf16>) -> tensor<2x16x2x16xbf16>
    %281 = stablehlo.add %279, %280 : tensor<2x16x2x16xbf16>
    %282 = stablehlo.slice %265 [0:2, 0:16, 0:2, 0:8] : (tensor<2x16x2x16xbf16>) -> tensor<2x16x2x8xbf16>
    %283 = stablehlo.slice %265 [0:2, 0:16, 0:2, 8:16] : (tensor<2x16x2x16xbf16>) -> tensor<2x16x2x8xbf16>
    %284 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %285 = stablehlo.multiply %283, %284 : tensor<2x16x2x8xbf16>
    %286 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %287 = stablehlo.multiply %283, %286 : tensor<2x16x2x8xbf16>
    %288 = stablehlo.negate %282 : tensor<2x16x2x8xbf16>
    %289 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %290 = stablehlo.multiply %288, %289 : tensor<2x16x2x8xbf16>
    %291 = stablehlo.add %285, %290 : tensor<2x16x2x8xbf16>
    %292 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2, 3] : (tensor<1x16x1x8xbf16>) -> tensor<2x16x2x8xbf16>
    %293 = stablehlo.multiply %282, %292 : tensor<2x16x2x8xbf16>
    %294 = stablehlo.add %287, %293 : tensor<2x16x2x8xbf16>
    %cst_42 = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
    %295 = stablehlo.pad %291, %cst_42, low = [0, 0, 0, 8], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x16x2x8xbf16>, tensor<bf16>) -> tensor<2x16x2x16xbf16>
    %cst_43 = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
    %296 = stablehlo.pad %294, %cst_43, low = [0, 0, 0, 0], high = [0, 0, 0, 8], interior = [0, 0, 0, 0] : (tensor<2x16x2x8xbf16>, tensor<bf16>) -> tensor<2x16x2x16xbf16>
    %297 = stablehlo.add %295, %296 : tensor<2x16x2x16xbf16>
    %298 = stablehlo.reshape %244 : (tensor<2x16x2x16xbf16>) -> tensor<2x16x32xbf16>
    %299 = stablehlo.convert %298 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %300 = stablehlo.convert %299 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %301 = stablehlo.dot_general %300, %39, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<2x16x32xbf16>) -> tensor<32x32xbf16>
    %302 = stablehlo.transpose %301, dims = [1, 0] : (tensor<32x32xbf16>) -> tensor<32x32xbf16>
    %303 = stablehlo.dot_general %300, %40, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x32xbf16>) -> tensor<2x16x32xbf16>
    %304 = stablehlo.convert %302 : (tensor<32x32xbf16>) -> tensor<32x32xf32>
    %305 = stablehlo.convert %303 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %306 = stablehlo.reshape %281 : (tensor<2x16x2x16xbf16>) -> tensor<2x16x32xbf16>
    %307 = stablehlo.convert %306 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %308 = stablehlo.convert %307 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %309 = stablehlo.dot_general %308, %33, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<2x16x32xbf16>) -> tensor<32x32xbf16>
    %310 = stablehlo.transpose %309, dims = [1, 0] : (tensor<32x32xbf16>) -> tensor<32x32xbf16>
    %311 = stablehlo.dot_general %308, %34, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x32xbf16>) -> tensor<2x16x32xbf16>
    %312 = stablehlo.convert %310 : (tensor<32x32xbf16>) -> tensor<32x32xf32>
    %313 = stablehlo.convert %311 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %314 = stablehlo.add %305, %313 : tensor<2x16x32xf32>
    %315 = stablehlo.reshape %297 : (tensor<2x16x2x16xbf16>) -> tensor<2x16x32xbf16>
    %316 = stablehlo.convert %315 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %317 = stablehlo.convert %316 : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>
    %318 = stablehlo.dot_general %317, %27, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<2x16x32xbf16>) -> tensor<32x32xbf16>
    %319 = stablehlo.transpose %318, dims = [1, 0] : (tensor<32x32xbf16>) -> tensor<32x32xbf16>
    %320 = stablehlo.dot_general %317, %28, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xbf16>, tensor<32x32xbf16>) -> tensor<2x16x32xbf16>
    %321 = stablehlo.convert %319 : (tensor<32x32xbf16>) -> tensor<32x32xf32>
    %322 = stablehlo.convert %320 : (tensor<2x16x32xbf16>) -> tensor<2x16x32xf32>
    %323 = stablehlo.add %314, %322 : tensor<2x16x32xf32>
    %324 = stablehlo.multiply %23, %323 : tensor<2x16x32xf32>
    %cst_44 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %325 = stablehlo.reduce(%324 init: %cst_44) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<32xf32>
    %326 = stablehlo.reshape %325 : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %327 = stablehlo.broadcast_in_dim %24, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %328 = stablehlo.multiply %323, %327 : tensor<2x16x32xf32>
    %cst_45 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %329 = stablehlo.reduce(%326 init: %cst_45) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %330 = stablehlo.multiply %10, %328 : tensor<2x16x32xf32>
    %cst_46 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %331 = stablehlo.reduce(%330 init: %cst_46) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %332 = stablehlo.reshape %331 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %333 = stablehlo.broadcast_in_dim %18, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %334 = stablehlo.multiply %328, %333 : tensor<2x16x32xf32>
    %335 = stablehlo.add %232, %334 : tensor<2x16x32xf32>
    %336 = stablehlo.multiply %332, %21 : tensor<2x16x1xf32>
    %cst_47 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %337 = stablehlo.broadcast_in_dim %cst_47, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %338 = stablehlo.divide %336, %337 : tensor<2x16x1xf32>
    %cst_48 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %339 = stablehlo.reduce(%338 init: %cst_48) applies stablehlo.add across dimensions = [2] : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16xf32>
    %340 = stablehlo.broadcast_in_dim %339, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
    %341 = stablehlo.multiply %10, %340 : tensor<2x16x32xf32>
    %342 = stablehlo.add %335, %341 : tensor<2x16x32xf32>
    %343 = stablehlo.multiply %340, %10 : tensor<2x16x32xf32>
    %344 = stablehlo.add %342, %343 : tensor<2x16x32xf32>
    %cst_49 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %345 = stablehlo.broadcast_in_dim %cst_49, dims = [] : (tensor<f32>) -> tensor<64x32xf32>
    %346 = "stablehlo.scatter"(%345, %9, %344) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg13: tensor<f32>, %arg14: tensor<f32>):
      %381 = stablehlo.add %arg13, %arg14 : tensor<f32>
      stablehlo.return %381 : tensor<f32>
    }) : (tensor<64x32xf32>, tensor<2x16x1xi32>, tensor<2x16x32xf32>) -> tensor<64x32xf32>
    %347 = stablehlo.add %169, %346 : tensor<64x32xf32>
    %cst_50 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %348 = stablehlo.broadcast_in_dim %cst_50, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %349 = stablehlo.multiply %348, %329 : tensor<32xf32>
    %350 = stablehlo.subtract %arg0, %349 : tensor<32xf32>
    %cst_51 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %351 = stablehlo.broadcast_in_dim %cst_51, dims = [] : (tensor<f32>) -> tensor<64x32xf32>
    %352 = stablehlo.multiply %351, %347 : tensor<64x32xf32>
    %353 = stablehlo.subtract %arg1, %352 : tensor<64x32xf32>
    %cst_52 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %354 = stablehlo.broadcast_in_dim %cst_52, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %355 = stablehlo.multiply %354, %175 : tensor<32xf32>
    %356 = stablehlo.subtract %arg2, %355 : tensor<32xf32>
    %cst_53 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %357 = stablehlo.broadcast_in_dim %cst_53, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %358 = stablehlo.multiply %357, %217 : tensor<32xf32>
    %359 = stablehlo.subtract %arg3, %358 : tensor<32xf32>
    %cst_54 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %360 = stablehlo.broadcast_in_dim %cst_54, dims = [] : (tensor<f32>) -> tensor<96x32xf32>
    %361 = stablehlo.multiply %360, %194 : tensor<96x32xf32>
    %362 = stablehlo.subtract %arg4, %361 : tensor<96x32xf32>
    %cst_55 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %363 = stablehlo.broadcast_in_dim %cst_55, dims = [] : (tensor<f32>) -> tensor<32x96xf32>
    %364 = stablehlo.multiply %363, %209 : tensor<32x96xf32>
    %365 = stablehlo.subtract %arg5, %364 : tensor<32x96xf32>
    %cst_56 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %366 = stablehlo.broadcast_in_dim %cst_56, dims = [] : (tensor<f32>) -> tensor<32x96xf32>
    %367 = stablehlo.multiply %366, %202 : tensor<32x96xf32>
    %368 = stablehlo.subtract %arg6, %367 : tensor<32x96xf32>
    %cst_57 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %369 = stablehlo.broadcast_in_dim %cst_57, dims = [] : (tensor<f32>) -> tensor<32x32xf32>
    %370 = stablehlo.multiply %369, %312 : tensor<32x32xf32>
    %371 = stablehlo.subtract %arg7, %370 : tensor<32x32xf32>
    %cst_58 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %372 = stablehlo.broadcast_in_dim %cst_58, dims = [] : (tensor<f32>) -> tensor<32x32xf32>
    %373 = stablehlo.multiply %372, %237 : tensor<32x32xf32>
    %374 = stablehlo.subtract %arg8, %373 : tensor<32x32xf32>
    %cst_59 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %375 = stablehlo.broadcast_in_dim %cst_59, dims = [] : (tensor<f32>) -> tensor<32x32xf32>
    %376 = stablehlo.multiply %375, %321 : tensor<32x32xf32>
    %377 = stablehlo.subtract %arg9, %376 : tensor<32x32xf32>
    %cst_60 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %378 = stablehlo.broadcast_in_dim %cst_60, dims = [] : (tensor<f32>) -> tensor<32x32xf32>
    %379 = stablehlo.multiply %378, %304 : tensor<32x32xf32>
    %380 = stablehlo.subtract %arg10, %379 : tensor<32x32xf32>
    return %157, %350, %353, %356, %359, %362, %365, %368, %371, %374, %377, %380 : tensor<f32>, tensor<32xf32>, tensor<64x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<96x32xf32>, tensor<32x96xf32>, tensor<32x96xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>
  }
  func.func private @_where(%arg0: tensor<16x16xi1>, %arg1: tensor<2x2x16x16xf32>, %arg2: tensor<f32>) -> (tensor<2x2x16x16xf32>, tensor<2x2x16x16xi1>) {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [2, 3] : (tensor<16x16xi1>) -> tensor<2x2x16x16xi1>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x2x16x16xf32>
    %3 = stablehlo.select %1, %arg1, %2 : tensor<2x2x16x16xi1>, tensor<2x2x16x16xf32>
    return %3, %1 : tensor<2x2x16x16xf32>, tensor<2x2x16x16xi1>
  }
  func.func private @silu(%arg0: tensor<2x16x96xf32>) -> (tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>) {
    %0 = stablehlo.negate %arg0 : tensor<2x16x96xf32>
    %1 = stablehlo.exponential %0 : tensor<2x16x96xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x16x96xf32>
    %3 = stablehlo.add %2, %1 : tensor<2x16x96xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x16x96xf32>
    %5 = stablehlo.divide %4, %3 : tensor<2x16x96xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x16x96xf32>
    %7 = stablehlo.subtract %6, %5 : tensor<2x16x96xf32>
    %8 = stablehlo.multiply %5, %7 : tensor<2x16x96xf32>
    %9 = stablehlo.multiply %arg0, %5 : tensor<2x16x96xf32>
    return %9, %8, %5 : tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>
  }
  func.func private @log_softmax(%arg0: tensor<2x16x64xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x1xf32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x16xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<2x16xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<2x16x64xf32>
    %6 = stablehlo.exponential %5 : tensor<2x16x64xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %9 = stablehlo.log %8 : tensor<2x16x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
    %11 = stablehlo.subtract %5, %10 : tensor<2x16x64xf32>
    return %11, %6, %8 : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x1xf32>
  }
  func.func private @take_along_axis(%arg0: tensor<2x16x64xf32>, %arg1: tensor<2x16x1xi32>) -> (tensor<2x16x1xf32>, tensor<2x16x1x1xi32>) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2x16x1xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<2x16x1xi32>, tensor<2x16x1xi32>) -> tensor<2x16x1xi1>
    %c_0 = stablehlo.constant dense<64> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<2x16x1xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<2x16x1xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<2x16x1xi1>, tensor<2x16x1xi32>
    %5 = stablehlo.reshape %4 : (tensor<2x16x1xi32>) -> tensor<2x16x1x1xi32>
    %c_1 = stablehlo.constant dense<63> : tensor<1xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<2x16x1x1xi32>
    %7 = stablehlo.compare GE, %5, %6, SIGNED : (tensor<2x16x1x1xi32>, tensor<2x16x1x1xi32>) -> tensor<2x16x1x1xi1>
    %8 = stablehlo.broadcast_in_dim %c_1, dims = [3] : (tensor<1xi32>) -> tensor<1x1x1x1xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2, 3] : (tensor<1x1x1x1xi32>) -> tensor<2x16x1x1xi32>
    %10 = stablehlo.compare LE, %5, %9, SIGNED : (tensor<2x16x1x1xi32>, tensor<2x16x1x1xi32>) -> tensor<2x16x1x1xi1>
    %11 = stablehlo.and %7, %10 : tensor<2x16x1x1xi1>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %12 = stablehlo.reduce(%11 init: %c_3) applies stablehlo.and across dimensions = [3] : (tensor<2x16x1x1xi1>, tensor<i1>) -> tensor<2x16x1xi1>
    %13 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [2], operand_batching_dims = [0, 1], start_indices_batching_dims = [0, 1], start_index_map = [2], index_vector_dim = 3>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 1>}> : (tensor<2x16x64xf32>, tensor<2x16x1x1xi32>) -> tensor<2x16x1xf32>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %15 = stablehlo.select %12, %13, %14 : tensor<2x16x1xi1>, tensor<2x16x1xf32>
    return %15, %5 : tensor<2x16x1xf32>, tensor<2x16x1x1xi32>
  }
  func.func private @take_along_axis_0(%arg0: tensor<2x16x1x1xi32>, %arg1: tensor<2x16x1xf32>) -> tensor<2x16x64xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x16x64xf32>
    %1 = "stablehlo.scatter"(%0, %arg0, %arg1) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [2], input_batching_dims = [0, 1], scatter_indices_batching_dims = [0, 1], scatter_dims_to_operand_dims = [2], index_vector_dim = 3>, unique_indices = false}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %2 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<2x16x64xf32>, tensor<2x16x1x1xi32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
    return %1 : tensor<2x16x64xf32>
  }
  func.func private @log_softmax_1(%arg0: tensor<2x16x64xf32>, %arg1: tensor<2x16x1xf32>, %arg2: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
    %0 = stablehlo.negate %arg2 : tensor<2x16x64xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16xf32>
    %2 = stablehlo.reshape %1 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %3 = stablehlo.divide %2, %arg1 : tensor<2x16x1xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [2] : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x64xf32>
    %6 = stablehlo.multiply %5, %arg0 : tensor<2x16x64xf32>
    %7 = stablehlo.add %arg2, %6 : tensor<2x16x64xf32>
    return %7 : tensor<2x16x64xf32>
  }
  func.func private @silu_2(%arg0: tensor<2x16x96xf32>, %arg1: tensor<2x16x96xf32>, %arg2: tensor<2x16x96xf32>, %arg3: tensor<2x16x96xf32>) -> tensor<2x16x96xf32> {
    %0 = stablehlo.multiply %arg2, %arg3 : tensor<2x16x96xf32>
    %1 = stablehlo.multiply %arg3, %arg1 : tensor<2x16x96xf32>
    %2 = stablehlo.multiply %0, %arg0 : tensor<2x16x96xf32>
    %3 = stablehlo.add %1, %2 : tensor<2x16x96xf32>
    return %3 : tensor<2x16x96xf32>
  }
  func.func private @_where_3(%arg0: tensor<2x2x16x16xi1>, %arg1: tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x2x16x16xf32>
    %1 = stablehlo.select %arg0, %arg1, %0 : tensor<2x2x16x16xi1>, tensor<2x2x16x16xf32>
    return %1 : tensor<2x2x16x16xf32>
  }
}
