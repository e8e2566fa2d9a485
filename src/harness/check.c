/* The check job (check.h): fresh random inputs per shape, the CPU reference in mixed
 * precision computed once per shape, then every variant captured into a CUDA Graph,
 * replayed once into a NaN-poisoned Y, right after a kernel of its own filled every SM's
 * shared memory with NaN, and compared element by element. */
#include "harness/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "rowfuse/mlp.h"
#include "runtime/rt_internal.h"

void rf_check_options_default(rf_check_options_t *o) {
    memset(o, 0, sizeof(*o));
    o->seed = 1;
    o->tol = rf_mlp_tolerance_default();
}

/* ---- comparing: the one rule of rowfuse/mlp.h ---- */

static void compare(const rf_check_options_t *o, const rf_mlp_case_t *k, const float *y,
                    rf_check_result_t *r) {
    rf_mlp_compare_result_t c;
    rf_mlp_compare(y, k->ref, k->allow, k->step, (size_t)(k->rows * k->channels), &o->tol, &c);
    r->passed = c.passed;
    r->nonfinite = c.nonfinite;
    r->out_of_tol = c.out_of_tol;
    r->max_abs = c.max_abs;
    r->rel_l2 = c.rel_l2;
    r->steps = c.steps;
    r->max_ratio = c.max_ratio;
    r->worst_index = c.worst_index;
    r->worst_got = c.worst_got;
    r->worst_ref = c.worst_ref;
}

/* ---- running one variant ---- */

static void set_error(rf_check_result_t *r, rf_status_t st) {
    snprintf(r->error, sizeof(r->error), "%s: %s", rf_code_name(rf_status_code(st)),
             rf_status_message(st));
    r->passed = 0;
    rf_status_free(st);
}

static rf_status_t run_variant(rf_allocator_t a, const rf_check_options_t *o, rf_variant_t *v,
                               const rf_mlp_case_t *k, rf_mlp_buffers_t *buf, void *stream,
                               float *y, rf_check_result_t *r) {
    static const unsigned char poisons[2] = {0xFF, 0x42}; /* NaN, then a finite sentinel */
    size_t n = (size_t)(k->rows * k->channels);
    rf_exec_t *e = NULL;
    float *again = NULL;
    rf_status_t st = rf_exec_capture(a, v, &buf->args, stream, &e);
    if (!st) {
        r->kernel_nodes = rf_exec_kernel_nodes(e);
        r->graph_nodes = rf_exec_nodes(e);
    }
    r->passed = 1;
    r->identical = 1;
    for (int p = 1; p >= 0 && !st; p--) { /* the sentinel first: the NaN figures are kept */
        rf_check_result_t one = *r;
        if (!(st = rf_mlp_buffers_fill(buf, poisons[p], stream)) &&
            !(st = rf_device_poison_smem(stream)) && /* its own launch: not a graph node */
            !(st = rf_timing_replay_events(e, stream, 1, &one.replay_us)) &&
            !(st = rf_stream_sync(stream)) && !(st = rf_mlp_buffers_download_y(buf, y))) {
            compare(o, k, y, &one);
            one.passed = one.passed && r->passed;
            *r = one;
        }
    }
    if (!st && o->replays > 0)
        st = rf_alloc(a, n * sizeof(float), "replayed Y", (void **)&again);
    for (int i = 0; !st && i < o->replays; i++)
        st = rf_exec_replay(e, stream);
    if (again && !st && !(st = rf_stream_sync(stream)) &&
        !(st = rf_mlp_buffers_download_y(buf, again))) {
        r->identical = memcmp(again, y, n * sizeof(float)) == 0;
        r->passed = r->passed && r->identical;
    }
    rf_free(a, again);
    rf_exec_destroy(e);
    snprintf(r->note, sizeof(r->note), "%s", rf_variant_note(v));
    return st;
}

/* ---- the job ---- */

typedef struct job {
    rf_allocator_t a;
    const rf_check_options_t *o;
    void *stream;
    rf_check_result_t *results;
    size_t n, cap;
    uint64_t next_seed;
} job_t;

static int wanted(const rf_check_options_t *o, const char *variant) {
    const char *p = o->variants;
    size_t len = strlen(variant);
    if (!p || !*p)
        return 1;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, variant, n) == 0)
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

