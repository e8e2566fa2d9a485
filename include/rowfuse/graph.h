/* rowfuse graph IR: values (tensors with static shapes) and nodes (ONNX-style ops).
 *
 * A graph is built once (by the ONNX importer or by tests), then read by the verifier,
 * the CPU reference and the compiler. Values and nodes are addressed by index; a node's
 * inputs and outputs are value indices (-1 for an omitted optional input).
 *
 * Ownership: rf_graph_create() returns a graph the caller owns; free it with
 * rf_graph_destroy(). The graph keeps the allocator it was created with. Every string,
 * array and constant buffer reachable from the graph is owned by the graph; getters lend.
 * Pointers into values/nodes stay valid until the next rf_graph_add_* call (the arrays
 * may grow); indices stay valid for the graph's life.
 */
#ifndef ROWFUSE_GRAPH_H
#define ROWFUSE_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "rowfuse/alloc.h"
#include "rowfuse/status.h"
#include "rowfuse/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ops rowfuse knows by name. Anything else imports as RF_OP_UNKNOWN with its op_type
 * kept, so the verifier can name it in its error. */
typedef enum rf_op {
    RF_OP_UNKNOWN = 0,
    RF_OP_MATMUL,
    RF_OP_GEMM,
    RF_OP_ADD,
    RF_OP_SUB,
    RF_OP_MUL,
    RF_OP_DIV,
    RF_OP_RELU,
    RF_OP_GELU,
    RF_OP_SIGMOID,
    RF_OP_TANH,
    RF_OP_ERF,
    RF_OP_CAST,
    RF_OP_CONSTANT,
    RF_OP_IDENTITY,
    RF_OP_REDUCE_MEAN,
    RF_OP_REDUCE_SUM,
    RF_OP_REDUCE_MAX,
    RF_OP_LAYER_NORM,
    RF_OP_SOFTMAX,
    RF_OP_SQRT,
    RF_OP_POW,
    RF_OP_RECIPROCAL,
    RF_OP_NEG,
    RF_OP_EXP,
    RF_OP_LOG,
    RF_OP_ABS,
    RF_OP_RMS_NORM,
    RF_OP_SOFTPLUS,
    RF_OP_SIN,
    RF_OP_LEAKY_RELU,
    RF_OP_ELU,
    RF_OP_MISH,
    RF_OP_GREATER,
    RF_OP_WHERE,
    /* Layout ops: allowed only where they keep rows on axis 0. */
    RF_OP_RESHAPE,
    RF_OP_TRANSPOSE,
    RF_OP_FLATTEN,
    RF_OP_SQUEEZE,
    RF_OP_UNSQUEEZE,
    RF_OP_EXPAND,
    RF_OP_SLICE,
    RF_OP_CONCAT,
    RF_OP_GATHER,
    /* Known row-mixing ops: imported so the verifier can say why they are rejected. */
    RF_OP_CUMSUM,
    RF_OP_COUNT_
} rf_op_t;

const char *rf_op_name(rf_op_t op);           /* ONNX op_type, e.g. "MatMul" */
rf_op_t rf_op_from_name(const char *op_type); /* RF_OP_UNKNOWN if not known */
/* 1 for the elementwise functions of one input (Relu, Gelu, ..., Mish; not Identity): one
 * output of the input's shape and dtype. The one list the shape rules, the reference, the
 * row rules and the chain matcher read. */
int rf_op_is_unary(rf_op_t op);

typedef enum rf_attr_type {
    RF_ATTR_INT,
    RF_ATTR_FLOAT,
    RF_ATTR_STRING,
    RF_ATTR_INTS,
    RF_ATTR_FLOATS,
    RF_ATTR_TENSOR, /* value index of a constant value holding the tensor */
    RF_ATTR_OTHER,  /* graphs, sparse tensors...: kept by name only */
} rf_attr_type_t;

typedef struct rf_attr {
    const char *name;
    rf_attr_type_t type;
    int64_t i;
    double f;
    const char *s;
    const int64_t *ints;
    const double *floats;
    int n; /* element count of ints/floats */
    int tensor;
} rf_attr_t;

