/* CPU reference interpreter: runs any verified graph on the host.
 *
 * RF_PRECISION_FP64: every op in double; Cast to f32/f64 is the identity (the graph is read
 * as if its fp32 were double), Cast to f16/bf16 rounds to that format (nearest even), Cast
 * to an integer type truncates.
 * RF_PRECISION_MIXED: the GPU plan's precision: the float graph inputs and the operands of
 * every MatMul/Gemm (weights and activations, so the hidden state too) are rounded to fp16;
 * products are accumulated exactly (in double) and the sum rounded to fp32 (the GPU
 * accumulates in fp32); every other op computes in double and rounds its result to fp32,
 * so bias, residual and output are fp32. Gemm rounds its product to fp32, then adds
 * alpha/beta*C in double and rounds again, so it equals MatMul followed by Add. Constants
 * are used as stored (fp32 in an exported model); integer-typed values are never rounded;
 * Cast to f16/bf16 rounds to that format.
 *
 * The interpreter computes every shape itself and fails (SHAPE_ERROR, naming the node) if
 * a value's declared static shape differs, so it does not depend on shape inference being
 * right. An op it does not implement is an UNSUPPORTED error naming the node, never a
 * crash. Intermediates are double buffers from the allocator, freed after their last use;
 * every path frees everything (an allocation failure gives OUT_OF_MEMORY).
 *
 * Inputs are given in graph-input order; any numeric dtype is accepted and converted, and
 * the shape must equal the declared one. Outputs are allocated (dtype f64 for FP64, f32
 * for MIXED) with the given allocator; the caller frees them with rf_tensor_free. On error
 * every out_outputs entry is zeroed.
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

rf_status_t rf_ref_run(rf_allocator_t allocator, const rf_graph_t *graph, rf_precision_t precision,
                       const rf_tensor_t *inputs, int n_inputs, rf_tensor_t *out_outputs,
                       int n_outputs);

/* A value supplied to rf_ref_run_given instead of computed by its node. */
typedef struct rf_ref_given {
    int value;                 /* value index: a node's output (not a graph input, constant) */
    const rf_tensor_t *tensor; /* its contents, any numeric dtype, the value's shape; lent */
} rf_ref_given_t;

/* rf_ref_run with some intermediate values supplied: each given value is taken as
 * computed (converted to double and used as is, never rounded, in either precision), and
 * only the nodes still needed for the graph outputs run. A node runs when one of its
 * outputs is needed and not given; a node that would run but also produces a given value is
 * an INVALID_ARGUMENT error (split points must be whole nodes). This is how a caller runs
 * part of a graph elsewhere (e.g. a block on the GPU) and the rest on the interpreter.
 * Every graph input is still passed, with rf_ref_run's rules, even if no node that runs
 * reads it. out_ran, when not NULL, receives rf_graph_node_count(graph) flags: 1 for each
 * node run, 0 for each node skipped. Errors: a given value that is out of range, a graph
 * input, a constant or given twice (INVALID_ARGUMENT), a shape other than the value's
 * declared one (SHAPE_ERROR). With n_given == 0 this is rf_ref_run. */
rf_status_t rf_ref_run_given(rf_allocator_t allocator, const rf_graph_t *graph,
                             rf_precision_t precision, const rf_tensor_t *inputs, int n_inputs,
                             const rf_ref_given_t *given, int n_given, rf_tensor_t *out_outputs,
                             int n_outputs, int *out_ran);

#ifdef __cplusplus
}
#endif
#endif