static rf_status_t new_result(job_t *j, const char *pkg, const char *variant, int64_t m, int64_t c,
                              int64_t h, uint64_t seed, rf_check_result_t **out) {
    rf_check_result_t *r;
    RF_RETURN_IF_ERROR_PLAIN(rf_grow(j->a, (void **)&j->results, &j->cap, j->n + 1,
                                     sizeof(*j->results), "check results"));
    r = &j->results[j->n++];
    memset(r, 0, sizeof(*r));
    snprintf(r->pkg, sizeof(r->pkg), "%s", pkg ? pkg : "");
    snprintf(r->variant, sizeof(r->variant), "%s", variant);
    r->rows = m;
    r->channels = c;
    r->hidden = h;
    r->seed = seed;
    r->worst_index = -1;
    *out = r;
    return RF_OK;
}

/* Records a failed (package, variant, shape) as a result row carrying the error; takes
 * `error`. Returns only a failure to record it (out of memory). */
static rf_status_t record_error(job_t *j, const char *pkg, const char *variant, int64_t m,
                                int64_t c, int64_t h, rf_status_t error) {
    rf_check_result_t *r;
    rf_status_t rs = new_result(j, pkg, variant, m, c, h, 0, &r);
    if (rs) {
        rf_status_free(error);
        return rs;
    }
    set_error(r, error);
    return RF_OK;
}

/* Runs `variants` (n of them; NULL entries are skipped) at rows m of (c, h). */
static rf_status_t run_shape(job_t *j, const char *pkg, rf_variant_t *const *variants, int n,
                             int64_t m, int64_t c, int64_t h) {
    rf_mlp_case_t k;
    rf_mlp_buffers_t buf;
    float *y = NULL;
    uint64_t seed = j->o->seed * 1000003ull + j->next_seed++;
    rf_status_t st;
    rf_check_result_t *r;
    memset(&buf, 0, sizeof(buf));
    st = rf_mlp_case_create(j->a, m, c, h, seed, 1, &k);
    if (!st)
        st = rf_alloc(j->a, (size_t)(m * c) * 4, "Y copy", (void **)&y);
    if (!st)
        st = rf_mlp_buffers_alloc(m, c, h, &buf);
    if (!st)
        st = rf_mlp_buffers_upload(&buf, k.x, k.w1, k.b1, k.w2, k.b2);
    for (int i = 0; i < n; i++) {
        rf_status_t vs;
        if (!variants[i])
            continue;
        RF_RETURN_IF_ERROR_PLAIN(
            new_result(j, pkg, rf_variant_name(variants[i]), m, c, h, seed, &r));
        if (st) { /* the shape's setup failed: every variant reports it */
            snprintf(r->error, sizeof(r->error), "%s: %s", rf_code_name(rf_status_code(st)),
                     rf_status_message(st));
            continue;
        }
        vs = run_variant(j->a, j->o, variants[i], &k, &buf, j->stream, y, r);
        if (vs)
            set_error(r, vs);
    }
    rf_mlp_buffers_free(&buf);
    rf_free(j->a, y);
    rf_mlp_case_free(j->a, &k);
    if (st && rf_status_code(st) == RF_CODE_NO_DEVICE)
        return st;
    rf_status_free(st);
    return RF_OK;
}

static rf_status_t run_package(job_t *j, const char *dir) {
    rf_pkg_t *pkg = NULL;
    rf_variant_t *variants[RF_SCHEDULE_COUNT] = {0};
    const rf_check_options_t *o = j->o;
    rf_status_t st = rf_pkg_load(j->a, dir, &pkg);
    int64_t c, h;
    int n_rows = 0;
    if (st) {
        if (rf_status_code(st) == RF_CODE_NO_DEVICE)
            return st;
        return record_error(j, dir, "load", 0, 0, 0, st);
    }
    c = rf_pkg_channels(pkg);
    h = rf_pkg_hidden(pkg);
    for (int i = 0; i < RF_SCHEDULE_COUNT; i++) {
        const char *name = rf_schedule_name((rf_schedule_t)i);
        if (!wanted(o, name))
            continue;
        /* rf_variant_create_pkg gives the cuBLASLt variant for the vendor schedule. */
        if (i == RF_SCHEDULE_CUBLASLT || rf_pkg_kernel_count(pkg, name) >= 1)
            st = rf_variant_create_pkg(j->a, pkg, name, &variants[i]);
        else if (o->variants) /* asked for by name: its absence is a failure, not a skip */
            st = RF_ERR(RF_CODE_NOT_FOUND, "package %s does not contain schedule %s (%s)", dir,
                        name, rf_pkg_plan(pkg)->schedules[i].rejected);
        if (st && (st = record_error(j, dir, name, 0, c, h, st)))
            break;
    }
    for (int s = 0; s < o->n_shapes && !st; s++) {
        const rf_check_shape_t *sh = &o->shapes[s];
        if ((sh->channels == 0 && sh->hidden == 0) || (sh->channels == c && sh->hidden == h)) {
            st = run_shape(j, dir, variants, RF_SCHEDULE_COUNT, sh->rows, c, h);
            n_rows++;
        }
    }
    if (!st && n_rows == 0)
        st = run_shape(j, dir, variants, RF_SCHEDULE_COUNT,
                       rf_pkg_rows(pkg) > 0 ? rf_pkg_rows(pkg) : 49, c, h);
    for (int i = 0; i < RF_SCHEDULE_COUNT; i++)
        rf_variant_destroy(variants[i]);
    rf_pkg_destroy(pkg);
    return st;
}

