/* Host tensors and .npy files.
 *
 * An rf_tensor_t is a dense, row-major host array with a dtype and a static shape.
 * rf_tensor_alloc / rf_npy_read fill caller-provided storage (init-style) and allocate
 * data with the given allocator; rf_tensor_free releases it with the same allocator.
 * .npy support: format versions 1.0-3.0, little-endian ('<' or '|'), C order only, dtypes
 * f2/f4/f8/i4/i8/u1/b1. Anything else is a clear error naming the file and the field.
 */
#ifndef ROWFUSE_TENSOR_H
#define ROWFUSE_TENSOR_H

#include "rowfuse/alloc.h"
#include "rowfuse/status.h"
#include "rowfuse/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_tensor {
    rf_dtype_t dtype;
    rf_shape_t shape;
    void *data;
    size_t nbytes;
} rf_tensor_t;

rf_status_t rf_tensor_alloc(rf_allocator_t a, rf_dtype_t dtype, const rf_shape_t *shape,
                            rf_tensor_t *out_tensor);
void rf_tensor_free(rf_allocator_t a, rf_tensor_t *tensor);

rf_status_t rf_npy_read(rf_allocator_t a, const char *path, rf_tensor_t *out_tensor);
rf_status_t rf_npy_write(const char *path, const rf_tensor_t *tensor);
/* Reads .npy bytes held in memory (e.g. one member of an .npz archive) with the same rules
 * as rf_npy_read; `name` stands for the path in error messages. The buffer is lent. */
rf_status_t rf_npy_read_buffer(rf_allocator_t a, const void *data, size_t size, const char *name,
                               rf_tensor_t *out_tensor);

/* IEEE half <-> float conversions, round-to-nearest-even. */
uint16_t rf_f32_to_f16(float f);
float rf_f16_to_f32(uint16_t h);
/* Rounds a double to the nearest fp16 value (RNE, through fp32 without double rounding
 * errors for values that are exactly representable) and returns it as double. */
double rf_round_f16(double x);
double rf_round_f32(double x);

#ifdef __cplusplus
}
#endif
#endif
