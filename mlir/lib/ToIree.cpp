// --rowfuse-to-iree: rewrites a module into the input the pinned iree-compile reads.
//
//   rowfuse.kernel, kernels=extern    one hal.dispatch.extern per kernel, the package's PTX
//                                     (entry adapted to IREE's CUDA ABI) embedded as the
//                                     CUDA executable object
//   rowfuse.kernel, kernels=codegen   one flow.dispatch.region per kernel holding the
//                                     kernel's computation in linalg
//   contract ops                      linalg (IREE forms the dispatches: stock)
//
// IREE is built on a newer LLVM than the distribution's MLIR 22, and its dialects are not
// in MLIR 22. So the flow and hal ops are created as unregistered operations (their
// inherent attributes as the op's properties, IREE's attributes as opaque attributes,
// !hal.device as an opaque type) and printed in generic form, and everything else is
// upstream func/arith/tensor/linalg: text both MLIR 22 and iree-compile parse (CI checks
// both). rowfuse-opt needs --allow-unregistered-dialect to build and print them.
#include <map>

#include "Internal.h"
#include "RowfuseMLIR/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace rowfuse {
#define GEN_PASS_DEF_ROWFUSETOIREE
#include "RowfuseMLIR/Passes.h.inc"
} // namespace rowfuse

using namespace mlir;
using namespace rowfuse;

