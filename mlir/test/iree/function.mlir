// function=NAME: the block as a private function a larger model links and calls
// (python/rowfuse/iree/model.py); the lowering inside is unchanged. A module of more than
// one function, or a name that another symbol holds, is refused.
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=persistent-smem --allow-unregistered-dialect --rowfuse-to-iree="function=rowfuse_block" | FileCheck %s
// RUN: rowfuse-opt %s --rowfuse-to-iree="function=rowfuse_block" --allow-unregistered-dialect | FileCheck %s --check-prefix=STOCK

// CHECK-LABEL: func.func private @rowfuse_block(%arg0: tensor<49x48xf16> {rowfuse.row}
// CHECK-SAME: rowfuse.schedule = "persistent-smem"
// CHECK: "flow.dispatch.region"
// CHECK-NOT: func.func
// STOCK-LABEL: func.func private @rowfuse_block
// STOCK-NOT: flow.dispatch.region
// STOCK: linalg.generic
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
