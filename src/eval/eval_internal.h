/* Internal interface of the evaluator (src/eval/, see README.md there): the table loaders,
 * the slice-column builder, the model runner, the block split for the GPU path, the GPU
 * runner, the report object and its writers. Nothing here is public. */
#ifndef ROWFUSE_EVAL_INTERNAL_H
#define ROWFUSE_EVAL_INTERNAL_H

#include <stdint.h>

#include "rowfuse/compile.h"
#include "rowfuse/eval.h"
#include "rowfuse/ref.h"

#define RF_EVAL_SCHEMA "rowfuse-eval/1"
#define RF_EVAL_Z95 1.959963984540054 /* standard normal quantile at 0.975 */

/* ---- tables (eval_table.c, eval_cells.c, eval_csv.c, eval_npz.c) ---- */

/* A slice column under construction: distinct values interned in a hash table, one code
 * per row appended in order. */
typedef struct rf_eval_levels {
    rf_allocator_t allocator;
    rf_arena_t *arena; /* the table's: holds the value strings */
    char **levels;
    size_t n_levels, cap_levels;
    int32_t *slots; /* open addressing: level index + 1, 0 = empty */
    size_t n_slots;
    int32_t *codes;
    size_t n_codes, cap_codes;
} rf_eval_levels_t;

void rf_eval_levels_init(rf_eval_levels_t *lv, rf_allocator_t allocator, rf_arena_t *arena);
void rf_eval_levels_deinit(rf_eval_levels_t *lv);
/* Appends the code of value s[0..len) for the next row. */
rf_status_t rf_eval_levels_add(rf_eval_levels_t *lv, const char *s, size_t len);
/* Sorts the levels (numerically when all are numbers), renumbers the codes and moves the
 * result into *out (codes become the table's: freed by rf_eval_table_destroy). */
rf_status_t rf_eval_levels_finish(rf_eval_levels_t *lv, const char *name,
                                  rf_eval_slice_column_t *out);

/* Allocates an empty table (path copied) whose arena is ready. */
rf_status_t rf_eval_table_new(rf_allocator_t allocator, const char *path,
                              rf_eval_table_t **out_table);
/* Checks the requested names: none empty, none repeated among the features or among the
 * slices, the label not a feature. */
rf_status_t rf_eval_columns_check(const rf_eval_columns_t *columns);
/* Parses a numeric cell; errors name the file, column and row ("row" counts data rows
 * from 1). what is "feature" or "label". */
rf_status_t rf_eval_parse_number(const char *path, const char *column, int64_t row,
                                 const char *what, const char *text, double *out_value);

rf_status_t rf_eval_csv_load(rf_eval_table_t *table, const rf_eval_columns_t *columns);
rf_status_t rf_eval_npz_load(rf_eval_table_t *table, const rf_eval_columns_t *columns);

/* ---- the model (eval_model.c) ---- */

typedef struct rf_eval_model {
    int input;        /* value index of the one graph input */
    int output;       /* value index of the one graph output */
    int64_t rows;     /* M: rows per run (the row dim of the verified graph) */
    int64_t features; /* F */
    int64_t outputs;  /* K: output columns (1 for a [M] output) */
} rf_eval_model_t;

/* Checks the graph takes `n_features` features and gives one output row per input row. */
rf_status_t rf_eval_model_check(const rf_graph_t *graph, const rf_contract_t *contract,
                                const rf_eval_table_t *table, rf_eval_model_t *out_model);

/* Runs the graph on every table row, M rows at a time, into out_y [rows, K]. When
 * given_value >= 0, that value is supplied from given [rows, given_cols] (f32, e.g. the
 * GPU block's output) and only the nodes still needed run; ran (node count, may be NULL)
 * gets the nodes that ran. */