namespace {

// ---- contract ops -> linalg (the stock variant) ----

template <typename OpT> struct ContractToLinalg : OpRewritePattern<OpT> {
    using OpRewritePattern<OpT>::OpRewritePattern;
    LogicalResult matchAndRewrite(OpT op, PatternRewriter &rw) const override {
        rw.replaceOp(op, build(op, rw));
        return success();
    }
    static Value build(LinearOp op, PatternRewriter &rw) {
        return buildLinear(rw, op.getLoc(), op.getInput(), op.getWeight());
    }
    static Value build(BiasOp op, PatternRewriter &rw) {
        return buildBias(rw, op.getLoc(), op.getInput(), op.getBias());
    }
    static Value build(ReluOp op, PatternRewriter &rw) {
        return buildRelu(rw, op.getLoc(), op.getInput());
    }
    static Value build(RoundF16Op op, PatternRewriter &rw) {
        return buildRoundF16(rw, op.getLoc(), op.getInput());
    }
    static Value build(ResidualAddOp op, PatternRewriter &rw) {
        return buildResidualAdd(rw, op.getLoc(), op.getInput(), op.getResidual());
    }
};

/// The kernel's computation in linalg (what each family computes, rowfuse/kernel_abi.h).
Value kernelBody(OpBuilder &b, Location loc, KernelOp k) {
    ValueRange in = k.getInputs();
    switch (kernelMode(k)) {
    case RF_KERNEL_PROJ1:
        return buildProj1(b, loc, in[0], in[1], in[2]);
    case RF_KERNEL_PROJ2:
        return buildProj2(b, loc, in[1], in[2], in[3], in[0]);
    default: { // fused_smem, fused_gmem
        Value h = buildProj1(b, loc, in[0], in[1], in[2]);
        return buildProj2(b, loc, h, in[3], in[4], in[0]);
    }
    }
}

/// An unregistered operation of IREE's (generic form), its inherent attributes as
/// properties, with `regions` empty regions.
Operation *createIreeOp(PatternRewriter &rw, Location loc, StringRef name, ValueRange operands,
                        TypeRange results, ArrayRef<NamedAttribute> props, unsigned regions) {
    OperationState st(loc, name);
    st.addOperands(operands);
    st.addTypes(results);
    if (!props.empty())
        st.propertiesAttr = DictionaryAttr::get(rw.getContext(), props);
    for (unsigned i = 0; i < regions; i++)
        st.addRegion();
    return rw.create(st);
}

Attribute halAttr(MLIRContext *ctx, const std::string &body) {
    return OpaqueAttr::get(StringAttr::get(ctx, "hal"), body, NoneType::get(ctx));
}

// ---- rowfuse.kernel -> flow.dispatch.region (IREE generates each kernel) ----

struct KernelToDispatchRegion : OpRewritePattern<KernelOp> {
    using OpRewritePattern::OpRewritePattern;
    LogicalResult matchAndRewrite(KernelOp k, PatternRewriter &rw) const override {
        auto segments = rw.getNamedAttr("operandSegmentSizes", rw.getDenseI32ArrayAttr({0, 0}));
        // Two regions: the body, and the workgroup count (empty: IREE derives it).
        Operation *region = createIreeOp(rw, k.getLoc(), "flow.dispatch.region", {},
                                         k.getResult().getType(), {segments}, 2);
        Block *body = rw.createBlock(&region->getRegion(0));
        rw.setInsertionPointToStart(body);
        Value y = kernelBody(rw, k.getLoc(), k);
        createIreeOp(rw, k.getLoc(), "flow.return", y, {}, {}, 0);
        rw.replaceOp(k, region->getResults());
        return success();
    }
};

// ---- rowfuse.kernel -> hal.dispatch.extern (the package's kernel itself) ----

/// The seven pointer slots of the kernel ABI (x, w1, b1, w2, b2, h, y: rowfuse/kernel_abi.h)
/// mapped onto IREE's bindings, which are the dispatch's tensor operands then its results.
/// A slot the kernel never reads is bound to a 16-byte placeholder.
struct ExternSlots {
    SmallVector<Value> operands; // tensor operands, in slot order
    SmallVector<Type> results;   // result types, in slot order
    unsigned resultIndex;        // which result is the kernel op's value
};

ExternSlots externSlots(PatternRewriter &rw, Location loc, KernelOp k) {
    MLIRContext *ctx = rw.getContext();
    auto phIn = [&]() -> Value {
        auto t = RankedTensorType::get({8}, rw.getF16Type());
        return arith::ConstantOp::create(rw, loc, DenseElementsAttr::get(t, rw.getF16FloatAttr(0)));
    };
    Type phH = RankedTensorType::get({8}, Float16Type::get(ctx));
    Type phY = RankedTensorType::get({4}, Float32Type::get(ctx));
    ValueRange in = k.getInputs();
    Type t = k.getResult().getType();
    switch (kernelMode(k)) {
    case RF_KERNEL_FUSED_SMEM:
        return {{in[0], in[1], in[2], in[3], in[4]}, {phH, t}, 1};
    case RF_KERNEL_FUSED_GMEM:
        return {{in[0], in[1], in[2], in[3], in[4]}, {k.getBuffer().getType(), t}, 1};
    case RF_KERNEL_PROJ1:
        return {{in[0], in[1], in[2], phIn(), phIn()}, {t, phY}, 0};
    default: // proj2
        return {{in[0], phIn(), phIn(), in[2], in[3], in[1]}, {t}, 0};
    }
}

struct KernelToDispatchExtern : OpRewritePattern<KernelOp> {
    KernelToDispatchExtern(MLIRContext *ctx, const std::map<std::string, std::string> &ptx)
        : OpRewritePattern<KernelOp>(ctx), ptx(ptx) {}

