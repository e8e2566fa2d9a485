/* ONNX tensors and types into rf constants and declared types (see onnx_internal.h).
 *
 * TensorProto data comes either as raw_data (little-endian bytes) or in a typed repeated
 * field (float_data, int32_data, ...); both are checked against the dims before anything
 * is copied, so a hostile file can make us allocate only as much as it actually holds.
 * rowfuse reads self-contained models: external data and segments are rejected.
 */
#include <limits.h>
#include <string.h>

#include "onnx/onnx_internal.h"

const char *rf_onnx_dtype_name(int32_t t) {
    static const char *const names[] = {
        "UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",   "INT16",
        "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16",  "DOUBLE",
        "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
    };
    if (t >= 0 && t < (int32_t)(sizeof names / sizeof names[0]))
        return names[t];
    return "an unknown type";
}

rf_status_t rf_onnx_dtype(int32_t t, rf_dtype_t *out) {
    *out = RF_DTYPE_UNDEFINED;
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        *out = RF_DTYPE_F32;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        *out = RF_DTYPE_F16;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        *out = RF_DTYPE_BF16;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        *out = RF_DTYPE_F64;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        *out = RF_DTYPE_I64;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
        *out = RF_DTYPE_I32;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
        *out = RF_DTYPE_I8;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
        *out = RF_DTYPE_U8;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        *out = RF_DTYPE_BOOL;
        break;
    default:
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "element type %s (%d) is not supported (rowfuse handles FLOAT, FLOAT16, "
                      "BFLOAT16, DOUBLE, INT64, INT32, INT8, UINT8, BOOL)",
                      rf_onnx_dtype_name(t), (int)t);
    }
    return RF_OK;
}

rf_status_t rf_onnx_read_type(const Onnx__TypeProto *tp, rf_onnx_type_t *out) {
    memset(out, 0, sizeof *out);
    out->symbolic_dim = -1;
    out->symbolic_name = "";
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
        return RF_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        const char *kind = tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE   ? "a sequence"
                           : tp->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE      ? "a map"
                           : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? "an optional"
                           : tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE
                               ? "a sparse tensor"
                               : "not a tensor";
        return RF_ERR(RF_CODE_UNSUPPORTED, "type is %s; rowfuse handles dense tensors only", kind);
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type && tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
        RF_RETURN_IF_ERROR_PLAIN(rf_onnx_dtype(tt->elem_type, &out->dtype));
    if (!tt->shape)
        return RF_OK;
    out->has_rank = 1;
    if (tt->shape->n_dim > RF_MAX_RANK)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "rank %zu is more than rowfuse's limit of %d",
                      tt->shape->n_dim, RF_MAX_RANK);
    out->shape.rank = (int)tt->shape->n_dim;
    for (int i = 0; i < out->shape.rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (out->symbolic_dim < 0) {
                out->symbolic_dim = i;
                if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
                    out->symbolic_name = rf_onnx_str(d->dim_param);
            }
            continue;
        }
        if (d->dim_value < 0 || d->dim_value > RF_MAX_DIM)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "dim %d is %lld, outside 0..%lld", i,
                          (long long)d->dim_value, (long long)RF_MAX_DIM);
        out->shape.dims[i] = d->dim_value;
    }
    out->has_shape = out->symbolic_dim < 0;
    if (out->has_shape) {
        int64_t numel;
        RF_RETURN_IF_ERROR_PLAIN(rf_shape_numel(&out->shape, &numel));
    }
    return RF_OK;
}

/* Checks that a typed field holds exactly the expected number of elements. */
static rf_status_t rf_check_count(size_t have, int64_t numel, const char *field,
                                  const rf_shape_t *shape, rf_dtype_t dtype) {
    if (have == (size_t)numel)
        return RF_OK;
    char sbuf[160];
    return RF_ERR(RF_CODE_PARSE_ERROR, "shape %s of %s has %lld elements but %s has %zu",
                  rf_shape_format(shape, sbuf, sizeof sbuf), rf_dtype_name(dtype), (long long)numel,
                  field, have);
}

static rf_status_t rf_typed_to_bytes(const Onnx__TensorProto *t, rf_dtype_t dtype,
                                     const rf_shape_t *shape, int64_t numel, void *buf) {
    size_t n = (size_t)numel;
    unsigned char *out = buf;
    switch (dtype) {
    case RF_DTYPE_F32:
        RF_RETURN_IF_ERROR_PLAIN(
            rf_check_count(t->n_float_data, numel, "float_data", shape, dtype));
        if (n)
            memcpy(out, t->float_data, n * 4);
        return RF_OK;
    case RF_DTYPE_F64:
        RF_RETURN_IF_ERROR_PLAIN(
            rf_check_count(t->n_double_data, numel, "double_data", shape, dtype));
        if (n)
            memcpy(out, t->double_data, n * 8);
        return RF_OK;
    case RF_DTYPE_I64:
        RF_RETURN_IF_ERROR_PLAIN(
            rf_check_count(t->n_int64_data, numel, "int64_data", shape, dtype));
        if (n)
            memcpy(out, t->int64_data, n * 8);
        return RF_OK;
    case RF_DTYPE_I32:
    case RF_DTYPE_I8:
    case RF_DTYPE_U8:
    case RF_DTYPE_BOOL:
    case RF_DTYPE_F16:
    case RF_DTYPE_BF16:
        RF_RETURN_IF_ERROR_PLAIN(
            rf_check_count(t->n_int32_data, numel, "int32_data", shape, dtype));
        for (size_t i = 0; i < n; i++) {
            int32_t v = t->int32_data[i];
            if (dtype == RF_DTYPE_I32) {
                memcpy(out + 4 * i, &v, 4);
            } else if (dtype == RF_DTYPE_F16 || dtype == RF_DTYPE_BF16) {
                uint16_t h = (uint16_t)((uint32_t)v & 0xffffu); /* bit pattern */
                memcpy(out + 2 * i, &h, 2);
            } else if (dtype == RF_DTYPE_BOOL) {
                out[i] = v != 0;
            } else {
                out[i] = (unsigned char)((uint32_t)v & 0xffu);
            }
        }
        return RF_OK;
    case RF_DTYPE_UNDEFINED:
        break;
    }
    return RF_ERR(RF_CODE_INTERNAL, "no typed field for dtype %s", rf_dtype_name(dtype));
}

