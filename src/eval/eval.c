/* The evaluation job (rowfuse/eval.h): checks the model against the table, decides the
 * task, runs (a) the fp64 reference and (b) the compiled numerics over every row, records
 * which nodes ran where, and hands the outputs to the group statistics (eval_groups.c).
 * For --gpu the block runs first, so a machine without a GPU fails before any CPU work. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval/eval_internal.h"

void rf_eval_options_default(rf_eval_options_t *o) {
    memset(o, 0, sizeof *o);
    o->task = RF_EVAL_TASK_AUTO;
    o->backend = RF_EVAL_CPU_MIXED;
    o->min_count = 30;
    o->alpha = 0.05;
}

static rf_status_t rf_dup(rf_eval_report_t *r, const char *s, const char **out) {
    char *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&r->arena, s ? s : "", &p));
    *out = p;
    return RF_OK;
}

/* Decides classify or regress and checks the labels against it. */
static rf_status_t rf_eval_task_decide(rf_eval_report_t *r, const rf_eval_table_t *t, int64_t k) {
    rf_eval_task_t task = r->options.task;
    if (task == RF_EVAL_TASK_AUTO) {
        task = k >= 2 ? RF_EVAL_TASK_CLASSIFY : RF_EVAL_TASK_REGRESS;
        r->task_reason = k >= 2 ? "auto: the output has 2 or more columns (argmax over classes)"
                                : "auto: the output has one column";
    } else {
        r->task_reason = "given (--task)";
    }
    if (task == RF_EVAL_TASK_CLASSIFY && k < 2)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "--task classify takes the argmax over the output columns, and the model "
                      "has one; use --task regress, or a head with one output per class");
    if (task == RF_EVAL_TASK_REGRESS && k != 1)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "--task regress compares one output column with the label; the model has "
                      "%lld columns",
                      (long long)k);
    r->task = task;
    for (int64_t i = 0; task == RF_EVAL_TASK_CLASSIFY && i < t->rows; i++) {
        double y = t->labels[i];
        if (y != floor(y))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "%s: column '%s', row %lld: label %g is not a class index (labels are "
                          "integers 0..%lld for this model)",
                          t->path, t->label_name, (long long)(i + 1), y, (long long)(k - 1));
        if (y < 0 || y >= (double)k)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "%s: column '%s', row %lld: label %g is outside the model's %lld "
                          "classes (0..%lld)",
                          t->path, t->label_name, (long long)(i + 1), y, (long long)k,
                          (long long)(k - 1));
    }
    return RF_OK;
}

/* Copies what the report shows about the model, the table and the options. */
static rf_status_t rf_eval_describe(rf_eval_report_t *r, const rf_graph_t *g,
                                    const rf_eval_model_t *m, const rf_eval_table_t *t) {
    r->rows = t->rows;
    r->model_rows = m->rows;
    r->n_outputs = m->outputs;
    RF_RETURN_IF_ERROR_PLAIN(rf_dup(r, r->options.model_path, &r->model_path));
    r->options.model_path = r->model_path;
    r->options.package_dir = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_dup(r, t->path, &r->data_path));
    RF_RETURN_IF_ERROR_PLAIN(rf_dup(r, rf_graph_value(g, m->input)->name, &r->input_name));
    RF_RETURN_IF_ERROR_PLAIN(rf_dup(r, rf_graph_value(g, m->output)->name, &r->output_name));
    RF_RETURN_IF_ERROR_PLAIN(rf_dup(r, t->label_name, &r->label_name));
    const char **names;
    size_t n = (size_t)t->n_features + (size_t)t->n_slices + 1;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&r->arena, n * sizeof *names, (void **)&names));
    for (int f = 0; f < t->n_features; f++)
        RF_RETURN_IF_ERROR_PLAIN(rf_dup(r, t->feature_names[f], &names[f]));
    for (int s = 0; s < t->n_slices; s++)
        RF_RETURN_IF_ERROR_PLAIN(rf_dup(r, t->slices[s].name, &names[t->n_features + s]));
    r->n_features = t->n_features;
    r->feature_names = names;
    r->n_slices = t->n_slices;
    r->slice_names = names + t->n_features;
    return RF_OK;
}

/* Records where each node ran and builds the one-line summary. */
static rf_status_t rf_eval_place(rf_eval_report_t *r, const rf_graph_t *g, const int *ran,
                                 const unsigned char *on_gpu) {
    int nn = rf_graph_node_count(g);
    RF_RETURN_IF_ERROR_PLAIN(
        rf_arena_alloc(&r->arena, sizeof *r->nodes * (size_t)(nn + 1), (void **)&r->nodes));
    r->n_nodes = nn;
    for (int k = 0; k < nn; k++) {
        const rf_node_t *node = rf_graph_node(g, k);
        r->nodes[k].node = k;
        RF_RETURN_IF_ERROR_PLAIN(rf_dup(r, node->op_type, &r->nodes[k].op));
        RF_RETURN_IF_ERROR_PLAIN(rf_dup(r, node->name, &r->nodes[k].name));
        if (on_gpu && on_gpu[k] && ran[k])
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "node %d (%s) is part of the GPU block but a value it computes is also "
                          "read outside the block; --gpu needs the block output to be the only "
                          "value leaving the block",
                          k, node->op_type);
        r->nodes[k].where = on_gpu && on_gpu[k] ? RF_EVAL_WHERE_GPU
                            : ran[k]            ? RF_EVAL_WHERE_CPU
                                                : RF_EVAL_WHERE_SKIPPED;
    }
    /* "gpu: 0 Gemm, 1 Relu, ...; cpu: 5 Gemm" (long graphs end in "..."). */
    static const char *const where_name[] = {"cpu", "gpu", "skipped (not needed)"};
    static const rf_eval_where_t order[] = {RF_EVAL_WHERE_GPU, RF_EVAL_WHERE_CPU,
                                            RF_EVAL_WHERE_SKIPPED};
    char line[1024];
    size_t len = 0;
    line[0] = '\0';
    for (int o = 0; o < 3; o++) {
        int first = 1;
        for (int k = 0; k < nn; k++) {
            if (r->nodes[k].where != order[o])
                continue;
            if (len + 80 >= sizeof line) {
                snprintf(line + len, sizeof line - len, ", ...");
                return rf_dup(r, line, &r->placement);
            }
            char head[64];
            snprintf(head, sizeof head, "%s%s: ", len ? "; " : "", where_name[order[o]]);
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%d %.40s",
                                    first ? head : ", ", k, r->nodes[k].op);
            first = 0;
        }
    }
    return rf_dup(r, line, &r->placement);
}

