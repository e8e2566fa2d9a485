/* CSV evaluation tables, parsed by libcsv (Debian libcsv-dev) in strict mode: a header row
 * names the columns, each later record is one data row. libcsv calls back per field and
 * per record end; the first error is kept and every later callback does nothing, so the
 * message names the first bad cell. Columns not asked for are skipped unparsed. */
#include <csv.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "eval/eval_internal.h"

typedef struct rf_csv {
    rf_eval_table_t *t;
    const rf_eval_columns_t *cols;
    rf_allocator_t a;
    rf_status_t st;
    int64_t record; /* 0: the header */
    size_t field;   /* index within the current record */
    char **header;
    size_t n_header, cap_header;
    int *feature_of; /* per header column: feature index or -1 */
    int *slice_of;   /* per header column: slice index or -1 */
    size_t label_col;
    double *row; /* the current row's features */
    double label;
    double *features, *labels;
    size_t cap_features, cap_labels;
    rf_eval_levels_t *levels; /* one per slice column */
} rf_csv_t;

static rf_status_t rf_csv_header_field(rf_csv_t *c, const char *s, size_t len) {
    if (c->n_header == 0 && len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) { /* UTF-8 BOM */
        s += 3;
        len -= 3;
    }
    RF_RETURN_IF_ERROR_PLAIN(rf_grow(c->a, (void **)&c->header, &c->cap_header, c->n_header + 1,
                                     sizeof *c->header, "CSV header"));
    return rf_arena_strndup(&c->t->arena, s, len, &c->header[c->n_header++]);
}

/* Finds column `name`: its index, or an error for a missing or duplicated column. */
static rf_status_t rf_csv_find(const rf_csv_t *c, const char *name, size_t *out_col) {
    size_t found = (size_t)-1;
    for (size_t i = 0; i < c->n_header; i++) {
        if (strcmp(c->header[i], name))
            continue;
        if (found != (size_t)-1)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "%s: column '%s' appears twice in the header (columns %zu and %zu); "
                          "rename one",
                          c->t->path, name, found + 1, i + 1);
        found = i;
    }
    if (found == (size_t)-1) {
        char list[400];
        size_t n = 0;
        list[0] = '\0';
        for (size_t i = 0; i < c->n_header && n + 40 < sizeof list; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s'%.30s'", i ? ", " : "",
                                  c->header[i]);
        return RF_ERR(RF_CODE_NOT_FOUND, "%s: no column '%s' (the header has %zu: %s%s)",
                      c->t->path, name, c->n_header, list, n + 40 >= sizeof list ? ", ..." : "");
    }
    *out_col = found;
    return RF_OK;
}

static rf_status_t rf_csv_header_done(rf_csv_t *c) {
    const rf_eval_columns_t *cols = c->cols;
    size_t n = c->n_header ? c->n_header : 1;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(c->a, n * sizeof *c->feature_of, "CSV roles", (void **)&c->feature_of));
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(c->a, n * sizeof *c->slice_of, "CSV roles", (void **)&c->slice_of));
    for (size_t i = 0; i < n; i++)
        c->feature_of[i] = c->slice_of[i] = -1;
    size_t col;
    for (int f = 0; f < cols->n_features; f++) {
        RF_RETURN_IF_ERROR_PLAIN(rf_csv_find(c, cols->features[f], &col));
        c->feature_of[col] = f;
    }
    for (int s = 0; s < cols->n_slices; s++) {
        RF_RETURN_IF_ERROR_PLAIN(rf_csv_find(c, cols->slices[s], &col));
        c->slice_of[col] = s;
    }
    return rf_csv_find(c, cols->label, &c->label_col);
}

static rf_status_t rf_csv_data_field(rf_csv_t *c, const char *s, size_t len) {
    size_t col = c->field;
    if (col >= c->n_header)
        return RF_OK; /* too many fields: reported at the end of the record */
    int64_t row = c->record;
    int f = c->feature_of[col], sl = c->slice_of[col];
    if (f >= 0)
        RF_RETURN_IF_ERROR_PLAIN(
            rf_eval_parse_number(c->t->path, c->header[col], row, "feature", s, &c->row[f]));
    if (col == c->label_col)
        RF_RETURN_IF_ERROR_PLAIN(
            rf_eval_parse_number(c->t->path, c->header[col], row, "label", s, &c->label));
    if (sl >= 0) {
        if (len == 0)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "%s: column '%s', row %lld: empty slice value; give it a value (e.g. "
                          "'unknown') or drop the row",
                          c->t->path, c->header[col], (long long)row);
        RF_RETURN_IF_ERROR_PLAIN(rf_eval_levels_add(&c->levels[sl], s, len));
    }
    return RF_OK;
}

static rf_status_t rf_csv_row_done(rf_csv_t *c) {
    if (c->field != c->n_header)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: row %lld has %zu fields, the header has %zu",
                      c->t->path, (long long)c->record, c->field, c->n_header);
    size_t r = (size_t)c->record - 1, nf = (size_t)c->cols->n_features;
    RF_RETURN_IF_ERROR_PLAIN(rf_grow(c->a, (void **)&c->features, &c->cap_features, (r + 1) * nf,
                                     sizeof(double), "features"));
    RF_RETURN_IF_ERROR_PLAIN(
        rf_grow(c->a, (void **)&c->labels, &c->cap_labels, r + 1, sizeof(double), "labels"));
    memcpy(c->features + r * nf, c->row, nf * sizeof(double));
    c->labels[r] = c->label;
    return RF_OK;
}

