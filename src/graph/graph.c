/* Graph IR storage: growable value/node arrays plus an arena for strings, attribute
 * arrays and constant data (rowfuse/graph.h). */
#include "rowfuse/graph.h"

#include <stdio.h>
#include <string.h>

struct rf_graph {
    rf_allocator_t allocator;
    rf_arena_t arena;
    rf_value_t *values;
    size_t n_values, cap_values;
    rf_node_t *nodes;
    size_t n_nodes, cap_nodes;
    int *inputs;
    size_t n_inputs, cap_inputs;
    int *outputs;
    size_t n_outputs, cap_outputs;
};

static const char *const rf_op_names[RF_OP_COUNT_] = {
    [RF_OP_UNKNOWN] = "Unknown",
    [RF_OP_MATMUL] = "MatMul",
    [RF_OP_GEMM] = "Gemm",
    [RF_OP_ADD] = "Add",
    [RF_OP_SUB] = "Sub",
    [RF_OP_MUL] = "Mul",
    [RF_OP_DIV] = "Div",
    [RF_OP_RELU] = "Relu",
    [RF_OP_GELU] = "Gelu",
    [RF_OP_SIGMOID] = "Sigmoid",
    [RF_OP_TANH] = "Tanh",
    [RF_OP_ERF] = "Erf",
    [RF_OP_CAST] = "Cast",
    [RF_OP_CONSTANT] = "Constant",
    [RF_OP_IDENTITY] = "Identity",
    [RF_OP_REDUCE_MEAN] = "ReduceMean",
    [RF_OP_REDUCE_SUM] = "ReduceSum",
    [RF_OP_REDUCE_MAX] = "ReduceMax",
    [RF_OP_LAYER_NORM] = "LayerNormalization",
    [RF_OP_SOFTMAX] = "Softmax",
    [RF_OP_SQRT] = "Sqrt",
    [RF_OP_POW] = "Pow",
    [RF_OP_RECIPROCAL] = "Reciprocal",
    [RF_OP_NEG] = "Neg",
    [RF_OP_EXP] = "Exp",
    [RF_OP_LOG] = "Log",
    [RF_OP_ABS] = "Abs",
    [RF_OP_RMS_NORM] = "RMSNormalization",
    [RF_OP_RESHAPE] = "Reshape",
    [RF_OP_TRANSPOSE] = "Transpose",
    [RF_OP_FLATTEN] = "Flatten",
    [RF_OP_SQUEEZE] = "Squeeze",
    [RF_OP_UNSQUEEZE] = "Unsqueeze",
    [RF_OP_EXPAND] = "Expand",
    [RF_OP_SLICE] = "Slice",
    [RF_OP_CONCAT] = "Concat",
    [RF_OP_GATHER] = "Gather",
    [RF_OP_CUMSUM] = "CumSum",
    [RF_OP_SOFTPLUS] = "Softplus",
    [RF_OP_SIN] = "Sin",
    [RF_OP_LEAKY_RELU] = "LeakyRelu",
    [RF_OP_ELU] = "Elu",
    [RF_OP_MISH] = "Mish",
    [RF_OP_GREATER] = "Greater",
    [RF_OP_WHERE] = "Where",
};

int rf_op_is_unary(rf_op_t op) {
    switch (op) {
    case RF_OP_RELU:
    case RF_OP_GELU:
    case RF_OP_SIGMOID:
    case RF_OP_TANH:
    case RF_OP_ERF:
    case RF_OP_SQRT:
    case RF_OP_RECIPROCAL:
    case RF_OP_NEG:
    case RF_OP_EXP:
    case RF_OP_LOG:
    case RF_OP_ABS:
    case RF_OP_SOFTPLUS:
    case RF_OP_SIN:
    case RF_OP_LEAKY_RELU:
    case RF_OP_ELU:
    case RF_OP_MISH:
        return 1;
    default:
        return 0;
    }
}

const char *rf_op_name(rf_op_t op) {
    if ((int)op < 0 || op >= RF_OP_COUNT_)
        return "Unknown";
    return rf_op_names[op];
}

