/* CPU reference interpreter: runs any verified graph on the host.
 *
 * RF_PRECISION_FP64: every op in double.
 * RF_PRECISION_MIXED: the GPU plan's precision: the graph inputs, the operands of every
 * MatMul/Gemm (weights and activations, so the hidden state too) are rounded to fp16;
 * products are accumulated exactly and the sum rounded to fp32 (the GPU accumulates in
 * fp32); every other op computes in double and rounds its result to fp32, so bias,
 * residual and output are fp32.
 *
 * Inputs are given in graph-input order; any numeric dtype is accepted and converted.
 * Outputs are allocated (dtype f64 for FP64, f32 for MIXED) with the given allocator;
 * the caller frees them with rf_tensor_free.
 */
#ifndef ROWFUSE_REF_H
#define ROWFUSE_REF_H

#include "rowfuse/graph.h"
#include "rowfuse/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rf_precision {
    RF_PRECISION_FP64 = 0,
    RF_PRECISION_MIXED,
} rf_precision_t;

rf_status_t rf_ref_run(rf_allocator_t allocator, const rf_graph_t *graph,
                       rf_precision_t precision, const rf_tensor_t *inputs, int n_inputs,
                       rf_tensor_t *out_outputs, int n_outputs);

#ifdef __cplusplus
}
#endif
#endif
