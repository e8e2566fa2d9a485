// The rowfuse dialect: registration, the row-ownership query and the op verifiers. The
// verifiers are where the row contract is enforced in MLIR: a use that would mix rows
// (contracting over a row-owned weight, a row-owned bias) is rejected with a message that
// names the operand and the rule, like the C verifier's (rowfuse/verify.h).
#include "RowfuseMLIR/Dialect.h"

#include "Internal.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

#include "rowfuse/plan.h"

using namespace mlir;
using namespace rowfuse;

#include "RowfuseMLIR/RowfuseDialect.cpp.inc"

void RowfuseDialect::initialize() {
    addOperations<
#define GET_OP_LIST
#include "RowfuseMLIR/RowfuseOps.cpp.inc"
        >();
}

#define GET_OP_CLASSES
#include "RowfuseMLIR/RowfuseOps.cpp.inc"

bool rowfuse::rowOwned(Value value) {
    // Depth-first over the use-def graph; a value is row-owned when any source it
    // reaches is a row argument. A block argument of anything but a function is
    // treated as row-owned: unknown provenance must not pass as a weight.
    llvm::SmallVector<Value, 16> work{value};
    llvm::SmallPtrSet<void *, 32> seen;
    while (!work.empty()) {
        Value v = work.pop_back_val();
        if (!seen.insert(v.getAsOpaquePointer()).second)
            continue;
        if (auto arg = dyn_cast<BlockArgument>(v)) {
            auto fn = dyn_cast_or_null<FunctionOpInterface>(arg.getOwner()->getParentOp());
            if (!fn || !arg.getOwner()->isEntryBlock() ||
                fn.getArgAttr(arg.getArgNumber(), kRowArgAttr))
                return true;
            continue;
        }
        for (Value operand : v.getDefiningOp()->getOperands())
            work.push_back(operand);
    }
    return false;
}

static int64_t dim(Value v, unsigned i) {
    return cast<RankedTensorType>(v.getType()).getDimSize(i);
}

static LogicalResult sameShape(Operation *op, Value a, Value b, StringRef what) {
    auto ta = cast<RankedTensorType>(a.getType()), tb = cast<RankedTensorType>(b.getType());
    if (ta.getShape() != tb.getShape())
        return op->emitOpError() << what << " shapes differ: " << ta << " vs " << tb;
    return success();
}

LogicalResult LinearOp::verify() {
    int64_t m = dim(getInput(), 0), k = dim(getInput(), 1);
    int64_t wk = dim(getWeight(), 0), n = dim(getWeight(), 1);
    if (k != wk)
        return emitOpError() << "contracts " << k << " input features with a weight of " << wk
                             << " rows; they must be equal";
    if (dim(getResult(), 0) != m || dim(getResult(), 1) != n)
        return emitOpError() << "result must be " << m << "x" << n << ", not "
                             << getResult().getType();
    if (rowOwned(getWeight()))
        return emitOpError()
               << "weight (operand #1) depends on the rows: contracting over it sums over "
                  "rows, so row i of the result would read every row; a row-owned "
                  "projection's weight must be row-independent (row-owned values go in "
                  "operand #0)";
    return success();
}

LogicalResult BiasOp::verify() {
    if (dim(getBias(), 0) != dim(getInput(), 1))
        return emitOpError() << "bias of " << dim(getBias(), 0) << " elements for "
                             << dim(getInput(), 1) << " columns";
    if (getResult().getType() != getInput().getType())
        return emitOpError() << "result type must equal the input's";
    if (rowOwned(getBias()))
        return emitOpError() << "bias (operand #1) depends on the rows: column n of every "
                                "row would read row n; a bias must be row-independent";
    return success();
}

LogicalResult ResidualAddOp::verify() {
    if (failed(sameShape(*this, getInput(), getResidual(), "input and residual")))
        return failure();
    return sameShape(*this, getInput(), getResult(), "input and result");
}

LogicalResult RoundF16Op::verify() {
    return sameShape(*this, getInput(), getResult(), "input and result");
}

// ---- rowfuse.kernel ----

rf_kernel_mode_t rowfuse::kernelMode(KernelOp kernel) {
    rf_kernel_mode_t mode = RF_KERNEL_FUSED_SMEM;
    rf_status_free(rf_kernel_mode_parse(kernel.getFamily().str().c_str(), &mode));
    return mode;
}

namespace {
/// What one kernel family takes and gives (rowfuse/kernel_abi.h).
struct FamilyShape {
    unsigned inputs; // operands before buffer(...)
    bool buffer;     // has buffer(h)
    bool returnsH;   // the result is h (proj1), else y
    bool hOnChip;    // h listed in on_chip
};
} // namespace