rf_op_t rf_op_from_name(const char *op_type) {
    if (!op_type)
        return RF_OP_UNKNOWN;
    for (int i = 1; i < RF_OP_COUNT_; i++)
        if (strcmp(rf_op_names[i], op_type) == 0)
            return (rf_op_t)i;
    return RF_OP_UNKNOWN;
}

rf_status_t rf_graph_create(rf_allocator_t allocator, rf_graph_t **out_graph) {
    void *p;
    *out_graph = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(allocator, 1, sizeof(rf_graph_t), "graph", &p));
    rf_graph_t *g = p;
    g->allocator = allocator;
    rf_arena_init(&g->arena, allocator);
    *out_graph = g;
    return RF_OK;
}

void rf_graph_destroy(rf_graph_t *g) {
    if (!g)
        return;
    rf_allocator_t a = g->allocator;
    rf_arena_deinit(&g->arena);
    rf_free(a, g->values);
    rf_free(a, g->nodes);
    rf_free(a, g->inputs);
    rf_free(a, g->outputs);
    rf_free(a, g);
}

int rf_graph_find_value(const rf_graph_t *g, const char *name) {
    /* Linear scan: graphs here have hundreds of values at most. */
    for (size_t i = 0; i < g->n_values; i++)
        if (strcmp(g->values[i].name, name) == 0)
            return (int)i;
    return -1;
}

static rf_status_t rf_check_shape_arg(const rf_shape_t *shape) {
    if (shape->rank < 0 || shape->rank > RF_MAX_RANK)
        return RF_ERR(RF_CODE_UNSUPPORTED, "rank %d outside 0..%d", shape->rank, RF_MAX_RANK);
    return RF_OK;
}

rf_status_t rf_graph_add_value(rf_graph_t *g, const char *name, rf_dtype_t dtype,
                               const rf_shape_t *shape, int *out_index) {
    *out_index = -1;
    if (!name || !name[0])
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "value with an empty name");
    if (rf_graph_find_value(g, name) >= 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "value '%s' defined twice", name);
    if (shape)
        RF_RETURN_IF_ERROR(rf_check_shape_arg(shape), "value '%s'", name);
    if (g->n_values >= (size_t)1 << 30)
        return RF_ERR(RF_CODE_RESOURCE_EXHAUSTED, "too many values");
    RF_RETURN_IF_ERROR_PLAIN(rf_grow(g->allocator, (void **)&g->values, &g->cap_values,
                                     g->n_values + 1, sizeof(rf_value_t), "graph values"));
    rf_value_t v;
    memset(&v, 0, sizeof v);
    char *copy;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&g->arena, name, &copy));
    v.name = copy;
    v.dtype = dtype;
    v.producer = -1;
    if (shape) {
        v.shape = *shape;
        v.has_shape = 1;
    }
    g->values[g->n_values] = v;
    *out_index = (int)g->n_values++;
    return RF_OK;
}

rf_status_t rf_graph_add_const(rf_graph_t *g, const char *name, rf_dtype_t dtype,
                               const rf_shape_t *shape, const void *data, size_t nbytes,
                               int *out_index) {
    int64_t numel;
    *out_index = -1;
    RF_RETURN_IF_ERROR(rf_check_shape_arg(shape), "constant '%s'", name ? name : "");
    RF_RETURN_IF_ERROR(rf_shape_numel(shape, &numel), "constant '%s'", name ? name : "");
    size_t esize = rf_dtype_size(dtype);
    if (!esize)
        return RF_ERR(RF_CODE_UNSUPPORTED, "constant '%s' has undefined dtype", name);
    if ((uint64_t)numel * esize != nbytes) {
        char sbuf[160];
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "constant '%s' of shape %s and dtype %s needs %llu bytes, has %zu", name,
                      rf_shape_format(shape, sbuf, sizeof sbuf), rf_dtype_name(dtype),
                      (unsigned long long)((uint64_t)numel * esize), nbytes);
    }
    int idx;
    RF_RETURN_IF_ERROR_PLAIN(rf_graph_add_value(g, name, dtype, shape, &idx));
    void *copy;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&g->arena, nbytes, &copy));
    if (nbytes)
        memcpy(copy, data, nbytes);
    g->values[idx].is_const = 1;
    g->values[idx].data = copy;
    g->values[idx].nbytes = nbytes;
    *out_index = idx;
    return RF_OK;
}

