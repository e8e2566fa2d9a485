// The residual MLP block in a row contract: the matcher --rowfuse-schedule lowers from,
// and the block's pieces spelled in linalg for --rowfuse-to-iree (fp16 operands widened
// to fp32 inside the contraction, fp32 accumulation, as the kernels compute).
#include "Internal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;

namespace rowfuse {

bool isBlockRoot(ReluOp relu) {
    return relu.getInput().getDefiningOp<ResidualAddOp>() != nullptr;
}

namespace {
/// Walks the block upwards from the root; each step names what it expected.
struct Matcher {
    std::string &why;
    Operation *where = nullptr;

    template <typename OpT> OpT expect(Operation *user, Value v, StringRef what) {
        auto op = v.getDefiningOp<OpT>();
        if (!op && !where) {
            where = user;
            why = (user->getName().getStringRef() + ": expected " + what + ", found " +
                   (v.getDefiningOp() ? v.getDefiningOp()->getName().getStringRef().str()
                                      : std::string("a function argument")))
                      .str();
        }
        return op;
    }
};
} // namespace

bool matchMlpBlock(ReluOp root, MlpBlock &out, std::string &why) {
    Matcher m{why};
    auto add = m.expect<ResidualAddOp>(root, root.getInput(), "rowfuse.residual_add (Y's input)");
    auto bias2 = add ? m.expect<BiasOp>(add, add.getInput(), "rowfuse.bias (+ b2)") : nullptr;
    auto lin2 =
        bias2 ? m.expect<LinearOp>(bias2, bias2.getInput(), "rowfuse.linear (H W2)") : nullptr;
    auto round =
        lin2 ? m.expect<RoundF16Op>(lin2, lin2.getInput(), "rowfuse.round_f16 (H)") : nullptr;
    auto relu1 = round ? m.expect<ReluOp>(round, round.getInput(), "rowfuse.relu") : nullptr;
    auto bias1 = relu1 ? m.expect<BiasOp>(relu1, relu1.getInput(), "rowfuse.bias (+ b1)") : nullptr;
    auto lin1 =
        bias1 ? m.expect<LinearOp>(bias1, bias1.getInput(), "rowfuse.linear (X W1)") : nullptr;
    if (!lin1)
        return false;
    Value x = lin1.getInput();
    if (add.getResidual() != x) {
        why = "rowfuse.residual_add: the residual must be the block's input X (the first "
              "projection's input)";
        return false;
    }
    if (!rowOwned(x)) {
        why = "rowfuse.linear: the block's input X is row-independent; it must be row-owned (a "
              "function argument marked rowfuse.row, or computed from one)";
        return false;
    }
    Operation *inner[] = {lin1, bias1, relu1, round, lin2, bias2, add};
    for (Operation *op : inner)
        if (!op->getResult(0).hasOneUse()) {
            why = (op->getName().getStringRef() +
                   ": its result is used outside the block; the kernels keep the block's "
                   "intermediates on chip or in their own buffer and return only Y")
                      .str();
            return false;
        }
    auto xt = cast<RankedTensorType>(x.getType());
    if (!xt.hasStaticShape()) {
        why = "rowfuse.linear: X must have a static shape";
        return false;
    }
    out.root = root;
    out.x = x;
    out.w1 = lin1.getWeight();
    out.b1 = bias1.getBias();
    out.w2 = lin2.getWeight();
    out.b2 = bias2.getBias();
    out.ops.assign(std::begin(inner), std::end(inner));
    out.ops.push_back(root);
    out.rows = xt.getDimSize(0);
    out.channels = xt.getDimSize(1);
    out.hidden = cast<RankedTensorType>(out.w1.getType()).getDimSize(1);
    return true;
}

// ---- linalg builders ----

static Value emptyLike(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type element) {
    return tensor::EmptyOp::create(b, loc, shape, element);
}

static SmallVector<utils::IteratorType> parallel(unsigned n) {
    return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

/// An elementwise linalg.generic over [M, N]: `ins` are [M, N] matrices or [N] vectors
/// (broadcast over rows); `body` gets the block arguments (ins then the out element).
static Value elementwise(OpBuilder &b, Location loc, ValueRange ins, Type resultElement,
                         function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    auto shape = cast<RankedTensorType>(ins[0].getType()).getShape();
    MLIRContext *ctx = b.getContext();
    AffineMap id = AffineMap::getMultiDimIdentityMap(2, ctx);
    AffineMap col = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
    SmallVector<AffineMap> maps;
    for (Value in : ins)
        maps.push_back(cast<RankedTensorType>(in.getType()).getRank() == 2 ? id : col);
    maps.push_back(id);
    Value init = emptyLike(b, loc, shape, resultElement);
    auto op = linalg::GenericOp::create(
        b, loc, TypeRange{RankedTensorType::get(shape, resultElement)}, ins, ValueRange{init}, maps,
        parallel(2), [&](OpBuilder &nb, Location nloc, ValueRange args) {
            linalg::YieldOp::create(nb, nloc, body(nb, nloc, args));
        });
    return op.getResult(0);
}

Value buildLinear(OpBuilder &b, Location loc, Value in, Value w) {
    MLIRContext *ctx = b.getContext();
    int64_t m = cast<RankedTensorType>(in.getType()).getDimSize(0);
    int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(1);
    Type f32 = b.getF32Type();
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    Value init = emptyLike(b, loc, {m, n}, f32);
    Value acc = linalg::FillOp::create(b, loc, zero, init).getResult(0);
    AffineExpr dm = getAffineDimExpr(0, ctx), dn = getAffineDimExpr(1, ctx),
               dk = getAffineDimExpr(2, ctx);
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {dm, dk}, ctx),
                                   AffineMap::get(3, 0, {dk, dn}, ctx),
                                   AffineMap::get(3, 0, {dm, dn}, ctx)};
    SmallVector<utils::IteratorType> iters = {utils::IteratorType::parallel,
                                              utils::IteratorType::parallel,
                                              utils::IteratorType::reduction};
    auto op = linalg::GenericOp::create(
        b, loc, TypeRange{RankedTensorType::get({m, n}, f32)}, ValueRange{in, w}, ValueRange{acc},
        maps, iters, [&](OpBuilder &nb, Location nloc, ValueRange args) {
            Value a = arith::ExtFOp::create(nb, nloc, nb.getF32Type(), args[0]);
            Value c = arith::ExtFOp::create(nb, nloc, nb.getF32Type(), args[1]);
            Value prod = arith::MulFOp::create(nb, nloc, a, c);
            linalg::YieldOp::create(nb, nloc,
                                    ValueRange{arith::AddFOp::create(nb, nloc, args[2], prod)});
        });
    return op.getResult(0);
}

