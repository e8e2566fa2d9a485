/* ONNX ModelProto -> rf graph (rowfuse/onnx.h).
 *
 * The bytes are decoded by the protobuf-c code generated from ONNX's onnx.proto; this
 * file walks the decoded model in a fixed order: initializers (constants), graph inputs
 * (static shapes required), nodes (model-local functions inlined, Constant nodes folded
 * into constants, every output created before any input is resolved so unsorted files
 * work), value_info and graph outputs (declared dtypes/shapes, checked against what is
 * already known), then a topological sort. Shapes are not inferred here. Every error is
 * one line naming the initializer, input, node or value at fault.
 */
#define _POSIX_C_SOURCE 200809L /* fstat: tell a directory from a file */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx/onnx_internal.h"
#include "rowfuse/onnx.h"

typedef struct rf_importer {
    rf_allocator_t a;
    rf_graph_t *g;
    rf_arena_t tmp; /* scratch that dies with the import */
    const Onnx__ModelProto *model;
    const Onnx__GraphProto *gp;
    const Onnx__NodeProto **nodes; /* after inlining */
    size_t n_nodes;
} rf_importer_t;

/* ---- protobuf-c allocations through the caller's allocator ---- */

typedef struct rf_pb_alloc_ctx {
    rf_allocator_t a;
    int failed;
} rf_pb_alloc_ctx_t;

static void *rf_pb_alloc(void *ctx, size_t size) {
    rf_pb_alloc_ctx_t *c = ctx;
    void *p = c->a.alloc(c->a.ctx, size);
    if (!p)
        c->failed = 1;
    return p;
}

static void rf_pb_free(void *ctx, void *ptr) {
    rf_pb_alloc_ctx_t *c = ctx;
    if (ptr)
        c->a.free(c->a.ctx, ptr);
}

/* ---- helpers ---- */

static const char *rf_describe(const Onnx__NodeProto *n, size_t k, char *buf, size_t size) {
    const char *name = rf_onnx_str(n->name);
    if (name[0])
        snprintf(buf, size, "node %zu '%s' (%s)", k, name, rf_onnx_str(n->op_type));
    else
        snprintf(buf, size, "node %zu (%s)", k, rf_onnx_str(n->op_type));
    return buf;
}

static int rf_is_default_domain(const char *d) {
    d = rf_onnx_str(d);
    return d[0] == '\0' || strcmp(d, "ai.onnx") == 0;
}

/* Says what already defines a value, for "defined twice" messages. */
static const char *rf_definer(const rf_graph_t *g, int idx) {
    const rf_value_t *v = rf_graph_value(g, idx);
    if (v->is_const)
        return "an initializer or constant";
    if (v->producer >= 0)
        return "a node";
    for (int i = 0; i < rf_graph_input_count(g); i++)
        if (rf_graph_input(g, i) == idx)
            return "a graph input";
    return "an earlier node";
}

/* Returns a name not yet used in the graph: base, or base.1, base.2, ... */
static rf_status_t rf_unique_name(rf_importer_t *im, const char *base, char **out) {
    if (base[0] && rf_graph_find_value(im->g, base) < 0)
        return rf_arena_strdup(&im->tmp, base, out);
    size_t n = strlen(base);
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&im->tmp, n + 24, &p));
    char *s = p;
    for (int i = 1; i < 1000; i++) {
        snprintf(s, n + 24, "%s.%d", base, i);
        if (rf_graph_find_value(im->g, s) < 0) {
            *out = s;
            return RF_OK;
        }
    }
    return RF_ERR(RF_CODE_PARSE_ERROR, "cannot make a unique value name from '%s'", base);
}

/* Applies a declared dtype/shape to an existing value, checking it against what is
 * already known. */