static rf_status_t rf_copy_attrs(rf_graph_t *g, const rf_attr_t *attrs, int n, rf_attr_t **out) {
    void *p;
    *out = NULL;
    if (n == 0)
        return RF_OK;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&g->arena, sizeof(rf_attr_t) * (size_t)n, &p));
    rf_attr_t *dst = p;
    for (int i = 0; i < n; i++) {
        dst[i] = attrs[i];
        char *s;
        RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&g->arena, attrs[i].name, &s));
        dst[i].name = s;
        if (attrs[i].s) {
            RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&g->arena, attrs[i].s, &s));
            dst[i].s = s;
        }
        if (attrs[i].ints && attrs[i].n > 0) {
            RF_RETURN_IF_ERROR_PLAIN(
                rf_arena_alloc(&g->arena, sizeof(int64_t) * (size_t)attrs[i].n, &p));
            memcpy(p, attrs[i].ints, sizeof(int64_t) * (size_t)attrs[i].n);
            dst[i].ints = p;
        }
        if (attrs[i].floats && attrs[i].n > 0) {
            RF_RETURN_IF_ERROR_PLAIN(
                rf_arena_alloc(&g->arena, sizeof(double) * (size_t)attrs[i].n, &p));
            memcpy(p, attrs[i].floats, sizeof(double) * (size_t)attrs[i].n);
            dst[i].floats = p;
        }
    }
    *out = dst;
    return RF_OK;
}

rf_status_t rf_graph_add_node(rf_graph_t *g, const char *name, const char *op_type,
                              const char *domain, const int *inputs, int n_inputs,
                              const int *outputs, int n_outputs, const rf_attr_t *attrs,
                              int n_attrs, int *out_index) {
    if (out_index)
        *out_index = -1;
    if (!op_type || !op_type[0])
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "node '%s' has no op_type", name ? name : "");
    if (n_inputs < 0 || n_outputs < 0 || n_attrs < 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "node '%s': negative count", name ? name : "");
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] < -1 || inputs[i] >= (int)g->n_values)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "node '%s' (%s): input %d out of range",
                          name ? name : "", op_type, i);
    for (int i = 0; i < n_outputs; i++) {
        if (outputs[i] < 0 || outputs[i] >= (int)g->n_values)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "node '%s' (%s): output %d out of range",
                          name ? name : "", op_type, i);
        const rf_value_t *v = &g->values[outputs[i]];
        if (v->producer >= 0 || v->is_const)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "node '%s' (%s): output '%s' is already defined", name ? name : "",
                          op_type, v->name);
    }
    RF_RETURN_IF_ERROR_PLAIN(rf_grow(g->allocator, (void **)&g->nodes, &g->cap_nodes,
                                     g->n_nodes + 1, sizeof(rf_node_t), "graph nodes"));
    rf_node_t n;
    memset(&n, 0, sizeof n);
    char *s;
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&g->arena, name ? name : "", &s));
    n.name = s;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&g->arena, op_type, &s));
    n.op_type = s;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&g->arena, domain ? domain : "", &s));
    n.domain = s;
    /* Only the default ONNX domain names the ops we know. */
    n.op = (n.domain[0] == '\0' || strcmp(n.domain, "ai.onnx") == 0) ? rf_op_from_name(op_type)
                                                                     : RF_OP_UNKNOWN;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&g->arena, sizeof(int) * (size_t)(n_inputs + 1), &p));
    if (n_inputs)
        memcpy(p, inputs, sizeof(int) * (size_t)n_inputs);
    n.inputs = p;
    n.n_inputs = n_inputs;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&g->arena, sizeof(int) * (size_t)(n_outputs + 1), &p));
    if (n_outputs)
        memcpy(p, outputs, sizeof(int) * (size_t)n_outputs);
    n.outputs = p;
    n.n_outputs = n_outputs;
    rf_attr_t *copied;
    RF_RETURN_IF_ERROR_PLAIN(rf_copy_attrs(g, attrs, n_attrs, &copied));
    n.attrs = copied;
    n.n_attrs = n_attrs;
    int idx = (int)g->n_nodes;
    g->nodes[g->n_nodes++] = n;
    for (int i = 0; i < n_outputs; i++)
        g->values[outputs[i]].producer = idx;
    if (out_index)
        *out_index = idx;
    return RF_OK;
}

