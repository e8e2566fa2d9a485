/* `rowfuse eval --model M.onnx --data D.csv|D.npz --features COLS --label COL [--slice COL]...
 * [--cross] [--cpu-mixed | --gpu --package PKGDIR] [--task auto|classify|regress]
 * [--min-count N] [--alpha A] [--no-plot] -o OUTDIR`: the quality evaluator (src/eval).
 * Writes OUTDIR/eval.json, eval.md, outputs_reference.npy and outputs_compiled.npy (every
 * row's model output from (a) and (b)), then the per-slice plot by running
 * `python -m rowfuse.eval.plot` from rowfuse's python/ folder as a tool ($RF_PYTHON,
 * default python3). Exit status: 0 when the report was written (whatever it says), 1 when
 * the model is rejected, 2 for bad data, bad arguments, no GPU, or a failed plot. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/tool.h"
#include "commands.h"
#include "load.h"
#include "paths.h"
#include "rowfuse/eval.h"
#include "rowfuse/tensor.h"

#define RF_EVAL_USAGE                                                                              \
    "usage: rowfuse eval --model MODEL.onnx --data DATA.csv|DATA.npz --features A,B,... --label "  \
    "COL [--slice COL]... [--cross] [--cpu-mixed | --gpu --package PKGDIR] [--task "               \
    "auto|classify|regress] [--min-count N] [--alpha A] [--no-plot] -o OUTDIR"

typedef struct rf_eval_args {
    const char *model, *data, *out_dir;
    char **features; /* split from the --features lists */
    int n_features;
    const char *slices[RF_EVAL_MAX_SLICES + 1];
    int n_slices;
    rf_eval_columns_t columns;
    rf_eval_options_t options;
    int no_plot, cpu_mixed;
    char *feature_text; /* --features arguments joined, split in place */
} rf_eval_args_t;

static rf_status_t rf_eval_add_features(rf_eval_args_t *x, const char *list) {
    size_t old = x->feature_text ? strlen(x->feature_text) : 0, add = strlen(list);
    char *text = realloc(x->feature_text, old + add + 2);
    if (!text)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "--features");
    x->feature_text = text;
    if (old)
        text[old++] = ',';
    memcpy(text + old, list, add + 1);
    return RF_OK;
}

static rf_status_t rf_eval_split_features(rf_eval_args_t *x) {
    if (!x->feature_text)
        return RF_OK;
    size_t n = 1;
    for (const char *p = x->feature_text; *p; p++)
        n += *p == ',';
    x->features = calloc(n, sizeof *x->features);
    if (!x->features)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "--features");
    char *p = x->feature_text;
    for (size_t i = 0; i < n; i++) {
        x->features[i] = p;
        char *comma = strchr(p, ',');
        if (comma) {
            *comma = '\0';
            p = comma + 1;
        }
    }
    x->n_features = (int)n;
    return RF_OK;
}

static rf_status_t rf_eval_parse_value(const char *flag, const char *v, rf_eval_args_t *x) {
    char *end;
    if (!strcmp(flag, "--min-count")) {
        long long n = strtoll(v, &end, 10);
        if (*end || end == v || n < 1)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--min-count must be an integer >= 1, not '%s'",
                          v);
        x->options.min_count = n;
    } else if (!strcmp(flag, "--alpha")) {
        double a = strtod(v, &end);
        if (*end || end == v || !(a > 0.0 && a < 1.0))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--alpha must be in (0, 1), not '%s'", v);
        x->options.alpha = a;
    } else if (!strcmp(flag, "--task")) {
        if (!strcmp(v, "auto"))
            x->options.task = RF_EVAL_TASK_AUTO;
        else if (!strcmp(v, "classify"))
            x->options.task = RF_EVAL_TASK_CLASSIFY;
        else if (!strcmp(v, "regress"))
            x->options.task = RF_EVAL_TASK_REGRESS;
        else
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "--task must be auto, classify or regress, not '%s'", v);
    } else if (!strcmp(flag, "--slice")) {
        if (x->n_slices >= RF_EVAL_MAX_SLICES)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "at most %d --slice columns",
                          RF_EVAL_MAX_SLICES);
        x->slices[x->n_slices++] = v;
    } else if (!strcmp(flag, "--features")) {
        return rf_eval_add_features(x, v);
    } else if (!strcmp(flag, "--model")) {
        x->model = v;
    } else if (!strcmp(flag, "--data")) {
        x->data = v;
    } else if (!strcmp(flag, "--label")) {
        x->columns.label = v;
    } else if (!strcmp(flag, "--package")) {
        x->options.package_dir = v;
    } else {
        x->out_dir = v; /* -o / --output */
    }
    return RF_OK;
}

