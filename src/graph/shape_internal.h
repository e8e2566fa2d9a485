/* Shape inference internals shared by src/graph/shape.c and the verifier: per-node
 * inference that does not write the graph (so the verifier can re-check a const graph),
 * and the readers of constant operands and attributes (axes, perms, slice bounds) that
 * both need, so they parse every op the same way.
 *
 * Constant operands: a value is constant when it is an initializer / folded constant
 * (is_const with data) or the output of a Constant node. Readers fail with
 * RF_CODE_UNSUPPORTED when a shape-like operand is computed at run time. */
#ifndef ROWFUSE_GRAPH_SHAPE_INTERNAL_H
#define ROWFUSE_GRAPH_SHAPE_INTERNAL_H

#include "rowfuse/graph.h"

/* The most outputs any op rowfuse infers has (LayerNormalization: 3). */
#define RF_SHAPE_MAX_OUTPUTS 3

/* Infers the dtype and shape of each output of `node` from its inputs' current types.
 * *out_known = 0 (and RF_OK) when the op is unknown or an input has no shape yet: the
 * outputs are left for the verifier to reject. Errors are not prefixed with the node. */
rf_status_t rf_shape_infer_node(const rf_graph_t *graph, int node,
                                rf_dtype_t out_dtypes[RF_SHAPE_MAX_OUTPUTS],
                                rf_shape_t out_shapes[RF_SHAPE_MAX_OUTPUTS], int *out_known);

/* Is value (index, may be -1) a constant whose elements can be read? */
int rf_shape_value_is_const(const rf_graph_t *graph, int value);

/* Reads input `slot` of node as at most `max` integers (any integer dtype; a scalar is one
 * element). what names the operand in errors ("shape", "axes"). */
rf_status_t rf_shape_const_ints(const rf_graph_t *graph, const rf_node_t *node, int slot,
                                const char *what, int64_t *out, int max, int *out_n);

/* Normalizes axis (negative counts from the end) into 0..rank-1. */
/* Axes from the attribute `axes` or, when the node has it, input 1: count in *out_n,
 * *out_present = 0 if neither exists. */
rf_status_t rf_shape_axes_operand(const rf_graph_t *graph, const rf_node_t *node, int64_t *axes,
                                  int *out_n, int *out_present);
/* The axes as a bit mask over `rank` dims (negative axes wrapped; duplicates rejected). */
rf_status_t rf_shape_axes_mask(const int64_t *axes, int n, int rank, unsigned *out_mask);
rf_status_t rf_shape_axis(int64_t axis, int rank, const char *what, int *out_axis);

/* Reduce ops: which input axes are reduced (bit i = axis i), from the axes attribute or
 * the axes input. *out_noop = 1 when axes are empty and noop_with_empty_axes is set. */
rf_status_t rf_shape_reduce_axes(const rf_graph_t *graph, const rf_node_t *node, int rank,
                                 unsigned *out_mask, int *out_noop);

/* Transpose: the permutation (default: reversed axes). */
rf_status_t rf_shape_transpose_perm(const rf_node_t *node, int rank, int perm[RF_MAX_RANK]);

/* Slice: for every axis of `in`, the first index taken, the step and the count taken
 * (axes not sliced: start 0, step 1, count = dim). */
rf_status_t rf_shape_slice_params(const rf_graph_t *graph, const rf_node_t *node,
                                  const rf_shape_t *in, int64_t starts[RF_MAX_RANK],
                                  int64_t steps[RF_MAX_RANK], int64_t counts[RF_MAX_RANK]);

/* Squeeze / Unsqueeze: the axes operand (input 1, or the axes attribute for old opsets),
 * normalized against `rank` (the input rank for Squeeze, the output rank for Unsqueeze)
 * as a bit mask. *out_given = 0 when Squeeze has no axes (squeeze every 1). */
rf_status_t rf_shape_squeeze_axes(const rf_graph_t *graph, const rf_node_t *node, int rank,
                                  unsigned *out_mask, int *out_given);

/* "node 3 'fc1' (Gemm)" for node index k: a thin wrapper over rf_node_describe. */
#define RF_NODE_DESC_SIZE 256

#endif