static rf_status_t rf_push_index(rf_graph_t *g, int **arr, size_t *n, size_t *cap, int value,
                                 const char *what) {
    if (value < 0 || value >= (int)g->n_values)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s index %d out of range", what, value);
    RF_RETURN_IF_ERROR_PLAIN(rf_grow(g->allocator, (void **)arr, cap, *n + 1, sizeof(int), what));
    (*arr)[(*n)++] = value;
    return RF_OK;
}

rf_status_t rf_graph_add_input(rf_graph_t *g, int value) {
    return rf_push_index(g, &g->inputs, &g->n_inputs, &g->cap_inputs, value, "graph input");
}

rf_status_t rf_graph_add_output(rf_graph_t *g, int value) {
    return rf_push_index(g, &g->outputs, &g->n_outputs, &g->cap_outputs, value, "graph output");
}

void rf_graph_set_value_type(rf_graph_t *g, int value, rf_dtype_t dtype, const rf_shape_t *shape) {
    if (value < 0 || value >= (int)g->n_values)
        return;
    g->values[value].dtype = dtype;
    if (shape) {
        g->values[value].shape = *shape;
        g->values[value].has_shape = 1;
    }
}

int rf_graph_value_count(const rf_graph_t *g) {
    return (int)g->n_values;
}
int rf_graph_node_count(const rf_graph_t *g) {
    return (int)g->n_nodes;
}
int rf_graph_input_count(const rf_graph_t *g) {
    return (int)g->n_inputs;
}
int rf_graph_output_count(const rf_graph_t *g) {
    return (int)g->n_outputs;
}
const rf_value_t *rf_graph_value(const rf_graph_t *g, int i) {
    return (i >= 0 && i < (int)g->n_values) ? &g->values[i] : NULL;
}
const rf_node_t *rf_graph_node(const rf_graph_t *g, int i) {
    return (i >= 0 && i < (int)g->n_nodes) ? &g->nodes[i] : NULL;
}
int rf_graph_input(const rf_graph_t *g, int i) {
    return (i >= 0 && i < (int)g->n_inputs) ? g->inputs[i] : -1;
}
int rf_graph_output(const rf_graph_t *g, int i) {
    return (i >= 0 && i < (int)g->n_outputs) ? g->outputs[i] : -1;
}

const rf_attr_t *rf_node_attr(const rf_node_t *node, const char *name) {
    for (int i = 0; i < node->n_attrs; i++)
        if (strcmp(node->attrs[i].name, name) == 0)
            return &node->attrs[i];
    return NULL;
}

int64_t rf_node_attr_int(const rf_node_t *node, const char *name, int64_t fallback) {
    const rf_attr_t *a = rf_node_attr(node, name);
    return (a && a->type == RF_ATTR_INT) ? a->i : fallback;
}

double rf_node_attr_float(const rf_node_t *node, const char *name, double fallback) {
    const rf_attr_t *a = rf_node_attr(node, name);
    if (!a)
        return fallback;
    if (a->type == RF_ATTR_FLOAT)
        return a->f;
    if (a->type == RF_ATTR_INT)
        return (double)a->i;
    return fallback;
}

/* fp16 -> double without depending on tensor.c. */
static double rf_half_bits_to_double(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
    double v;
    if (exp == 0)
        v = mant * (1.0 / 16777216.0); /* 2^-24 */
    else if (exp == 31)
        v = mant ? (0.0 / 0.0) : (1.0 / 0.0);
    else {
        v = (1.0 + mant / 1024.0);
        int e = exp - 15;
        while (e > 0) {
            v *= 2;
            e--;
        }
        while (e < 0) {
            v /= 2;
            e++;
        }
    }
    return sign ? -v : v;
}

