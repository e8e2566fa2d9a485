/* ONNX import: an ONNX ModelProto (protobuf) into an rf graph.
 *
 * Decoding uses protobuf-c code generated from the onnx.proto that ONNX ships. Every
 * initializer becomes a constant value (raw_data or typed fields; external data is
 * rejected), every value gets a dtype and, where the file declares one, a static shape.
 * Shapes are then completed and checked by rf_graph_infer_shapes().
 *
 * Errors (never crashes) on: bytes that are not a ModelProto, a missing graph, an
 * initializer whose data does not match its dims, dims that are negative, symbolic or
 * larger than RF_MAX_DIM, an input name nothing defines, unsupported dtypes.
 *
 * Ownership: *out_graph is the caller's (rf_graph_destroy).
 */
#ifndef ROWFUSE_ONNX_H
#define ROWFUSE_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "rowfuse/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

rf_status_t rf_onnx_import_buffer(rf_allocator_t allocator, const uint8_t *data, size_t size,
                                  rf_graph_t **out_graph);
/* Reads the file, then as above. Errors name the path. */
rf_status_t rf_onnx_import_file(rf_allocator_t allocator, const char *path, rf_graph_t **out_graph);

#ifdef __cplusplus
}
#endif
#endif
