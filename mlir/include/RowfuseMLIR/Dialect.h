// The rowfuse dialect (RowfuseOps.td) and the row-ownership query its verifiers use.
#ifndef ROWFUSE_MLIR_DIALECT_H
#define ROWFUSE_MLIR_DIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "RowfuseMLIR/RowfuseDialect.h.inc"

#define GET_OP_CLASSES
#include "RowfuseMLIR/RowfuseOps.h.inc"

namespace rowfuse {

/// Function-argument attribute marking a row-owned input (axis 0 is the row axis).
constexpr llvm::StringLiteral kRowArgAttr = "rowfuse.row";
/// Function attributes --rowfuse-schedule records.
constexpr llvm::StringLiteral kScheduleAttr = "rowfuse.schedule";
constexpr llvm::StringLiteral kReasonAttr = "rowfuse.reason";
constexpr llvm::StringLiteral kTargetAttr = "rowfuse.target";

/// True when `value` depends on some input row: a function argument marked
/// `rowfuse.row`, or the result of an op with a row-owned operand. Weights (unmarked
/// arguments) and constants are row-independent.
bool rowOwned(mlir::Value value);

} // namespace rowfuse

#endif
