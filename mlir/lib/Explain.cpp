// --rowfuse-explain: prints, for every function --rowfuse-schedule lowered, the schedule,
// the reason the scheduler (or the user) gave, the kernels with their geometry and what
// each keeps on chip, and the global buffers. Reads only what the IR records.
#include "RowfuseMLIR/Dialect.h"
#include "RowfuseMLIR/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace rowfuse {
#define GEN_PASS_DEF_ROWFUSEEXPLAIN
#include "RowfuseMLIR/Passes.h.inc"
} // namespace rowfuse

using namespace mlir;
using namespace rowfuse;

namespace {

struct ExplainPass : rowfuse::impl::RowfuseExplainBase<ExplainPass> {
    void runOnOperation() override {
        llvm::raw_ostream &os = llvm::outs();
        for (auto fn : getOperation().getOps<func::FuncOp>()) {
            auto schedule = fn->getAttrOfType<StringAttr>(kScheduleAttr);
            if (!schedule)
                continue;
            auto reason = fn->getAttrOfType<StringAttr>(kReasonAttr);
            auto target = fn->getAttrOfType<StringAttr>(kTargetAttr);
            os << "@" << fn.getSymName() << ": schedule " << schedule.getValue() << " on "
               << (target ? target.getValue() : "?") << "\n";
            os << "  why: " << (reason ? reason.getValue() : "(no reason recorded)") << "\n";
            unsigned launches = 0;
            fn.walk([&](Operation *op) {
                if (auto k = dyn_cast<KernelOp>(op)) {
                    launches++;
                    os << "  kernel " << k.getKernelName() << ": " << k.getFamily()
                       << ", tile rows " << k.getTileRows() << ", grid " << k.getGrid() << ", "
                       << k.getThreads() << " threads, " << k.getSmemBytes()
                       << " B shared memory, hidden chunk " << k.getHiddenChunk() << ", on chip: ";
                    auto onChip = k.getOnChip().getAsValueRange<StringAttr>();
                    if (onChip.empty())
                        os << "(nothing)";
                    llvm::interleaveComma(onChip, os);
                    os << "\n    grid rule: " << k.getGridRule() << "\n";
                } else if (auto b = dyn_cast<BufferOp>(op)) {
                    os << "  buffer " << b.getValue() << ": " << b.getType()
                       << " through global memory\n";
                }
            });
            if (launches == 0)
                os << "  no rowfuse kernel: the block stays a contract for the vendor library "
                      "(through IREE: IREE's own code)\n";
            else
                os << "  launches: " << launches << "\n";
        }
        markAllAnalysesPreserved();
    }
};

} // namespace