static int shape_has_package(job_t *j, const rf_check_shape_t *sh) {
    for (size_t i = 0; i < j->n; i++)
        if (j->results[i].pkg[0] && j->results[i].channels == sh->channels &&
            j->results[i].hidden == sh->hidden)
            return 1;
    return 0;
}

rf_status_t rf_check_run(rf_allocator_t a, const rf_check_options_t *o,
                         rf_device_info_t *out_device, rf_check_result_t **out_results,
                         int *out_count) {
    job_t j;
    rf_status_t st;
    *out_results = NULL;
    *out_count = 0;
    memset(&j, 0, sizeof(j));
    j.a = a;
    j.o = o;
    if (o->n_pkgs == 0 && o->n_shapes == 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "nothing to check: give package directories or --shapes MxCxH");
    RF_RETURN_IF_ERROR(rf_device_open(o->device, out_device), "the check needs a GPU");
    RF_RETURN_IF_ERROR_PLAIN(rf_stream_create(&j.stream));
    st = RF_OK;
    for (int p = 0; p < o->n_pkgs && !st; p++)
        st = run_package(&j, o->pkg_dirs[p]);
    for (int s = 0; s < o->n_shapes && !st; s++) {
        const rf_check_shape_t *sh = &o->shapes[s];
        rf_variant_t *v = NULL;
        if (sh->channels == 0 || shape_has_package(&j, sh) ||
            !wanted(o, rf_schedule_name(RF_SCHEDULE_CUBLASLT)))
            continue;
        st = rf_variant_create_cublaslt(a, sh->channels, sh->hidden, &v);
        if (st) {
            if ((st = record_error(&j, "", rf_schedule_name(RF_SCHEDULE_CUBLASLT), sh->rows,
                                   sh->channels, sh->hidden, st)))
                break;
            continue;
        }
        st = run_shape(&j, "", &v, 1, sh->rows, sh->channels, sh->hidden);
        rf_variant_destroy(v);
    }
    rf_stream_destroy(j.stream);
    if (st) {
        rf_free(a, j.results);
        return st;
    }
    *out_results = j.results;
    *out_count = (int)j.n;
    return RF_OK;
}

/* ---- options and output ---- */

rf_status_t rf_check_parse_shapes(rf_allocator_t a, const char *text, rf_check_shape_t **out_shapes,
                                  int *out_count) {
    rf_check_shape_t *shapes = NULL;
    size_t cap = 0, n = 0;
    const char *p = text;
    *out_shapes = NULL;
    *out_count = 0;
    while (p && *p) {
        long long v[3] = {0, 0, 0};
        int k = 0;
        char *end;
        for (;;) {
            v[k] = strtoll(p, &end, 10);
            if (end == p || v[k] < 1 || v[k] > RF_MAX_DIM) {
                rf_free(a, shapes);
                return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                              "--shapes: \"%s\" at \"%.20s\": expected ROWS or ROWSxCxH with "
                              "positive integers, separated by commas",
                              text, p);
            }
            p = end;
            if (*p == 'x' && k < 2) {
                k++;
                p++;
                continue;
            }
            break;
        }
        if (k == 1 || (*p && *p != ',')) {
            rf_free(a, shapes);
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "--shapes: \"%s\": each entry is ROWS or ROWSxCHANNELSxHIDDEN", text);
        }
        RF_RETURN_IF_ERROR_PLAIN(
            rf_grow(a, (void **)&shapes, &cap, n + 1, sizeof(*shapes), "shapes"));
        shapes[n].rows = v[0];
        shapes[n].channels = k ? v[1] : 0;
        shapes[n].hidden = k ? v[2] : 0;
        n++;
        if (*p == ',')
            p++;
    }
    *out_shapes = shapes;
    *out_count = (int)n;
    return RF_OK;
}

