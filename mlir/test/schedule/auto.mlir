// mode=auto: the C scheduler's choice and reason at each shape, and the planner's tile rows
// and grid (src/compile/schedule.c, plan.c, tiling.c; linked into rowfuse-opt).
// RUN: rowfuse-opt %s --rowfuse-schedule --rowfuse-explain -o /dev/null | FileCheck %s --check-prefix=EXPLAIN
// RUN: rowfuse-opt %s --rowfuse-schedule | FileCheck %s --check-prefix=IR
// RUN: rowfuse-opt %s --rowfuse-schedule=target=h100-pcie --rowfuse-explain -o /dev/null | FileCheck %s --check-prefix=PCIE
// RUN: rowfuse-opt %s --rowfuse-schedule=sms=4 --rowfuse-explain -o /dev/null | FileCheck %s --check-prefix=SMS4
// RUN: rowfuse-opt %s --rowfuse-schedule=tile-rows=16 --rowfuse-explain -o /dev/null | FileCheck %s --check-prefix=T16

// The reference block: one launch with H in shared memory, 16-row tiles (49 rows are 4
// tiles, far below one tile per SM), one block per tile.
// EXPLAIN-LABEL: @small: schedule persistent-smem on h200, 132 SMs
// EXPLAIN-NEXT: why: auto: persistent-smem is the cheapest of the schedules that fit (h200 cost model: 1.8 us; next persistent-gmem 2.1 us; 0.001 GFLOP)
// EXPLAIN-NEXT: kernel rf_c48_h96_fused_smem_t16: fused_smem, tile rows 16, grid 4, 96 threads, 26944 B shared memory, hidden chunk 96, on chip: h
// EXPLAIN-NEXT: grid rule: 8 blocks/SM from shared memory and threads {{.*}}, balanced
// EXPLAIN-NEXT: launches: 1
// IR-LABEL: func.func @small
// IR-SAME: rowfuse.reason = "auto: persistent-smem is the cheapest of the schedules that fit
// IR-SAME: rowfuse.schedule = "persistent-smem", rowfuse.target = "h200, 132 SMs"
// IR-NEXT: %[[Y:.*]] = rowfuse.kernel "rf_c48_h96_fused_smem_t16" "fused_smem"(%arg0, %arg1, %arg2, %arg3, %arg4)
// IR-SAME: grid = 4 : i64
// IR-SAME: on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64
// IR-NEXT: return %[[Y]]
func.func @small(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  %0 = rowfuse.linear %x, %w1 : tensor<49x48xf16>, tensor<48x96xf16> -> tensor<49x96xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<49x96xf32>, tensor<96xf32>
  %2 = rowfuse.relu %1 : tensor<49x96xf32>
  %3 = rowfuse.round_f16 %2 : tensor<49x96xf32> -> tensor<49x96xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<49x96xf16>, tensor<96x48xf16> -> tensor<49x48xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<49x48xf32>, tensor<48xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<49x48xf32>, tensor<49x48xf16>
  %7 = rowfuse.relu %6 : tensor<49x48xf32>
  return %7 : tensor<49x48xf32>
}

