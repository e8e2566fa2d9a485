/* rf_chain_load_package (chain.h): a chain package's plan.json "chain" object and its
 * weights.bin back into a chain, so the check computes the reference with no ONNX file.
 * Every field is checked (ranges, offsets inside the arrays, operands produced before the
 * stage, dtypes by the precision rule); errors name the file and the field. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_read.h"
#include "chain/chain.h"
#include "rowfuse/plan.h"
#include "rowfuse/tensor.h"

#define RF_CHAIN_PLAN_MAX_BYTES (64L << 20)

typedef struct rf_loader {
    const char *path; /* plan.json, for messages */
    rf_chain_t *c;
    const uint16_t *wh;
    const float *wf;
    int64_t wh_elems, wf_elems;
} rf_loader_t;

static rf_status_t num(const rf_loader_t *l, const cJSON *o, const char *where, const char *key,
                       int64_t lo, int64_t hi, int64_t *out) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(it) || it->valuedouble != (double)(int64_t)it->valuedouble ||
        it->valuedouble < (double)lo || it->valuedouble > (double)hi)
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: %s\"%s\" is missing or not an integer in [%lld, %lld]", l->path, where,
                      key, (long long)lo, (long long)hi);
    *out = (int64_t)it->valuedouble;
    return RF_OK;
}

static rf_status_t str(const rf_loader_t *l, const cJSON *o, const char *where, const char *key,
                       const char **out) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(it))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"%s\" is missing or not a string", l->path,
                      where, key);
    *out = it->valuestring;
    return RF_OK;
}

/* "fn" and, for leaky_relu, its "alpha" (a finite number). */
static rf_status_t fn_of(const rf_loader_t *l, const cJSON *o, const char *where,
                         rf_chain_fn_t *out, float *out_alpha) {
    const char *s = "";
    RF_RETURN_IF_ERROR_PLAIN(str(l, o, where, "fn", &s));
    int fn = rf_chain_fn_from_name(s);
    if (fn < 0)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"fn\" is '%s', not an activation rowfuse has",
                      l->path, where, s);
    *out = (rf_chain_fn_t)fn;
    *out_alpha = 0.0f;
    if (rf_chain_fn_parametric((rf_chain_fn_t)fn)) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "alpha");
        if (!cJSON_IsNumber(a) || !isfinite(a->valuedouble))
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"alpha\" of %s must be a number", l->path,
                          where, s);
        *out_alpha = (float)a->valuedouble;
    }
    return RF_OK;
}

/* An fp16 W [k, n] at element offset off of wh, as floats in the chain. */
static rf_status_t take_w(rf_loader_t *l, const cJSON *o, const char *where, const char *key,
                          int64_t k, int64_t n, const float **out) {
    int64_t off = 0;
    RF_RETURN_IF_ERROR_PLAIN(num(l, o, where, key, 0, l->wh_elems, &off));
    if (off + k * n > l->wh_elems)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"%s\" %lld + %lld x %lld runs past wh (%lld)",
                      l->path, where, key, (long long)off, (long long)k, (long long)n,
                      (long long)l->wh_elems);
    float *w;
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_alloc_floats(l->c, (size_t)(k * n), &w));
    for (int64_t i = 0; i < k * n; i++)
        w[i] = rf_f16_to_f32(l->wh[off + i]);
    *out = w;
    return RF_OK;
}

/* An fp32 vector of n at element offset off of wf; -1 (or absent when optional) = none. */
static rf_status_t take_v(rf_loader_t *l, const cJSON *o, const char *where, const char *key,
                          int64_t n, const float **out) {
    int64_t off = -1;
    *out = NULL;
    if (!cJSON_GetObjectItemCaseSensitive(o, key))
        return RF_OK;
    RF_RETURN_IF_ERROR_PLAIN(num(l, o, where, key, -1, l->wf_elems, &off));
    if (off < 0)
        return RF_OK;
    if (off + n > l->wf_elems)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"%s\" %lld + %lld runs past wf (%lld)", l->path,
                      where, key, (long long)off, (long long)n, (long long)l->wf_elems);
    float *v;
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_copy_floats(l->c, l->wf + off, (size_t)n, &v));
    *out = v;
    return RF_OK;
}

