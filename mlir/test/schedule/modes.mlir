// A forced schedule: each one's kernels, buffers and what stays on chip, with the
// planner's geometry (the same numbers `rowfuse compile --mlp 49x48x96` prints).
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=persistent-smem | FileCheck %s --check-prefix=SMEM
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=persistent-gmem | FileCheck %s --check-prefix=GMEM
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=conventional | FileCheck %s --check-prefix=CONV
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=cublaslt | FileCheck %s --check-prefix=VENDOR
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=conventional --rowfuse-explain -o /dev/null | FileCheck %s --check-prefix=EXPLAIN
// The scheduled IR round-trips, and scheduling it again changes nothing.
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=conventional | rowfuse-opt | FileCheck %s --check-prefix=CONV
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=conventional | rowfuse-opt --rowfuse-schedule | FileCheck %s --check-prefix=CONV

// SMEM-LABEL: func.func @block
// SMEM-SAME: rowfuse.reason = "chosen with mode=persistent-smem", rowfuse.schedule = "persistent-smem"
// SMEM-NEXT: %[[Y:.*]] = rowfuse.kernel "rf_c48_h96_fused_smem_t16" "fused_smem"(%arg0, %arg1, %arg2, %arg3, %arg4) {grid = 4 : i64, {{.*}}, hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64}
// SMEM-NOT: rowfuse.buffer
// SMEM-NEXT: return %[[Y]]

// GMEM-LABEL: func.func @block
// GMEM-SAME: rowfuse.schedule = "persistent-gmem"
// GMEM-NEXT: %[[H:.*]] = rowfuse.buffer "h" : tensor<49x96xf16>
// GMEM-NEXT: %[[Y:.*]] = rowfuse.kernel "rf_c48_h96_fused_gmem_t16" "fused_gmem"(%arg0, %arg1, %arg2, %arg3, %arg4) buffer(%[[H]] : tensor<49x96xf16>) {grid = 4 : i64, {{.*}}, on_chip = [], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64}
// GMEM-NEXT: return %[[Y]]

// CONV-LABEL: func.func @block
// CONV-SAME: rowfuse.schedule = "conventional"
// CONV-NEXT: %[[HB:.*]] = rowfuse.buffer "h" : tensor<49x96xf16>
// CONV-NEXT: %[[H:.*]] = rowfuse.kernel "rf_c48_h96_proj1_t16" "proj1"(%arg0, %arg1, %arg2) buffer(%[[HB]] : tensor<49x96xf16>) {grid = 4 : i64, {{.*}}, on_chip = [], smem_bytes = 12672 : i64, threads = 96 : i64, tile_rows = 16 : i64} : ({{.*}}) -> tensor<49x96xf16>
// CONV-NEXT: %[[Y:.*]] = rowfuse.kernel "rf_c48_h96_proj2_t16" "proj2"(%arg0, %[[H]], %arg3, %arg4) {grid = 4 : i64, {{.*}}, on_chip = [], smem_bytes = 16576 : i64, threads = 96 : i64, tile_rows = 16 : i64} : ({{.*}}) -> tensor<49x48xf32>
// CONV-NEXT: return %[[Y]]

// VENDOR-LABEL: func.func @block
// VENDOR-SAME: rowfuse.schedule = "cublaslt"
// VENDOR-NEXT: rowfuse.linear
// VENDOR-NOT: rowfuse.kernel

// EXPLAIN: @block: schedule conventional on h200, 132 SMs
// EXPLAIN-NEXT: why: chosen with mode=conventional
// EXPLAIN-NEXT: buffer h: tensor<49x96xf16> through global memory
// EXPLAIN-NEXT: kernel rf_c48_h96_proj1_t16: proj1, tile rows 16, grid 4, 96 threads, 12672 B shared memory, hidden chunk 96, on chip: (nothing)
// EXPLAIN-NEXT: grid rule: 17 blocks/SM
// EXPLAIN-NEXT: kernel rf_c48_h96_proj2_t16: proj2, tile rows 16, grid 4, 96 threads, 16576 B shared memory, hidden chunk 96, on chip: (nothing)
// EXPLAIN-NEXT: grid rule: 13 blocks/SM
// EXPLAIN-NEXT: launches: 2
func.func @block(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
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
