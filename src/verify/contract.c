/* The row contract object: its reasons (filled by rows.c), getters and release, and its
 * two renderings, as JSON (rf_contract_write_json) and as a readable summary for the CLI
 * (rf_contract_print). Both list the same facts: the row dim, the inputs, outputs and
 * weights with shapes and dtypes, the op sequence, and each value's row state and reason. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "verify/verify_internal.h"

rf_status_t rf_contract_set_reason(rf_contract_t *c, int value, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&c->arena, buf, &s));
    c->reason[value] = s;
    return RF_OK;
}

void rf_contract_destroy(rf_contract_t *c) {
    if (!c)
        return;
    rf_allocator_t a = c->allocator;
    rf_arena_deinit(&c->arena);
    rf_free(a, c->state);
    rf_free(a, (void *)c->reason);
    rf_free(a, c);
}

int64_t rf_contract_rows(const rf_contract_t *c) {
    return c ? c->rows : 0;
}

rf_row_state_t rf_contract_row_state(const rf_contract_t *c, int value) {
    if (!c || value < 0 || value >= c->n_values)
        return RF_ROW_CONST;
    return c->state[value];
}

const char *rf_contract_reason(const rf_contract_t *c, int value) {
    if (!c || value < 0 || value >= c->n_values || !c->reason[value])
        return "";
    return c->reason[value];
}

static const char *rf_state_name(rf_row_state_t s) {
    return s == RF_ROW_OWNED ? "row_owned" : "const";
}

static void json_shape(rf_json_writer_t *w, const rf_shape_t *s) {
    rf_json_array_begin_flat(w);
    for (int i = 0; i < s->rank; i++)
        rf_json_int(w, s->dims[i]);
    rf_json_array_end(w);
}

static void json_value(rf_json_writer_t *w, const rf_contract_t *c, int v, int with_reason) {
    const rf_value_t *x = rf_graph_value(c->graph, v);
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", x->name);
    rf_json_key_string(w, "dtype", rf_dtype_name(x->dtype));
    rf_json_key(w, "shape");
    json_shape(w, &x->shape);
    rf_json_key_string(w, "state", rf_state_name(c->state[v]));
    if (x->is_const)
        rf_json_key_int(w, "bytes", (int64_t)x->nbytes);
    if (with_reason)
        rf_json_key_string(w, "reason", rf_contract_reason(c, v));
    rf_json_object_end(w);
}

static void json_names(rf_json_writer_t *w, const rf_graph_t *g, const int *vals, int n) {
    rf_json_array_begin_flat(w);
    for (int i = 0; i < n; i++)
        rf_json_string(w, vals[i] >= 0 ? rf_graph_value(g, vals[i])->name : "");
    rf_json_array_end(w);
}

rf_status_t rf_contract_write_json(const rf_contract_t *c, FILE *f) {
    if (!c || !f)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_contract_write_json: no contract or file");
    const rf_graph_t *g = c->graph;
    rf_json_writer_t w;
    rf_json_writer_init_file(&w, f, 2);
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "format", "rowfuse-row-contract/1");
    rf_json_key(&w, "row_dim");
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "input", rf_graph_value(g, c->row_input)->name);
    rf_json_key_int(&w, "axis", 0);
    rf_json_key_int(&w, "extent", c->rows);
    rf_json_object_end(&w);

    rf_json_key(&w, "inputs");
    rf_json_array_begin(&w);
    for (int i = 0; i < rf_graph_input_count(g); i++)
        if (!rf_graph_value(g, rf_graph_input(g, i))->is_const)
            json_value(&w, c, rf_graph_input(g, i), 0);
    rf_json_array_end(&w);
    rf_json_key(&w, "outputs");
    rf_json_array_begin(&w);
    for (int i = 0; i < rf_graph_output_count(g); i++)
        json_value(&w, c, rf_graph_output(g, i), 0);
    rf_json_array_end(&w);
    rf_json_key(&w, "weights");
    rf_json_array_begin(&w);
    for (int v = 0; v < c->n_values; v++)
        if (rf_graph_value(g, v)->is_const)
            json_value(&w, c, v, 0);
    rf_json_array_end(&w);

    rf_json_key(&w, "ops");
    rf_json_array_begin(&w);
    for (int k = 0; k < rf_graph_node_count(g); k++) {
        const rf_node_t *n = rf_graph_node(g, k);
        rf_json_object_begin(&w);
        rf_json_key_int(&w, "index", k);
        rf_json_key_string(&w, "name", n->name);
        rf_json_key_string(&w, "op", n->op_type);
        rf_json_key(&w, "inputs");
        json_names(&w, g, n->inputs, n->n_inputs);
        rf_json_key(&w, "outputs");
        json_names(&w, g, n->outputs, n->n_outputs);
        rf_json_object_end(&w);
    }
    rf_json_array_end(&w);

    rf_json_key(&w, "values");
    rf_json_array_begin(&w);
    for (int v = 0; v < c->n_values; v++)
        if (c->reason[v])
            json_value(&w, c, v, 1);
    rf_json_array_end(&w);
    rf_json_object_end(&w);
    RF_RETURN_IF_ERROR(rf_json_writer_finish(&w), "writing the row contract");
    if (ferror(f))
        return RF_ERR(RF_CODE_IO_ERROR, "writing the row contract failed");
    return RF_OK;
}

static void print_value(FILE *f, const rf_contract_t *c, int v) {
    const rf_value_t *x = rf_graph_value(c->graph, v);
    char s[128];
    fprintf(f, "%s %s %s", x->name, rf_dtype_name(x->dtype),
            rf_shape_format(&x->shape, s, sizeof s));
}

rf_status_t rf_contract_print(const rf_contract_t *c, FILE *f) {
    if (!c || !f)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_contract_print: no contract or file");
    const rf_graph_t *g = c->graph;
    size_t weight_bytes = 0;
    int n_weights = 0;
    fprintf(f, "row contract\n");
    fprintf(f, "  row dim: dim 0 of '%s', %lld rows\n", rf_graph_value(g, c->row_input)->name,
            (long long)c->rows);
    fprintf(f, "  inputs:\n");
    for (int i = 0; i < rf_graph_input_count(g); i++)
        if (!rf_graph_value(g, rf_graph_input(g, i))->is_const) {
            fprintf(f, "    ");
            print_value(f, c, rf_graph_input(g, i));
            fprintf(f, "\n");
        }
    fprintf(f, "  outputs:\n");
    for (int i = 0; i < rf_graph_output_count(g); i++) {
        fprintf(f, "    ");
        print_value(f, c, rf_graph_output(g, i));
        fprintf(f, "\n");
    }
    fprintf(f, "  weights:\n");
    for (int v = 0; v < c->n_values; v++) {
        const rf_value_t *x = rf_graph_value(g, v);
        if (!x->is_const)
            continue;
        fprintf(f, "    ");
        print_value(f, c, v);
        fprintf(f, "\n");
        weight_bytes += x->nbytes;
        n_weights++;
    }
    fprintf(f, "    (%d constants, %zu bytes)\n", n_weights, weight_bytes);
    fprintf(f, "  ops:\n");
    for (int k = 0; k < rf_graph_node_count(g); k++) {
        const rf_node_t *n = rf_graph_node(g, k);
        fprintf(f, "    %3d %-18s", k, n->op_type);
        for (int i = 0; i < n->n_inputs; i++)
            fprintf(f, "%s%s", i ? ", " : " ",
                    n->inputs[i] >= 0 ? rf_graph_value(g, n->inputs[i])->name : "-");
        fprintf(f, " ->");
        for (int i = 0; i < n->n_outputs; i++)
            fprintf(f, "%s%s", i ? ", " : " ", rf_graph_value(g, n->outputs[i])->name);
        fprintf(f, "\n");
    }
    fprintf(f, "  why each value's rows are owned:\n");
    for (int v = 0; v < c->n_values; v++) {
        const rf_value_t *x = rf_graph_value(g, v);
        if (!c->reason[v] || x->is_const)
            continue;
        fprintf(f, "    %-24s %-9s %s\n", x->name,
                c->state[v] == RF_ROW_OWNED ? "row-owned" : "const", c->reason[v]);
    }
    if (ferror(f))
        return RF_ERR(RF_CODE_IO_ERROR, "printing the row contract failed");
    return RF_OK;
}
