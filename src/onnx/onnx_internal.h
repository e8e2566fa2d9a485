/* Internal interface between the ONNX importer's files (src/onnx/): tensor and type
 * decoding (onnx_tensor.c), inlining of model-local functions (onnx_inline.c) and the
 * model walk (onnx_import.c). Everything here works on structs decoded by the protobuf-c
 * code generated from onnx.proto ("onnx.pb-c.h"); nothing parses protobuf by hand.
 */
#ifndef ROWFUSE_ONNX_INTERNAL_H
#define ROWFUSE_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"
#include "rowfuse/graph.h"

/* Most nodes a model may have after function inlining (guards against call bombs). */
#define RF_ONNX_MAX_NODES 65536
/* Deepest chain of nested function calls that is inlined. */
#define RF_ONNX_MAX_CALL_DEPTH 16

/* NULL-safe string: protobuf-c leaves absent string fields NULL. */
static inline const char *rf_onnx_str(const char *s) {
    return s ? s : "";
}

/* ONNX TensorProto.DataType name ("FLOAT", "UINT16", ...) for messages. */
const char *rf_onnx_dtype_name(int32_t onnx_type);
/* Maps an ONNX element type to an rf dtype; UNSUPPORTED for the others. */
rf_status_t rf_onnx_dtype(int32_t onnx_type, rf_dtype_t *out_dtype);

/* A declared type read from a TypeProto. dtype is RF_DTYPE_UNDEFINED when not declared;
 * has_shape is set only when every dim has a static value. symbolic_dim is the first dim
 * without a static value (-1 if none) and symbolic_name its dim_param ("" if absent). */
typedef struct rf_onnx_type {
    rf_dtype_t dtype;
    int has_shape;
    rf_shape_t shape;
    int has_rank; /* a shape field is present */
    int symbolic_dim;
    const char *symbolic_name;
} rf_onnx_type_t;

/* Reads a TypeProto (may be NULL: nothing declared). Fails on non-tensor types,
 * unsupported element types, more than RF_MAX_RANK dims and dims outside
 * 0..RF_MAX_DIM. Messages are relative: the caller prefixes what is being read. */
rf_status_t rf_onnx_read_type(const Onnx__TypeProto *type, rf_onnx_type_t *out_type);

/* Decodes a TensorProto (raw_data or typed fields; external data rejected) and adds it to
 * the graph as a constant value called `name`. */
rf_status_t rf_onnx_add_tensor(rf_graph_t *graph, rf_allocator_t allocator,
                               const Onnx__TensorProto *tensor, const char *name, int *out_index);

/* Adds a constant of `count` elements (rank 1) or a scalar (rank 0 when scalar != 0). */
rf_status_t rf_onnx_add_array(rf_graph_t *graph, const char *name, rf_dtype_t dtype,
                              const void *data, size_t count, int scalar, int *out_index);

/* Expands nodes that call model-local functions (ModelProto.functions) into the
 * functions' bodies, renaming inner values "<call>/<name>". *out_nodes is an array
 * allocated with `allocator` (free it with rf_free); the node structs it points to live in
 * the unpacked model or in `arena`. */
rf_status_t rf_onnx_flatten(rf_allocator_t allocator, rf_arena_t *arena,
                            const Onnx__ModelProto *model, const Onnx__NodeProto ***out_nodes,
                            size_t *out_count);

#endif
