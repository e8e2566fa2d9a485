/* rf_verify: the three checks of rowfuse/verify.h in order. (a) every op is in the
 * supported set, (b) every value a node or output touches has a static shape and dtype,
 * and re-running each node's shape rule gives exactly the stored shapes (the verifier
 * takes a const graph, so it requires rf_graph_infer_shapes to have run and checks that
 * it did rather than inferring on a copy), (c) row ownership (rows.c). On success it
 * returns the contract that the rest of the pipeline reads. */
#include <stdio.h>
#include <string.h>

#include "graph/shape_internal.h"
#include "verify/verify_internal.h"

#define RF_SUPPORTED_OPS                                                                           \
    "MatMul, Gemm, Add, Sub, Mul, Div, Pow, Relu, Gelu, Sigmoid, Tanh, Erf, Sqrt, Reciprocal, "    \
    "Neg, Exp, Log, Abs, Softplus, Sin, LeakyRelu, Elu, Mish, Greater, Where, Cast, "              \
    "Constant, "                                                                                   \
    "Identity, "                                                                                   \
    "ReduceMean/ReduceSum/ReduceMax over "                                                         \
    "features, LayerNormalization, RMSNormalization and Softmax over features, and "               \
    "Reshape/Flatten/Squeeze/Unsqueeze/Transpose/Expand/Slice/Concat/Gather where they keep "      \
    "rows on axis 0"

static rf_status_t rf_verify_op_set(const rf_graph_t *g) {
    char desc[RF_NODE_DESC_SIZE];
    for (int k = 0; k < rf_graph_node_count(g); k++) {
        const rf_node_t *n = rf_graph_node(g, k);
        if (n->op == RF_OP_UNKNOWN) {
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "%s: op '%s%s%s' is not supported; rowfuse "
                          "supports " RF_SUPPORTED_OPS,
                          rf_node_describe(g, k, desc, sizeof desc), n->domain,
                          n->domain[0] ? ":" : "", n->op_type);
        }
        if (n->op == RF_OP_GELU) {
            const rf_attr_t *a = rf_node_attr(n, "approximate");
            if (a && (a->type != RF_ATTR_STRING || !a->s ||
                      (strcmp(a->s, "none") != 0 && strcmp(a->s, "tanh") != 0)))
                return RF_ERR(RF_CODE_UNSUPPORTED,
                              "%s: approximate='%s' is not supported (use 'none' or 'tanh')",
                              rf_node_describe(g, k, desc, sizeof desc),
                              a->s ? a->s : "(not a string)");
        }
    }
    return RF_OK;
}

static int rf_value_typed(const rf_value_t *v) {
    return v->has_shape && v->dtype != RF_DTYPE_UNDEFINED;
}

static rf_status_t rf_verify_shapes(const rf_graph_t *g) {
    char desc[RF_NODE_DESC_SIZE], s1[128], s2[128];
    for (int i = 0; i < rf_graph_input_count(g); i++) {
        const rf_value_t *v = rf_graph_value(g, rf_graph_input(g, i));
        if (!rf_value_typed(v))
            return RF_ERR(RF_CODE_SHAPE_ERROR, "graph input '%s' has no static shape and dtype",
                          v->name);
    }
    for (int k = 0; k < rf_graph_node_count(g); k++) {
        const rf_node_t *n = rf_graph_node(g, k);
        for (int i = 0; i < n->n_inputs; i++) {
            const rf_value_t *v = rf_graph_value(g, n->inputs[i]);
            if (!v)
                continue;
            if (!rf_value_typed(v))
                return RF_ERR(RF_CODE_SHAPE_ERROR,
                              "%s: input '%s' has no static shape (was rf_graph_infer_shapes "
                              "run?)",
                              rf_node_describe(g, k, desc, sizeof desc), v->name);
            if (v->producer >= k)
                return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                              "%s: input '%s' is produced later (node %d); the graph is not "
                              "in topological order",
                              rf_node_describe(g, k, desc, sizeof desc), v->name, v->producer);
        }
        rf_dtype_t dt[RF_SHAPE_MAX_OUTPUTS];
        rf_shape_t sh[RF_SHAPE_MAX_OUTPUTS];
        int known;
        RF_RETURN_IF_ERROR(rf_shape_infer_node(g, k, dt, sh, &known), "%s",
                           rf_node_describe(g, k, desc, sizeof desc));
        if (!known)
            return RF_ERR(RF_CODE_INTERNAL, "%s: no shape rule",
                          rf_node_describe(g, k, desc, sizeof desc));
        for (int i = 0; i < n->n_outputs; i++) {
            const rf_value_t *v = rf_graph_value(g, n->outputs[i]);
            if (!rf_value_typed(v))
                return RF_ERR(RF_CODE_SHAPE_ERROR,
                              "%s: output '%s' has no static shape (was rf_graph_infer_shapes "
                              "run?)",
                              rf_node_describe(g, k, desc, sizeof desc), v->name);
            if (!rf_shape_equal(&v->shape, &sh[i]) || v->dtype != dt[i])
                return RF_ERR(RF_CODE_SHAPE_ERROR,
                              "%s: output '%s' is %s %s but the op gives %s %s",
                              rf_node_describe(g, k, desc, sizeof desc), v->name,
                              rf_dtype_name(v->dtype), rf_shape_format(&v->shape, s1, sizeof s1),
                              rf_dtype_name(dt[i]), rf_shape_format(&sh[i], s2, sizeof s2));
        }
    }
    for (int i = 0; i < rf_graph_output_count(g); i++) {
        const rf_value_t *v = rf_graph_value(g, rf_graph_output(g, i));
        if (!rf_value_typed(v))
            return RF_ERR(RF_CODE_SHAPE_ERROR, "graph output '%s' has no static shape", v->name);
    }
    return RF_OK;
}

rf_status_t rf_verify(const rf_graph_t *g, rf_contract_t **out_contract) {
    *out_contract = NULL;
    if (!g)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "no graph");
    if (rf_graph_input_count(g) < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "the graph has no inputs: nothing defines the "
                                                "row dim");
    if (rf_graph_output_count(g) < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "the graph has no outputs");
    RF_RETURN_IF_ERROR_PLAIN(rf_verify_op_set(g));
    RF_RETURN_IF_ERROR_PLAIN(rf_verify_shapes(g));

    rf_allocator_t a = rf_allocator_system();
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof(rf_contract_t), "contract", &p));
    rf_contract_t *c = p;
    c->allocator = a;
    rf_arena_init(&c->arena, a);
    c->graph = g;
    c->n_values = rf_graph_value_count(g);
    size_t nv = (size_t)(c->n_values ? c->n_values : 1);
    rf_status_t st = rf_alloc_zeroed(a, nv, sizeof(rf_row_state_t), "contract states", &p);
    if (!st) {
        c->state = p;
        st = rf_alloc_zeroed(a, nv, sizeof(const char *), "contract reasons", &p);
    }
    if (!st) {
        c->reason = p;
        st = rf_verify_rows(c);
    }
    if (st) {
        rf_contract_destroy(c);
        return st;
    }
    *out_contract = c;
    return RF_OK;
}