/* (b) on the GPU: the block there, the remaining nodes on the interpreter (mixed). */
static rf_status_t rf_eval_compiled_gpu(rf_eval_report_t *r, const rf_graph_t *g,
                                        const rf_eval_model_t *m, const rf_eval_table_t *t,
                                        const char *package_dir, int *ran) {
    rf_allocator_t a = r->allocator;
    rf_eval_block_t b;
    float *yg = NULL;
    RF_RETURN_IF_ERROR(rf_eval_block_find(a, g, &b), "--gpu");
    rf_status_t st = RF_OK;
    if (b.x != m->input || b.channels != m->features)
        st = RF_ERR(RF_CODE_INTERNAL, "the block does not read the model input");
    if (!st)
        st = rf_alloc(a, (size_t)(t->rows * b.channels) * sizeof *yg, "GPU block output",
                      (void **)&yg);
    if (!st)
        st = rf_eval_gpu_block(a, package_dir, &b, t->features, t->rows, yg, &r->gpu);
    if (!st)
        st = rf_eval_model_forward(a, g, m, t, RF_PRECISION_MIXED, b.y, yg, b.channels, r->yb, ran);
    if (!st)
        st = rf_eval_place(r, g, ran, b.node_in_block);
    rf_free(a, yg);
    rf_eval_block_free(a, &b);
    return st;
}

static rf_status_t rf_eval_execute(rf_eval_report_t *r, const rf_graph_t *g,
                                   const rf_contract_t *contract, const rf_eval_table_t *t,
                                   const char *package_dir) {
    rf_allocator_t a = r->allocator;
    rf_eval_model_t m;
    int *ran = NULL;
    RF_RETURN_IF_ERROR(rf_eval_model_check(g, contract, t, &m), "%s", r->options.model_path);
    RF_RETURN_IF_ERROR_PLAIN(rf_eval_describe(r, g, &m, t));
    RF_RETURN_IF_ERROR_PLAIN(rf_eval_task_decide(r, t, m.outputs));
    size_t ny = (size_t)(t->rows * m.outputs);
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(a, ny * sizeof(double), "reference outputs", (void **)&r->ya));
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, ny * sizeof(double), "compiled outputs", (void **)&r->yb));
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, (size_t)rf_graph_node_count(g) + 1, sizeof *ran,
                                             "node placement", (void **)&ran));
    rf_status_t st;
    if (r->options.backend == RF_EVAL_GPU) {
        r->backend = "gpu";
        st = rf_eval_compiled_gpu(r, g, &m, t, package_dir, ran);
    } else {
        r->backend = "cpu-mixed";
        st = rf_eval_model_forward(a, g, &m, t, RF_PRECISION_MIXED, -1, NULL, 0, r->yb, ran);
        if (!st)
            st = rf_eval_place(r, g, ran, NULL);
    }
    if (!st)
        st = rf_eval_model_forward(a, g, &m, t, RF_PRECISION_FP64, -1, NULL, 0, r->ya, NULL);
    rf_free(a, ran);
    if (st)
        return st;
    rf_eval_rows_t rows = {t->rows, m.outputs, r->ya, r->yb, t->labels};
    return rf_eval_groups_compute(r, t, &rows);
}

rf_status_t rf_eval_run(rf_allocator_t a, const rf_graph_t *graph, const rf_contract_t *contract,
                        const rf_eval_table_t *table, const rf_eval_options_t *options,
                        rf_eval_report_t **out_report) {
    *out_report = NULL;
    if (!graph || !contract || !table || !options)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_eval_run: graph, contract, table and options "
                                                "are needed");
    if (options->min_count < 1 || !(options->alpha > 0.0 && options->alpha < 1.0))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "min count must be >= 1 and alpha in (0, 1)");
    if (table->n_slices > RF_EVAL_MAX_SLICES)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%d slice columns; at most %d", table->n_slices,
                      RF_EVAL_MAX_SLICES);
    if (options->backend == RF_EVAL_GPU && !options->package_dir)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--gpu needs --package PKGDIR (from `rowfuse "
                                                "compile`)");
    rf_eval_report_t *r;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof *r, "evaluation report", (void **)&r));
    r->allocator = a;
    rf_arena_init(&r->arena, a);
    r->options = *options;
    rf_status_t st = rf_eval_execute(r, graph, contract, table, options->package_dir);
    if (!st && options->package_dir)
        st = rf_dup(r, options->package_dir, &r->options.package_dir);
    if (st) {
        rf_eval_report_destroy(r);
        return st;
    }
    *out_report = r;
    return RF_OK;
}