static Value relu(OpBuilder &b, Location loc, Value v) {
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    return arith::MaximumFOp::create(b, loc, v, zero);
}

Value buildBias(OpBuilder &b, Location loc, Value in, Value bias) {
    return elementwise(b, loc, {in, bias}, b.getF32Type(),
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           return arith::AddFOp::create(nb, l, a[0], a[1]);
                       });
}

Value buildRelu(OpBuilder &b, Location loc, Value in) {
    return elementwise(b, loc, {in}, b.getF32Type(),
                       [](OpBuilder &nb, Location l, ValueRange a) { return relu(nb, l, a[0]); });
}

Value buildRoundF16(OpBuilder &b, Location loc, Value in) {
    return elementwise(b, loc, {in}, b.getF16Type(),
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           return arith::TruncFOp::create(nb, l, nb.getF16Type(), a[0]);
                       });
}

Value buildResidualAdd(OpBuilder &b, Location loc, Value in, Value residual) {
    return elementwise(b, loc, {in, residual}, b.getF32Type(),
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           Value r = arith::ExtFOp::create(nb, l, nb.getF32Type(), a[1]);
                           return arith::AddFOp::create(nb, l, a[0], r);
                       });
}

Value buildProj1(OpBuilder &b, Location loc, Value x, Value w1, Value b1) {
    Value p = buildLinear(b, loc, x, w1);
    return elementwise(b, loc, {p, b1}, b.getF16Type(),
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           Value s = arith::AddFOp::create(nb, l, a[0], a[1]);
                           return arith::TruncFOp::create(nb, l, nb.getF16Type(), relu(nb, l, s));
                       });
}

Value buildProj2(OpBuilder &b, Location loc, Value h, Value w2, Value b2, Value x) {
    Value p = buildLinear(b, loc, h, w2);
    return elementwise(b, loc, {p, b2, x}, b.getF32Type(),
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           Value s = arith::AddFOp::create(nb, l, a[0], a[1]);
                           Value r = arith::ExtFOp::create(nb, l, nb.getF32Type(), a[2]);
                           return relu(nb, l, arith::AddFOp::create(nb, l, s, r));
                       });
}

} // namespace rowfuse
