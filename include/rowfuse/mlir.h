/* The row contract of the residual MLP block as MLIR text, for rowfuse-opt (mlir/).
 *
 * rf_mlp_contract_mlir_write writes one module with one function, @main(X) -> Y, whose body
 * is the block in the rowfuse dialect's contract ops at the plan's precision:
 *   H = round_f16(relu(bias(linear(X, W1), b1)));  Y = relu(residual_add(bias(linear(H, W2),
 *   b2), X))
 * X [rows, C] fp16 is the one argument, marked `rowfuse.row` (row-owned); W1 [C, H], W2
 * [H, C] (fp16) and b1, b2 (fp32) are `arith.constant`s holding the weights' bytes (hex,
 * little-endian), so the module is the whole model and nothing is read at run time.
 * `source` (the model path or "mlp:RxCxH seed S") and the weights' hash go into a comment.
 * --rowfuse-schedule lowers it; --rowfuse-to-iree turns it into IREE input.
 *
 * Ownership: nothing is retained; f is the caller's. Errors: INVALID_ARGUMENT for a bad
 * shape, IO_ERROR when writing fails.
 */
#ifndef ROWFUSE_MLIR_H
#define ROWFUSE_MLIR_H

#include <stdio.h>

#include "rowfuse/compile.h"

#ifdef __cplusplus
extern "C" {
#endif

rf_status_t rf_mlp_contract_mlir_write(const rf_mlp_weights_t *weights, int64_t rows,
                                       const char *source, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