double rf_value_get_f64(const rf_value_t *v, int64_t i) {
    const unsigned char *d = v->data;
    switch (v->dtype) {
    case RF_DTYPE_F32: {
        float x;
        memcpy(&x, d + 4 * i, 4);
        return x;
    }
    case RF_DTYPE_F64: {
        double x;
        memcpy(&x, d + 8 * i, 8);
        return x;
    }
    case RF_DTYPE_F16: {
        uint16_t h;
        memcpy(&h, d + 2 * i, 2);
        return rf_half_bits_to_double(h);
    }
    case RF_DTYPE_BF16: {
        uint16_t h;
        memcpy(&h, d + 2 * i, 2);
        uint32_t bits = (uint32_t)h << 16;
        float x;
        memcpy(&x, &bits, 4);
        return x;
    }
    case RF_DTYPE_I64: {
        int64_t x;
        memcpy(&x, d + 8 * i, 8);
        return (double)x;
    }
    case RF_DTYPE_I32: {
        int32_t x;
        memcpy(&x, d + 4 * i, 4);
        return x;
    }
    case RF_DTYPE_I8:
        return (double)(int8_t)d[i];
    case RF_DTYPE_U8:
    case RF_DTYPE_BOOL:
        return d[i];
    case RF_DTYPE_UNDEFINED:
        break;
    }
    return 0.0;
}

int64_t rf_value_get_i64(const rf_value_t *v, int64_t i) {
    const unsigned char *d = v->data;
    switch (v->dtype) {
    case RF_DTYPE_I64: {
        int64_t x;
        memcpy(&x, d + 8 * i, 8);
        return x;
    }
    case RF_DTYPE_I32: {
        int32_t x;
        memcpy(&x, d + 4 * i, 4);
        return x;
    }
    default:
        return (int64_t)rf_value_get_f64(v, i);
    }
}

rf_status_t rf_graph_toposort(rf_graph_t *g) {
    size_t n = g->n_nodes;
    if (n == 0)
        return RF_OK;
    rf_status_t st = RF_OK;
    char *ready = NULL;
    rf_node_t *sorted = NULL;
    char *placed = NULL;
    void *p;
    st = rf_alloc_zeroed(g->allocator, g->n_values, 1, "toposort", &p);
    if (st)
        return st;
    ready = p;
    st = rf_alloc_zeroed(g->allocator, n, sizeof(rf_node_t), "toposort", &p);
    if (st)
        goto done;
    sorted = p;
    st = rf_alloc_zeroed(g->allocator, n, 1, "toposort", &p);
    if (st)
        goto done;
    placed = p;
    for (size_t i = 0; i < g->n_values; i++)
        ready[i] = (g->values[i].is_const || g->values[i].producer < 0) ? 1 : 0;
    size_t count = 0;
    int progress = 1;
    while (count < n && progress) {
        progress = 0;
        for (size_t k = 0; k < n; k++) {
            if (placed[k])
                continue;
            const rf_node_t *nd = &g->nodes[k];
            int ok = 1;
            for (int i = 0; i < nd->n_inputs && ok; i++)
                if (nd->inputs[i] >= 0 && !ready[nd->inputs[i]])
                    ok = 0;
            if (!ok)
                continue;
            placed[k] = 1;
            sorted[count++] = *nd;
            for (int i = 0; i < nd->n_outputs; i++)
                ready[nd->outputs[i]] = 1;
            progress = 1;
        }
    }
    if (count < n) {
        for (size_t k = 0; k < n; k++)
            if (!placed[k]) {
                st = RF_ERR(RF_CODE_PARSE_ERROR,
                            "node %zu '%s' (%s) is part of a cycle or reads a value no node "
                            "produces",
                            k, g->nodes[k].name, g->nodes[k].op_type);
                goto done;
            }
    }
    memcpy(g->nodes, sorted, n * sizeof(rf_node_t));
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < g->nodes[k].n_outputs; i++)
            g->values[g->nodes[k].outputs[i]].producer = (int)k;
done:
    rf_free(g->allocator, ready);
    rf_free(g->allocator, sorted);
    rf_free(g->allocator, placed);
    return st;
}

char *rf_node_describe(const rf_graph_t *g, int node, char *buf, size_t buf_size) {
    const rf_node_t *n = rf_graph_node(g, node);
    if (!n)
        snprintf(buf, buf_size, "node %d", node);
    else if (n->name[0])
        snprintf(buf, buf_size, "node %d '%s' (%s)", node, n->name, n->op_type);
    else
        snprintf(buf, buf_size, "node %d (%s)", node, n->op_type);
    return buf;
}