static rf_status_t read_stage(rf_loader_t *l, const cJSON *so, int s, const int64_t *widths,
                              int n_values) {
    char where[48];
    snprintf(where, sizeof where, "chain.stages[%d].", s);
    const char *op = "";
    int64_t dst = -1, src = -1, src2 = -1;
    RF_RETURN_IF_ERROR_PLAIN(str(l, so, where, "op", &op));
    RF_RETURN_IF_ERROR_PLAIN(num(l, so, where, "dst", s + 1, s + 1, &dst));
    if (dst >= n_values)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"dst\" %lld has no value entry", l->path, where,
                      (long long)dst);
    rf_chain_op_t kind;
    if (!strcmp(op, "linear"))
        kind = RF_CHAIN_LINEAR;
    else if (!strcmp(op, "gated"))
        kind = RF_CHAIN_GATED;
    else if (!strcmp(op, "act"))
        kind = RF_CHAIN_ACT;
    else if (!strcmp(op, "add"))
        kind = RF_CHAIN_ADD;
    else if (!strcmp(op, "norm"))
        kind = RF_CHAIN_NORM;
    else
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"op\" is '%s', not a stage kind", l->path, where,
                      op);
    if (kind == RF_CHAIN_ADD) {
        RF_RETURN_IF_ERROR_PLAIN(num(l, so, where, "a", 0, s, &src));
        RF_RETURN_IF_ERROR_PLAIN(num(l, so, where, "b", 0, s, &src2));
    } else {
        RF_RETURN_IF_ERROR_PLAIN(num(l, so, where, "src", 0, s, &src));
    }
    rf_chain_stage_t *st;
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_add_stage(l->c, kind, widths[dst], &st));
    st->src = (int)src;
    st->src2 = (int)src2;
    int64_t w = widths[dst];
    switch (kind) {
    case RF_CHAIN_LINEAR:
    case RF_CHAIN_GATED:
        RF_RETURN_IF_ERROR_PLAIN(num(l, so, where, "k", 1, RF_MAX_DIM, &st->k));
        RF_RETURN_IF_ERROR_PLAIN(num(l, so, where, "n", 1, RF_MAX_DIM, &st->n));
        if (st->k != widths[src] || st->n != w)
            return RF_ERR(RF_CODE_PARSE_ERROR,
                          "%s: %s\"k\" %lld / \"n\" %lld disagree with the widths of v%lld and "
                          "v%lld",
                          l->path, where, (long long)st->k, (long long)st->n, (long long)src,
                          (long long)dst);
        if (kind == RF_CHAIN_LINEAR) {
            RF_RETURN_IF_ERROR_PLAIN(take_w(l, so, where, "w", st->k, st->n, &st->w));
            RF_RETURN_IF_ERROR_PLAIN(take_v(l, so, where, "b", st->n, &st->b));
            const cJSON *epi = cJSON_GetObjectItemCaseSensitive(so, "epilogue");
            if (epi && (!cJSON_IsArray(epi) || cJSON_GetArraySize(epi) > RF_CHAIN_MAX_EPILOGUE))
                return RF_ERR(RF_CODE_PARSE_ERROR,
                              "%s: %s\"epilogue\" must be a list of at most %d ops", l->path, where,
                              RF_CHAIN_MAX_EPILOGUE);
            for (int e = 0; epi && e < cJSON_GetArraySize(epi); e++) {
                const cJSON *eo = cJSON_GetArrayItem(epi, e);
                char ew[80];
                const char *eop = "";
                snprintf(ew, sizeof ew, "%sepilogue[%d].", where, e);
                RF_RETURN_IF_ERROR_PLAIN(str(l, eo, ew, "op", &eop));
                rf_chain_epi_t *ep = &st->epi[st->n_epi++];
                ep->src = -1;
                ep->fn = RF_CHAIN_FN_IDENTITY;
                if (!strcmp(eop, "act")) {
                    ep->op = RF_CHAIN_EPI_ACT;
                    RF_RETURN_IF_ERROR_PLAIN(fn_of(l, eo, ew, &ep->fn, &ep->alpha));
                } else if (!strcmp(eop, "add") || !strcmp(eop, "mul")) {
                    int64_t es;
                    ep->op = !strcmp(eop, "add") ? RF_CHAIN_EPI_ADD : RF_CHAIN_EPI_MUL;
                    RF_RETURN_IF_ERROR_PLAIN(num(l, eo, ew, "src", 0, s, &es));
                    ep->src = (int)es;
                } else {
                    return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"op\" is '%s'", l->path, ew, eop);
                }
            }
        } else {
            RF_RETURN_IF_ERROR_PLAIN(take_w(l, so, where, "wg", st->k, st->n, &st->w));
            RF_RETURN_IF_ERROR_PLAIN(take_w(l, so, where, "wu", st->k, st->n, &st->wu));
            RF_RETURN_IF_ERROR_PLAIN(take_v(l, so, where, "bg", st->n, &st->b));
            RF_RETURN_IF_ERROR_PLAIN(take_v(l, so, where, "bu", st->n, &st->bu));
            RF_RETURN_IF_ERROR_PLAIN(fn_of(l, so, where, &st->fn, &st->alpha));
        }
        break;
    case RF_CHAIN_ACT:
        RF_RETURN_IF_ERROR_PLAIN(fn_of(l, so, where, &st->fn, &st->alpha));
        break;
    case RF_CHAIN_NORM: {
        const char *nk = "";
        const cJSON *eps = cJSON_GetObjectItemCaseSensitive(so, "eps");
        RF_RETURN_IF_ERROR_PLAIN(str(l, so, where, "kind", &nk));
        if (!rf_chain_norm_parse(nk, &st->norm))
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"kind\" is '%s'", l->path, where, nk);
        unsigned flags = rf_chain_norm_flags(st->norm);
        if (flags & RF_CHAIN_NORM_EPS) {
            if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0.0))
                return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"eps\" must be a positive number",
                              l->path, where);
            st->eps = eps->valuedouble;
        }
        if (flags & RF_CHAIN_NORM_GAMMA)
            RF_RETURN_IF_ERROR_PLAIN(take_v(l, so, where, "gamma", w, &st->gamma));
        if (flags & RF_CHAIN_NORM_BETA)
            RF_RETURN_IF_ERROR_PLAIN(take_v(l, so, where, "beta", w, &st->beta));
        break;
    }
    default:
        break;
    }
    return RF_OK;
}

