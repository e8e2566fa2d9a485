// Rejected options of --rowfuse-schedule: the C tables name what is known.
// RUN: not rowfuse-opt %s --rowfuse-schedule=mode=persistent-regs 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not rowfuse-opt %s --rowfuse-schedule=target=a100 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not rowfuse-opt %s --rowfuse-schedule=tile-rows=24 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: not rowfuse-opt %s --rowfuse-schedule=sms=2000 2>&1 | FileCheck %s --check-prefix=SMS

// MODE: --rowfuse-schedule: unknown schedule 'persistent-regs' (known: persistent-smem persistent-gmem conventional persistent-wgmma cublaslt)
// TARGET: the planner rejects 49x48x96: unknown target 'a100' (known: h200, h100-sxm, h100-pcie)
// TILE: the planner rejects 49x48x96: tile rows must be auto, 16, 32 or 64, not 24
// SMS: the planner rejects 49x48x96: SM count 2000 outside 1..1024
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
