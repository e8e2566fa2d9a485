// --rowfuse-schedule: lowers the residual MLP block of each function's row contract to the
// kernels of one schedule.
//
// Two steps. Deciding: each block is matched (Contract.cpp) and the C planner is asked
// for the plan at its shape, rf_compile_plan (src/compile/plan.c, linked as a library):
// with mode=auto it runs the scheduler's cost model (src/compile/schedule.c) and gives
// the reason; with a schedule name it checks that the schedule fits. Either way every
// kernel's geometry comes from the planner, the same call `rowfuse compile` makes, so
// there is one decision function. Lowering: rewrite patterns replace the planned block by
// rowfuse.kernel / rowfuse.buffer ops (one pattern per schedule shape); the vendor
// schedule (cublaslt) keeps the contract, which --rowfuse-to-iree hands to IREE's own
// code generation.
#include <map>
#include <memory>

#include "Internal.h"
#include "RowfuseMLIR/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "rowfuse/compile.h"

namespace rowfuse {
#define GEN_PASS_DEF_ROWFUSESCHEDULE
#include "RowfuseMLIR/Passes.h.inc"
} // namespace rowfuse

using namespace mlir;
using namespace rowfuse;

namespace {

/// The planner's answer for one block, kept from deciding to lowering.
struct BlockPlan {
    MlpBlock block;
    rf_plan_t plan;
};
using PlanTable = std::map<Operation *, std::unique_ptr<BlockPlan>>;

/// Marks a block root between the two steps (the schedule name).
constexpr StringLiteral kPlannedAttr = "rowfuse.planned";

/// One rowfuse.kernel for a spec of the plan. The grid is the persistent grid at the
/// block's row count, with blocks per SM from shared memory and threads: the registers
/// that also bound it are known only once the kernel generator has run.
KernelOp buildKernel(PatternRewriter &rw, Location loc, const BlockPlan &bp, int kernelIndex,
                     ValueRange inputs, Value buffer, Type resultType) {
    rf_kernel_spec_t spec = bp.plan.kernels[kernelIndex];
    spec.blocks_per_sm = rf_kernel_blocks_per_sm(&spec, &bp.plan.target, 0);
    int32_t grid = rf_plan_grid(&bp.plan, &spec, bp.block.rows);
    std::string rule = std::to_string(spec.blocks_per_sm) +
                       " blocks/SM from shared memory and threads (registers bound it too once "
                       "the kernel generator has run)";
    if (spec.grid_balanced)
        rule += ", balanced";
    int blocksPerTile = rf_kernel_spec_blocks_per_tile(&spec);
    if (blocksPerTile > 1)
        rule += ", a cluster of " + std::to_string(blocksPerTile) + " blocks per tile";
    SmallVector<StringRef> onChip;
    if (spec.mode == RF_KERNEL_FUSED_SMEM || spec.mode == RF_KERNEL_FUSED_WGMMA)
        onChip.push_back("h");
    return KernelOp::create(
        rw, loc, resultType, inputs, buffer, rw.getStringAttr(spec.name),
        rw.getStringAttr(rf_kernel_mode_name(spec.mode)), rw.getI64IntegerAttr(spec.tile_rows),
        rw.getI64IntegerAttr(rf_kernel_spec_threads(&spec)), rw.getI64IntegerAttr(grid),
        rw.getI64IntegerAttr(spec.smem_bytes), rw.getI64IntegerAttr(spec.hidden_chunk),
        rw.getStrArrayAttr(onChip), rw.getStringAttr(rule), rw.getI64IntegerAttr(blocksPerTile));
}

/// The planned block at `root`, or null when `root` is not planned for `schedules`.
const BlockPlan *planned(const PlanTable &plans, ReluOp root,
                         std::initializer_list<rf_schedule_t> schedules) {
    if (!root->hasAttr(kPlannedAttr))
        return nullptr;
    auto it = plans.find(root.getOperation());
    if (it == plans.end())
        return nullptr;
    for (rf_schedule_t s : schedules)
        if (it->second->plan.schedule == s)
            return it->second.get();
    return nullptr;
}

Type hType(const MlpBlock &b) {
    return RankedTensorType::get({b.rows, b.hidden}, Float16Type::get(b.x.getContext()));
}

/// persistent-smem / persistent-gmem / persistent-wgmma: the whole block in one kernel.
/// With gmem, H goes through a global buffer the kernel uses as scratch.
struct LowerToPersistent : OpRewritePattern<ReluOp> {
    LowerToPersistent(MLIRContext *ctx, const PlanTable &plans)
        : OpRewritePattern<ReluOp>(ctx), plans(plans) {}
    LogicalResult matchAndRewrite(ReluOp root, PatternRewriter &rw) const override {
        const BlockPlan *bp = planned(plans, root,
                                      {RF_SCHEDULE_PERSISTENT_SMEM, RF_SCHEDULE_PERSISTENT_GMEM,
                                       RF_SCHEDULE_PERSISTENT_WGMMA});
        if (!bp)
            return failure();
        const MlpBlock &b = bp->block;
        const rf_plan_schedule_t &ps = bp->plan.schedules[bp->plan.schedule];
        Value buffer;
        if (bp->plan.schedule == RF_SCHEDULE_PERSISTENT_GMEM)
            buffer = BufferOp::create(rw, root.getLoc(), hType(b), "h");
        KernelOp k = buildKernel(rw, root.getLoc(), *bp, ps.kernel[0],
                                 ValueRange{b.x, b.w1, b.b1, b.w2, b.b2}, buffer, root.getType());
        rw.replaceOp(root, k.getResult());
        return success();
    }
    const PlanTable &plans;
};

/// conventional: proj1 writes H to a global buffer, proj2 reads it back.
struct LowerToConventional : OpRewritePattern<ReluOp> {
    LowerToConventional(MLIRContext *ctx, const PlanTable &plans)
        : OpRewritePattern<ReluOp>(ctx), plans(plans) {}
    LogicalResult matchAndRewrite(ReluOp root, PatternRewriter &rw) const override {
        const BlockPlan *bp = planned(plans, root, {RF_SCHEDULE_CONVENTIONAL});
        if (!bp)
            return failure();
        const MlpBlock &b = bp->block;
        const rf_plan_schedule_t &ps = bp->plan.schedules[RF_SCHEDULE_CONVENTIONAL];
        Value buffer = BufferOp::create(rw, root.getLoc(), hType(b), "h");
        KernelOp p1 = buildKernel(rw, root.getLoc(), *bp, ps.kernel[0], ValueRange{b.x, b.w1, b.b1},
                                  buffer, hType(b));
        KernelOp p2 =
            buildKernel(rw, root.getLoc(), *bp, ps.kernel[1],
                        ValueRange{b.x, p1.getResult(), b.w2, b.b2}, Value(), root.getType());
        rw.replaceOp(root, p2.getResult());
        return success();
    }
    const PlanTable &plans;
};

bool isContractOp(Operation *op) {
    return isa<LinearOp, BiasOp, ReluOp, ResidualAddOp, RoundF16Op>(op);
}

struct SchedulePass : rowfuse::impl::RowfuseScheduleBase<SchedulePass> {
    using RowfuseScheduleBase::RowfuseScheduleBase;

