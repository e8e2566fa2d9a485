// kernels=extern refuses a PTX entry IREE cannot launch, naming the rule broken
// (lib/PtxAbi.cpp), and a kernel without PTX.
// RUN: rowfuse-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect --rowfuse-to-iree="kernels=extern ptx-dir=%inputs/ptx"

func.func @reads_the_row_extent(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error-re @+1 {{cannot be dispatched by IREE: parameter 0 is used beyond its pointer (IREE passes only the pointer): 'ld.param.b32 {{.*}}[kernel_cutlass_kernel_test_0_param_0+8];'}}
  %y = rowfuse.kernel "k_offset" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y : tensor<49x48xf32>
}

// -----

func.func @takes_an_address(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error-re @+1 {{parameter 1 is used beyond its pointer (IREE passes only the pointer): 'mov.b64 {{.*}}kernel_cutlass_kernel_test_0_param_1;'}}
  %y = rowfuse.kernel "k_address" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y : tensor<49x48xf32>
}

// -----

func.func @seven_params(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{the entry has 7 parameters; the kernel ABI has 8 (x, w1, b1, w2, b2, h, y as pointers, rows)}}
  %y = rowfuse.kernel "k_params" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y : tensor<49x48xf32>
}

// -----

func.func @not_a_pointer(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{parameter 0 (kernel_cutlass_kernel_test_0_param_0) does not start with a device pointer (.u32, 4 bytes)}}
  %y = rowfuse.kernel "k_notptr" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y : tensor<49x48xf32>
}

// -----

func.func @block_size(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{.reqntid 128x1x1 differs from the kernel's 96 threads}}
  %y = rowfuse.kernel "k_reqntid" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y : tensor<49x48xf32>
}

// -----

func.func @two_entries(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{more than one .entry in the PTX (one kernel per file expected)}}
  %y = rowfuse.kernel "k_two" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y : tensor<49x48xf32>
}

// -----

func.func @no_ptx(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error-re @+1 {{no PTX for kernel rf_c48_h96_fused_smem_t16 at '{{.*}}rf_c48_h96_fused_smem_t16.ptx': build its package (rowfuse compile) and pass ptx-dir=PACKAGE/kernels}}
  %y = rowfuse.kernel "rf_c48_h96_fused_smem_t16" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y : tensor<49x48xf32>
}