static rf_status_t rf_eval_parse(int argc, char **argv, rf_eval_args_t *x) {
    static const char *const valued[] = {"--model", "--data",    "--features", "--label",
                                         "--slice", "--package", "--task",     "--min-count",
                                         "--alpha", "-o",        "--output"};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int is_valued = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
            is_valued |= !strcmp(a, valued[k]);
        if (is_valued) {
            if (i + 1 >= argc)
                return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s needs a value", a);
            RF_RETURN_IF_ERROR_PLAIN(rf_eval_parse_value(a, argv[++i], x));
        } else if (!strcmp(a, "--cross")) {
            x->options.cross = 1;
        } else if (!strcmp(a, "--gpu")) {
            x->options.backend = RF_EVAL_GPU;
        } else if (!strcmp(a, "--cpu-mixed")) {
            x->cpu_mixed = 1;
        } else if (!strcmp(a, "--no-plot")) {
            x->no_plot = 1;
        } else {
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "unexpected argument '%s'; %s", a,
                          RF_EVAL_USAGE);
        }
    }
    if (!x->model || !x->data || !x->feature_text || !x->columns.label || !x->out_dir)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s", RF_EVAL_USAGE);
    if (x->cpu_mixed && x->options.backend == RF_EVAL_GPU)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--gpu and --cpu-mixed exclude each other");
    if (x->options.backend == RF_EVAL_GPU && !x->options.package_dir)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "--gpu needs --package PKGDIR (from `rowfuse compile`)");
    if (x->options.backend != RF_EVAL_GPU && x->options.package_dir)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--package is for --gpu");
    RF_RETURN_IF_ERROR_PLAIN(rf_eval_split_features(x));
    x->columns.features = (const char *const *)x->features;
    x->columns.n_features = x->n_features;
    x->columns.slices = x->slices;
    x->columns.n_slices = x->n_slices;
    x->options.model_path = x->model;
    return RF_OK;
}

static rf_status_t rf_eval_mkdir_p(const char *path) {
    char buf[4096];
    int n = snprintf(buf, sizeof buf, "%s", path);
    if (n <= 0 || (size_t)n >= sizeof buf)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "output path too long");
    for (char *p = buf + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return RF_ERR(RF_CODE_IO_ERROR, "%s: cannot create: %s", buf, strerror(errno));
        *p = c;
        if (!c)
            break;
    }
    return RF_OK;
}

typedef rf_status_t (*rf_eval_writer_fn)(const rf_eval_report_t *report, FILE *f);

static rf_status_t rf_eval_write(const char *dir, const char *name, rf_eval_writer_fn fn,
                                 const rf_eval_report_t *r) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "%s: cannot write: %s", path, strerror(errno));
    rf_status_t st = fn(r, f);
    if (fclose(f) != 0 && !st)
        st = RF_ERR(RF_CODE_IO_ERROR, "%s: write failed: %s", path, strerror(errno));
    printf("wrote %s\n", path);
    return rf_status_annotate(st, "%s", path);
}

static rf_status_t rf_eval_write_outputs(const char *dir, const rf_eval_report_t *r) {
    const double *ya, *yb;
    int64_t n, k;
    rf_eval_report_outputs(r, &ya, &yb, &n, &k);
    const double *ys[2] = {ya, yb};
    const char *names[2] = {"outputs_reference.npy", "outputs_compiled.npy"};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rf_tensor_t t = {
            RF_DTYPE_F64, {2, {n, k}}, (void *)ys[i], (size_t)(n * k) * sizeof(double)};
        RF_RETURN_IF_ERROR_PLAIN(rf_npy_write(path, &t));
        printf("wrote %s\n", path);
    }
    return RF_OK;
}