static rf_status_t rf_apply_declared(rf_importer_t *im, int idx, const rf_onnx_type_t *t,
                                     const char *what) {
    const rf_value_t *v = rf_graph_value(im->g, idx);
    char s1[160], s2[160];
    if (t->dtype != RF_DTYPE_UNDEFINED && v->dtype != RF_DTYPE_UNDEFINED && t->dtype != v->dtype)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s '%s' is declared %s but %s %s", what, v->name,
                      rf_dtype_name(t->dtype),
                      v->is_const ? "its data is" : "it was declared before as",
                      rf_dtype_name(v->dtype));
    if (t->has_shape && v->has_shape && !rf_shape_equal(&t->shape, &v->shape))
        return RF_ERR(RF_CODE_SHAPE_ERROR, "%s '%s' is declared with shape %s but has shape %s",
                      what, v->name, rf_shape_format(&t->shape, s1, sizeof s1),
                      rf_shape_format(&v->shape, s2, sizeof s2));
    rf_dtype_t dtype = v->dtype != RF_DTYPE_UNDEFINED ? v->dtype : t->dtype;
    rf_graph_set_value_type(im->g, idx, dtype, t->has_shape && !v->has_shape ? &t->shape : NULL);
    return RF_OK;
}

/* ---- initializers and inputs ---- */

static rf_status_t rf_import_initializers(rf_importer_t *im) {
    const Onnx__GraphProto *gp = im->gp;
    if (gp->n_sparse_initializer)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "graph has %zu sparse initializers; rowfuse reads dense initializers only",
                      gp->n_sparse_initializer);
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        const char *name = rf_onnx_str(t->name);
        if (!name[0])
            return RF_ERR(RF_CODE_PARSE_ERROR, "initializer %zu has no name", i);
        if (rf_graph_find_value(im->g, name) >= 0)
            return RF_ERR(RF_CODE_PARSE_ERROR, "initializer '%s' is defined twice", name);
        int idx;
        RF_RETURN_IF_ERROR(rf_onnx_add_tensor(im->g, im->a, t, name, &idx), "initializer '%s'",
                           name);
    }
    return RF_OK;
}

static rf_status_t rf_import_inputs(rf_importer_t *im) {
    const Onnx__GraphProto *gp = im->gp;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const char *name = rf_onnx_str(vi->name);
        if (!name[0])
            return RF_ERR(RF_CODE_PARSE_ERROR, "graph input %zu has no name", i);
        rf_onnx_type_t t;
        RF_RETURN_IF_ERROR(rf_onnx_read_type(vi->type, &t), "input %s", name);
        int idx = rf_graph_find_value(im->g, name);
        if (idx >= 0) {
            const rf_value_t *v = rf_graph_value(im->g, idx);
            if (!v->is_const)
                return RF_ERR(RF_CODE_PARSE_ERROR, "graph input '%s' is declared twice", name);
            /* An initializer listed as an input too (older exporters): a weight. */
            RF_RETURN_IF_ERROR_PLAIN(rf_apply_declared(im, idx, &t, "input"));
            continue;
        }
        if (!vi->type)
            return RF_ERR(RF_CODE_PARSE_ERROR, "input %s has no type", name);
        if (t.dtype == RF_DTYPE_UNDEFINED)
            return RF_ERR(RF_CODE_PARSE_ERROR, "input %s has no element type", name);
        if (!t.has_rank)
            return RF_ERR(RF_CODE_SHAPE_ERROR,
                          "input %s: no shape declared; rowfuse needs static shapes", name);
        if (t.symbolic_dim >= 0) {
            if (t.symbolic_name[0])
                return RF_ERR(RF_CODE_SHAPE_ERROR,
                              "input %s: dim %d is symbolic (\"%s\"); rowfuse needs static shapes",
                              name, t.symbolic_dim, t.symbolic_name);
            return RF_ERR(RF_CODE_SHAPE_ERROR,
                          "input %s: dim %d has no value; rowfuse needs static shapes", name,
                          t.symbolic_dim);
        }
        RF_RETURN_IF_ERROR(rf_graph_add_value(im->g, name, t.dtype, &t.shape, &idx), "input %s",
                           name);
        RF_RETURN_IF_ERROR_PLAIN(rf_graph_add_input(im->g, idx));
    }
    return RF_OK;
}

/* ---- nodes ---- */

