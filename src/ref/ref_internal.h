/* Internal interface of the CPU reference interpreter (src/ref/): the per-value double
 * buffers, the execution context and the op kernels that ref.c dispatches to.
 *
 * Every value that is live during a run has an rf_ref_buf_t: its shape as computed by the
 * interpreter and a double array from the run's allocator. Op kernels read their inputs
 * from ctx->bufs, compute output shapes themselves (so a run does not depend on shape
 * inference being right) and allocate outputs with rf_ref_output(), which also checks the
 * shape against the one the graph declares. Kernels report errors without the node name;
 * the dispatcher prefixes "node K 'name' (Op)". Nothing here is public.
 */
#ifndef ROWFUSE_REF_INTERNAL_H
#define ROWFUSE_REF_INTERNAL_H

#include <stdint.h>

#include "rowfuse/ref.h"

typedef struct rf_ref_buf {
    rf_shape_t shape;
    int64_t numel;
    double *data; /* NULL while the value is not computed (or already freed) */
} rf_ref_buf_t;

typedef struct rf_ref_ctx {
    rf_allocator_t allocator;
    const rf_graph_t *graph;
    rf_precision_t precision;
    rf_ref_buf_t *bufs; /* one per graph value */
} rf_ref_ctx_t;

/* Signature of an op kernel: computes every output of `node`. */
typedef rf_status_t (*rf_ref_kernel_fn)(rf_ref_ctx_t *ctx, const rf_node_t *node);

/* ---- helpers (ref.c) ---- */

/* Input i of the node: NULL if the input is omitted (index -1 or beyond n_inputs). */
const rf_ref_buf_t *rf_ref_input(const rf_ref_ctx_t *ctx, const rf_node_t *node, int i);
/* Same, but an omitted input is an error naming what the input is for. */
rf_status_t rf_ref_input_required(const rf_ref_ctx_t *ctx, const rf_node_t *node, int i,
                                  const char *what, const rf_ref_buf_t **out_buf);
/* Allocates output i of the node with the given shape and returns its data (uninitialised).
 * Returns *out_data == NULL without error if the output is omitted (index -1). Fails if
 * the graph declares a different static shape for the value. */
rf_status_t rf_ref_output(rf_ref_ctx_t *ctx, const rf_node_t *node, int i, const rf_shape_t *shape,
                          double **out_data);
/* Allocates a scratch array of n doubles from the run's allocator. */
rf_status_t rf_ref_scratch(rf_ref_ctx_t *ctx, int64_t n, const char *what, double **out_data);
void rf_ref_scratch_free(rf_ref_ctx_t *ctx, double *data);

/* Reads element k of an integer-valued buffer (axes, shapes, indices) as int64, clamped to
 * +-2^62 so that INT64_MAX-style sentinels in Slice survive the trip through double. */
int64_t rf_ref_to_i64(double x);
/* Normalises a possibly negative axis against rank; fails if outside [-rank, rank). */
rf_status_t rf_ref_axis(int64_t axis, int rank, const char *what, int *out_axis);
/* Integer list from an attribute (ints) or, if present, from input i. *out_given is 0 when
 * neither is present. Up to RF_MAX_RANK entries. */
rf_status_t rf_ref_int_list(const rf_ref_ctx_t *ctx, const rf_node_t *node, int input,
                            const char *attr, int64_t *out_list, int *out_n, int *out_given);
/* Numpy broadcast of two shapes; fails naming both shapes. */
rf_status_t rf_ref_broadcast_shape(const rf_shape_t *a, const rf_shape_t *b, rf_shape_t *out_shape);
/* Strides (in elements) of `in` seen through broadcasting to `out` (0 for broadcast dims),
 * aligned to out's rank. in must broadcast to out. */
void rf_ref_broadcast_strides(const rf_shape_t *in, const rf_shape_t *out,
                              int64_t strides[RF_MAX_RANK]);
/* Row-major contiguous strides of a shape. */
void rf_ref_strides(const rf_shape_t *shape, int64_t strides[RF_MAX_RANK]);

/* Rounding to narrower float formats (round to nearest even), returned as double. */
double rf_ref_round_f16(double x);
double rf_ref_round_f32(double x);
double rf_ref_round_bf16(double x);

/* ---- kernels ---- */
/* ref_elementwise.c */
rf_status_t rf_ref_unary(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_binary(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_where(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_cast(rf_ref_ctx_t *ctx, const rf_node_t *node);
/* ref_matmul.c */
rf_status_t rf_ref_matmul(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_gemm(rf_ref_ctx_t *ctx, const rf_node_t *node);
/* ref_reduce.c */
rf_status_t rf_ref_reduce(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_layer_norm(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_rms_norm(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_softmax(rf_ref_ctx_t *ctx, const rf_node_t *node);
/* ref_layout.c */
rf_status_t rf_ref_identity(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_constant(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_reshape(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_flatten(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_squeeze(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_unsqueeze(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_transpose(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_expand(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_slice(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_concat(rf_ref_ctx_t *ctx, const rf_node_t *node);
rf_status_t rf_ref_gather(rf_ref_ctx_t *ctx, const rf_node_t *node);

#endif