rf_status_t rf_eval_model_forward(rf_allocator_t allocator, const rf_graph_t *graph,
                                  const rf_eval_model_t *model, const rf_eval_table_t *table,
                                  rf_precision_t precision, int given_value, const float *given,
                                  int64_t given_cols, double *out_y, int *ran);

/* ---- the block for the GPU path (eval_split.c) ---- */

typedef struct rf_eval_block {
    int x, y;                     /* value indices in the model graph */
    int64_t channels, hidden;     /* C, H */
    uint16_t *w1, *w2;            /* W1 [C, H], W2 [H, C] as fp16 bits */
    float *b1, *b2;               /* b1 [H], b2 [C] */
    unsigned char *node_in_block; /* per model node: 1 if it computes part of the block */
} rf_eval_block_t;

/* Finds the residual-MLP block that reads the model input (rf_mlp_match on the part of the
 * graph that computes each candidate output) and extracts its weights. */
rf_status_t rf_eval_block_find(rf_allocator_t allocator, const rf_graph_t *graph,
                               rf_eval_block_t *out_block);
void rf_eval_block_free(rf_allocator_t allocator, rf_eval_block_t *block);

/* ---- the GPU runner (eval_gpu.c: the only file that calls the CUDA runtime) ---- */

typedef struct rf_eval_gpu_info {
    char device[160];
    char schedule[64];
    int64_t package_rows;
} rf_eval_gpu_info_t;

/* Runs the block on the GPU for x [rows, C] (rounded to fp16 on the way in), writing the
 * block output Y [rows, C] (f32). RF_CODE_NO_DEVICE without a usable GPU. */
rf_status_t rf_eval_gpu_block(rf_allocator_t allocator, const char *package_dir,
                              const rf_eval_block_t *block, const double *x, int64_t rows,
                              float *out_y, rf_eval_gpu_info_t *out_info);

/* ---- the report (eval_report.c; filled by eval.c and eval_groups.c, written by eval_json.c
 * and eval_md.c) ---- */

typedef enum rf_eval_where {
    RF_EVAL_WHERE_CPU = 0,
    RF_EVAL_WHERE_GPU,
    RF_EVAL_WHERE_SKIPPED, /* not needed for the output */
} rf_eval_where_t;

typedef struct rf_eval_node_place {
    int node;
    const char *op;
    const char *name;
    rf_eval_where_t where;
} rf_eval_node_place_t;

struct rf_eval_report {
    rf_allocator_t allocator;
    rf_arena_t arena; /* every string and array below */
    rf_eval_options_t options;
    rf_eval_task_t task;
    const char *task_reason;
    const char *model_path, *data_path;
    int64_t rows, model_rows, n_outputs; /* N, M, K */
    const char *input_name, *output_name;
    int n_features;
    const char *const *feature_names;
    const char *label_name;
    int n_slices;
    const char *const *slice_names;
    const char *backend; /* "cpu-mixed" | "gpu" */
    rf_eval_gpu_info_t gpu;
    const char *placement; /* one line */
    int n_nodes;
    rf_eval_node_place_t *nodes;
    int n_groups;
    rf_eval_group_t *groups;
    int n_judged; /* groups in the Holm family */
    size_t n_warnings, cap_warnings;
    char **warnings; /* array from the allocator, strings in the arena */
    double *ya, *yb; /* [rows, K] outputs of (a) and (b), from the allocator */
};

/* Adds a printf-style warning to the report. */
rf_status_t rf_eval_report_warn(rf_eval_report_t *report, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Per-row outcome of the two runs, the input of the group statistics. */
typedef struct rf_eval_rows {
    int64_t n, k;
    const double *ya, *yb; /* [n, k] */
    const double *labels;
} rf_eval_rows_t;

/* Fills report->groups: overall, every slice value, the crossings when asked; then the
 * Holm correction, flags and warnings. */
rf_status_t rf_eval_groups_compute(rf_eval_report_t *report, const rf_eval_table_t *table,
                                   const rf_eval_rows_t *rows);

#endif
