/* Inlining of model-local ONNX functions (ModelProto.functions), see onnx_internal.h.
 *
 * A node whose (domain, op_type) names a function in the model is replaced by copies of
 * the function's body. Inside a call, the function's formal inputs and outputs become the
 * caller's actual names and every other value is renamed "<call>/<name>", where <call> is
 * unique per call site, so two calls never share an inner value. Attributes that refer to
 * the caller's attributes (ref_attr_name) are resolved at the call. Copies are shallow:
 * the copied NodeProto structs point into the unpacked model and into `arena`. Depth and
 * the total node count are bounded so a hostile file cannot make us loop or explode.
 */
#include <stdio.h>
#include <string.h>

#include "onnx/onnx_internal.h"

typedef struct rf_flat {
    rf_allocator_t a;
    rf_arena_t *arena;
    const Onnx__ModelProto *model;
    const Onnx__NodeProto **nodes;
    size_t n, cap;
    size_t calls;
    size_t copies; /* inner nodes copied so far, including calls that expand to nothing */
} rf_flat_t;

static int rf_domain_eq(const char *a, const char *b) {
    a = rf_onnx_str(a);
    b = rf_onnx_str(b);
    if (strcmp(a, "ai.onnx") == 0)
        a = "";
    if (strcmp(b, "ai.onnx") == 0)
        b = "";
    return strcmp(a, b) == 0;
}

static const Onnx__FunctionProto *rf_find_function(const Onnx__ModelProto *m,
                                                   const Onnx__NodeProto *node) {
    for (size_t i = 0; i < m->n_functions; i++) {
        const Onnx__FunctionProto *f = m->functions[i];
        if (strcmp(rf_onnx_str(f->name), rf_onnx_str(node->op_type)) == 0 &&
            rf_domain_eq(f->domain, node->domain))
            return f;
    }
    return NULL;
}

static rf_status_t rf_push(rf_flat_t *fl, const Onnx__NodeProto *node) {
    if (fl->n >= RF_ONNX_MAX_NODES)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "model has more than %d nodes (after inlining functions)", RF_ONNX_MAX_NODES);
    RF_RETURN_IF_ERROR_PLAIN(
        rf_grow(fl->a, (void **)&fl->nodes, &fl->cap, fl->n + 1, sizeof(*fl->nodes), "ONNX nodes"));
    fl->nodes[fl->n++] = node;
    return RF_OK;
}

static rf_status_t rf_join(rf_arena_t *arena, const char *prefix, const char *name, char **out) {
    size_t np = strlen(prefix), nn = strlen(name);
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(arena, np + nn + 2, &p));
    char *s = p;
    memcpy(s, prefix, np);
    s[np] = '/';
    memcpy(s + np + 1, name, nn + 1);
    *out = s;
    return RF_OK;
}

/* Maps a name inside the function body to the name it has at this call. */
static rf_status_t rf_map_name(rf_arena_t *arena, const Onnx__FunctionProto *f,
                               const Onnx__NodeProto *call, const char *prefix, const char *name,
                               char **out) {
    name = rf_onnx_str(name);
    if (!name[0]) {
        *out = (char *)"";
        return RF_OK;
    }
    for (size_t i = 0; i < f->n_input; i++)
        if (strcmp(rf_onnx_str(f->input[i]), name) == 0) {
            *out = i < call->n_input ? call->input[i] : (char *)"";
            return RF_OK;
        }
    for (size_t i = 0; i < f->n_output; i++)
        if (strcmp(rf_onnx_str(f->output[i]), name) == 0 && i < call->n_output &&
            rf_onnx_str(call->output[i])[0]) {
            *out = call->output[i];
            return RF_OK;
        }
    return rf_join(arena, prefix, name, out);
}

static rf_status_t rf_emit(rf_flat_t *fl, const Onnx__NodeProto *node, int depth);