/* Folds a Constant node into a constant value named after its output. */
static rf_status_t rf_fold_constant(rf_importer_t *im, const Onnx__NodeProto *n) {
    if (n->n_input != 0 || n->n_output != 1)
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "Constant takes no inputs and has one output, not %zu "
                      "and %zu",
                      n->n_input, n->n_output);
    const char *out = rf_onnx_str(n->output[0]);
    if (!out[0])
        return RF_ERR(RF_CODE_PARSE_ERROR, "Constant output has no name");
    int idx = rf_graph_find_value(im->g, out);
    if (idx >= 0)
        return RF_ERR(RF_CODE_PARSE_ERROR, "output '%s' is already defined by %s", out,
                      rf_definer(im->g, idx));
    if (n->n_attribute != 1)
        return RF_ERR(RF_CODE_PARSE_ERROR, "Constant needs exactly one value attribute, has %zu",
                      n->n_attribute);
    const Onnx__AttributeProto *at = n->attribute[0];
    const char *an = rf_onnx_str(at->name);
    if (strcmp(an, "value") == 0) {
        if (!at->t)
            return RF_ERR(RF_CODE_PARSE_ERROR, "Constant attribute 'value' holds no tensor");
        RF_RETURN_IF_ERROR(rf_onnx_add_tensor(im->g, im->a, at->t, out, &idx), "Constant '%s'",
                           out);
        return RF_OK;
    }
    if (strcmp(an, "value_float") == 0) {
        if (!at->has_f)
            return RF_ERR(RF_CODE_PARSE_ERROR, "Constant attribute 'value_float' holds no float");
        return rf_onnx_add_array(im->g, out, RF_DTYPE_F32, &at->f, 1, 1, &idx);
    }
    if (strcmp(an, "value_floats") == 0)
        return rf_onnx_add_array(im->g, out, RF_DTYPE_F32, at->floats, at->n_floats, 0, &idx);
    if (strcmp(an, "value_int") == 0) {
        if (!at->has_i)
            return RF_ERR(RF_CODE_PARSE_ERROR, "Constant attribute 'value_int' holds no int");
        return rf_onnx_add_array(im->g, out, RF_DTYPE_I64, &at->i, 1, 1, &idx);
    }
    if (strcmp(an, "value_ints") == 0)
        return rf_onnx_add_array(im->g, out, RF_DTYPE_I64, at->ints, at->n_ints, 0, &idx);
    if (strcmp(an, "sparse_value") == 0 || strcmp(an, "value_string") == 0 ||
        strcmp(an, "value_strings") == 0)
        return RF_ERR(RF_CODE_UNSUPPORTED, "Constant attribute '%s' is not supported", an);
    return RF_ERR(RF_CODE_PARSE_ERROR, "Constant has an unknown attribute '%s'", an);
}

static int rf_attr_kind(const Onnx__AttributeProto *at) {
    if (at->has_type)
        return (int)at->type;
    /* IR version 1 files carry no type: infer it from the field in use. */
    if (at->has_f)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (at->has_i)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (at->has_s)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (at->t)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (at->n_floats)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (at->n_ints)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

static rf_status_t rf_convert_attr(rf_importer_t *im, const Onnx__NodeProto *n, size_t k,
                                   const Onnx__AttributeProto *at, rf_attr_t *out) {
    void *p;
    memset(out, 0, sizeof *out);
    out->tensor = -1;
    out->name = rf_onnx_str(at->name);
    if (!out->name[0])
        return RF_ERR(RF_CODE_PARSE_ERROR, "an attribute has no name");
    if (rf_onnx_str(at->ref_attr_name)[0])
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "attribute '%s' refers to a function attribute ('%s') outside a function",
                      out->name, at->ref_attr_name);
    switch (rf_attr_kind(at)) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        out->type = RF_ATTR_FLOAT;
        out->f = at->f;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        out->type = RF_ATTR_INT;
        out->i = at->i;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
        char *s;
        out->type = RF_ATTR_STRING;
        RF_RETURN_IF_ERROR_PLAIN(
            rf_arena_strndup(&im->tmp, (const char *)at->s.data, at->s.data ? at->s.len : 0, &s));
        out->s = s;
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        if (at->n_ints > (size_t)INT_MAX / 8)
            return RF_ERR(RF_CODE_UNSUPPORTED, "attribute '%s' has too many ints", out->name);
        out->type = RF_ATTR_INTS;
        out->n = (int)at->n_ints;
        out->ints = at->n_ints ? at->ints : NULL;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
        if (at->n_floats > (size_t)INT_MAX / 8)
            return RF_ERR(RF_CODE_UNSUPPORTED, "attribute '%s' has too many floats", out->name);
        out->type = RF_ATTR_FLOATS;
        out->n = (int)at->n_floats;
        if (at->n_floats) {
            RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&im->tmp, sizeof(double) * at->n_floats, &p));
            double *d = p;
            for (size_t i = 0; i < at->n_floats; i++)
                d[i] = at->floats[i];
            out->floats = d;
        }
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!at->t)
            return RF_ERR(RF_CODE_PARSE_ERROR, "tensor attribute '%s' holds no tensor", out->name);
        /* The tensor becomes a constant value "<node>.<attr>" the attribute points at. */
        const char *nn = rf_onnx_str(n->name);
        char base[256];
        if (nn[0])
            snprintf(base, sizeof base, "%.200s.%.40s", nn, out->name);
        else
            snprintf(base, sizeof base, "node%zu.%.40s", k, out->name);
        char *uname;
        RF_RETURN_IF_ERROR_PLAIN(rf_unique_name(im, base, &uname));
        out->type = RF_ATTR_TENSOR;
        RF_RETURN_IF_ERROR(rf_onnx_add_tensor(im->g, im->a, at->t, uname, &out->tensor),
                           "tensor attribute '%s'", out->name);
        break;
    }
    default:
        out->type = RF_ATTR_OTHER;
        break;
    }
    return RF_OK;
}

