// kernels=extern: each rowfuse.kernel becomes one hal.dispatch.extern of its package PTX,
// the entry adapted to IREE's CUDA ABI (lib/PtxAbi.cpp) and embedded as the CUDA object.
// Bindings follow the kernel ABI's pointer slots (x, w1, b1, w2, b2, h, y): IREE binds a
// dispatch's tensor operands, then its results; a slot the kernel does not read gets a
// 16-byte placeholder. The row count is the one 32-bit constant; grid, block and shared
// memory are the kernel's.
// RUN: rm -rf %t && mkdir -p %t
// RUN: rowfuse-opt %s --allow-unregistered-dialect --rowfuse-to-iree="kernels=extern ptx-dir=%inputs/ptx dump-ptx=%t" | FileCheck %s
// RUN: FileCheck %s --input-file=%t/k_fused.iree.ptx --check-prefix=PTX
// RUN: rowfuse-opt %s --allow-unregistered-dialect --rowfuse-to-iree="kernels=extern ptx-dir=%inputs/ptx" | rowfuse-opt --allow-unregistered-dialect | FileCheck %s

// PTX: .visible .entry k_fused(
// PTX-NEXT: .param .u64 k_fused_param_0,
// PTX-NEXT: .param .u64 k_fused_param_1,
// PTX-NEXT: .param .u64 k_fused_param_2,
// PTX-NEXT: .param .u64 k_fused_param_3,
// PTX-NEXT: .param .u64 k_fused_param_4,
// PTX-NEXT: .param .u64 k_fused_param_5,
// PTX-NEXT: .param .u64 k_fused_param_6,
// PTX-NEXT: .param .u32 k_fused_param_7
// PTX-NEXT: )
// PTX-NEXT: .reqntid 96, 1, 1
// PTX: ld.param.b64 {{.*}}[k_fused_param_0];
// PTX: ld.param.b32 {{.*}}[k_fused_param_7];
// PTX-NOT: kernel_cutlass

// CHECK-LABEL: func.func @persistent
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 49 : index
// CHECK-DAG: %[[ROWS32:.*]] = arith.constant 49 : i32
// CHECK: %[[R:.*]]:2 = "hal.dispatch.extern"(%[[ROWS]], %[[ROWS32]], %arg0, %arg1, %arg2, %arg3, %arg4)
// CHECK-SAME: export_name = "k_fused"
// CHECK-SAME: layout = #hal.pipeline.layout<constants = 1, bindings = [#hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer>, #hal.pipeline.binding<storage_buffer>]>
// CHECK-SAME: operandSegmentSizes = array<i32: 1, 6, 0, 0>
// CHECK-SAME: target_objects = {{\[\[}}#hal.executable.object<{path = "k_fused.iree.ptx", data = dense<"0x{{[0-9A-F]+}}"> : vector<{{[0-9]+}}xi8>}>]]
// CHECK-SAME: target_ordinals = [0 : index], targets = [#hal.executable.target<"cuda", "cuda-nvptx-fb">]
// CHECK-SAME: tied_operands = [-1 : index, -1 : index], workgroup_local_memory = 26944 : index, workgroup_size = [96 : index, 1 : index, 1 : index]
// CHECK-NEXT: ^bb0(%{{.*}}: !hal.device, %{{.*}}: index):
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[GRID:.*]] = arith.constant 4 : index
// CHECK: "hal.return"(%[[GRID]], %[[ONE]], %[[ONE]])
// CHECK: }) : (index, i32, tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> (tensor<8xf16>, tensor<49x48xf32>)
// CHECK: return %[[R]]#1
func.func @persistent(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>,
                      %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  %y = rowfuse.kernel "k_fused" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y : tensor<49x48xf32>
}

// persistent-gmem: the h slot is a real [M, H] scratch result.
// CHECK-LABEL: func.func @gmem
// CHECK: %[[G:.*]]:2 = "hal.dispatch.extern"(%{{.*}}, %{{.*}}, %arg0, %arg1, %arg2, %arg3, %arg4)
// CHECK-SAME: export_name = "k_gmem"
// CHECK: -> (tensor<49x96xf16>, tensor<49x48xf32>)
// CHECK-NOT: rowfuse.buffer
// CHECK: return %[[G]]#1
func.func @gmem(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>,
                %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  %h = rowfuse.buffer "h" : tensor<49x96xf16>
  %y = rowfuse.kernel "k_gmem" "fused_gmem"(%x, %w1, %b1, %w2, %b2) buffer(%h : tensor<49x96xf16>) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 26944 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y : tensor<49x48xf32>
}

// conventional: two dispatches; proj1 writes h (result 0, slot 5) and binds placeholders
// for w2, b2 and y; proj2 reads h as its sixth tensor operand (slot 5).
// CHECK-LABEL: func.func @conventional
// CHECK: %[[PH:.*]] = arith.constant dense<0.000000e+00> : tensor<8xf16>
// CHECK: %[[P1:.*]]:2 = "hal.dispatch.extern"(%{{.*}}, %{{.*}}, %arg0, %arg1, %arg2, %[[PH]], %[[PH]])
// CHECK-SAME: export_name = "k_proj1"
// CHECK-SAME: workgroup_local_memory = 12672 : index
// CHECK: -> (tensor<49x96xf16>, tensor<4xf32>)
// CHECK: %[[P2:.*]] = "hal.dispatch.extern"(%{{.*}}, %{{.*}}, %arg0, %[[PH]], %[[PH]], %arg3, %arg4, %[[P1]]#0)
// CHECK-SAME: export_name = "k_proj2"
// CHECK-SAME: operandSegmentSizes = array<i32: 1, 7, 0, 0>
// CHECK-SAME: workgroup_local_memory = 16576 : index
// CHECK: -> tensor<49x48xf32>
// CHECK: return %[[P2]]
func.func @conventional(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>,
                        %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  %h = rowfuse.buffer "h" : tensor<49x96xf16>
  %h1 = rowfuse.kernel "k_proj1" "proj1"(%x, %w1, %b1) buffer(%h : tensor<49x96xf16>) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 12672 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>) -> tensor<49x96xf16>
  %y = rowfuse.kernel "k_proj2" "proj2"(%x, %h1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 16576 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<49x96xf16>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %y : tensor<49x48xf32>
}
