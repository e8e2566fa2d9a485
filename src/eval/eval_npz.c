/* .npz evaluation tables: NumPy's np.savez / np.savez_compressed archive, a zip of .npy
 * members named "<array>.npy". libzip (Debian libzip-dev) opens the archive and inflates a
 * member into memory; the .npy reader of src/base decodes it (rf_npy_read_buffer). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#include "eval/eval_internal.h"

#define RF_NPZ_MAX_MEMBER ((zip_uint64_t)1 << 36)

static rf_status_t rf_npz_open(const char *path, zip_t **out_zip) {
    struct stat sb;
    int err = 0;
    *out_zip = NULL;
    if (stat(path, &sb) != 0)
        return RF_ERR(RF_CODE_NOT_FOUND, "%s: cannot open: no such file", path);
    if (!S_ISREG(sb.st_mode))
        return RF_ERR(RF_CODE_IO_ERROR, "%s: not a regular file", path);
    if (sb.st_size == 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s: empty file", path);
    zip_t *z = zip_open(path, ZIP_RDONLY, &err);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, err);
        rf_status_t st = RF_ERR(RF_CODE_PARSE_ERROR, "%s: not a readable .npz (zip) archive: %s",
                                path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return st;
    }
    if (zip_get_num_entries(z, 0) <= 0) {
        zip_discard(z);
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s: empty archive (no arrays)", path);
    }
    *out_zip = z;
    return RF_OK;
}

static rf_status_t rf_npz_missing(zip_t *z, const char *path, const char *name) {
    char list[400];
    size_t n = 0;
    zip_int64_t count = zip_get_num_entries(z, 0);
    list[0] = '\0';
    for (zip_int64_t i = 0; i < count && n + 40 < sizeof list; i++) {
        const char *m = zip_get_name(z, (zip_uint64_t)i, 0);
        size_t len = m ? strlen(m) : 0;
        if (len > 4 && !strcmp(m + len - 4, ".npy"))
            len -= 4;
        n += (size_t)snprintf(list + n, sizeof list - n, "%s'%.*s'", i ? ", " : "",
                              (int)(len > 30 ? 30 : len), m ? m : "");
    }
    return RF_ERR(RF_CODE_NOT_FOUND, "%s: no array '%s' (the archive has %lld: %s%s)", path, name,
                  (long long)count, list, n + 40 >= sizeof list ? ", ..." : "");
}

/* Reads member "<name>.npy" into *out (a tensor of the allocator). */
static rf_status_t rf_npz_read(rf_allocator_t a, zip_t *z, const char *path, const char *name,
                               rf_tensor_t *out) {
    char member[512], label[700];
    memset(out, 0, sizeof *out);
    snprintf(member, sizeof member, "%s.npy", name);
    snprintf(label, sizeof label, "%s: array '%s'", path, name);
    zip_int64_t idx = zip_name_locate(z, member, 0);
    if (idx < 0)
        return rf_npz_missing(z, path, name);
    zip_stat_t sb;
    zip_stat_init(&sb);
    if (zip_stat_index(z, (zip_uint64_t)idx, 0, &sb) != 0 || !(sb.valid & ZIP_STAT_SIZE))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: cannot read its size: %s", label, zip_strerror(z));
    if (sb.size == 0 || sb.size > RF_NPZ_MAX_MEMBER)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: member of %llu bytes is not a usable .npy", label,
                      (unsigned long long)sb.size);
    void *buf;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, (size_t)sb.size, "npz member", &buf));
    rf_status_t st = RF_OK;
    zip_file_t *zf = zip_fopen_index(z, (zip_uint64_t)idx, 0);
    if (!zf)
        st = RF_ERR(RF_CODE_PARSE_ERROR, "%s: cannot open the member: %s", label, zip_strerror(z));
    else if (zip_fread(zf, buf, sb.size) != (zip_int64_t)sb.size)
        st = RF_ERR(RF_CODE_PARSE_ERROR, "%s: cannot inflate the member: %s", label,
                    zip_file_strerror(zf));
    if (zf)
        zip_fclose(zf);
    if (!st)
        st = rf_npy_read_buffer(a, buf, (size_t)sb.size, label, out);
    rf_free(a, buf);
    return st;
}