static void json_device(rf_json_writer_t *w, const rf_device_info_t *d) {
    rf_json_key(w, "device");
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", d->name);
    rf_json_key_int(w, "cc", d->cc_major * 10 + d->cc_minor);
    rf_json_key_int(w, "sm_count", d->sm_count);
    rf_json_key_int(w, "driver_version", d->driver_version);
    rf_json_key_int(w, "runtime_version", d->runtime_version);
    rf_json_key_int(w, "clock_khz", d->clock_khz);
    rf_json_object_end(w);
}

rf_status_t rf_check_json_begin(rf_check_json_t *j, const char *path, const char *job,
                                const rf_device_info_t *d) {
    j->f = fopen(path, "w");
    if (!j->f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot open %s for writing", path);
    rf_json_writer_init_file(&j->w, j->f, 2);
    rf_json_object_begin(&j->w);
    rf_json_key_string(&j->w, "job", job);
    json_device(&j->w, d);
    return RF_OK;
}

void rf_check_json_results_begin(rf_check_json_t *j, uint64_t seed, int count, int passed) {
    rf_json_key_int(&j->w, "seed", (int64_t)seed);
    rf_json_key_int(&j->w, "count", count);
    rf_json_key_int(&j->w, "passed", passed);
    rf_json_key(&j->w, "results");
    rf_json_array_begin(&j->w);
}

rf_status_t rf_check_json_end(rf_check_json_t *j, const char *path) {
    rf_json_array_end(&j->w);
    rf_json_object_end(&j->w);
    rf_status_t st = rf_json_writer_finish(&j->w);
    if (fclose(j->f) != 0 && !st)
        st = RF_ERR(RF_CODE_IO_ERROR, "error closing %s", path);
    return st ? rf_status_annotate(st, "while writing %s", path) : RF_OK;
}

rf_status_t rf_check_write_json(const char *path, const rf_check_options_t *o,
                                const rf_device_info_t *d, const rf_check_result_t *res,
                                int count) {
    rf_check_json_t j;
    rf_json_writer_t *w = &j.w;
    int passed = 0;
    for (int i = 0; i < count; i++)
        passed += res[i].passed;
    rf_status_t st = rf_check_json_begin(&j, path, "rowfuse check", d);
    if (st)
        return st;
    rf_json_key(w, "tolerance");
    rf_json_object_begin(w);
    rf_json_key_double(w, "step_fraction", o->tol.step_fraction);
    rf_json_key_double(w, "allow_factor", o->tol.allow_factor);
    rf_json_key_string(w, "reference", "rf_ref_run, mixed precision");
    rf_json_object_end(w);
    rf_check_json_results_begin(&j, o->seed, count, passed);
    for (int i = 0; i < count; i++) {
        const rf_check_result_t *r = &res[i];
        rf_json_object_begin(w);
        rf_json_key_string(w, "package", r->pkg);
        rf_json_key_string(w, "variant", r->variant);
        rf_json_key_int(w, "rows", r->rows);
        rf_json_key_int(w, "channels", r->channels);
        rf_json_key_int(w, "hidden", r->hidden);
        rf_json_key_int(w, "seed", (int64_t)r->seed);
        rf_json_key_bool(w, "passed", r->passed);
        rf_json_key_int(w, "kernel_nodes", r->kernel_nodes);
        rf_json_key_int(w, "graph_nodes", r->graph_nodes);
        rf_json_key_int(w, "nonfinite", r->nonfinite);
        rf_json_key_int(w, "out_of_tolerance", r->out_of_tol);
        rf_json_key_double(w, "max_abs_error", r->max_abs);
        rf_json_key_double(w, "rel_l2_error", r->rel_l2);
        rf_json_key_double(w, "steps", r->steps);
        rf_json_key_double(w, "max_allow_ratio", r->max_ratio);
        rf_json_key_bool(w, "replays_identical", r->identical);
        rf_json_key_int(w, "worst_index", r->worst_index);
        rf_json_key_double(w, "worst_got", r->worst_got);
        rf_json_key_double(w, "worst_ref", r->worst_ref);
        rf_json_key_double(w, "replay_event_us", r->replay_us);
        rf_json_key_string(w, "note", r->note);
        rf_json_key_string(w, "error", r->error);
        rf_json_object_end(w);
    }
    return rf_check_json_end(&j, path);
}
