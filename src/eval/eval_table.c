/* Evaluation tables (rowfuse/eval.h): the table object, the check of the requested column
 * names and loading by file extension, which hands the reading to eval_csv.c or
 * eval_npz.c. */
#include <ctype.h>
#include <string.h>

#include "eval/eval_internal.h"

rf_status_t rf_eval_table_new(rf_allocator_t allocator, const char *path,
                              rf_eval_table_t **out_table) {
    rf_eval_table_t *t;
    *out_table = NULL;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc_zeroed(allocator, 1, sizeof *t, "evaluation table", (void **)&t));
    t->allocator = allocator;
    rf_arena_init(&t->arena, allocator);
    char *p;
    rf_status_t st = rf_arena_strdup(&t->arena, path, &p);
    if (st) {
        rf_eval_table_destroy(t);
        return st;
    }
    t->path = p;
    *out_table = t;
    return RF_OK;
}

void rf_eval_table_destroy(rf_eval_table_t *t) {
    if (!t)
        return;
    rf_allocator_t a = t->allocator;
    rf_free(a, (void *)t->features);
    rf_free(a, (void *)t->labels);
    for (int s = 0; s < t->n_slices && t->slices; s++)
        rf_free(a, (void *)t->slices[s].codes);
    rf_arena_deinit(&t->arena);
    rf_free(a, t);
}

static int rf_ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    if (n < m)
        return 0;
    for (size_t i = 0; i < m; i++)
        if (tolower((unsigned char)s[n - m + i]) != suffix[i])
            return 0;
    return 1;
}

rf_status_t rf_eval_table_load(rf_allocator_t allocator, const char *path,
                               const rf_eval_columns_t *columns, rf_eval_table_t **out_table) {
    *out_table = NULL;
    if (!path || !columns)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_eval_table_load: path and columns needed");
    int csv = rf_ends_with(path, ".csv"), npz = rf_ends_with(path, ".npz");
    if (!csv && !npz)
        return RF_ERR(RF_CODE_UNSUPPORTED, "%s: evaluation data must be a .csv or .npz file", path);
    RF_RETURN_IF_ERROR_PLAIN(rf_eval_columns_check(columns));
    rf_eval_table_t *t;
    RF_RETURN_IF_ERROR_PLAIN(rf_eval_table_new(allocator, path, &t));
    rf_status_t st = csv ? rf_eval_csv_load(t, columns) : rf_eval_npz_load(t, columns);
    if (st) {
        rf_eval_table_destroy(t);
        return st;
    }
    *out_table = t;
    return RF_OK;
}

rf_status_t rf_eval_columns_check(const rf_eval_columns_t *c) {
    if (c->n_features < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "no feature columns given (--features A,B,...)");
    if (!c->label || !c->label[0])
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "no label column given (--label COL)");
    for (int i = 0; i < c->n_features; i++) {
        if (!c->features[i] || !c->features[i][0])
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "feature column %d has an empty name", i + 1);
        if (!strcmp(c->features[i], c->label))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "column '%s' is both a feature and the label; a model evaluated on "
                          "its own label says nothing",
                          c->label);
        for (int j = 0; j < i; j++)
            if (!strcmp(c->features[i], c->features[j]))
                return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                              "feature column '%s' is listed twice (features %d and %d)",
                              c->features[i], j + 1, i + 1);
    }
    for (int i = 0; i < c->n_slices; i++) {
        if (!c->slices[i] || !c->slices[i][0])
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "slice column %d has an empty name", i + 1);
        for (int j = 0; j < i; j++)
            if (!strcmp(c->slices[i], c->slices[j]))
                return RF_ERR(RF_CODE_INVALID_ARGUMENT, "slice column '%s' is given twice",
                              c->slices[i]);
    }
    return RF_OK;
}