// 7000 rows: 32-row tiles (219 of them) on 132 SMs; 64-row tiles would leave SMs idle.
// On the 114-SM H100 PCIe, 110 tiles of 64 rows are enough.
// EXPLAIN-LABEL: @tall: schedule persistent-smem on h200, 132 SMs
// EXPLAIN: kernel rf_c48_h96_fused_smem_t32: fused_smem, tile rows 32, grid 219, 192 threads, 35648 B shared memory
// PCIE-LABEL: @tall: schedule persistent-smem on h100-pcie, 114 SMs
// PCIE: kernel rf_c48_h96_fused_smem_t64: fused_smem, tile rows 64, grid 110, 256 threads, 60032 B shared memory
// SMS4-LABEL: @tall: schedule persistent-smem on h200, 4 SMs
// 110 tiles on 4 SMs x 3 blocks: 10 tiles per block, so 11 blocks (balanced).
// SMS4: kernel rf_c48_h96_fused_smem_t64: fused_smem, tile rows 64, grid 11, 256 threads
// SMS4-NEXT: grid rule: 3 blocks/SM {{.*}}, balanced
// T16-LABEL: @tall:
// T16: kernel rf_c48_h96_fused_smem_t16: fused_smem, tile rows 16, grid 438, 96 threads
func.func @tall(%x: tensor<7000x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<7000x48xf32> {
  %0 = rowfuse.linear %x, %w1 : tensor<7000x48xf16>, tensor<48x96xf16> -> tensor<7000x96xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<7000x96xf32>, tensor<96xf32>
  %2 = rowfuse.relu %1 : tensor<7000x96xf32>
  %3 = rowfuse.round_f16 %2 : tensor<7000x96xf32> -> tensor<7000x96xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<7000x96xf16>, tensor<96x48xf16> -> tensor<7000x48xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<7000x48xf32>, tensor<48xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<7000x48xf32>, tensor<7000x48xf16>
  %7 = rowfuse.relu %6 : tensor<7000x48xf32>
  return %7 : tensor<7000x48xf32>
}

// Medium (1.07 GFLOP): the Hopper megakernel, a block pair per 64-row tile (each half the
// hidden chunks, Y partial sums through distributed shared memory), so 128 blocks work where
// 64 tiles alone would leave half the SMs idle; two resident chunks of 128 per block.
// (persistent-smem's line: its busiest block's chain of hidden chunks, two tiles each.)
// EXPLAIN-LABEL: @medium: schedule persistent-wgmma on h200, 132 SMs
// EXPLAIN-NEXT: why: auto: {{.*}}(h200 cost model: 6.7 us; next persistent-smem 12.0 us; 1.074 GFLOP)
// EXPLAIN-NEXT: kernel rf_c128_h512_fused_wgmma_t64_pair: fused_wgmma, tile rows 64, grid 128, 128 threads, 217088 B shared memory, hidden chunk 128, on chip: h
// EXPLAIN-NEXT: grid rule: {{.*}}, a cluster of 2 blocks per tile
func.func @medium(%x: tensor<4096x128xf16> {rowfuse.row}, %w1: tensor<128x512xf16>, %b1: tensor<512xf32>, %w2: tensor<512x128xf16>, %b2: tensor<128xf32>) -> tensor<4096x128xf32> {
  %0 = rowfuse.linear %x, %w1 : tensor<4096x128xf16>, tensor<128x512xf16> -> tensor<4096x512xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<4096x512xf32>, tensor<512xf32>
  %2 = rowfuse.relu %1 : tensor<4096x512xf32>
  %3 = rowfuse.round_f16 %2 : tensor<4096x512xf32> -> tensor<4096x512xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<4096x512xf16>, tensor<512x128xf16> -> tensor<4096x128xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<4096x128xf32>, tensor<128xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<4096x128xf32>, tensor<4096x128xf16>
  %7 = rowfuse.relu %6 : tensor<4096x128xf32>
  return %7 : tensor<4096x128xf32>
}

// Large (34 GFLOP): the Hopper megakernel with the blocked weight ring (two consumer
// warpgroups along the 512 channels and a producer warpgroup: 384 threads), whose own
// cost line beats the vendor GEMMs here (measured 65.5 us against 72.8; notes/kernels.md).
// EXPLAIN-LABEL: @large: schedule persistent-wgmma on h200, 132 SMs
// EXPLAIN-NEXT: why: auto: persistent-wgmma is the cheapest of the schedules that fit (h200 cost model: 65.0 us; next cublaslt 71.8 us; 34.360 GFLOP)
// EXPLAIN-NEXT: kernel rf_c512_h2048_fused_wgmma_t64: fused_wgmma, tile rows 64, grid 128, 384 threads, 208896 B shared memory, hidden chunk 128, on chip: h
// IR-LABEL: func.func @large
// IR-SAME: rowfuse.schedule = "persistent-wgmma"
// IR: rowfuse.kernel
func.func @large(%x: tensor<8192x512xf16> {rowfuse.row}, %w1: tensor<512x2048xf16>, %b1: tensor<2048xf32>, %w2: tensor<2048x512xf16>, %b2: tensor<512xf32>) -> tensor<8192x512xf32> {
  %0 = rowfuse.linear %x, %w1 : tensor<8192x512xf16>, tensor<512x2048xf16> -> tensor<8192x2048xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<8192x2048xf32>, tensor<2048xf32>
  %2 = rowfuse.relu %1 : tensor<8192x2048xf32>
  %3 = rowfuse.round_f16 %2 : tensor<8192x2048xf32> -> tensor<8192x2048xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<8192x2048xf16>, tensor<2048x512xf16> -> tensor<8192x512xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<8192x512xf32>, tensor<512xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<8192x512xf32>, tensor<8192x512xf16>
  %7 = rowfuse.relu %6 : tensor<8192x512xf32>
  return %7 : tensor<8192x512xf32>
}

// Where the blocked ring's line loses to the vendor GEMMs (50 row tiles on 132 SMs; measured
// 46.3 us against cuBLASLt's 25.9): no rowfuse kernel, the contract stays.
// EXPLAIN-LABEL: @vendor: schedule cublaslt on h200, 132 SMs
// EXPLAIN-NEXT: why: auto: cublaslt is the cheapest of the schedules that fit (h200 cost model: 24.9 us; next persistent-wgmma 50.5 us; 6.776 GFLOP)
// EXPLAIN-NEXT: no rowfuse kernel
// IR-LABEL: func.func @vendor
// IR-SAME: rowfuse.schedule = "cublaslt"
// IR-NOT: rowfuse.kernel
// IR: rowfuse.linear
// IR-NOT: rowfuse.kernel
// IR: return
func.func @vendor(%x: tensor<3142x288xf16> {rowfuse.row}, %w1: tensor<288x1872xf16>, %b1: tensor<1872xf32>, %w2: tensor<1872x288xf16>, %b2: tensor<288xf32>) -> tensor<3142x288xf32> {
  %0 = rowfuse.linear %x, %w1 : tensor<3142x288xf16>, tensor<288x1872xf16> -> tensor<3142x1872xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<3142x1872xf32>, tensor<1872xf32>
  %2 = rowfuse.relu %1 : tensor<3142x1872xf32>
  %3 = rowfuse.round_f16 %2 : tensor<3142x1872xf32> -> tensor<3142x1872xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<3142x1872xf16>, tensor<1872x288xf16> -> tensor<3142x288xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<3142x288xf32>, tensor<288xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<3142x288xf32>, tensor<3142x288xf16>
  %7 = rowfuse.relu %6 : tensor<3142x288xf32>
  return %7 : tensor<3142x288xf32>
}
