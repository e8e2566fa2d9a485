/* CSV evaluation tables, parsed by libcsv (Debian libcsv-dev) in strict mode: a header row
 * names the columns, each later record is one data row. libcsv calls back per field and
 * per record end; the first error is kept and every later callback does nothing, so the
 * message names the first bad cell. Columns not asked for are skipped unparsed. A feature
 * name with a glob character (*, ?, [) is a pattern: it stands for every header column it
 * matches (fnmatch), in header order, other than the label and the slice columns. */
#define _POSIX_C_SOURCE 200809L
#include <csv.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "eval/eval_internal.h"

typedef struct rf_csv {
    rf_eval_table_t *t;
    const rf_eval_columns_t *cols;
    rf_allocator_t a;
    rf_status_t st;
    rf_status_t cell_st; /* the current row's first bad cell, reported at the row's end
                          * unless the row is short or long (then that is the error) */
    int64_t record;      /* 0: the header */
    size_t field;        /* index within the current record */
    char **header;
    size_t n_header, cap_header;
    const char **names; /* the feature columns, globs resolved */
    int n_names;
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

/* The header's column names, quoted and comma-separated, cut short to fit list. */
static void rf_csv_header_list(const rf_csv_t *c, char *list, size_t size) {
    size_t n = 0;
    list[0] = '\0';
    for (size_t i = 0; i < c->n_header && n + 40 < size; i++)
        n += (size_t)snprintf(list + n, size - n, "%s'%.30s'", i ? ", " : "", c->header[i]);
    if (n + 40 >= size)
        snprintf(list + n, size - n, ", ...");
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
        rf_csv_header_list(c, list, sizeof list);
        return RF_ERR(RF_CODE_NOT_FOUND, "%s: no column '%s' (the header has %zu: %s)", c->t->path,
                      name, c->n_header, list);
    }
    *out_col = found;
    return RF_OK;
}

/* Makes header column `col` the next feature, picked by `given` (a name or a glob). */
static rf_status_t rf_csv_add_feature(rf_csv_t *c, size_t col, const char *given) {
    if (c->feature_of[col] >= 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: column '%s' is picked twice by the features (by '%s' and by an "
                      "earlier name or pattern)",
                      c->t->path, c->header[col], given);
    c->feature_of[col] = c->n_names;
    c->names[c->n_names++] = c->header[col];
    return RF_OK;
}

/* Each feature name to its column, each pattern to the columns it matches. */
static rf_status_t rf_csv_resolve_features(rf_csv_t *c) {
    const rf_eval_columns_t *cols = c->cols;
    size_t cap = c->n_header + (size_t)cols->n_features, col;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(c->a, cap * sizeof *c->names, "features", (void **)&c->names));
    for (int f = 0; f < cols->n_features; f++) {
        const char *given = cols->features[f];
        if (!strpbrk(given, "*?[")) {
            RF_RETURN_IF_ERROR_PLAIN(rf_csv_find(c, given, &col));
            RF_RETURN_IF_ERROR_PLAIN(rf_csv_add_feature(c, col, given));
            continue;
        }
        int matched = 0;
        for (col = 0; col < c->n_header; col++) {
            if (col == c->label_col || c->slice_of[col] >= 0 ||
                fnmatch(given, c->header[col], 0) != 0)
                continue;
            RF_RETURN_IF_ERROR_PLAIN(rf_csv_add_feature(c, col, given));
            matched++;
        }
        if (!matched) {
            char list[400];
            rf_csv_header_list(c, list, sizeof list);
            return RF_ERR(RF_CODE_NOT_FOUND,
                          "%s: no feature column matches '%s' (the header has %zu: %s)", c->t->path,
                          given, c->n_header, list);
        }
    }
    return rf_alloc_zeroed(c->a, (size_t)c->n_names, sizeof *c->row, "CSV row", (void **)&c->row);
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
    for (int s = 0; s < cols->n_slices; s++) {
        RF_RETURN_IF_ERROR_PLAIN(rf_csv_find(c, cols->slices[s], &col));
        c->slice_of[col] = s;
    }
    RF_RETURN_IF_ERROR_PLAIN(rf_csv_find(c, cols->label, &c->label_col));
    return rf_csv_resolve_features(c);
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
    rf_status_t cell = c->cell_st;
    c->cell_st = RF_OK;
    if (c->field != c->n_header) {
        rf_status_free(cell); /* a shifted value, most likely: the count is the news */
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: row %lld has %zu fields, the header has %zu (a %s row)", c->t->path,
                      (long long)c->record, c->field, c->n_header,
                      c->field < c->n_header ? "short" : "long");
    }
    RF_RETURN_IF_ERROR_PLAIN(cell);
    size_t r = (size_t)c->record - 1, nf = (size_t)c->n_names;
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
    if (c->record == 0)
        c->st = rf_csv_header_field(c, text, len);
    else if (!c->cell_st)
        c->cell_st = rf_csv_data_field(c, text, len);
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
    rf_status_free(c->cell_st); /* a row the parser never ended: its error is st */
    c->cell_st = RF_OK;
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
        rf_arena_alloc(&t->arena, sizeof *names * (size_t)c->n_names, (void **)&names));
    for (int f = 0; f < c->n_names; f++)
        RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&t->arena, c->names[f], (char **)&names[f]));
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&t->arena, cols->label, &label));
    t->slices = slices;
    for (int s = 0; s < cols->n_slices; s++) {
        RF_RETURN_IF_ERROR_PLAIN(rf_eval_levels_finish(&c->levels[s], cols->slices[s], &slices[s]));
        t->n_slices = s + 1;
    }
    t->rows = c->record - 1;
    t->n_features = c->n_names;
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
    rf_status_t st = rf_alloc_zeroed(c.a, (size_t)cols->n_slices + 1, sizeof *c.levels,
                                     "slice columns", (void **)&c.levels);
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
    rf_free(c.a, c.names);
    rf_free(c.a, c.header);
    rf_free(c.a, c.feature_of);
    rf_free(c.a, c.slice_of);
    rf_free(c.a, c.features);
    rf_free(c.a, c.labels);
    return st;
}
