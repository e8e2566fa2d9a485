// rowfuse-opt's passes (lib/Schedule.cpp, lib/Explain.cpp, lib/ToIree.cpp).
#ifndef ROWFUSE_PASSES_TD
#define ROWFUSE_PASSES_TD

include "mlir/Pass/PassBase.td"

def RowfuseSchedule : Pass<"rowfuse-schedule", "::mlir::ModuleOp"> {
  let summary = "lower each row contract to a schedule of rowfuse kernels";
  let description = [{
    Matches the residual MLP block in every function's row contract and rewrites it into
    the kernels of one schedule. `mode=auto` asks the C scheduler (rf_compile_plan in
    src/compile: the cost model and the planner, linked as a library) and records its
    reason; a schedule name (persistent-smem, persistent-gmem, conventional, cublaslt)
    forces it. The kernels' geometry always comes from the planner. The function gets
    `rowfuse.schedule`, `rowfuse.reason` and `rowfuse.target`.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"auto\"",
           "auto, or a schedule name of rowfuse/plan.h">,
    Option<"target", "target", "std::string", /*default=*/"\"h200\"",
           "the device (rf_target_lookup: h200, h100-sxm, h100-pcie)">,
    Option<"sms", "sms", "int", /*default=*/"0", "SM count (0: the target's)">,
    Option<"tileRows", "tile-rows", "int", /*default=*/"0",
           "rows per tile (0: the planner decides; 16, 32, 64)">,
    Option<"hiddenSplit", "hidden-split", "int", /*default=*/"-1",
           "persistent-wgmma: a block pair per tile (-1: the planner decides; 0 off, 1 on)">,
  ];
}

def RowfuseExplain : Pass<"rowfuse-explain", "::mlir::ModuleOp"> {
  let summary = "print each function's schedule, the reason and its kernels";
  let description = [{
    For every function --rowfuse-schedule lowered, prints to stdout: the schedule and
    why, then each kernel with its family, row tile, grid, threads, shared-memory bytes
    and the values kept on chip, and each global buffer. The IR is not changed.
  }];
}

def RowfuseToIree : Pass<"rowfuse-to-iree", "::mlir::ModuleOp"> {
  let summary = "emit IREE input: kernels as dispatches, contract ops as linalg";
  let description = [{
    Rewrites a (scheduled) module into input the pinned iree-compile reads:
      rowfuse.kernel, kernels=extern:  one hal.dispatch.extern per kernel: the package's
          PTX (ptx-dir/<name>.ptx, its entry adapted to IREE's CUDA ABI and embedded) as
          the CUDA executable object; bindings in the kernel ABI's order, the row count
          as the one 32-bit constant, the kernel's grid, block and shared memory.
      rowfuse.kernel, kernels=codegen: one flow.dispatch.region per kernel around the
          kernel's computation in linalg, so IREE generates each kernel of the schedule
          itself, for any target (the CPU check).
      contract ops left (no schedule, or cublaslt): linalg, which IREE fuses into
          dispatches of its own choosing: the stock variant.
    function=NAME emits the block as a function to link into a larger model: the module's
    one function is renamed NAME and made private (IREE inlines it at its call site).
    IREE's ops and attributes are not in MLIR 22: they are built as unregistered
    operations and opaque attributes and printed in generic form, which both parse.
  }];
  let options = [
    Option<"kernels", "kernels", "std::string", /*default=*/"\"codegen\"",
           "extern (the package's PTX as custom dispatches) or codegen">,
    Option<"ptxDir", "ptx-dir", "std::string", /*default=*/"\"\"",
           "folder holding each kernel's PTX (a package's kernels/), for kernels=extern">,
    Option<"dumpPtx", "dump-ptx", "std::string", /*default=*/"\"\"",
           "also write each adapted PTX there as <name>.iree.ptx (the object's path)">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "rename the module's one function to this private symbol (a block to link)">,
  ];
}

#endif