    /// Matches and plans the one block of `fn`; false (diagnostic emitted) on failure.
    bool decide(func::FuncOp fn, PlanTable &plans) {
        SmallVector<Operation *> contract;
        SmallVector<ReluOp> roots;
        fn.walk([&](Operation *op) {
            if (isContractOp(op))
                contract.push_back(op);
            if (auto relu = dyn_cast<ReluOp>(op); relu && isBlockRoot(relu))
                roots.push_back(relu);
        });
        if (contract.empty())
            return true;
        if (roots.size() != 1) {
            fn.emitError() << "the row contract must hold one residual MLP block ending in "
                              "rowfuse.relu(rowfuse.residual_add(...)); found "
                           << roots.size();
            return false;
        }
        auto bp = std::make_unique<BlockPlan>();
        std::string why;
        if (!matchMlpBlock(roots[0], bp->block, why)) {
            roots[0].emitError() << "not a residual MLP block rowfuse's kernels compute (Y = "
                                    "relu(fp16(relu(X W1 + b1)) W2 + b2 + X)): "
                                 << why;
            return false;
        }
        for (Operation *op : contract)
            if (!llvm::is_contained(bp->block.ops, op)) {
                op->emitError() << "is not part of the residual MLP block; rowfuse's kernels "
                                   "compute that block and nothing else";
                return false;
            }
        rf_compile_options_t o;
        rf_compile_options_default(&o);
        o.schedule = mode.c_str();
        o.target = target.c_str();
        o.sm_count = sms;
        o.tile_rows = tileRows;
        o.hidden_split = hiddenSplit;
        o.rows = bp->block.rows;
        rf_status_t st = rf_compile_plan(bp->block.channels, bp->block.hidden, &o, &bp->plan);
        if (st) {
            roots[0].emitError() << "the planner rejects " << bp->block.rows << "x"
                                 << bp->block.channels << "x" << bp->block.hidden << ": "
                                 << rf_status_message(st);
            rf_status_free(st);
            return false;
        }
        Builder b(fn.getContext());
        const rf_plan_t &p = bp->plan;
        fn->setAttr(kScheduleAttr, b.getStringAttr(rf_schedule_name(p.schedule)));
        // The planner's reason for auto; a forced schedule says where it was forced.
        fn->setAttr(kReasonAttr, b.getStringAttr(mode == "auto" ? std::string(p.reason)
                                                                : "chosen with mode=" + mode));
        fn->setAttr(kTargetAttr, b.getStringAttr(std::string(p.target.name) + ", " +
                                                 std::to_string(p.target.sm_count) + " SMs"));
        if (p.schedule != RF_SCHEDULE_CUBLASLT) {
            roots[0]->setAttr(kPlannedAttr, b.getStringAttr(rf_schedule_name(p.schedule)));
            plans[roots[0].getOperation()] = std::move(bp);
        }
        return true;
    }

    void runOnOperation() override {
        if (mode != "auto") {
            rf_schedule_t s;
            rf_status_t st = rf_schedule_parse(mode.c_str(), &s);
            if (st) {
                getOperation().emitError() << "--rowfuse-schedule: " << rf_status_message(st);
                rf_status_free(st);
                return signalPassFailure();
            }
        }
        PlanTable plans;
        for (auto fn : getOperation().getOps<func::FuncOp>())
            if (!decide(fn, plans))
                return signalPassFailure();
        RewritePatternSet patterns(&getContext());
        patterns.add<LowerToPersistent, LowerToConventional>(&getContext(), plans);
        if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
            return signalPassFailure();
        bool leftover = false;
        getOperation().walk([&](ReluOp relu) {
            if (relu->hasAttr(kPlannedAttr)) {
                relu.emitError() << "internal: a planned block was not lowered";
                leftover = true;
            }
        });
        if (leftover)
            signalPassFailure();
    }
};

} // namespace
