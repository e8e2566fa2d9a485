// What the passes share: the residual MLP block's matcher (Contract.cpp), the linalg
// builders that spell the block's pieces for IREE (Contract.cpp) and the PTX entry
// adapter (PtxAbi.cpp). Private to mlir/lib.
#ifndef ROWFUSE_MLIR_INTERNAL_H
#define ROWFUSE_MLIR_INTERNAL_H

#include <string>

#include "RowfuseMLIR/Dialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include "rowfuse/plan.h"

namespace rowfuse {

/// The residual MLP block of rowfuse's kernels, found in a row contract:
///   H = round_f16(relu(bias(linear(X, W1), b1)));  Y = relu(residual_add(bias(linear(H, W2),
///   b2), X))
struct MlpBlock {
    ReluOp root; // the final relu: Y
    mlir::Value x, w1, b1, w2, b2;
    llvm::SmallVector<mlir::Operation *, 8> ops; // the contract ops of the block, in order
    int64_t rows = 0, channels = 0, hidden = 0;
};

/// The kernel mode (rowfuse/plan.h) of a verified rowfuse.kernel: its family, parsed with
/// the C name table.
rf_kernel_mode_t kernelMode(KernelOp kernel);

/// Roots of blocks: every rowfuse.relu fed by a rowfuse.residual_add.
bool isBlockRoot(ReluOp relu);

/// Matches the block ending at `root`. On failure returns false and sets `why` to a
/// message naming the op that does not fit and what was expected there.
bool matchMlpBlock(ReluOp root, MlpBlock &out, std::string &why);

/// linalg spellings of the block's pieces (tensor semantics, for IREE's input).
mlir::Value buildLinear(mlir::OpBuilder &b, mlir::Location loc, mlir::Value in, mlir::Value w);
mlir::Value buildBias(mlir::OpBuilder &b, mlir::Location loc, mlir::Value in, mlir::Value bias);
mlir::Value buildRelu(mlir::OpBuilder &b, mlir::Location loc, mlir::Value in);
mlir::Value buildRoundF16(mlir::OpBuilder &b, mlir::Location loc, mlir::Value in);
mlir::Value buildResidualAdd(mlir::OpBuilder &b, mlir::Location loc, mlir::Value in,
                             mlir::Value residual);
/// H = fp16(relu(x w1 + b1)), one fused elementwise stage after the projection.
mlir::Value buildProj1(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value w1,
                       mlir::Value b1);
/// Y = relu(h w2 + b2 + x).
mlir::Value buildProj2(mlir::OpBuilder &b, mlir::Location loc, mlir::Value h, mlir::Value w2,
                       mlir::Value b2, mlir::Value x);

/// The rowfuse megakernel entry of `ptx` (a package's kernels/<name>.ptx) rewritten for
/// IREE's CUDA dispatch ABI: kernel parameters are the bindings' device pointers, one
/// 8-byte slot each, then the 32-bit constants. Renames the entry to `entry` and declares
/// the seven tensor parameters .u64 (the DSL passes each as a struct by value whose first
/// 8 bytes are the pointer). Refuses, returning false with `why`, when the PTX has not
/// exactly one entry, its parameters are not seven pointer-bearing ones and one 32-bit
/// row count, a struct parameter is read past its pointer, or its .reqntid differs from
/// `threads`.
bool adaptPtxEntry(llvm::StringRef ptx, llvm::StringRef entry, int64_t threads, std::string &out,
                   std::string &why);

} // namespace rowfuse

#endif