static void rf_csv_on_field(void *s, size_t len, void *data) {
    rf_csv_t *c = data;
    if (c->st)
        return;
    const char *text = s ? s : "";
    c->st = c->record == 0 ? rf_csv_header_field(c, text, len) : rf_csv_data_field(c, text, len);
    c->field++;
}

static void rf_csv_on_row(int ch, void *data) {
    rf_csv_t *c = data;
    (void)ch;
    if (c->st)
        return;
    c->st = c->record == 0 ? rf_csv_header_done(c) : rf_csv_row_done(c);
    c->record++;
    c->field = 0;
}

static rf_status_t rf_csv_parse_file(rf_csv_t *c, FILE *f) {
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "%s: cannot start the CSV parser", c->t->path);
    char buf[1 << 16];
    size_t n, total = 0;
    rf_status_t st = RF_OK;
    while (!st && !c->st && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        total += n;
        if (csv_parse(&p, buf, n, rf_csv_on_field, rf_csv_on_row, c) != n && !c->st)
            st = RF_ERR(RF_CODE_PARSE_ERROR, "%s: malformed CSV in row %lld: %s", c->t->path,
                        (long long)c->record, csv_strerror(csv_error(&p)));
    }
    if (!st && !c->st && ferror(f))
        st = RF_ERR(RF_CODE_IO_ERROR, "%s: read error: %s", c->t->path, strerror(errno));
    if (!st && !c->st && csv_fini(&p, rf_csv_on_field, rf_csv_on_row, c) != 0 && !c->st)
        st = RF_ERR(RF_CODE_PARSE_ERROR, "%s: malformed CSV at the end (row %lld): %s", c->t->path,
                    (long long)c->record, csv_strerror(csv_error(&p)));
    csv_free(&p);
    if (!st)
        st = c->st;
    c->st = RF_OK;
    if (!st && total == 0)
        st = RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s: empty file", c->t->path);
    else if (!st && c->record == 0)
        st = RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s: no header row", c->t->path);
    else if (!st && c->record == 1)
        st = RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s: a header but no data rows", c->t->path);
    return st;
}

/* Moves the parsed columns into the table. */
static rf_status_t rf_csv_finish(rf_csv_t *c) {
    rf_eval_table_t *t = c->t;
    const rf_eval_columns_t *cols = c->cols;
    rf_eval_slice_column_t *slices;
    const char **names;
    char *label;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_arena_alloc(&t->arena, sizeof *slices * (size_t)(cols->n_slices + 1), (void **)&slices));
    RF_RETURN_IF_ERROR_PLAIN(
        rf_arena_alloc(&t->arena, sizeof *names * (size_t)cols->n_features, (void **)&names));
    for (int f = 0; f < cols->n_features; f++)
        RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&t->arena, cols->features[f], (char **)&names[f]));
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&t->arena, cols->label, &label));
    t->slices = slices;
    for (int s = 0; s < cols->n_slices; s++) {
        RF_RETURN_IF_ERROR_PLAIN(rf_eval_levels_finish(&c->levels[s], cols->slices[s], &slices[s]));
        t->n_slices = s + 1;
    }
    t->rows = c->record - 1;
    t->n_features = cols->n_features;
    t->feature_names = names;
    t->label_name = label;
    t->features = c->features;
    t->labels = c->labels;
    c->features = c->labels = NULL;
    return RF_OK;
}

rf_status_t rf_eval_csv_load(rf_eval_table_t *t, const rf_eval_columns_t *cols) {
    rf_csv_t c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.cols = cols;
    c.a = t->allocator;
    rf_status_t st =
        rf_alloc_zeroed(c.a, (size_t)cols->n_features, sizeof *c.row, "CSV row", (void **)&c.row);
    if (!st)
        st = rf_alloc_zeroed(c.a, (size_t)cols->n_slices + 1, sizeof *c.levels, "slice columns",
                             (void **)&c.levels);
    for (int s = 0; !st && s < cols->n_slices; s++)
        rf_eval_levels_init(&c.levels[s], c.a, &t->arena);
    FILE *f = NULL;
    if (!st && !(f = fopen(t->path, "rb")))
        st = RF_ERR(errno == ENOENT ? RF_CODE_NOT_FOUND : RF_CODE_IO_ERROR, "%s: cannot open: %s",
                    t->path, strerror(errno));
    if (!st)
        st = rf_csv_parse_file(&c, f);
    if (f)
        fclose(f);
    if (!st)
        st = rf_csv_finish(&c);
    for (int s = 0; c.levels && s < cols->n_slices; s++)
        rf_eval_levels_deinit(&c.levels[s]);
    rf_free(c.a, c.levels);
    rf_free(c.a, c.row);
    rf_free(c.a, c.header);
    rf_free(c.a, c.feature_of);
    rf_free(c.a, c.slice_of);
    rf_free(c.a, c.features);
    rf_free(c.a, c.labels);
    return st;
}