typedef struct rf_value {
    const char *name;
    rf_dtype_t dtype;
    rf_shape_t shape;
    int has_shape;    /* shape known and static */
    int producer;     /* node index, or -1 for graph inputs and constants */
    int is_const;     /* initializer or Constant output: data holds the bytes */
    const void *data; /* little-endian elements of dtype, row-major; NULL if not const */
    size_t nbytes;
} rf_value_t;

typedef struct rf_node {
    const char *name; /* may be "" */
    const char *op_type;
    const char *domain; /* "" for the default ONNX domain */
    rf_op_t op;
    int n_inputs, n_outputs, n_attrs;
    const int *inputs;
    const int *outputs;
    const rf_attr_t *attrs;
} rf_node_t;

typedef struct rf_graph rf_graph_t;

rf_status_t rf_graph_create(rf_allocator_t allocator, rf_graph_t **out_graph);
void rf_graph_destroy(rf_graph_t *graph);

/* Adds a value. name is copied; shape may be NULL (unknown). Names must be unique and
 * non-empty. */
rf_status_t rf_graph_add_value(rf_graph_t *graph, const char *name, rf_dtype_t dtype,
                               const rf_shape_t *shape, int *out_index);
/* Adds a constant value; data (nbytes, must equal numel * dtype size) is copied. */
rf_status_t rf_graph_add_const(rf_graph_t *graph, const char *name, rf_dtype_t dtype,
                               const rf_shape_t *shape, const void *data, size_t nbytes,
                               int *out_index);
/* Adds a node. op_type/name/domain, the index arrays and attrs (with their strings and
 * arrays) are copied. Sets each output value's producer. */
rf_status_t rf_graph_add_node(rf_graph_t *graph, const char *name, const char *op_type,
                              const char *domain, const int *inputs, int n_inputs,
                              const int *outputs, int n_outputs, const rf_attr_t *attrs,
                              int n_attrs, int *out_index);
rf_status_t rf_graph_add_input(rf_graph_t *graph, int value);
rf_status_t rf_graph_add_output(rf_graph_t *graph, int value);

/* Sets a value's shape/dtype (used by shape inference). */
void rf_graph_set_value_type(rf_graph_t *graph, int value, rf_dtype_t dtype,
                             const rf_shape_t *shape);

int rf_graph_value_count(const rf_graph_t *graph);
int rf_graph_node_count(const rf_graph_t *graph);
int rf_graph_input_count(const rf_graph_t *graph);
int rf_graph_output_count(const rf_graph_t *graph);
const rf_value_t *rf_graph_value(const rf_graph_t *graph, int index);
const rf_node_t *rf_graph_node(const rf_graph_t *graph, int index);
int rf_graph_input(const rf_graph_t *graph, int i);  /* value index */
int rf_graph_output(const rf_graph_t *graph, int i); /* value index */
/* Value index by name, or -1. */
int rf_graph_find_value(const rf_graph_t *graph, const char *name);
/* Attribute by name, or NULL. */
const rf_attr_t *rf_node_attr(const rf_node_t *node, const char *name);
int64_t rf_node_attr_int(const rf_node_t *node, const char *name, int64_t fallback);
double rf_node_attr_float(const rf_node_t *node, const char *name, double fallback);

/* Reads element i of a constant value as double / int64 (any numeric dtype). */
double rf_value_get_f64(const rf_value_t *value, int64_t i);
int64_t rf_value_get_i64(const rf_value_t *value, int64_t i);

/* Nodes are kept in a topological order: every input of node k is a graph input, a
 * constant, or an output of a node before k. rf_graph_toposort reorders to make it so
 * and fails (naming a node) on a cycle or an input nothing produces. */
rf_status_t rf_graph_toposort(rf_graph_t *graph);

/* Infers dtype and static shape of every value from the graph inputs and constants
 * (src/graph/shape.c); checks declared shapes against the inferred ones. Errors name
 * the node, op and shapes. */
rf_status_t rf_graph_infer_shapes(rf_graph_t *graph);

/* "node 7 'name' (ReduceMean)" into buf; returns buf. For error messages. */
char *rf_node_describe(const rf_graph_t *graph, int node, char *buf, size_t buf_size);

#ifdef __cplusplus
}
#endif
#endif