static FamilyShape familyShape(rf_kernel_mode_t mode) {
    switch (mode) {
    case RF_KERNEL_FUSED_SMEM:
    case RF_KERNEL_FUSED_WGMMA:
        return {5, false, false, true};
    case RF_KERNEL_FUSED_GMEM:
        return {5, true, false, false};
    case RF_KERNEL_PROJ1:
        return {3, true, true, false};
    default: // RF_KERNEL_PROJ2
        return {4, false, false, false};
    }
}

LogicalResult KernelOp::verify() {
    rf_kernel_mode_t mode;
    rf_status_t st = rf_kernel_mode_parse(getFamily().str().c_str(), &mode);
    if (st) {
        rf_status_free(st);
        std::string known;
        for (int i = 0; i < RF_KERNEL_MODE_COUNT; i++)
            known += std::string(i ? ", " : "") + rf_kernel_mode_name((rf_kernel_mode_t)i);
        return emitOpError() << "unknown kernel family '" << getFamily() << "' (known: " << known
                             << ")";
    }
    FamilyShape fs = familyShape(mode);
    if (getInputs().size() != fs.inputs)
        return emitOpError() << getFamily() << " takes " << fs.inputs << " operands, not "
                             << getInputs().size();
    if (fs.buffer != (getBuffer() != nullptr))
        return emitOpError() << getFamily()
                             << (fs.buffer ? " needs buffer(h): H goes through global memory"
                                           : " takes no buffer");
    Value x = getInputs()[0];
    auto xt = cast<RankedTensorType>(x.getType());
    if (xt.getRank() != 2 || !xt.getElementType().isF16() || !xt.hasStaticShape())
        return emitOpError() << "x (operand #0) must be a static fp16 matrix, not " << xt;
    int64_t rows = xt.getDimSize(0);
    auto resT = cast<RankedTensorType>(getResult().getType());
    if (fs.returnsH) {
        if (resT != getBuffer().getType())
            return emitOpError() << "proj1 returns the buffer it writes (" << getBuffer().getType()
                                 << "), not " << resT;
    } else if (resT.getRank() != 2 || resT.getDimSize(0) != rows ||
               resT.getDimSize(1) != xt.getDimSize(1) || !resT.getElementType().isF32()) {
        return emitOpError() << "result must be the fp32 " << rows << "x" << xt.getDimSize(1)
                             << " output, not " << resT;
    }
    if (getBuffer()) {
        auto ht = cast<RankedTensorType>(getBuffer().getType());
        if (ht.getRank() != 2 || ht.getDimSize(0) != rows || !ht.getElementType().isF16())
            return emitOpError() << "buffer(h) must be fp16 with " << rows << " rows, not " << ht;
        if (!getBuffer().getDefiningOp<BufferOp>())
            return emitOpError() << "buffer(h) must come from rowfuse.buffer";
    }
    if (mode == RF_KERNEL_PROJ2) {
        auto writer = getInputs()[1].getDefiningOp<KernelOp>();
        if (!writer || kernelMode(writer) != RF_KERNEL_PROJ1)
            return emitOpError() << "proj2 reads h (operand #1) from a proj1 kernel, through "
                                    "global memory";
    }
    bool hOnChip = llvm::is_contained(getOnChip().getAsValueRange<StringAttr>(), "h");
    if (hOnChip != fs.hOnChip)
        return emitOpError() << getFamily()
                             << (fs.hOnChip ? " keeps h on chip: on_chip must list \"h\""
                                            : " routes h through global memory: on_chip must "
                                              "not list \"h\"");
    int64_t tm = getTileRows();
    if (mode == RF_KERNEL_FUSED_WGMMA ? tm != 64 && tm != 128 : tm != 16 && tm != 32 && tm != 64)
        return emitOpError() << "tile_rows must be "
                             << (mode == RF_KERNEL_FUSED_WGMMA ? "64 or 128" : "16, 32 or 64")
                             << ", not " << tm;
    if (getThreads() % 32 != 0)
        return emitOpError() << "threads must be whole warps, not " << getThreads();
    int64_t cb = getClusterBlocks();
    if (cb != 1 && !(cb == 2 && mode == RF_KERNEL_FUSED_WGMMA))
        return emitOpError() << "cluster_blocks " << cb
                             << " (only fused_wgmma runs a block pair per tile, 2)";
    int64_t tiles = (rows + tm - 1) / tm;
    if ((int64_t)getGrid() > tiles * cb || (int64_t)getGrid() % cb != 0)
        return emitOpError() << "grid " << getGrid() << " is not a multiple of " << cb
                             << " blocks per tile up to the " << tiles << " tiles of " << rows
                             << " rows";
    return success();
}