/* Pass 1: creates every node output value (Constant nodes become constants). */
static rf_status_t rf_create_outputs(rf_importer_t *im, int **out_outputs) {
    size_t total = 0;
    for (size_t k = 0; k < im->n_nodes; k++)
        total += im->nodes[k]->n_output;
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&im->tmp, sizeof(int) * (total + 1), &p));
    int *outs = p;
    size_t pos = 0;
    char desc[300];
    for (size_t k = 0; k < im->n_nodes; k++) {
        const Onnx__NodeProto *n = im->nodes[k];
        const char *op = rf_onnx_str(n->op_type);
        if (!op[0])
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s has no op_type",
                          rf_describe(n, k, desc, sizeof desc));
        if (n->n_input > 65536 || n->n_output > 65536)
            return RF_ERR(RF_CODE_UNSUPPORTED, "%s has %zu inputs and %zu outputs",
                          rf_describe(n, k, desc, sizeof desc), n->n_input, n->n_output);
        if (strcmp(op, "Constant") == 0 && rf_is_default_domain(n->domain)) {
            RF_RETURN_IF_ERROR(rf_fold_constant(im, n), "%s", rf_describe(n, k, desc, sizeof desc));
            pos += n->n_output;
            continue;
        }
        for (size_t i = 0; i < n->n_output; i++) {
            const char *name = rf_onnx_str(n->output[i]);
            char *uname;
            if (!name[0]) {
                /* An omitted optional output: give it a private placeholder value. */
                char base[64];
                snprintf(base, sizeof base, "node%zu.unused%zu", k, i);
                RF_RETURN_IF_ERROR_PLAIN(rf_unique_name(im, base, &uname));
                name = uname;
            } else {
                int idx = rf_graph_find_value(im->g, name);
                if (idx >= 0)
                    return RF_ERR(RF_CODE_PARSE_ERROR, "%s: output '%s' is already defined by %s",
                                  rf_describe(n, k, desc, sizeof desc), name,
                                  rf_definer(im->g, idx));
            }
            RF_RETURN_IF_ERROR(
                rf_graph_add_value(im->g, name, RF_DTYPE_UNDEFINED, NULL, &outs[pos + i]), "%s",
                rf_describe(n, k, desc, sizeof desc));
        }
        pos += n->n_output;
    }
    *out_outputs = outs;
    return RF_OK;
}