static rf_status_t rf_expand_call(rf_flat_t *fl, const Onnx__FunctionProto *f,
                                  const Onnx__NodeProto *call, int depth) {
    const char *fname = rf_onnx_str(f->name);
    if (depth >= RF_ONNX_MAX_CALL_DEPTH)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "function '%s' is called more than %d levels deep (recursive?)", fname,
                      RF_ONNX_MAX_CALL_DEPTH);
    if (call->n_input > f->n_input || call->n_output > f->n_output)
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "call of function '%s' passes %zu inputs and %zu outputs; it declares %zu "
                      "and %zu",
                      fname, call->n_input, call->n_output, f->n_input, f->n_output);
    char idbuf[64];
    snprintf(idbuf, sizeof idbuf, "#%zu", fl->calls++);
    char *prefix;
    const char *cname = rf_onnx_str(call->name);
    RF_RETURN_IF_ERROR_PLAIN(rf_join(fl->arena, cname[0] ? cname : fname, idbuf, &prefix));
    prefix[strlen(cname[0] ? cname : fname)] = ':'; /* "<call>:#k" */
    for (size_t k = 0; k < f->n_node; k++) {
        const Onnx__NodeProto *inner = f->node[k];
        if (++fl->copies > (size_t)RF_ONNX_MAX_NODES)
            return RF_ERR(RF_CODE_UNSUPPORTED, "inlining function '%s' makes more than %d nodes",
                          fname, RF_ONNX_MAX_NODES);
        void *p;
        RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(fl->arena, sizeof(Onnx__NodeProto), &p));
        Onnx__NodeProto *copy = p;
        *copy = *inner;
        RF_RETURN_IF_ERROR_PLAIN(
            rf_arena_alloc(fl->arena, sizeof(char *) * (inner->n_input + 1), &p));
        copy->input = p;
        for (size_t i = 0; i < inner->n_input; i++)
            RF_RETURN_IF_ERROR_PLAIN(
                rf_map_name(fl->arena, f, call, prefix, inner->input[i], &copy->input[i]));
        RF_RETURN_IF_ERROR_PLAIN(
            rf_arena_alloc(fl->arena, sizeof(char *) * (inner->n_output + 1), &p));
        copy->output = p;
        for (size_t i = 0; i < inner->n_output; i++)
            RF_RETURN_IF_ERROR_PLAIN(
                rf_map_name(fl->arena, f, call, prefix, inner->output[i], &copy->output[i]));
        RF_RETURN_IF_ERROR_PLAIN(rf_join(
            fl->arena, prefix,
            rf_onnx_str(inner->name)[0] ? inner->name : rf_onnx_str(inner->op_type), &copy->name));
        /* Attributes: resolve references to the caller's attributes; drop unresolved ones
         * (the op's default applies, as in ONNX). */
        RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(
            fl->arena, sizeof(Onnx__AttributeProto *) * (inner->n_attribute + 1), &p));
        copy->attribute = p;
        copy->n_attribute = 0;
        for (size_t i = 0; i < inner->n_attribute; i++) {
            Onnx__AttributeProto *at = inner->attribute[i];
            const char *ref = rf_onnx_str(at->ref_attr_name);
            if (!ref[0]) {
                copy->attribute[copy->n_attribute++] = at;
                continue;
            }
            for (size_t j = 0; j < call->n_attribute; j++) {
                if (strcmp(rf_onnx_str(call->attribute[j]->name), ref) != 0)
                    continue;
                RF_RETURN_IF_ERROR_PLAIN(
                    rf_arena_alloc(fl->arena, sizeof(Onnx__AttributeProto), &p));
                Onnx__AttributeProto *resolved = p;
                *resolved = *call->attribute[j];
                resolved->name = at->name;
                resolved->ref_attr_name = NULL;
                copy->attribute[copy->n_attribute++] = resolved;
                break;
            }
        }
        RF_RETURN_IF_ERROR(rf_emit(fl, copy, depth + 1), "in function '%s'", fname);
    }
    return RF_OK;
}

static rf_status_t rf_emit(rf_flat_t *fl, const Onnx__NodeProto *node, int depth) {
    const Onnx__FunctionProto *f = rf_find_function(fl->model, node);
    if (!f)
        return rf_push(fl, node);
    return rf_expand_call(fl, f, node, depth);
}

rf_status_t rf_onnx_flatten(rf_allocator_t a, rf_arena_t *arena, const Onnx__ModelProto *m,
                            const Onnx__NodeProto ***out_nodes, size_t *out_count) {
    rf_flat_t fl;
    memset(&fl, 0, sizeof fl);
    fl.a = a;
    fl.arena = arena;
    fl.model = m;
    *out_nodes = NULL;
    *out_count = 0;
    const Onnx__GraphProto *gp = m->graph;
    for (size_t i = 0; i < gp->n_node; i++) {
        rf_status_t st = rf_emit(&fl, gp->node[i], 0);
        if (st) {
            rf_free(a, fl.nodes);
            return st;
        }
    }
    *out_nodes = fl.nodes;
    *out_count = fl.n;
    return RF_OK;
}
