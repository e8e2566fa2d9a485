/* Element types and shapes (rowfuse/types.h): names, sizes, element counts, printing and
 * comparison. In base because tensors, .npy files and package weights use them without the
 * graph. */
#include <stdio.h>
#include <string.h>

#include "rowfuse/types.h"

const char *rf_dtype_name(rf_dtype_t dtype) {
    switch (dtype) {
    case RF_DTYPE_F32:
        return "f32";
    case RF_DTYPE_F16:
        return "f16";
    case RF_DTYPE_BF16:
        return "bf16";
    case RF_DTYPE_F64:
        return "f64";
    case RF_DTYPE_I64:
        return "i64";
    case RF_DTYPE_I32:
        return "i32";
    case RF_DTYPE_I8:
        return "i8";
    case RF_DTYPE_U8:
        return "u8";
    case RF_DTYPE_BOOL:
        return "bool";
    case RF_DTYPE_UNDEFINED:
        break;
    }
    return "undefined";
}

size_t rf_dtype_size(rf_dtype_t dtype) {
    switch (dtype) {
    case RF_DTYPE_F64:
    case RF_DTYPE_I64:
        return 8;
    case RF_DTYPE_F32:
    case RF_DTYPE_I32:
        return 4;
    case RF_DTYPE_F16:
    case RF_DTYPE_BF16:
        return 2;
    case RF_DTYPE_I8:
    case RF_DTYPE_U8:
    case RF_DTYPE_BOOL:
        return 1;
    case RF_DTYPE_UNDEFINED:
        break;
    }
    return 0;
}

rf_status_t rf_shape_numel(const rf_shape_t *shape, int64_t *out_numel) {
    int64_t n = 1;
    *out_numel = 0;
    if (shape->rank < 0 || shape->rank > RF_MAX_RANK)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "rank %d outside 0..%d", shape->rank, RF_MAX_RANK);
    for (int i = 0; i < shape->rank; i++) {
        int64_t d = shape->dims[i];
        if (d < 0 || d > RF_MAX_DIM)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "dim %d is %lld, outside 0..%lld", i, (long long)d,
                          (long long)RF_MAX_DIM);
        if (d != 0 && n > RF_MAX_ELEMENTS / d)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "more than %lld elements",
                          (long long)RF_MAX_ELEMENTS);
        n *= d;
    }
    *out_numel = n;
    return RF_OK;
}

char *rf_shape_format(const rf_shape_t *shape, char *buf, size_t buf_size) {
    size_t used = 0;
    if (!buf_size)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf + used, buf_size - used, "[");
    for (int i = 0; i < shape->rank && used < buf_size; i++)
        used += (size_t)snprintf(buf + used, buf_size - used, i ? ", %lld" : "%lld",
                                 (long long)shape->dims[i]);
    if (used < buf_size)
        snprintf(buf + used, buf_size - used, "]");
    return buf;
}

int rf_shape_equal(const rf_shape_t *a, const rf_shape_t *b) {
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}