/* Pass 2: resolves inputs and attributes, adds the nodes. */
static rf_status_t rf_add_nodes(rf_importer_t *im, const int *outs) {
    size_t pos = 0;
    char desc[300];
    void *p;
    for (size_t k = 0; k < im->n_nodes; k++) {
        const Onnx__NodeProto *n = im->nodes[k];
        const char *op = rf_onnx_str(n->op_type);
        if (strcmp(op, "Constant") == 0 && rf_is_default_domain(n->domain)) {
            pos += n->n_output;
            continue;
        }
        RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&im->tmp, sizeof(int) * (n->n_input + 1), &p));
        int *ins = p;
        for (size_t i = 0; i < n->n_input; i++) {
            const char *name = rf_onnx_str(n->input[i]);
            ins[i] = name[0] ? rf_graph_find_value(im->g, name) : -1;
            if (name[0] && ins[i] < 0)
                return RF_ERR(RF_CODE_NOT_FOUND,
                              "%s: input %zu '%s' is not a graph input, an initializer or any "
                              "node's output",
                              rf_describe(n, k, desc, sizeof desc), i, name);
        }
        RF_RETURN_IF_ERROR_PLAIN(
            rf_arena_alloc(&im->tmp, sizeof(rf_attr_t) * (n->n_attribute + 1), &p));
        rf_attr_t *attrs = p;
        if (n->n_attribute > 65536)
            return RF_ERR(RF_CODE_UNSUPPORTED, "%s has %zu attributes",
                          rf_describe(n, k, desc, sizeof desc), n->n_attribute);
        for (size_t i = 0; i < n->n_attribute; i++) {
            RF_RETURN_IF_ERROR(rf_convert_attr(im, n, k, n->attribute[i], &attrs[i]), "%s",
                               rf_describe(n, k, desc, sizeof desc));
            for (size_t j = 0; j < i; j++)
                if (strcmp(attrs[j].name, attrs[i].name) == 0)
                    return RF_ERR(RF_CODE_PARSE_ERROR, "%s: attribute '%s' appears twice",
                                  rf_describe(n, k, desc, sizeof desc), attrs[i].name);
        }
        RF_RETURN_IF_ERROR(rf_graph_add_node(im->g, rf_onnx_str(n->name), op,
                                             rf_onnx_str(n->domain), ins, (int)n->n_input,
                                             outs + pos, (int)n->n_output, attrs,
                                             (int)n->n_attribute, NULL),
                           "%s", rf_describe(n, k, desc, sizeof desc));
        pos += n->n_output;
    }
    return RF_OK;
}

/* ---- declared types and outputs ---- */

static rf_status_t rf_import_value_info(rf_importer_t *im) {
    const Onnx__GraphProto *gp = im->gp;
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&im->tmp, (size_t)rf_graph_value_count(im->g) + 1, &p));
    char *seen = p;
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        const char *name = rf_onnx_str(vi->name);
        if (!name[0])
            return RF_ERR(RF_CODE_PARSE_ERROR, "value_info %zu has no name", i);
        int idx = rf_graph_find_value(im->g, name);
        if (idx < 0)
            continue; /* a hint about a value the graph does not use */
        if (seen[idx])
            return RF_ERR(RF_CODE_PARSE_ERROR, "value_info '%s' is declared twice", name);
        seen[idx] = 1;
        rf_onnx_type_t t;
        RF_RETURN_IF_ERROR(rf_onnx_read_type(vi->type, &t), "value_info %s", name);
        RF_RETURN_IF_ERROR_PLAIN(rf_apply_declared(im, idx, &t, "value"));
    }
    return RF_OK;
}

static rf_status_t rf_import_outputs(rf_importer_t *im) {
    const Onnx__GraphProto *gp = im->gp;
    if (gp->n_output == 0)
        return RF_ERR(RF_CODE_PARSE_ERROR, "graph declares no outputs");
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        const char *name = rf_onnx_str(vi->name);
        if (!name[0])
            return RF_ERR(RF_CODE_PARSE_ERROR, "graph output %zu has no name", i);
        int idx = rf_graph_find_value(im->g, name);
        if (idx < 0)
            return RF_ERR(RF_CODE_NOT_FOUND,
                          "graph output '%s' is not produced by any node, input or initializer",
                          name);
        for (int j = 0; j < rf_graph_output_count(im->g); j++)
            if (rf_graph_output(im->g, j) == idx)
                return RF_ERR(RF_CODE_PARSE_ERROR, "graph output '%s' is listed twice", name);
        rf_onnx_type_t t;
        RF_RETURN_IF_ERROR(rf_onnx_read_type(vi->type, &t), "output %s", name);
        RF_RETURN_IF_ERROR_PLAIN(rf_apply_declared(im, idx, &t, "output"));
        RF_RETURN_IF_ERROR_PLAIN(rf_graph_add_output(im->g, idx));
    }
    return RF_OK;
}

