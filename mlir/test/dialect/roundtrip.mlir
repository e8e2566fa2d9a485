// Every rowfuse op prints and parses back to itself, in custom and in generic form.
// RUN: rowfuse-opt %s | rowfuse-opt | FileCheck %s
// RUN: rowfuse-opt %s --mlir-print-op-generic | rowfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @contract
// CHECK-SAME: (%[[X:.*]]: tensor<49x48xf16> {rowfuse.row}, %[[W1:.*]]: tensor<48x96xf16>, %[[B1:.*]]: tensor<96xf32>, %[[W2:.*]]: tensor<96x48xf16>, %[[B2:.*]]: tensor<48xf32>)
// CHECK: %[[P1:.*]] = rowfuse.linear %[[X]], %[[W1]] : tensor<49x48xf16>, tensor<48x96xf16> -> tensor<49x96xf32>
// CHECK: %[[A1:.*]] = rowfuse.bias %[[P1]], %[[B1]] : tensor<49x96xf32>, tensor<96xf32>
// CHECK: %[[R1:.*]] = rowfuse.relu %[[A1]] : tensor<49x96xf32>
// CHECK: %[[H:.*]] = rowfuse.round_f16 %[[R1]] : tensor<49x96xf32> -> tensor<49x96xf16>
// CHECK: %[[P2:.*]] = rowfuse.linear %[[H]], %[[W2]] : tensor<49x96xf16>, tensor<96x48xf16> -> tensor<49x48xf32>
// CHECK: %[[A2:.*]] = rowfuse.bias %[[P2]], %[[B2]] : tensor<49x48xf32>, tensor<48xf32>
// CHECK: %[[S:.*]] = rowfuse.residual_add %[[A2]], %[[X]] : tensor<49x48xf32>, tensor<49x48xf16>
// CHECK: %[[Y:.*]] = rowfuse.relu %[[S]] : tensor<49x48xf32>
// CHECK: return %[[Y]]
func.func @contract(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>,
                    %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
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

// CHECK-LABEL: func.func @schedules
// CHECK: rowfuse.kernel "k_fused" "fused_smem"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {grid = 4 : i64, grid_rule = "test", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64}
// CHECK: %[[HB:.*]] = rowfuse.buffer "h" : tensor<49x96xf16>
// CHECK: rowfuse.kernel "k_gmem" "fused_gmem"({{.*}}) buffer(%[[HB]] : tensor<49x96xf16>) {{.*}}on_chip = []
// CHECK: %[[H:.*]] = rowfuse.kernel "k_proj1" "proj1"(%{{.*}}, %{{.*}}, %{{.*}}) buffer(%[[HB]] : tensor<49x96xf16>)
// CHECK-SAME: -> tensor<49x96xf16>
// CHECK: rowfuse.kernel "k_proj2" "proj2"(%{{.*}}, %[[H]], %{{.*}}, %{{.*}})
func.func @schedules(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>,
                     %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> (tensor<49x48xf32>, tensor<49x48xf32>, tensor<49x48xf32>) {
  %y0 = rowfuse.kernel "k_fused" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "test", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  %h = rowfuse.buffer "h" : tensor<49x96xf16>
  %y1 = rowfuse.kernel "k_gmem" "fused_gmem"(%x, %w1, %b1, %w2, %b2) buffer(%h : tensor<49x96xf16>) {grid = 4 : i64, grid_rule = "test", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  %h1 = rowfuse.kernel "k_proj1" "proj1"(%x, %w1, %b1) buffer(%h : tensor<49x96xf16>) {grid = 4 : i64, grid_rule = "test", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 12672 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>) -> tensor<49x96xf16>
  %y2 = rowfuse.kernel "k_proj2" "proj2"(%x, %h1, %w2, %b2) {grid = 4 : i64, grid_rule = "test", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 16576 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<49x96xf16>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y0, %y1, %y2 : tensor<49x48xf32>, tensor<49x48xf32>, tensor<49x48xf32>
}
