/* The check job of chain packages (check_chain.h). */
#include "harness/check_chain.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain/chain.h"
#include "rowfuse/rng.h"
#include "rowfuse/tensor.h"

/* ---- the package's chain, for its reference ----
 *
 * Read back from what the package was built from: the chain_mma entry of kernel_spec.json
 * (stages, widths, dtypes, weight offsets) and weights.bin (wh fp16 and wf f32 at the
 * offsets plan.json's "chain" object gives). The dtypes the spec carries must be the ones
 * the precision rule gives (rf_chain_assign_dtypes), so a spec that stores a value at
 * another precision than the rule is refused here rather than checked against itself. */

typedef struct pkg_weights {
    const uint16_t *wh;
    const float *wf;
    int64_t wh_elems, wf_elems;
} pkg_weights_t;

static rf_status_t read_json(const char *path, cJSON **out) {
    FILE *f = fopen(path, "rb");
    long n;
    char *text;
    *out = NULL;
    if (!f)
        return RF_ERR(RF_CODE_NOT_FOUND, "%s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > (16l << 20) ||
        fseek(f, 0, SEEK_SET) != 0 || !(text = malloc((size_t)n + 1))) {
        fclose(f);
        return RF_ERR(RF_CODE_IO_ERROR, "%s: unreadable", path);
    }
    text[fread(text, 1, (size_t)n, f)] = '\0';
    fclose(f);
    *out = cJSON_Parse(text);
    free(text);
    if (!*out || !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: not a JSON object", path);
    }
    return RF_OK;
}

static int64_t jint(const cJSON *o, const char *key, int64_t dflt) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(it) ? (int64_t)it->valuedouble : dflt;
}

static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(it) ? it->valuestring : "";
}

/* n floats of wh (fp16) at element offset off, converted, into the chain's arena. */
static rf_status_t weight_h(rf_chain_t *c, const pkg_weights_t *w, int64_t off, int64_t n,
                            const char *what, int si, const float **out) {
    float *dst;
    if (off < 0 || n < 1 || off + n > w->wh_elems)
        return RF_ERR(RF_CODE_PARSE_ERROR, "stages[%d]: %s [%lld, +%lld) lies outside wh (%lld)",
                      si, what, (long long)off, (long long)n, (long long)w->wh_elems);
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_alloc_floats(c, (size_t)n, &dst));
    for (int64_t i = 0; i < n; i++)
        dst[i] = rf_f16_to_f32(w->wh[off + i]);
    *out = dst;
    return RF_OK;
}

/* n floats of wf at element offset off (-1: none, *out = NULL). */
static rf_status_t weight_f(rf_chain_t *c, const pkg_weights_t *w, int64_t off, int64_t n,
                            const char *what, int si, const float **out) {
    float *dst;
    *out = NULL;
    if (off == -1)
        return RF_OK;
    if (off < 0 || off + n > w->wf_elems)
        return RF_ERR(RF_CODE_PARSE_ERROR, "stages[%d]: %s [%lld, +%lld) lies outside wf (%lld)",
                      si, what, (long long)off, (long long)n, (long long)w->wf_elems);
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_copy_floats(c, w->wf + off, (size_t)n, &dst));
    *out = dst;
    return RF_OK;
}

static rf_status_t fn_of(const char *name, int si, rf_chain_fn_t *out) {
    int fn = rf_chain_fn_from_name(name);
    if (fn < 0)
        return RF_ERR(RF_CODE_PARSE_ERROR, "stages[%d]: unknown function \"%s\"", si, name);
    *out = (rf_chain_fn_t)fn;
    return RF_OK;
}

