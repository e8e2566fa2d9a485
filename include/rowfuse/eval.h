/* The quality evaluator: what the compiled numerics do to a user's task, overall and by
 * data slice (src/eval/README.md has the method, the JSON schema and the decisions).
 *
 * An evaluation table (rf_eval_table_load) holds, per row, the model's features, a label
 * and any number of slice columns, read from a CSV file (header row, columns by name,
 * parsed by libcsv) or an .npz archive (arrays by name, read through libzip and the .npy
 * reader). rf_eval_run then runs a verified model twice on every row: (a) the fp64 CPU
 * reference interpreter, (b) the compiled numerics: the interpreter in the GPU plan's mixed
 * precision (RF_EVAL_CPU_MIXED), or the residual-MLP block of the model on the GPU from a
 * package made by `rowfuse compile`, with every other node on the interpreter in mixed
 * precision (RF_EVAL_GPU). The report compares (a) and (b) overall and per slice: counts,
 * accuracy with Wilson 95% intervals (class labels) or MAE and RMSE (real labels), the
 * prediction flip rate, an exact McNemar test on the paired correct/incorrect outcomes
 * with Holm's correction across slices, and the output deviation; it is written as JSON
 * (schema "rowfuse-eval/1") and markdown.
 *
 * Ownership: what *_load / rf_eval_run return is the caller's and is released by the
 * matching *_destroy (which accepts NULL). Getters lend: strings and arrays stay valid until
 * their owner is destroyed. A table and a report keep the allocator they were made with;
 * a report copies what it needs from the graph, the table and the options (they may be
 * destroyed after rf_eval_run returns).
 *
 * Errors: every fallible function returns rf_status_t (NULL = OK). Bad data is an error
 * naming the file, the column and the row (rows count data rows from 1, the CSV header not
 * counted): a missing or duplicated column (NOT_FOUND, INVALID_ARGUMENT), a non-numeric,
 * NaN or infinite feature or label, an empty slice value, an empty file, labels outside the
 * model's classes (INVALID_ARGUMENT or PARSE_ERROR); a model whose input does not take the
 * features or that is not one output row per input row is UNSUPPORTED or SHAPE_ERROR.
 * --gpu without a usable GPU is RF_CODE_NO_DEVICE. What is worth knowing but not wrong (a
 * slice column with many values, non-finite model outputs) becomes a warning in the
 * report. The library never prints, exits or aborts.
 */
#ifndef ROWFUSE_EVAL_H
#define ROWFUSE_EVAL_H

#include <stdint.h>
#include <stdio.h>

#include "rowfuse/alloc.h"
#include "rowfuse/graph.h"
#include "rowfuse/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the evaluation table ---- */

#define RF_EVAL_MAX_SLICES 16 /* slice columns per evaluation */

/* Which columns to read. For .npz the names are array names: a 1-D array of length N is
 * one column; a 2-D feature array [N, k] gives k feature columns ("name[0]".."name[k-1]");
 * slice arrays must be 1-D integer or bool arrays (store categories as integer codes). */
typedef struct rf_eval_columns {
    const char *const *features;
    int n_features;
    const char *label;
    const char *const *slices;
    int n_slices;
} rf_eval_columns_t;

typedef struct rf_eval_slice_column {
    const char *name;
    int n_levels;
    const char *const *levels; /* distinct values: numeric order when all are numbers */
    const int32_t *codes;      /* per row, an index into levels */
} rf_eval_slice_column_t;

typedef struct rf_eval_table {
    const char *path;
    int64_t rows;
    int n_features;
    const char *const *feature_names;
    const double *features; /* [rows, n_features], row-major, all finite */
    const char *label_name;
    const double *labels; /* [rows], all finite */
    int n_slices;
    const rf_eval_slice_column_t *slices;
    rf_allocator_t allocator;
    rf_arena_t arena; /* the strings; the arrays are the allocator's (freed by destroy) */
} rf_eval_table_t;

/* Reads a .csv or .npz file (by extension). *out_table is the caller's. */
rf_status_t rf_eval_table_load(rf_allocator_t allocator, const char *path,
                               const rf_eval_columns_t *columns, rf_eval_table_t **out_table);
void rf_eval_table_destroy(rf_eval_table_t *table);

/* ---- running the evaluation ---- */

typedef enum rf_eval_task {
    RF_EVAL_TASK_AUTO = 0, /* classify when the output has 2+ columns, else regress */
    RF_EVAL_TASK_CLASSIFY, /* labels are class indices 0..K-1; prediction = argmax */
    RF_EVAL_TASK_REGRESS,  /* one output column, real labels */
} rf_eval_task_t;

typedef enum rf_eval_backend {
    RF_EVAL_CPU_MIXED = 0, /* (b) = the interpreter in mixed precision */
    RF_EVAL_GPU,           /* (b) = the package's block on the GPU, the rest on the CPU */
} rf_eval_backend_t;

