/* Finding the residual-MLP block inside a larger model, for the GPU path. rf_mlp_match
 * (src/compile) recognises a graph that *is* the block; a model with a classifier head is
 * more than that. So, for each Relu output that is computed from the model input alone,
 * this file copies the part of the graph that computes it into a graph of its own and asks
 * rf_mlp_match about that. The first match is the block; its weights are taken from the
 * model (W1 [C, H], W2 [H, C] rounded to fp16, biases f32: the package's layout) and the
 * nodes it covers are what runs on the GPU. */
#include <string.h>

#include "eval/eval_internal.h"
#include "rowfuse/tensor.h"

/* Marks the nodes computing `target` and the values they touch. Returns 1 when the only
 * non-constant source is `input`. */
static int rf_cone(const rf_graph_t *g, int target, int input, unsigned char *nodes,
                   unsigned char *values) {
    int nv = rf_graph_value_count(g), nn = rf_graph_node_count(g);
    memset(nodes, 0, (size_t)nn);
    memset(values, 0, (size_t)nv);
    values[target] = 1;
    for (int k = nn - 1; k >= 0; k--) {
        const rf_node_t *node = rf_graph_node(g, k);
        int need = 0;
        for (int i = 0; i < node->n_outputs; i++)
            need |= node->outputs[i] >= 0 && values[node->outputs[i]];
        if (!need)
            continue;
        nodes[k] = 1;
        for (int i = 0; i < node->n_outputs; i++)
            if (node->outputs[i] >= 0)
                values[node->outputs[i]] = 1;
        for (int i = 0; i < node->n_inputs; i++)
            if (node->inputs[i] >= 0)
                values[node->inputs[i]] = 1;
        for (int i = 0; i < node->n_attrs; i++)
            if (node->attrs[i].type == RF_ATTR_TENSOR && node->attrs[i].tensor >= 0)
                values[node->attrs[i].tensor] = 1;
    }
    for (int v = 0; v < nv; v++) {
        const rf_value_t *val = rf_graph_value(g, v);
        if (values[v] && val->producer < 0 && !val->is_const && v != input)
            return 0;
    }
    return 1;
}

static rf_status_t rf_copy_node(rf_allocator_t a, const rf_graph_t *g, rf_graph_t *sub,
                                const rf_node_t *node, const int *map) {
    int *io;
    rf_attr_t *attrs;
    size_t n_io = (size_t)(node->n_inputs + node->n_outputs) + 1;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, n_io * sizeof *io, "block node", (void **)&io));
    rf_status_t st =
        rf_alloc(a, (size_t)(node->n_attrs + 1) * sizeof *attrs, "block attrs", (void **)&attrs);
    if (!st) {
        for (int i = 0; i < node->n_inputs; i++)
            io[i] = node->inputs[i] < 0 ? -1 : map[node->inputs[i]];
        for (int i = 0; i < node->n_outputs; i++)
            io[node->n_inputs + i] = node->outputs[i] < 0 ? -1 : map[node->outputs[i]];
        for (int i = 0; i < node->n_attrs; i++) {
            attrs[i] = node->attrs[i];
            if (attrs[i].type == RF_ATTR_TENSOR && attrs[i].tensor >= 0)
                attrs[i].tensor = map[attrs[i].tensor];
        }
        st = rf_graph_add_node(sub, node->name, node->op_type, node->domain, io, node->n_inputs,
                               io + node->n_inputs, node->n_outputs, attrs, node->n_attrs, NULL);
        rf_free(a, attrs);
    }
    rf_free(a, io);
    (void)g;
    return st;
}

/* The marked part of g as a graph of its own, reading `input`, giving `target`. */
static rf_status_t rf_subgraph(rf_allocator_t a, const rf_graph_t *g, const unsigned char *nodes,
                               const unsigned char *values, int input, int target, int *map,
                               rf_graph_t **out_sub) {
    rf_graph_t *sub;
    *out_sub = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_graph_create(a, &sub));
    rf_status_t st = RF_OK;
    for (int v = 0; !st && v < rf_graph_value_count(g); v++) {
        map[v] = -1;
        if (!values[v])
            continue;
        const rf_value_t *val = rf_graph_value(g, v);
        if (val->is_const)
            st = rf_graph_add_const(sub, val->name, val->dtype, &val->shape, val->data, val->nbytes,
                                    &map[v]);
        else
            st = rf_graph_add_value(sub, val->name, val->dtype, val->has_shape ? &val->shape : NULL,
                                    &map[v]);
    }
    for (int k = 0; !st && k < rf_graph_node_count(g); k++)
        if (nodes[k])
            st = rf_copy_node(a, g, sub, rf_graph_node(g, k), map);
    if (!st)
        st = rf_graph_add_input(sub, map[input]);
    if (!st)
        st = rf_graph_add_output(sub, map[target]);
    if (st) {
        rf_graph_destroy(sub);
        return st;
    }
    *out_sub = sub;
    return RF_OK;
}

