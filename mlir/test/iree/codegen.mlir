// kernels=codegen: every rowfuse.kernel becomes one flow.dispatch.region holding its
// computation in linalg (IREE generates each kernel of the schedule); a contract without
// kernels (no schedule, or cublaslt) becomes plain linalg: the stock variant.
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=persistent-smem --rowfuse-to-iree --allow-unregistered-dialect | FileCheck %s --check-prefix=ONE
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=persistent-gmem --rowfuse-to-iree --allow-unregistered-dialect | FileCheck %s --check-prefix=ONE
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=conventional --rowfuse-to-iree --allow-unregistered-dialect | FileCheck %s --check-prefix=TWO
// RUN: rowfuse-opt %s --rowfuse-to-iree --allow-unregistered-dialect | FileCheck %s --check-prefix=STOCK
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=cublaslt --rowfuse-to-iree --allow-unregistered-dialect | FileCheck %s --check-prefix=STOCK
// The output parses back (generic IREE ops, upstream dialects).
// RUN: rowfuse-opt %s --rowfuse-schedule=mode=conventional --rowfuse-to-iree --allow-unregistered-dialect | rowfuse-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=TWO
// Without --allow-unregistered-dialect the pass says why it needs it.
// RUN: not rowfuse-opt %s --rowfuse-to-iree 2>&1 | FileCheck %s --check-prefix=NOFLAG
// RUN: not rowfuse-opt %s --rowfuse-to-iree=kernels=ptx --allow-unregistered-dialect 2>&1 | FileCheck %s --check-prefix=BADOPT

// ONE-LABEL: func.func @block
// ONE: %[[Y:.*]] = "flow.dispatch.region"() <{operandSegmentSizes = array<i32: 0, 0>}> ({
// ONE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%arg0, %arg1 :
// ONE: arith.truncf {{.*}} : f32 to f16
// ONE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// ONE: arith.extf
// ONE: arith.maximumf
// ONE: "flow.return"
// ONE-NEXT: }, {
// ONE-NEXT: }) : () -> tensor<49x48xf32>
// ONE-NOT: flow.dispatch.region
// ONE-NOT: rowfuse.
// ONE: return %[[Y]]

// TWO-LABEL: func.func @block
// TWO: %[[H:.*]] = "flow.dispatch.region"()
// TWO: arith.truncf
// TWO: }) : () -> tensor<49x96xf16>
// TWO: %[[Y:.*]] = "flow.dispatch.region"()
// TWO: ins(%[[H]], %arg3 : tensor<49x96xf16>, tensor<96x48xf16>)
// TWO: }) : () -> tensor<49x48xf32>
// TWO-NOT: rowfuse.
// TWO: return %[[Y]]

// STOCK-LABEL: func.func @block
// STOCK-NOT: flow.dispatch.region
// STOCK-NOT: rowfuse.kernel
// STOCK-COUNT-2: iterator_types = ["parallel", "parallel", "reduction"]
// STOCK-NOT: flow.dispatch.region
// STOCK-NOT: rowfuse.{{linear|bias|relu|round|residual}}
// STOCK: return

// NOFLAG: --rowfuse-to-iree builds IREE's flow and hal ops, which MLIR 22 does not have: run rowfuse-opt with --allow-unregistered-dialect
// BADOPT: --rowfuse-to-iree: kernels must be extern or codegen, not 'ptx'
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