rf_status_t rf_onnx_add_tensor(rf_graph_t *g, rf_allocator_t a, const Onnx__TensorProto *t,
                               const char *name, int *out_index) {
    *out_index = -1;
    rf_dtype_t dtype;
    if (!t->has_data_type || t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
        return RF_ERR(RF_CODE_PARSE_ERROR, "tensor has no data_type");
    RF_RETURN_IF_ERROR_PLAIN(rf_onnx_dtype(t->data_type, &dtype));
    if ((t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
        t->n_external_data) {
        const char *loc = "?";
        for (size_t i = 0; i < t->n_external_data; i++)
            if (strcmp(rf_onnx_str(t->external_data[i]->key), "location") == 0)
                loc = rf_onnx_str(t->external_data[i]->value);
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "data lives in an external file ('%s'); rowfuse reads self-contained "
                      "models only (export with torch.onnx.export(..., external_data=False))",
                      loc);
    }
    if (t->segment)
        return RF_ERR(RF_CODE_UNSUPPORTED, "segmented tensors are not supported");
    if (t->n_dims > RF_MAX_RANK)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "rank %zu is more than rowfuse's limit of %d", t->n_dims,
                      RF_MAX_RANK);
    rf_shape_t shape;
    memset(&shape, 0, sizeof shape);
    shape.rank = (int)t->n_dims;
    for (int i = 0; i < shape.rank; i++) {
        if (t->dims[i] < 0 || t->dims[i] > RF_MAX_DIM)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "dim %d is %lld, outside 0..%lld", i,
                          (long long)t->dims[i], (long long)RF_MAX_DIM);
        shape.dims[i] = t->dims[i];
    }
    int64_t numel;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_numel(&shape, &numel));
    size_t esize = rf_dtype_size(dtype);
    size_t need = (size_t)numel * esize; /* numel <= RF_MAX_ELEMENTS: cannot overflow */
    if (t->has_raw_data || t->raw_data.len) {
        if (t->raw_data.len != need) {
            char sbuf[160];
            return RF_ERR(RF_CODE_PARSE_ERROR,
                          "shape %s of %s needs %zu bytes but raw_data has %zu",
                          rf_shape_format(&shape, sbuf, sizeof sbuf), rf_dtype_name(dtype), need,
                          t->raw_data.len);
        }
        return rf_graph_add_const(g, name, dtype, &shape, t->raw_data.data, need, out_index);
    }
    /* Typed fields: the count check inside rf_typed_to_bytes runs before the copy, and the
     * field's length bounds `need`, so this allocation is at most a small multiple of the
     * input size. Check before allocating all the same. */
    size_t have = dtype == RF_DTYPE_F32   ? t->n_float_data
                  : dtype == RF_DTYPE_F64 ? t->n_double_data
                  : dtype == RF_DTYPE_I64 ? t->n_int64_data
                                          : t->n_int32_data;
    const char *field = dtype == RF_DTYPE_F32   ? "float_data"
                        : dtype == RF_DTYPE_F64 ? "double_data"
                        : dtype == RF_DTYPE_I64 ? "int64_data"
                                                : "int32_data";
    RF_RETURN_IF_ERROR_PLAIN(rf_check_count(have, numel, field, &shape, dtype));
    void *buf;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, need ? need : 1, "tensor data", &buf));
    rf_status_t st = rf_typed_to_bytes(t, dtype, &shape, numel, buf);
    if (!st)
        st = rf_graph_add_const(g, name, dtype, &shape, buf, need, out_index);
    rf_free(a, buf);
    return st;
}

rf_status_t rf_onnx_add_array(rf_graph_t *g, const char *name, rf_dtype_t dtype, const void *data,
                              size_t count, int scalar, int *out_index) {
    rf_shape_t shape;
    memset(&shape, 0, sizeof shape);
    if (!scalar) {
        if (count > (size_t)RF_MAX_DIM)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "%zu elements is more than %lld", count,
                          (long long)RF_MAX_DIM);
        shape.rank = 1;
        shape.dims[0] = (int64_t)count;
    }
    return rf_graph_add_const(g, name, dtype, &shape, data, count * rf_dtype_size(dtype),
                              out_index);
}