/* Copies the weights (block indices are the model's) into the package layout. */
/* The block's weights in the kernels' layout (rf_mlp_weights_from_graph, the compiler's
 * own extraction), moved into the eval block. */
static rf_status_t rf_block_weights(rf_allocator_t a, const rf_graph_t *g, const rf_mlp_block_t *b,
                                    rf_eval_block_t *out) {
    rf_mlp_weights_t w;
    RF_RETURN_IF_ERROR_PLAIN(rf_mlp_weights_from_graph(a, g, b, &w));
    out->w1 = w.w1;
    out->w2 = w.w2;
    out->b1 = w.b1;
    out->b2 = w.b2;
    return RF_OK;
}

/* Block indices of the subgraph, as indices of the model graph (names are unique). */
static void rf_block_to_model(const rf_graph_t *g, const rf_graph_t *sub, rf_mlp_block_t *b) {
    int *idx[] = {&b->x, &b->y, &b->w1, &b->b1, &b->w2, &b->b2};
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++)
        *idx[i] = rf_graph_find_value(g, rf_graph_value(sub, *idx[i])->name);
}

/* Tries the Relu output `target`: 1 in *out_found when it ends a block. */
static rf_status_t rf_try_candidate(rf_allocator_t a, const rf_graph_t *g, int target,
                                    unsigned char *nodes, unsigned char *values, int *map,
                                    rf_mlp_block_t *out_block, rf_status_t *out_why) {
    int input = rf_graph_input(g, 0);
    rf_graph_t *sub;
    if (!rf_cone(g, target, input, nodes, values))
        return RF_OK;
    RF_RETURN_IF_ERROR_PLAIN(rf_subgraph(a, g, nodes, values, input, target, map, &sub));
    rf_status_t why = rf_mlp_match(sub, out_block);
    if (!why)
        rf_block_to_model(g, sub, out_block);
    rf_graph_destroy(sub);
    rf_status_free(*out_why);
    *out_why = why; /* the last candidate's reason, for the error when none matches */
    return RF_OK;
}

rf_status_t rf_eval_block_find(rf_allocator_t a, const rf_graph_t *g, rf_eval_block_t *out) {
    int nv = rf_graph_value_count(g), nn = rf_graph_node_count(g);
    memset(out, 0, sizeof *out);
    if (rf_graph_input_count(g) != 1)
        return RF_ERR(RF_CODE_UNSUPPORTED, "the GPU path needs a model with one input");
    unsigned char *values;
    int *map;
    rf_mlp_block_t b;
    rf_status_t why = RF_OK, st;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc_zeroed(a, (size_t)nn + 1, 1, "block nodes", (void **)&out->node_in_block));
    st = rf_alloc_zeroed(a, (size_t)nv + 1, 1 + sizeof *map, "block values", (void **)&values);
    if (st) {
        rf_eval_block_free(a, out);
        return st;
    }
    map = (int *)(values + ((size_t)nv + 1 + sizeof(int)) / sizeof(int) * sizeof(int));
    int found = 0;
    for (int k = 0; !st && !found && k < nn; k++) {
        const rf_node_t *node = rf_graph_node(g, k);
        if (node->op != RF_OP_RELU || node->n_outputs < 1 || node->outputs[0] < 0)
            continue;
        st = rf_try_candidate(a, g, node->outputs[0], out->node_in_block, values, map, &b, &why);
        found = !st && why == RF_OK;
    }
    if (!st && !found)
        st = why ? rf_status_annotate(why, "no residual-MLP block reads the model input; the "
                                           "closest candidate")
                 : RF_ERR(RF_CODE_UNSUPPORTED,
                          "no residual-MLP block (Relu(Relu(X W1 + b1) W2 + b2 + X)) reads the "
                          "model input; --gpu runs only that block");
    else
        rf_status_free(why);
    if (!st) {
        out->x = b.x;
        out->y = b.y;
        out->channels = b.channels;
        out->hidden = b.hidden;
        st = rf_block_weights(a, g, &b, out);
    }
    rf_free(a, values);
    if (st)
        rf_eval_block_free(a, out);
    return st;
}

void rf_eval_block_free(rf_allocator_t a, rf_eval_block_t *b) {
    rf_free(a, b->w1);
    rf_free(a, b->w2);
    rf_free(a, b->b1);
    rf_free(a, b->b2);
    rf_free(a, b->node_in_block);
    memset(b, 0, sizeof *b);
}