    LogicalResult matchAndRewrite(KernelOp k, PatternRewriter &rw) const override {
        auto it = ptx.find(k.getKernelName().str());
        if (it == ptx.end())
            return failure();
        MLIRContext *ctx = rw.getContext();
        Location loc = k.getLoc();
        int64_t rows = cast<RankedTensorType>(k.getInputs()[0].getType()).getDimSize(0);
        ExternSlots slots = externSlots(rw, loc, k);
        Value workload = arith::ConstantIndexOp::create(rw, loc, rows);
        Value rowsI32 = arith::ConstantIntOp::create(rw, loc, rw.getI32Type(), rows);
        SmallVector<Value> args{rowsI32};
        args.append(slots.operands);

        std::string layout = "pipeline.layout<constants = 1, bindings = [";
        for (size_t i = 0; i < slots.operands.size() + slots.results.size(); i++)
            layout += std::string(i ? ", " : "") + "#hal.pipeline.binding<storage_buffer" +
                      (i < slots.operands.size() ? ", ReadOnly>" : ">");
        layout += "]>";
        std::string object = "executable.object<{path = \"" + k.getKernelName().str() +
                             ".iree.ptx\", data = dense<\"0x" + llvm::toHex(it->second) +
                             "\"> : vector<" + std::to_string(it->second.size()) + "xi8>}>";
        Attribute target = halAttr(ctx, "executable.target<\"cuda\", \"cuda-nvptx-fb\">");
        SmallVector<Attribute> tied(slots.results.size(), rw.getIndexAttr(-1));
        NamedAttribute props[] = {
            rw.getNamedAttr("export_name", k.getKernelNameAttr()),
            rw.getNamedAttr("layout", halAttr(ctx, layout)),
            rw.getNamedAttr("operandSegmentSizes",
                            rw.getDenseI32ArrayAttr({1, (int32_t)args.size(), 0, 0})),
            rw.getNamedAttr("target_objects",
                            rw.getArrayAttr({rw.getArrayAttr({halAttr(ctx, object)})})),
            rw.getNamedAttr("target_ordinals", rw.getArrayAttr({rw.getIndexAttr(0)})),
            rw.getNamedAttr("targets", rw.getArrayAttr({target})),
            rw.getNamedAttr("tied_operands", rw.getArrayAttr(tied)),
            rw.getNamedAttr("workgroup_local_memory", rw.getIndexAttr(k.getSmemBytes())),
            rw.getNamedAttr("workgroup_size",
                            rw.getArrayAttr({rw.getIndexAttr(k.getThreads()), rw.getIndexAttr(1),
                                             rw.getIndexAttr(1)})),
        };
        SmallVector<Value> operands{workload};
        operands.append(args);
        Operation *ext = createIreeOp(rw, loc, "hal.dispatch.extern", operands, slots.results,
                                      props, /*count + one target region*/ 2);
        // The workgroup count: the kernel's persistent grid, decided by the planner.
        Type device = OpaqueType::get(StringAttr::get(ctx, "hal"), "device");
        Block *count =
            rw.createBlock(&ext->getRegion(0), {}, {device, rw.getIndexType()}, {loc, loc});
        rw.setInsertionPointToStart(count);
        Value one = arith::ConstantIndexOp::create(rw, loc, 1);
        Value grid = arith::ConstantIndexOp::create(rw, loc, k.getGrid());
        createIreeOp(rw, loc, "hal.return", ValueRange{grid, one, one}, {}, {}, 0);
        rw.replaceOp(k, ext->getResult(slots.resultIndex));
        return success();
    }
    const std::map<std::string, std::string> &ptx;
};

struct EraseUnusedBuffer : OpRewritePattern<BufferOp> {
    using OpRewritePattern::OpRewritePattern;
    LogicalResult matchAndRewrite(BufferOp b, PatternRewriter &rw) const override {
        if (!b->use_empty())
            return failure();
        rw.eraseOp(b);
        return success();
    }
};

struct ToIreePass : rowfuse::impl::RowfuseToIreeBase<ToIreePass> {
    using RowfuseToIreeBase::RowfuseToIreeBase;

    void getDependentDialects(DialectRegistry &registry) const override {
        registry.insert<arith::ArithDialect, linalg::LinalgDialect, tensor::TensorDialect>();
    }

