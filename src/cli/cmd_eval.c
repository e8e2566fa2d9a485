/* `rowfuse eval --model M.onnx --data D.csv|D.npz --features COLS --label COL [--slice COL]...
 * [--cross] [--cpu-mixed | --gpu --package PKGDIR] [--task auto|classify|regress]
 * [--min-count N] [--alpha A] [--no-plot] -o OUTDIR`: the quality evaluator (src/eval).
 * Writes OUTDIR/eval.json, eval.md, outputs_reference.npy and outputs_compiled.npy (every
 * row's model output from (a) and (b)), then the per-slice plot by running
 * `python -m rowfuse.eval.plot` as a tool (the interpreter of src/cli/paths.h). Exit status: 0 when
 * the report was written (whatever it says), 1 when the model is rejected, 2 for bad data, bad
 * arguments, no GPU, or a failed plot. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "base/tool.h"
#include "commands.h"
#include "load.h"
#include "paths.h"
#include "rowfuse/eval.h"
#include "rowfuse/tensor.h"

typedef struct rf_eval_args {
    const char *model, *data, *out_dir;
    char **features; /* the --features items, ranges expanded; each malloc'd */
    int n_features, cap_features;
    const char *slices[RF_EVAL_MAX_SLICES + 1];
    int n_slices;
    rf_eval_columns_t columns;
    rf_eval_options_t options;
    int no_plot, cpu_mixed;
} rf_eval_args_t;

#define RF_EVAL_MAX_FEATURES (1 << 20)

/* Appends the name text[0..n) to x->features. */
static rf_status_t rf_eval_push_feature(rf_eval_args_t *x, const char *text, size_t n) {
    if (x->n_features >= RF_EVAL_MAX_FEATURES)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--features: more than %d columns",
                      RF_EVAL_MAX_FEATURES);
    if (x->n_features == x->cap_features) {
        int cap = x->cap_features ? 2 * x->cap_features : 16;
        char **grown = realloc(x->features, (size_t)cap * sizeof *grown);
        if (!grown)
            return RF_ERR(RF_CODE_OUT_OF_MEMORY, "--features");
        x->features = grown;
        x->cap_features = cap;
    }
    char *name = malloc(n + 1);
    if (!name)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "--features");
    memcpy(name, text, n);
    name[n] = '\0';
    x->features[x->n_features++] = name;
    return RF_OK;
}

/* The digits ending text[0..n): how many (at most 9, so they fit a long). */
static size_t rf_eval_trailing_digits(const char *text, size_t n) {
    size_t d = 0;
    while (d < n && d < 10 && isdigit((unsigned char)text[n - 1 - d]))
        d++;
    return d;
}

/* A range item PREFIXa..PREFIXb or PREFIXa..b: PREFIXa, PREFIXa+1, ..., PREFIXb (zero-padded
 * to a's width when a has a leading zero, as in f00..f63). */
static rf_status_t rf_eval_add_range(rf_eval_args_t *x, const char *item, size_t n,
                                     const char *dots) {
    size_t left = (size_t)(dots - item), right = n - left - 2;
    const char *r = dots + 2;
    size_t da = rf_eval_trailing_digits(item, left), db = rf_eval_trailing_digits(r, right);
    size_t prefix = left - da;
    int ok = da > 0 && da < 10 && db > 0 && db < 10 &&
             (right == db || (right - db == prefix && !memcmp(r, item, prefix)));
    long a = ok ? strtol(item + prefix, NULL, 10) : 0,
         b = ok ? strtol(r + right - db, NULL, 10) : 0;
    if (!ok || a > b || b - a >= RF_EVAL_MAX_FEATURES)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "--features: '%.*s' is not a range PREFIXa..PREFIXb with a <= b (e.g. "
                      "f0..f63)",
                      (int)n, item);
    int width = item[prefix] == '0' && da > 1 ? (int)da : 0;
    for (long v = a; v <= b; v++) {
        char name[512];
        int m = snprintf(name, sizeof name, "%.*s%0*ld", (int)prefix, item, width, v);
        if (m < 0 || (size_t)m >= sizeof name)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--features: '%.*s': name too long", (int)n,
                          item);
        RF_RETURN_IF_ERROR_PLAIN(rf_eval_push_feature(x, name, (size_t)m));
    }
    return RF_OK;
}

/* One --features list: comma-separated items, spaces around each ignored. An item is a
 * column name, a range (rf_eval_add_range) or a glob such as 'f*' (passed on as it is: the
 * CSV reader matches it against the header). */
static rf_status_t rf_eval_add_features(rf_eval_args_t *x, const char *list) {
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        while (n && isspace((unsigned char)*p))
            p++, n--;
        while (n && isspace((unsigned char)p[n - 1]))
            n--;
        if (n == 0)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "--features '%s': an empty name (two commas in a row, or one at an end)",
                          list);
        const char *dots = strstr(p, "..");
        if (dots && dots < p + n)
            RF_RETURN_IF_ERROR_PLAIN(rf_eval_add_range(x, p, n, dots));
        else
            RF_RETURN_IF_ERROR_PLAIN(rf_eval_push_feature(x, p, n));
        if (!comma)
            return RF_OK;
        p = comma + 1;
    }
}

static rf_status_t rf_eval_parse_value(const char *flag, const char *v, rf_eval_args_t *x) {
    static const char *const tasks[] = {"auto", "classify", "regress", NULL};
    if (!strcmp(flag, "--min-count")) {
        return rf_cli_parse_int64(flag, v, 1, INT64_MAX, &x->options.min_count);
    } else if (!strcmp(flag, "--alpha")) {
        return rf_cli_parse_double(flag, v, 0.0, 1.0, &x->options.alpha);
    } else if (!strcmp(flag, "--task")) {
        int task = 0; /* the names in rf_eval_task_t's order */
        RF_RETURN_IF_ERROR_PLAIN(rf_cli_parse_choice(flag, v, tasks, &task));
        x->options.task = (rf_eval_task_t)task;
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
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "unexpected argument '%s' (rowfuse eval --help lists the options)", a);
        }
    }
    if (!x->model || !x->data || !x->n_features || !x->columns.label || !x->out_dir)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "usage: rowfuse %s", rf_cli_synopsis("eval"));
    if (x->cpu_mixed && x->options.backend == RF_EVAL_GPU)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--gpu and --cpu-mixed exclude each other");
    if (x->options.backend == RF_EVAL_GPU && !x->options.package_dir)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "--gpu needs --package PKGDIR (from `rowfuse compile`)");
    if (x->options.backend != RF_EVAL_GPU && x->options.package_dir)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--package is for --gpu");
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

/* Runs `python -m rowfuse.eval.plot DIR/eval.json -o DIR`. */
static rf_status_t rf_eval_plot(const char *dir) {
    char json[4096], *args[7];
    RF_RETURN_IF_ERROR_PLAIN(rf_cli_python_module("rowfuse.eval.plot", args));
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
    for (int i = 0; i < x.n_features; i++)
        free(x.features[i]);
    free(x.features);
    return model_error ? rf_cli_report("eval", st) : rf_cli_fail("eval", st, 2);
}
