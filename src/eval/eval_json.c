/* The report as JSON, schema "rowfuse-eval/1" (documented field by field in
 * src/eval/README.md; python/rowfuse/eval/plot.py validates it). Values that do not apply
 * (accuracy for regression, p-values of slices not judged) are null. */
#include <math.h>

#include "base/json.h"
#include "eval/eval_internal.h"

static void rf_json_side(rf_json_writer_t *w, const char *key, const rf_eval_side_t *s,
                         int classify) {
    rf_json_key(w, key);
    rf_json_object_begin(w);
    if (classify) {
        rf_json_key_int(w, "correct", s->correct);
        rf_json_key_double(w, "accuracy", s->accuracy);
        rf_json_key_double(w, "low", s->low);
        rf_json_key_double(w, "high", s->high);
    } else {
        rf_json_key_double(w, "mae", s->mae);
        rf_json_key_double(w, "rmse", s->rmse);
    }
    rf_json_key_int(w, "nonfinite", s->nonfinite);
    rf_json_object_end(w);
}

static void rf_json_int_or_null(rf_json_writer_t *w, const char *key, int64_t v, int present) {
    rf_json_key(w, key);
    if (present)
        rf_json_int(w, v);
    else
        rf_json_null(w);
}

static void rf_json_group(rf_json_writer_t *w, const rf_eval_group_t *g, int classify) {
    static const char *const kinds[] = {"overall", "slice", "cross"};
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", g->name);
    rf_json_key_string(w, "kind", kinds[g->kind]);
    rf_json_key(w, "columns");
    rf_json_array_begin_flat(w);
    for (int i = 0; i < g->n_keys; i++)
        rf_json_string(w, g->columns[i]);
    rf_json_array_end(w);
    rf_json_key(w, "values");
    rf_json_array_begin_flat(w);
    for (int i = 0; i < g->n_keys; i++)
        rf_json_string(w, g->values[i]);
    rf_json_array_end(w);
    rf_json_key_int(w, "count", g->count);
    rf_json_side(w, "reference", &g->reference, classify);
    rf_json_side(w, "compiled", &g->compiled, classify);
    rf_json_key_double(w, "delta",
                       classify ? g->compiled.accuracy - g->reference.accuracy
                                : g->compiled.mae - g->reference.mae);
    rf_json_int_or_null(w, "flips", g->flips, classify);
    rf_json_key_double(w, "flip_rate", g->flip_rate);
    rf_json_key_double(w, "flip_low", g->flip_low);
    rf_json_key_double(w, "flip_high", g->flip_high);
    rf_json_int_or_null(w, "reference_only", g->reference_only, classify);
    rf_json_int_or_null(w, "compiled_only", g->compiled_only, classify);
    rf_json_key_double(w, "p_value", g->p_value);
    rf_json_key_double(w, "p_holm", g->p_holm);
    rf_json_key_double(w, "max_abs_dev", g->max_abs_dev);
    rf_json_key_double(w, "mean_abs_dev", g->mean_abs_dev);
    rf_json_key_bool(w, "too_small", g->too_small);
    rf_json_key_bool(w, "significant", g->significant);
    rf_json_object_end(w);
}

static void rf_json_strings(rf_json_writer_t *w, const char *key, const char *const *s, int n) {
    rf_json_key(w, key);
    rf_json_array_begin_flat(w);
    for (int i = 0; i < n; i++)
        rf_json_string(w, s[i]);
    rf_json_array_end(w);
}

static void rf_json_backends(rf_json_writer_t *w, const rf_eval_report_t *r) {
    static const char *const where[] = {"cpu", "gpu", "skipped"};
    int gpu = r->options.backend == RF_EVAL_GPU;
    rf_json_key(w, "reference");
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", "fp64");
    rf_json_key_string(w, "runs_on", "cpu");
    rf_json_object_end(w);
    rf_json_key(w, "compiled");
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", r->backend);
    rf_json_key_string(w, "precision", "mixed");
    rf_json_key_string(w, "device", gpu ? r->gpu.device : NULL);
    rf_json_key_string(w, "package", gpu ? r->options.package_dir : NULL);
    rf_json_key_string(w, "schedule", gpu ? r->gpu.schedule : NULL);
    rf_json_int_or_null(w, "package_rows", r->gpu.package_rows, gpu);
    rf_json_object_end(w);
    rf_json_key(w, "placement");
    rf_json_object_begin(w);
    rf_json_key_string(w, "summary", r->placement);
    rf_json_key(w, "nodes");
    rf_json_array_begin(w);
    for (int k = 0; k < r->n_nodes; k++) {
        rf_json_object_begin(w);
        rf_json_key_int(w, "node", r->nodes[k].node);
        rf_json_key_string(w, "op", r->nodes[k].op);
        rf_json_key_string(w, "name", r->nodes[k].name);
        rf_json_key_string(w, "runs_on", where[r->nodes[k].where]);
        rf_json_object_end(w);
    }
    rf_json_array_end(w);
    rf_json_object_end(w);
}

static void rf_json_method(rf_json_writer_t *w, const rf_eval_report_t *r) {
    rf_json_key(w, "method");
    rf_json_object_begin(w);
    rf_json_key_int(w, "min_count", r->options.min_count);
    rf_json_key_double(w, "alpha", r->options.alpha);
    rf_json_key_string(w, "interval", "wilson");
    rf_json_key_double(w, "z", RF_EVAL_Z95);
    rf_json_key_string(w, "test", "mcnemar-exact-two-sided");
    rf_json_key_string(w, "correction", "holm");
    rf_json_key_int(w, "judged", r->n_judged);
    rf_json_key_int(w, "chunk_rows", r->model_rows);
    rf_json_object_end(w);
}

rf_status_t rf_eval_report_write_json(const rf_eval_report_t *r, FILE *f) {
    rf_json_writer_t w;
    int classify = r->task == RF_EVAL_TASK_CLASSIFY;
    rf_json_writer_init_file(&w, f, 1);
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "schema", RF_EVAL_SCHEMA);
    rf_json_key_string(&w, "model", r->model_path);
    rf_json_key_string(&w, "data", r->data_path);
    rf_json_key_int(&w, "rows", r->rows);
    rf_json_key_string(&w, "input", r->input_name);
    rf_json_key_string(&w, "output", r->output_name);
    rf_json_key_int(&w, "outputs", r->n_outputs);
    rf_json_strings(&w, "features", r->feature_names, r->n_features);
    rf_json_key_string(&w, "label", r->label_name);
    rf_json_strings(&w, "slice_columns", r->slice_names, r->n_slices);
    rf_json_key_bool(&w, "cross", r->options.cross);
    rf_json_key_string(&w, "task", classify ? "classify" : "regress");
    rf_json_key_string(&w, "task_rule", r->task_reason);
    rf_json_int_or_null(&w, "classes", r->n_outputs, classify);
    rf_json_backends(&w, r);
    rf_json_method(&w, r);
    rf_json_strings(&w, "warnings", (const char *const *)r->warnings, (int)r->n_warnings);
    rf_json_key(&w, "overall");
    rf_json_group(&w, &r->groups[0], classify);
    rf_json_key(&w, "slices");
    rf_json_array_begin(&w);
    for (int g = 1; g < r->n_groups; g++)
        rf_json_group(&w, &r->groups[g], classify);
    rf_json_array_end(&w);
    rf_json_object_end(&w);
    return rf_json_writer_finish(&w);
}