static rf_status_t read_chain(rf_loader_t *l, const cJSON *root, rf_allocator_t a,
                              const char *dir) {
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(root, "chain");
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsString(format) || strcmp(format->valuestring, "rowfuse-package"))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s is not a rowfuse package plan (\"format\")",
                      l->path);
    if (!cJSON_IsNumber(version) || version->valuedouble != RF_PLAN_VERSION)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "%s is not a version %d plan: recompile the package with this rowfuse",
                      l->path, RF_PLAN_VERSION);
    if (!cJSON_IsObject(ch))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: no \"chain\" object: not a chain package", l->path);
    int64_t in_w = 0, out_w = 0, wh_off = 0, wf_off = 0;
    RF_RETURN_IF_ERROR_PLAIN(num(l, ch, "chain.", "in_width", 1, RF_MAX_DIM, &in_w));
    RF_RETURN_IF_ERROR_PLAIN(num(l, ch, "chain.", "out_width", 1, RF_MAX_DIM, &out_w));
    RF_RETURN_IF_ERROR_PLAIN(num(l, ch, "chain.", "wh_offset", 0, (int64_t)1 << 40, &wh_off));
    RF_RETURN_IF_ERROR_PLAIN(num(l, ch, "chain.", "wh_elems", 0, (int64_t)1 << 38, &l->wh_elems));
    RF_RETURN_IF_ERROR_PLAIN(num(l, ch, "chain.", "wf_offset", 0, (int64_t)1 << 40, &wf_off));
    RF_RETURN_IF_ERROR_PLAIN(num(l, ch, "chain.", "wf_elems", 0, (int64_t)1 << 38, &l->wf_elems));
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(ch, "values");
    const cJSON *stages = cJSON_GetObjectItemCaseSensitive(ch, "stages");
    int nv = cJSON_GetArraySize(vals), ns = cJSON_GetArraySize(stages);
    if (!cJSON_IsArray(vals) || !cJSON_IsArray(stages) || ns < 1 || ns > RF_CHAIN_MAX_STAGES ||
        nv != ns + 1)
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: chain.\"values\" and chain.\"stages\" must be lists, one value per "
                      "stage plus X (at most %d stages)",
                      l->path, RF_CHAIN_MAX_STAGES);
    int64_t widths[RF_CHAIN_MAX_STAGES + 1];
    rf_dtype_t dtypes[RF_CHAIN_MAX_STAGES + 1];
    for (int v = 0; v < nv; v++) {
        const cJSON *vo = cJSON_GetArrayItem(vals, v);
        char where[40];
        const char *dt = "";
        int64_t id;
        snprintf(where, sizeof where, "chain.values[%d].", v);
        RF_RETURN_IF_ERROR_PLAIN(num(l, vo, where, "id", v, v, &id));
        RF_RETURN_IF_ERROR_PLAIN(num(l, vo, where, "width", 1, RF_MAX_DIM, &widths[v]));
        RF_RETURN_IF_ERROR_PLAIN(str(l, vo, where, "dtype", &dt));
        if (strcmp(dt, "f16") && strcmp(dt, "f32"))
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"dtype\" is '%s'; f16 or f32", l->path,
                          where, dt);
        dtypes[v] = !strcmp(dt, "f16") ? RF_DTYPE_F16 : RF_DTYPE_F32;
    }
    if (widths[0] != in_w || widths[nv - 1] != out_w)
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: chain in_width %lld / out_width %lld disagree with its values", l->path,
                      (long long)in_w, (long long)out_w);
    /* weights.bin: wh then wf at the recorded byte offsets */
    char wpath[4096];
    snprintf(wpath, sizeof wpath, "%s/weights.bin", dir);
    FILE *f = fopen(wpath, "rb");
    if (!f)
        return RF_ERR(errno == ENOENT ? RF_CODE_NOT_FOUND : RF_CODE_IO_ERROR, "%s: %s", wpath,
                      strerror(errno));
    int64_t need_wh = wh_off + 2 * l->wh_elems, need_wf = wf_off + 4 * l->wf_elems;
    int64_t size = need_wh > need_wf ? need_wh : need_wf;
    void *buf = NULL;
    rf_status_t st = rf_alloc(a, (size_t)(size ? size : 1), "weights.bin", &buf);
    if (!st && size && fread(buf, 1, (size_t)size, f) != (size_t)size)
        st = RF_ERR(RF_CODE_PARSE_ERROR,
                    "%s: shorter than the %lld bytes plan.json's chain offsets need", wpath,
                    (long long)size);
    fclose(f);
    if (!st && (wh_off % 16 || wf_off % 16))
        st = RF_ERR(RF_CODE_PARSE_ERROR, "%s: chain wh_offset / wf_offset must be 16-byte aligned",
                    l->path);
    if (!st)
        st = rf_chain_create(a, in_w, &l->c);
    if (!st) {
        l->wh = (const uint16_t *)((const char *)buf + wh_off);
        l->wf = (const float *)((const char *)buf + wf_off);
        for (int s = 0; !st && s < ns; s++)
            st = read_stage(l, cJSON_GetArrayItem(stages, s), s, widths, nv);
    }
    rf_free(a, buf);
    if (!st)
        st = rf_chain_validate(l->c);
    if (!st) {
        rf_chain_assign_dtypes(l->c);
        for (int v = 0; !st && v < nv; v++)
            if (l->c->values[v].dtype != dtypes[v])
                st =
                    RF_ERR(RF_CODE_PARSE_ERROR,
                           "%s: chain value %d is %s, but the precision rule stores it %s", l->path,
                           v, rf_dtype_name(dtypes[v]), rf_dtype_name(l->c->values[v].dtype));
    }
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
    if (!st && cJSON_IsNumber(rows))
        l->c->rows = (int64_t)rows->valuedouble;
    return st;
}

rf_status_t rf_chain_load_package(rf_allocator_t a, const char *dir, rf_chain_t **out_chain) {
    *out_chain = NULL;
    char path[4096];
    if (!dir || strlen(dir) > sizeof path - 16)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_chain_load_package: bad directory");
    snprintf(path, sizeof path, "%s/plan.json", dir);
    cJSON *root;
    RF_RETURN_IF_ERROR_PLAIN(rf_json_read_file(path, RF_CHAIN_PLAN_MAX_BYTES, &root));
    rf_loader_t l;
    memset(&l, 0, sizeof l);
    l.path = path;
    rf_status_t st = read_chain(&l, root, a, dir);
    cJSON_Delete(root);
    if (st) {
        rf_chain_destroy(l.c);
        return st;
    }
    *out_chain = l.c;
    return RF_OK;
}