typedef struct rf_eval_options {
    rf_eval_task_t task;
    rf_eval_backend_t backend;
    const char *package_dir; /* RF_EVAL_GPU: a package made by `rowfuse compile` */
    int cross;               /* also every observed combination of the slice columns */
    int64_t min_count;       /* slices with fewer rows are not judged; default 30 */
    double alpha;            /* significance level after Holm's correction; default 0.05 */
    const char *model_path;  /* recorded in the report */
} rf_eval_options_t;

void rf_eval_options_default(rf_eval_options_t *options);

/* One side of the comparison, (a) or (b), on one group of rows. */
typedef struct rf_eval_side {
    int64_t correct;            /* classify: rows whose argmax equals the label */
    double accuracy, low, high; /* classify: correct / count with its Wilson 95% interval */
    double mae, rmse;           /* regress: against the label, output column 0 */
    int64_t nonfinite;          /* rows with a NaN or infinite output */
} rf_eval_side_t;

typedef enum rf_eval_group_kind {
    RF_EVAL_GROUP_OVERALL = 0,
    RF_EVAL_GROUP_SLICE, /* one value of one slice column */
    RF_EVAL_GROUP_CROSS, /* one observed combination of every slice column */
} rf_eval_group_kind_t;

typedef struct rf_eval_group {
    rf_eval_group_kind_t kind;
    const char *name; /* "overall", "region=north", "region=north & device=phone" */
    int n_keys;       /* 0 for overall, 1 for a slice, n_slices for a crossing */
    const char *const *columns;
    const char *const *values;
    int64_t count;
    rf_eval_side_t reference, compiled;
    int64_t flips;                         /* rows whose prediction differs between (a) and (b) */
    double flip_rate, flip_low, flip_high; /* classify, with its Wilson 95% interval */
    int64_t reference_only;                /* classify: (a) right, (b) wrong */
    int64_t compiled_only;                 /* classify: (a) wrong, (b) right */
    double p_value;                        /* exact McNemar, two-sided; NaN for regression */
    double p_holm;                         /* Holm-adjusted; NaN when not judged */
    double max_abs_dev, mean_abs_dev;      /* |y_a - y_b| over every output element */
    int too_small;                         /* count < min_count: not judged */
    int significant;                       /* judged and p_holm < alpha */
} rf_eval_group_t;

typedef struct rf_eval_report rf_eval_report_t;

/* Runs the evaluation. The graph must be verified (contract from rf_verify) with one float
 * input [M, F], F = table->n_features, and one row-owned output [M, K] or [M]; rows are run
 * M at a time (the last chunk padded with zero rows, whose outputs are dropped: the
 * contract guarantees they cannot affect the others). */
rf_status_t rf_eval_run(rf_allocator_t allocator, const rf_graph_t *graph,
                        const rf_contract_t *contract, const rf_eval_table_t *table,
                        const rf_eval_options_t *options, rf_eval_report_t **out_report);
void rf_eval_report_destroy(rf_eval_report_t *report);

rf_eval_task_t rf_eval_report_task(const rf_eval_report_t *report);
/* Groups in report order: overall first, then each slice column's values, then crossings. */
int rf_eval_report_group_count(const rf_eval_report_t *report);
const rf_eval_group_t *rf_eval_report_group(const rf_eval_report_t *report, int index);
int rf_eval_report_warning_count(const rf_eval_report_t *report);
const char *rf_eval_report_warning(const rf_eval_report_t *report, int index);
/* Which nodes of (b) ran where, one line: "gpu: 0 Gemm, 1 Relu, ...; cpu: 5 Gemm" (nodes
 * no output needs are listed as skipped). */
const char *rf_eval_report_placement(const rf_eval_report_t *report);

/* Every row's model outputs, (a) and (b), [rows, K] row-major (lent): for looking at the
 * rows that flipped, and for checking the statistics independently. */
void rf_eval_report_outputs(const rf_eval_report_t *report, const double **out_reference,
                            const double **out_compiled, int64_t *out_rows, int64_t *out_cols);

/* Writes the report as JSON (schema "rowfuse-eval/1") / markdown. IO_ERROR on a failed
 * write. */
rf_status_t rf_eval_report_write_json(const rf_eval_report_t *report, FILE *f);
rf_status_t rf_eval_report_write_markdown(const rf_eval_report_t *report, FILE *f);

/* ---- statistics (pure functions, exported for tests) ---- */

/* Wilson score interval for k successes in n trials at normal quantile z (1.96 for 95%).
 * n == 0 gives [0, 1]. */
void rf_eval_wilson(int64_t k, int64_t n, double z, double *out_low, double *out_high);
/* Exact two-sided McNemar p-value for b and c discordant pairs: the binomial test of
 * min(b, c) in b + c trials at 1/2, doubled and capped at 1, summed in log space so that
 * large counts neither overflow nor underflow. b + c == 0 gives 1. */
double rf_eval_mcnemar_p(int64_t b, int64_t c);
/* Holm's step-down adjustment of n p-values (any order); out_adjusted[i] belongs to p[i]. */
rf_status_t rf_eval_holm(rf_allocator_t allocator, const double *p, int n, double *out_adjusted);

#ifdef __cplusplus
}
#endif
#endif