    /// Reads and adapts every kernel's PTX once (kernels=extern).
    bool loadPtx(std::map<std::string, std::string> &out) {
        bool ok = true;
        getOperation().walk([&](KernelOp k) {
            std::string name = k.getKernelName().str();
            if (out.count(name) || !ok)
                return;
            if (kernelMode(k) == RF_KERNEL_FUSED_WGMMA) {
                k.emitError() << "kernel " << name
                              << " (fused_wgmma) takes TMA descriptors that its host launcher "
                                 "encodes, and IREE's custom dispatch passes plain buffer "
                                 "pointers: schedule the block with mode=persistent-smem (or "
                                 "another mma.sync schedule) for IREE";
                ok = false;
                return;
            }
            SmallString<256> path(ptxDir);
            llvm::sys::path::append(path, name + ".ptx");
            auto buf = llvm::MemoryBuffer::getFile(path);
            if (!buf) {
                k.emitError() << "no PTX for kernel " << name << " at '" << path
                              << "': build its package (rowfuse compile) and pass "
                                 "ptx-dir=PACKAGE/kernels";
                ok = false;
                return;
            }
            std::string adapted, why;
            if (!adaptPtxEntry((*buf)->getBuffer(), name, k.getThreads(), adapted, why)) {
                k.emitError() << "the entry of '" << path
                              << "' cannot be dispatched by IREE: " << why;
                ok = false;
                return;
            }
            out[name] = std::move(adapted);
        });
        return ok;
    }

    /// function=NAME: the one function becomes private @NAME, the block as a callee a larger
    /// model links (python/rowfuse/iree_model.py); IREE inlines it where it is called.
    LogicalResult renameFunction() {
        auto funcs = llvm::to_vector(getOperation().getOps<func::FuncOp>());
        if (funcs.size() != 1)
            return getOperation().emitError()
                   << "--rowfuse-to-iree=function=" << function
                   << " links one block: the module must hold one function, not " << funcs.size();
        func::FuncOp f = funcs.front();
        if (SymbolTable::lookupSymbolIn(getOperation(), function) && f.getSymName() != function)
            return f.emitError() << "function=" << function << ": the symbol is taken";
        f.setSymName(function);
        f.setPrivate();
        return success();
    }

    void runOnOperation() override {
        if (kernels != "extern" && kernels != "codegen") {
            getOperation().emitError() << "--rowfuse-to-iree: kernels must be extern or codegen, "
                                          "not '"
                                       << kernels << "'";
            return signalPassFailure();
        }
        if (!getContext().allowsUnregisteredDialects()) {
            getOperation().emitError()
                << "--rowfuse-to-iree builds IREE's flow and hal ops, which MLIR 22 does not "
                   "have: run rowfuse-opt with --allow-unregistered-dialect";
            return signalPassFailure();
        }
        std::map<std::string, std::string> ptx;
        if (kernels == "extern" && !loadPtx(ptx))
            return signalPassFailure();
        for (const auto &[name, text] : ptx) {
            if (dumpPtx.empty())
                break;
            SmallString<256> path(dumpPtx);
            llvm::sys::path::append(path, name + ".iree.ptx");
            std::error_code ec;
            llvm::raw_fd_ostream os(path, ec);
            if (!ec) {
                os << text;
                os.close();
                ec = os.error();
                os.clear_error();
            }
            if (ec) {
                getOperation().emitError() << "cannot write '" << path << "': " << ec.message();
                return signalPassFailure();
            }
        }
        RewritePatternSet patterns(&getContext());
        patterns
            .add<ContractToLinalg<LinearOp>, ContractToLinalg<BiasOp>, ContractToLinalg<ReluOp>,
                 ContractToLinalg<RoundF16Op>, ContractToLinalg<ResidualAddOp>, EraseUnusedBuffer>(
                &getContext());
        if (kernels == "extern")
            patterns.add<KernelToDispatchExtern>(&getContext(), ptx);
        else
            patterns.add<KernelToDispatchRegion>(&getContext());
        GreedyRewriteConfig config;
        config.enableFolding(false); // keep the IR as written: IREE folds what it wants
        if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
            return signalPassFailure();
        if (!function.empty() && failed(renameFunction()))
            return signalPassFailure();
        bool left = false;
        getOperation().walk([&](Operation *op) {
            if (isa_and_nonnull<RowfuseDialect>(op->getDialect())) {
                op->emitError() << "was not lowered to IREE input";
                left = true;
            }
        });
        if (left)
            signalPassFailure();
    }
};

} // namespace
