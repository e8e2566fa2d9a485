/* The check job of chain packages (check_chain.h). */
#include "harness/check_chain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "chain/chain.h"
#include "rowfuse/rng.h"

static void set_error(rf_check_chain_result_t *r, rf_status_t st) {
    snprintf(r->error, sizeof(r->error), "%s: %s", rf_code_name(rf_status_code(st)),
             rf_status_message(st));
    r->passed = 0;
    rf_status_free(st);
}

/* Every element finite and within its bound of the reference. */
static void compare(const float *y, const double *ref, const double *bound, size_t n,
                    rf_check_chain_result_t *r) {
    r->worst_index = -1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)y[i] - ref[i]);
        double ratio = d <= bound[i] ? (bound[i] > 0 ? d / bound[i] : 0.0) : INFINITY;
        if (!isfinite(y[i])) {
            r->nonfinite++;
        } else {
            if (d > r->max_abs)
                r->max_abs = d;
            if (d > bound[i])
                r->over_bound++;
            if (bound[i] > 0)
                ratio = d / bound[i];
        }
        if (r->worst_index < 0 || ratio > r->max_ratio) {
            r->max_ratio = ratio;
            r->worst_index = (int64_t)i;
        }
    }
    if (r->worst_index >= 0) {
        r->worst_got = y[r->worst_index];
        r->worst_ref = ref[r->worst_index];
        r->worst_bound = bound[r->worst_index];
    }
    r->passed = r->nonfinite == 0 && r->over_bound == 0 && n > 0;
}

typedef struct bufs {
    uint16_t *x;
    double *ref, *bound;
    float *y, *again;
} bufs_t;

static void bufs_free(rf_allocator_t a, bufs_t *b) {
    rf_free(a, b->x);
    rf_free(a, b->ref);
    rf_free(a, b->bound);
    rf_free(a, b->y);
    rf_free(a, b->again);
    memset(b, 0, sizeof(*b));
}

static rf_status_t run_shape(rf_allocator_t a, const rf_check_options_t *o, rf_chain_pkg_t *pkg,
                             const rf_chain_t *chain, void *stream, rf_check_chain_result_t *r) {
    static const unsigned char poisons[2] = {0xFF, 0x42}; /* NaN, then a finite sentinel */
    size_t nx = (size_t)(r->rows * r->in_width), ny = (size_t)(r->rows * r->out_width);
    rf_chain_exec_t *e = NULL;
    bufs_t b;
    rf_rng_t rng;
    rf_status_t st;
    memset(&b, 0, sizeof(b));
    if ((st = rf_alloc(a, nx * 2, "X", (void **)&b.x)) ||
        (st = rf_alloc(a, ny * sizeof(double), "reference", (void **)&b.ref)) ||
        (st = rf_alloc(a, ny * sizeof(double), "bound", (void **)&b.bound)) ||
        (st = rf_alloc(a, ny * 4, "Y", (void **)&b.y)) ||
        (st = rf_alloc(a, ny * 4, "Y", (void **)&b.again))) {
        bufs_free(a, &b);
        return st;
    }
    rf_rng_seed(&rng, r->seed);
    rf_rng_fill_f16(&rng, 1.0, b.x, nx);
    st = rf_chain_reference(chain, b.x, r->rows, RF_CHAIN_MIXED, b.ref, b.bound);
    if (!st)
        st = rf_chain_exec_create(a, pkg, r->rows, stream, &e);
    if (!st) {
        r->kernel_nodes = rf_chain_exec_kernel_nodes(e);
        st = rf_chain_exec_upload_x(e, b.x);
    }
    r->identical = 1;
    for (int p = 0; p < 2 + o->replays && !st; p++) {
        float *dst = p == 0 ? b.y : b.again;
        if (!(st = rf_chain_exec_fill_y(e, poisons[p > 0], stream)) &&
            !(st = rf_chain_run(e, stream)) && !(st = rf_chain_exec_download_y(e, stream, dst)) &&
            p > 0 && memcmp(b.y, b.again, ny * 4) != 0)
            r->identical = 0;
    }
    if (!st) {
        compare(b.y, b.ref, b.bound, ny, r);
        r->passed = r->passed && r->identical;
    }
    rf_chain_exec_destroy(e);
    bufs_free(a, &b);
    return st;
}

/* The row counts package `pkg` is checked at (see check_chain.h). */
static int shape_rows(const rf_check_options_t *o, const rf_chain_pkg_t *pkg, int64_t *rows,
                      int max) {
    int n = 0;
    for (int i = 0; i < o->n_shapes && n < max; i++) {
        const rf_check_shape_t *s = &o->shapes[i];
        if ((s->channels == 0 && s->hidden == 0) ||
            (s->channels == rf_chain_pkg_in_width(pkg) && s->hidden == rf_chain_pkg_out_width(pkg)))
            rows[n++] = s->rows;
    }
    if (n == 0)
        rows[n++] = rf_chain_pkg_rows(pkg);
    return n;
}

