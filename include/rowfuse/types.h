/* Element types and static shapes: the vocabulary shared by host tensors, package weights,
 * the runtime and the graph IR, without the graph.
 *
 * Ownership: plain values, nothing allocated; rf_shape_format writes into caller storage.
 * Errors: rf_shape_numel returns SHAPE_ERROR for a rank, dim or element count out of range;
 * the rest cannot fail. Defined in src/base/dtype.c.
 */
#ifndef ROWFUSE_TYPES_H
#define ROWFUSE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "rowfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RF_MAX_RANK 8
/* Largest dimension and element count rowfuse accepts (guards against hostile files). */
#define RF_MAX_DIM ((int64_t)1 << 31)
#define RF_MAX_ELEMENTS ((int64_t)1 << 34)

typedef enum rf_dtype {
    RF_DTYPE_UNDEFINED = 0,
    RF_DTYPE_F32,
    RF_DTYPE_F16,
    RF_DTYPE_BF16,
    RF_DTYPE_F64,
    RF_DTYPE_I64,
    RF_DTYPE_I32,
    RF_DTYPE_I8,
    RF_DTYPE_U8,
    RF_DTYPE_BOOL,
} rf_dtype_t;

const char *rf_dtype_name(rf_dtype_t dtype); /* "f32", "f16", ... */
size_t rf_dtype_size(rf_dtype_t dtype);      /* bytes per element; 0 for undefined */

typedef struct rf_shape {
    int rank; /* 0..RF_MAX_RANK */
    int64_t dims[RF_MAX_RANK];
} rf_shape_t;

/* Product of dims (1 for rank 0). Fails if a dim is negative or the count exceeds
 * RF_MAX_ELEMENTS. */
rf_status_t rf_shape_numel(const rf_shape_t *shape, int64_t *out_numel);
/* Writes "[49, 48]" into buf (always NUL-terminated). Returns buf. */
char *rf_shape_format(const rf_shape_t *shape, char *buf, size_t buf_size);
int rf_shape_equal(const rf_shape_t *a, const rf_shape_t *b);

#ifdef __cplusplus
}
#endif
#endif
