// rowfuse-opt: mlir-opt with the rowfuse dialect and its passes (--rowfuse-schedule,
// --rowfuse-explain, --rowfuse-to-iree) and the upstream dialects they produce.
#include "RowfuseMLIR/Dialect.h"
#include "RowfuseMLIR/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
    mlir::DialectRegistry registry;
    registry.insert<rowfuse::RowfuseDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
                    mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect>();
    rowfuse::registerRowfusePasses();
    mlir::registerCanonicalizerPass();
    mlir::registerCSEPass();
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, "rowfuse-opt: the rowfuse dialect and passes\n", registry));
}