static double rf_npz_at(const rf_tensor_t *t, int64_t i) {
    rf_value_t v;
    memset(&v, 0, sizeof v);
    v.dtype = t->dtype;
    v.data = t->data;
    return rf_value_get_f64(&v, i);
}

/* Checks array `name` has rows `*rows` (or sets it) and a rank within [1, max_rank]. */
static rf_status_t rf_npz_check_rows(const char *path, const char *name, const rf_tensor_t *t,
                                     int max_rank, const char *role, int64_t *rows) {
    char sbuf[160];
    if (t->shape.rank < 1 || t->shape.rank > max_rank ||
        (max_rank == 2 && t->shape.rank == 2 && t->shape.dims[1] < 1))
        return RF_ERR(RF_CODE_SHAPE_ERROR, "%s: %s array '%s' has shape %s; it must be %s", path,
                      role, name, rf_shape_format(&t->shape, sbuf, sizeof sbuf),
                      max_rank == 2 ? "[N] or [N, k]" : "[N]");
    if (*rows < 0)
        *rows = t->shape.dims[0];
    else if (t->shape.dims[0] != *rows)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "%s: %s array '%s' has %lld rows, earlier arrays %lld",
                      path, role, name, (long long)t->shape.dims[0], (long long)*rows);
    return RF_OK;
}

static rf_status_t rf_npz_features(rf_eval_table_t *t, const rf_eval_columns_t *cols,
                                   const rf_tensor_t *arrays, int64_t rows) {
    int total = 0;
    for (int f = 0; f < cols->n_features; f++)
        total += arrays[f].shape.rank == 2 ? (int)arrays[f].shape.dims[1] : 1;
    double *x;
    const char **names;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(t->allocator, (size_t)(rows ? rows : 1) * total,
                                             sizeof(double), "features", (void **)&x));
    t->features = x;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_arena_alloc(&t->arena, sizeof *names * (size_t)total, (void **)&names));
    t->feature_names = names;
    t->n_features = total;
    int col = 0;
    for (int f = 0; f < cols->n_features; f++) {
        const rf_tensor_t *a = &arrays[f];
        int k = a->shape.rank == 2 ? (int)a->shape.dims[1] : 1;
        for (int j = 0; j < k; j++) {
            char nm[300];
            if (a->shape.rank == 2)
                snprintf(nm, sizeof nm, "%s[%d]", cols->features[f], j);
            else
                snprintf(nm, sizeof nm, "%s", cols->features[f]);
            RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&t->arena, nm, (char **)&names[col + j]));
        }
        for (int64_t r = 0; r < rows; r++)
            for (int j = 0; j < k; j++) {
                double v = rf_npz_at(a, r * k + j);
                if (!isfinite(v))
                    return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                                  "%s: column '%s', row %lld: feature is %s; rowfuse eval needs "
                                  "finite values",
                                  t->path, names[col + j], (long long)(r + 1),
                                  isnan(v) ? "NaN" : "infinite");
                x[r * total + col + j] = v;
            }
        col += k;
    }
    return RF_OK;
}