rf_status_t rf_check_chain_run(rf_allocator_t a, const rf_check_options_t *o,
                               rf_device_info_t *out_device, rf_check_chain_result_t **out_results,
                               int *out_count) {
    rf_check_chain_result_t *res = NULL;
    size_t cap = 0;
    int n = 0;
    void *stream = NULL;
    rf_status_t st;
    *out_results = NULL;
    *out_count = 0;
    RF_RETURN_IF_ERROR(rf_device_open(o->device, out_device), "while starting the chain check");
    RF_RETURN_IF_ERROR_PLAIN(rf_stream_create(&stream));
    for (int d = 0; d < o->n_pkgs; d++) {
        const char *dir = o->pkg_dirs[d];
        rf_chain_pkg_t *pkg = NULL;
        rf_chain_t *chain = NULL;
        int64_t rows[64];
        int nrows = 1;
        rf_status_t pst = rf_chain_pkg_load(a, dir, &pkg);
        if (!pst)
            pst = rf_chain_load_package(a, dir, &chain);
        if (pkg)
            nrows = shape_rows(o, pkg, rows, 64);
        for (int i = 0; i < nrows; i++) {
            rf_check_chain_result_t *r;
            if ((st = rf_grow(a, (void **)&res, &cap, (size_t)n + 1, sizeof(*res), "check rows")))
                break;
            r = &res[n++];
            memset(r, 0, sizeof(*r));
            snprintf(r->pkg, sizeof(r->pkg), "%s", dir);
            r->worst_index = -1;
            if (pst) {
                /* the package or its reference is unusable: one row says why */
                set_error(r, pst);
                pst = RF_OK;
                break;
            }
            snprintf(r->kernel, sizeof(r->kernel), "%s", rf_chain_pkg_kernel_name(pkg));
            r->rows = rows[i];
            r->in_width = rf_chain_pkg_in_width(pkg);
            r->out_width = rf_chain_pkg_out_width(pkg);
            r->seed = o->seed ^ ((uint64_t)rows[i] * 0x9E3779B97F4A7C15ull);
            rf_status_t rst = run_shape(a, o, pkg, chain, stream, r);
            if (rst && rf_status_code(rst) == RF_CODE_NO_DEVICE) {
                st = rst;
                break;
            }
            if (rst)
                set_error(r, rst);
        }
        rf_status_free(pst);
        rf_chain_destroy(chain);
        rf_chain_pkg_destroy(pkg);
        if (st)
            break;
    }
    rf_stream_destroy(stream);
    if (st) {
        rf_free(a, res);
        return st;
    }
    *out_results = res;
    *out_count = n;
    return RF_OK;
}

rf_status_t rf_check_chain_write_json(const char *path, const rf_check_options_t *o,
                                      const rf_device_info_t *d, const rf_check_chain_result_t *res,
                                      int count) {
    rf_check_json_t j;
    rf_json_writer_t *w = &j.w;
    int passed = 0;
    for (int i = 0; i < count; i++)
        passed += res[i].passed;
    rf_status_t st = rf_check_json_begin(&j, path, "rowfuse check (chain packages)", d);
    if (st)
        return st;
    rf_json_key_string(w, "reference", "the chain's mixed-precision reference, per-element bound");
    rf_check_json_results_begin(&j, o->seed, count, passed);
    for (int i = 0; i < count; i++) {
        const rf_check_chain_result_t *r = &res[i];
        rf_json_object_begin(w);
        rf_json_key_string(w, "package", r->pkg);
        rf_json_key_string(w, "kernel", r->kernel);
        rf_json_key_int(w, "rows", r->rows);
        rf_json_key_int(w, "in_width", r->in_width);
        rf_json_key_int(w, "out_width", r->out_width);
        rf_json_key_int(w, "seed", (int64_t)r->seed);
        rf_json_key_bool(w, "passed", r->passed);
        rf_json_key_int(w, "kernel_nodes", r->kernel_nodes);
        rf_json_key_bool(w, "replays_identical", r->identical);
        rf_json_key_int(w, "nonfinite", r->nonfinite);
        rf_json_key_int(w, "over_bound", r->over_bound);
        rf_json_key_double(w, "max_abs_error", r->max_abs);
        rf_json_key_double(w, "max_bound_ratio", r->max_ratio);
        rf_json_key_int(w, "worst_index", r->worst_index);
        rf_json_key_double(w, "worst_got", r->worst_got);
        rf_json_key_double(w, "worst_ref", r->worst_ref);
        rf_json_key_double(w, "worst_bound", r->worst_bound);
        rf_json_key_string(w, "error", r->error);
        rf_json_object_end(w);
    }
    return rf_check_json_end(&j, path);
}