static rf_status_t build_stage(rf_chain_t *c, const pkg_weights_t *w, const cJSON *js,
                               const cJSON *values, int si) {
    const char *op = jstr(js, "op");
    int dst = (int)jint(js, "dst", -1);
    const cJSON *dv = cJSON_GetArrayItem(values, dst);
    int64_t width = jint(dv, "width", 0);
    rf_chain_stage_t *s;
    rf_status_t st;
    rf_chain_op_t kind = !strcmp(op, "linear")  ? RF_CHAIN_LINEAR
                         : !strcmp(op, "gated") ? RF_CHAIN_GATED
                         : !strcmp(op, "act")   ? RF_CHAIN_ACT
                         : !strcmp(op, "add")   ? RF_CHAIN_ADD
                         : !strcmp(op, "norm")  ? RF_CHAIN_NORM
                                                : RF_CHAIN_OP_COUNT_;
    if (kind == RF_CHAIN_OP_COUNT_)
        return RF_ERR(RF_CODE_PARSE_ERROR, "stages[%d]: unknown op \"%s\"", si, op);
    if (dst != si + 1 || !dv)
        return RF_ERR(RF_CODE_PARSE_ERROR, "stages[%d]: dst %d; expected %d", si, dst, si + 1);
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_add_stage(c, kind, width, &s));
    s->src = (int)jint(js, kind == RF_CHAIN_ADD ? "a" : "src", -1);
    if (kind == RF_CHAIN_ADD)
        s->src2 = (int)jint(js, "b", -1);
    if (kind == RF_CHAIN_LINEAR || kind == RF_CHAIN_GATED) {
        const cJSON *epi = cJSON_GetObjectItemCaseSensitive(js, "epilogue");
        s->k = jint(js, "k", 0);
        s->n = jint(js, "n", 0);
        if (kind == RF_CHAIN_LINEAR) {
            if ((st = weight_h(c, w, jint(js, "w", -2), s->k * s->n, "w", si, &s->w)) ||
                (st = weight_f(c, w, jint(js, "b", -1), s->n, "b", si, &s->b)))
                return st;
        } else {
            if ((st = weight_h(c, w, jint(js, "wg", -2), s->k * s->n, "wg", si, &s->w)) ||
                (st = weight_h(c, w, jint(js, "wu", -2), s->k * s->n, "wu", si, &s->wu)) ||
                (st = weight_f(c, w, jint(js, "bg", -1), s->n, "bg", si, &s->b)) ||
                (st = weight_f(c, w, jint(js, "bu", -1), s->n, "bu", si, &s->bu)) ||
                (st = fn_of(jstr(js, "fn"), si, &s->fn)))
                return st;
        }
        if (cJSON_GetArraySize(epi) > RF_CHAIN_MAX_EPILOGUE)
            return RF_ERR(RF_CODE_PARSE_ERROR, "stages[%d]: more than %d epilogue ops", si,
                          RF_CHAIN_MAX_EPILOGUE);
        for (int i = 0; i < cJSON_GetArraySize(epi); i++) {
            const cJSON *e = cJSON_GetArrayItem(epi, i);
            const char *eop = jstr(e, "op");
            rf_chain_epi_t *pe = &s->epi[s->n_epi++];
            if (!strcmp(eop, "act")) {
                pe->op = RF_CHAIN_EPI_ACT;
                RF_RETURN_IF_ERROR_PLAIN(fn_of(jstr(e, "fn"), si, &pe->fn));
            } else if (!strcmp(eop, "add") || !strcmp(eop, "mul")) {
                pe->op = !strcmp(eop, "add") ? RF_CHAIN_EPI_ADD : RF_CHAIN_EPI_MUL;
                pe->src = (int)jint(e, "src", -1);
            } else {
                return RF_ERR(RF_CODE_PARSE_ERROR, "stages[%d]: unknown epilogue op \"%s\"", si,
                              eop);
            }
        }
    } else if (kind == RF_CHAIN_ACT) {
        RF_RETURN_IF_ERROR_PLAIN(fn_of(jstr(js, "fn"), si, &s->fn));
    } else if (kind == RF_CHAIN_NORM) {
        const cJSON *eps = cJSON_GetObjectItemCaseSensitive(js, "eps");
        s->norm = !strcmp(jstr(js, "kind"), "rmsnorm") ? RF_CHAIN_RMSNORM : RF_CHAIN_LAYERNORM;
        s->eps = cJSON_IsNumber(eps) ? eps->valuedouble : -1.0;
        if ((st = weight_f(c, w, jint(js, "gamma", -1), width, "gamma", si, &s->gamma)) ||
            (st = weight_f(c, w, jint(js, "beta", -1), width, "beta", si, &s->beta)))
            return st;
    }
    return RF_OK;
}