static rf_status_t rf_import_model(rf_importer_t *im) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    if (first != 1)
        return RF_ERR(RF_CODE_UNSUPPORTED, "ONNX import needs a little-endian host");
    if (!im->model->graph)
        return RF_ERR(RF_CODE_PARSE_ERROR, "model has no graph");
    im->gp = im->model->graph;
    RF_RETURN_IF_ERROR_PLAIN(rf_import_initializers(im));
    RF_RETURN_IF_ERROR_PLAIN(rf_import_inputs(im));
    RF_RETURN_IF_ERROR_PLAIN(rf_onnx_flatten(im->a, &im->tmp, im->model, &im->nodes, &im->n_nodes));
    int *outs = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_create_outputs(im, &outs));
    RF_RETURN_IF_ERROR_PLAIN(rf_add_nodes(im, outs));
    RF_RETURN_IF_ERROR_PLAIN(rf_import_value_info(im));
    RF_RETURN_IF_ERROR_PLAIN(rf_import_outputs(im));
    if (rf_graph_node_count(im->g) == 0)
        return RF_ERR(RF_CODE_UNSUPPORTED, "graph has no nodes: nothing to compute");
    return rf_graph_toposort(im->g);
}

rf_status_t rf_onnx_import_buffer(rf_allocator_t allocator, const uint8_t *data, size_t size,
                                  rf_graph_t **out_graph) {
    *out_graph = NULL;
    if (!data && size)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "NULL buffer of %zu bytes", size);
    rf_pb_alloc_ctx_t pctx = {allocator, 0};
    ProtobufCAllocator pba = {rf_pb_alloc, rf_pb_free, &pctx};
    static const uint8_t empty[1] = {0};
    Onnx__ModelProto *m = onnx__model_proto__unpack(&pba, size, data ? data : empty);
    if (!m) {
        if (pctx.failed)
            return RF_ERR(RF_CODE_OUT_OF_MEMORY, "out of memory decoding a %zu-byte ONNX model",
                          size);
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%zu bytes do not decode as an ONNX ModelProto (truncated, corrupt or not "
                      "an .onnx file)",
                      size);
    }
    rf_importer_t im;
    memset(&im, 0, sizeof im);
    im.a = allocator;
    im.model = m;
    rf_arena_init(&im.tmp, allocator);
    rf_status_t st = rf_graph_create(allocator, &im.g);
    if (!st)
        st = rf_import_model(&im);
    rf_free(allocator, im.nodes);
    rf_arena_deinit(&im.tmp);
    onnx__model_proto__free_unpacked(m, &pba);
    if (st) {
        rf_graph_destroy(im.g);
        return st;
    }
    *out_graph = im.g;
    return RF_OK;
}

rf_status_t rf_onnx_import_file(rf_allocator_t allocator, const char *path,
                                rf_graph_t **out_graph) {
    *out_graph = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return RF_ERR(errno == ENOENT ? RF_CODE_NOT_FOUND : RF_CODE_IO_ERROR, "%s: cannot open: %s",
                      path, strerror(errno));
    rf_status_t st = RF_OK;
    void *buf = NULL;
    long size = -1;
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && !S_ISREG(sb.st_mode)) {
        st = RF_ERR(RF_CODE_IO_ERROR, "%s: not a regular file", path);
    } else if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = RF_ERR(RF_CODE_IO_ERROR, "%s: cannot read: %s", path, strerror(errno));
    } else if (size > ((long)1 << 31) - 1) {
        st =
            RF_ERR(RF_CODE_UNSUPPORTED, "%s: %ld bytes is over protobuf's 2 GiB limit", path, size);
    } else {
        st = rf_alloc(allocator, (size_t)size + 1, "ONNX file", &buf);
        if (!st && size && fread(buf, 1, (size_t)size, f) != (size_t)size)
            st = RF_ERR(RF_CODE_IO_ERROR, "%s: short read", path);
    }
    fclose(f);
    if (!st)
        st = rf_status_annotate(rf_onnx_import_buffer(allocator, buf, (size_t)size, out_graph),
                                "%s", path);
    rf_free(allocator, buf);
    return st;
}