/* Runs `python -m rowfuse.eval.plot DIR/eval.json -o DIR` with our python/ on PYTHONPATH. */
static rf_status_t rf_eval_plot(const char *dir) {
    char json[4096], *args[7];
    RF_RETURN_IF_ERROR_PLAIN(
        rf_cli_python_module("rowfuse.eval.plot", "rowfuse/eval/plot.py", args));
    snprintf(json, sizeof json, "%s/eval.json", dir);
    args[3] = json;
    args[4] = "-o";
    args[5] = (char *)dir;
    args[6] = NULL;
    return rf_status_annotate(rf_tool_run(args, "plotter"), "the plot (pass --no-plot to skip it)");
}

static void rf_eval_summary(const rf_eval_report_t *r, const rf_eval_options_t *o) {
    const rf_eval_group_t *all = rf_eval_report_group(r, 0);
    int classify = rf_eval_report_task(r) == RF_EVAL_TASK_CLASSIFY, sig = 0, small = 0;
    int n = rf_eval_report_group_count(r);
    for (int g = 1; g < n; g++) {
        sig += rf_eval_report_group(r, g)->significant;
        small += rf_eval_report_group(r, g)->too_small;
    }
    printf("eval: %lld rows, %s, (b) = %s\n", (long long)all->count,
           classify ? "classify" : "regress", o->backend == RF_EVAL_GPU ? "gpu" : "cpu-mixed");
    printf("  where (b) ran: %s\n", rf_eval_report_placement(r));
    if (classify)
        printf("  overall: accuracy %.2f%% (a) vs %.2f%% (b), %lld flips (%.3f%%), McNemar p = "
               "%.3g%s\n",
               100.0 * all->reference.accuracy, 100.0 * all->compiled.accuracy,
               (long long)all->flips, 100.0 * all->flip_rate, all->p_value,
               all->significant ? " (significant)" : "");
    else
        printf("  overall: MAE %.6g (a) vs %.6g (b), RMSE %.6g vs %.6g\n", all->reference.mae,
               all->compiled.mae, all->reference.rmse, all->compiled.rmse);
    printf("  slices: %d, %d significant, %d too small (< %lld rows)\n", n - 1, sig, small,
           (long long)o->min_count);
    for (int i = 0; i < rf_eval_report_warning_count(r); i++)
        fprintf(stderr, "rowfuse eval: warning: %s\n", rf_eval_report_warning(r, i));
}

int rf_cmd_eval(int argc, char **argv) {
    rf_eval_args_t x;
    memset(&x, 0, sizeof x);
    rf_eval_options_default(&x.options);
    rf_allocator_t a = rf_allocator_system();
    rf_graph_t *g = NULL;
    rf_contract_t *c = NULL;
    rf_eval_table_t *t = NULL;
    rf_eval_report_t *r = NULL;
    int model_error = 0;
    rf_status_t st = rf_eval_parse(argc, argv, &x);
    if (!st) {
        st = rf_cli_load_verified(x.model, &g, &c);
        model_error = st != RF_OK; /* a rejected model exits 1, bad data 2 */
    }
    if (!st)
        st = rf_eval_table_load(a, x.data, &x.columns, &t);
    if (!st)
        st = rf_eval_run(a, g, c, t, &x.options, &r);
    if (!st)
        st = rf_eval_mkdir_p(x.out_dir);
    if (!st)
        rf_eval_summary(r, &x.options);
    if (!st)
        st = rf_eval_write(x.out_dir, "eval.json", rf_eval_report_write_json, r);
    if (!st)
        st = rf_eval_write(x.out_dir, "eval.md", rf_eval_report_write_markdown, r);
    if (!st)
        st = rf_eval_write_outputs(x.out_dir, r);
    if (!st && !x.no_plot)
        st = rf_eval_plot(x.out_dir);
    rf_eval_report_destroy(r);
    rf_eval_table_destroy(t);
    rf_contract_destroy(c);
    rf_graph_destroy(g);
    free(x.features);
    free(x.feature_text);
    return model_error ? rf_cli_report("eval", st) : rf_cli_fail("eval", st, 2);
}