static rf_status_t read_weights(const char *dir, const cJSON *plan, uint8_t **out_raw,
                                pkg_weights_t *w) {
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(plan, "chain");
    int64_t who = jint(ch, "wh_offset", -1), wfo = jint(ch, "wf_offset", -1);
    char path[1100];
    FILE *f;
    long n;
    uint8_t *raw;
    *out_raw = NULL;
    w->wh_elems = jint(ch, "wh_elems", -1);
    w->wf_elems = jint(ch, "wf_elems", -1);
    snprintf(path, sizeof(path), "%s/weights.bin", dir);
    f = fopen(path, "rb");
    if (!f)
        return RF_ERR(RF_CODE_NOT_FOUND, "%s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(raw = malloc((size_t)n + 1))) {
        fclose(f);
        return RF_ERR(RF_CODE_IO_ERROR, "%s: unreadable", path);
    }
    if (fread(raw, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(raw);
        return RF_ERR(RF_CODE_IO_ERROR, "%s: cut short", path);
    }
    fclose(f);
    if (who < 0 || wfo < 0 || w->wh_elems < 0 || w->wf_elems < 0 || who % 16 || wfo % 16 ||
        who + 2 * w->wh_elems > n || wfo + 4 * w->wf_elems > n) {
        free(raw);
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: plan.json's chain offsets do not fit weights.bin (%ld bytes)", path, n);
    }
    w->wh = (const uint16_t *)(raw + who);
    w->wf = (const float *)(raw + wfo);
    *out_raw = raw;
    return RF_OK;
}

static rf_status_t build_chain(rf_allocator_t a, const cJSON *k, const pkg_weights_t *w,
                               rf_chain_t **out) {
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(k, "values");
    const cJSON *stages = cJSON_GetObjectItemCaseSensitive(k, "stages");
    rf_chain_t *c = NULL;
    rf_status_t st;
    if (!cJSON_IsArray(values) || !cJSON_IsArray(stages) ||
        cJSON_GetArraySize(values) != cJSON_GetArraySize(stages) + 1)
        return RF_ERR(RF_CODE_PARSE_ERROR, "\"values\" must list one value per stage and X");
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_create(a, jint(k, "in_width", 0), &c));
    st = RF_OK;
    for (int i = 0; i < cJSON_GetArraySize(stages) && !st; i++)
        st = build_stage(c, w, cJSON_GetArrayItem(stages, i), values, i);
    if (!st)
        st = rf_chain_validate(c);
    if (!st) {
        rf_chain_assign_dtypes(c);
        for (int v = 0; v < c->n_values && !st; v++) {
            const char *dt = jstr(cJSON_GetArrayItem(values, v), "dtype");
            rf_dtype_t want = !strcmp(dt, "f16") ? RF_DTYPE_F16 : RF_DTYPE_F32;
            if (c->values[v].dtype != want)
                st = RF_ERR(RF_CODE_MISMATCH, "value %d is stored %s; the precision rule says %s",
                            v, dt, c->values[v].dtype == RF_DTYPE_F16 ? "f16" : "f32");
        }
    }
    if (st) {
        rf_chain_destroy(c);
        return st;
    }
    *out = c;
    return RF_OK;
}

/* The chain of a package, for its reference (see above). */
static rf_status_t load_reference_chain(rf_allocator_t a, const char *dir, rf_chain_t **out) {
    char path[1100];
    cJSON *spec = NULL, *plan = NULL;
    const cJSON *k = NULL, *ks;
    uint8_t *raw = NULL;
    pkg_weights_t w;
    rf_status_t st;
    *out = NULL;
    snprintf(path, sizeof(path), "%s/plan.json", dir);
    st = read_json(path, &plan);
    snprintf(path, sizeof(path), "%s/kernel_spec.json", dir);
    if (!st)
        st = read_json(path, &spec);
    ks = spec ? cJSON_GetObjectItemCaseSensitive(spec, "kernels") : NULL;
    for (int i = 0; i < cJSON_GetArraySize(ks) && !k; i++)
        if (!strcmp(jstr(cJSON_GetArrayItem(ks, i), "mode"), "chain_mma"))
            k = cJSON_GetArrayItem(ks, i);
    if (!st && !k)
        st = RF_ERR(RF_CODE_PARSE_ERROR, "%s lists no chain_mma kernel", path);
    if (!st)
        st = read_weights(dir, plan, &raw, &w);
    if (!st)
        st = build_chain(a, k, &w, out);
    free(raw);
    cJSON_Delete(spec);
    cJSON_Delete(plan);
    return st ? rf_status_annotate(st, "while reading the chain of %s for its reference", dir)
              : RF_OK;
}

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
            pst = load_reference_chain(a, dir, &chain);
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