static rf_status_t rf_npz_slice(rf_eval_table_t *t, const char *name, const rf_tensor_t *a,
                                rf_eval_slice_column_t *out) {
    rf_dtype_t dt = a->dtype;
    if (dt != RF_DTYPE_I32 && dt != RF_DTYPE_I64 && dt != RF_DTYPE_U8 && dt != RF_DTYPE_BOOL &&
        dt != RF_DTYPE_I8)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "%s: slice array '%s' is %s; slices in .npz must be integer or bool codes",
                      t->path, name, rf_dtype_name(dt));
    rf_eval_levels_t lv;
    rf_eval_levels_init(&lv, t->allocator, &t->arena);
    rf_status_t st = RF_OK;
    for (int64_t r = 0; !st && r < a->shape.dims[0]; r++) {
        rf_value_t v;
        memset(&v, 0, sizeof v);
        v.dtype = dt;
        v.data = a->data;
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%lld", (long long)rf_value_get_i64(&v, r));
        st = rf_eval_levels_add(&lv, buf, (size_t)n);
    }
    if (!st)
        st = rf_eval_levels_finish(&lv, name, out);
    rf_eval_levels_deinit(&lv);
    return st;
}

static rf_status_t rf_npz_fill(rf_eval_table_t *t, const rf_eval_columns_t *cols,
                               rf_tensor_t *arrays) {
    int nf = cols->n_features, ns = cols->n_slices;
    int64_t rows = -1;
    for (int f = 0; f < nf; f++)
        RF_RETURN_IF_ERROR_PLAIN(
            rf_npz_check_rows(t->path, cols->features[f], &arrays[f], 2, "feature", &rows));
    RF_RETURN_IF_ERROR_PLAIN(
        rf_npz_check_rows(t->path, cols->label, &arrays[nf], 1, "label", &rows));
    for (int s = 0; s < ns; s++)
        RF_RETURN_IF_ERROR_PLAIN(
            rf_npz_check_rows(t->path, cols->slices[s], &arrays[nf + 1 + s], 1, "slice", &rows));
    if (rows == 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s: the arrays have no rows", t->path);
    RF_RETURN_IF_ERROR_PLAIN(rf_npz_features(t, cols, arrays, rows));
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(t->allocator, (size_t)rows * sizeof *y, "labels", (void **)&y));
    t->labels = y;
    for (int64_t r = 0; r < rows; r++) {
        y[r] = rf_npz_at(&arrays[nf], r);
        if (!isfinite(y[r]))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "%s: column '%s', row %lld: label is %s; rowfuse eval needs finite "
                          "values",
                          t->path, cols->label, (long long)(r + 1),
                          isnan(y[r]) ? "NaN" : "infinite");
    }
    char *label;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&t->arena, cols->label, &label));
    t->label_name = label;
    rf_eval_slice_column_t *slices;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_arena_alloc(&t->arena, sizeof *slices * (size_t)(ns + 1), (void **)&slices));
    t->slices = slices;
    for (int s = 0; s < ns; s++) {
        RF_RETURN_IF_ERROR_PLAIN(rf_npz_slice(t, cols->slices[s], &arrays[nf + 1 + s], &slices[s]));
        t->n_slices = s + 1;
    }
    t->rows = rows;
    return RF_OK;
}

rf_status_t rf_eval_npz_load(rf_eval_table_t *t, const rf_eval_columns_t *cols) {
    int n = cols->n_features + 1 + cols->n_slices;
    rf_tensor_t *arrays;
    zip_t *z;
    RF_RETURN_IF_ERROR_PLAIN(rf_npz_open(t->path, &z));
    rf_status_t st =
        rf_alloc_zeroed(t->allocator, (size_t)n, sizeof *arrays, "npz arrays", (void **)&arrays);
    for (int i = 0; !st && i < n; i++) {
        const char *name = i < cols->n_features    ? cols->features[i]
                           : i == cols->n_features ? cols->label
                                                   : cols->slices[i - cols->n_features - 1];
        st = rf_npz_read(t->allocator, z, t->path, name, &arrays[i]);
    }
    zip_discard(z);
    if (!st)
        st = rf_npz_fill(t, cols, arrays);
    for (int i = 0; arrays && i < n; i++)
        rf_tensor_free(t->allocator, &arrays[i]);
    rf_free(t->allocator, arrays);
    return st;
}
