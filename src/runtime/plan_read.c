/* The reader of plan.json (rowfuse/plan.h): the only code that parses a package's
 * contract. Every field is checked on the way in; an error names the file and the field.
 * Pure C (cJSON), so it is tested without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_read.h"
#include "rowfuse/plan.h"
#include "rowfuse/tensor.h"

#define RF_PLAN_MAX_BYTES (4l << 20)

typedef struct reader {
    const char *path;
} reader_t;

static rf_status_t get_num(const reader_t *r, const cJSON *obj, const char *where, const char *key,
                           int64_t min, int64_t max, int64_t *out) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(it))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"%s\" is missing or not a number", r->path,
                      where, key);
    double v = it->valuedouble;
    if (v != (double)(int64_t)v || v < (double)min || v > (double)max)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"%s\" is %g; expected an integer in %lld..%lld",
                      r->path, where, key, v, (long long)min, (long long)max);
    *out = (int64_t)v;
    return RF_OK;
}

static rf_status_t get_int(const reader_t *r, const cJSON *obj, const char *where, const char *key,
                           int min, int max, int *out) {
    int64_t v;
    RF_RETURN_IF_ERROR_PLAIN(get_num(r, obj, where, key, min, max, &v));
    *out = (int)v;
    return RF_OK;
}

static rf_status_t get_str(const reader_t *r, const cJSON *obj, const char *where, const char *key,
                           char *dst, size_t size) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(it) || strlen(it->valuestring) >= size)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"%s\" is missing, not a string or too long",
                      r->path, where, key);
    snprintf(dst, size, "%s", it->valuestring);
    return RF_OK;
}

static rf_status_t read_target(const reader_t *r, const cJSON *root, rf_target_t *t) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "target");
    const char *w = "target.";
    rf_status_t st;
    if ((st = get_str(r, o, w, "name", t->name, sizeof t->name)) ||
        (st = get_str(r, o, w, "arch", t->arch, sizeof t->arch)) ||
        (st = get_int(r, o, w, "sm_count", 1, 1024, &t->sm_count)) ||
        (st = get_int(r, o, w, "smem_per_block", 1, 1 << 24, &t->smem_per_block)) ||
        (st = get_int(r, o, w, "smem_per_sm", 1, 1 << 24, &t->smem_per_sm)) ||
        (st = get_int(r, o, w, "smem_reserved", 0, 1 << 20, &t->smem_reserved)) ||
        (st = get_int(r, o, w, "regs_per_sm", 1, 1 << 24, &t->regs_per_sm)) ||
        (st = get_int(r, o, w, "threads_per_sm", 1, 1 << 16, &t->threads_per_sm)) ||
        (st = get_int(r, o, w, "max_blocks_per_sm", 1, 1024, &t->max_blocks_per_sm)))
        return st;
    return RF_OK;
}

static rf_status_t read_kernel(const reader_t *r, const cJSON *o, int i, rf_kernel_spec_t *k) {
    char w[32], mode[32];
    rf_status_t st;
    snprintf(w, sizeof w, "kernels[%d].", i);
    if ((st = get_str(r, o, w, "name", k->name, sizeof k->name)) ||
        (st = get_str(r, o, w, "mode", mode, sizeof mode)) ||
        (st = rf_kernel_mode_parse(mode, &k->mode)) ||
        (st = get_int(r, o, w, "channels", 1, 1 << 20, &k->channels)) ||
        (st = get_int(r, o, w, "hidden", 1, 1 << 20, &k->hidden)) ||
        (st = get_int(r, o, w, "tile_rows", 1, 1024, &k->tile_rows)) ||
        (st = get_int(r, o, w, "warps_m", 1, 32, &k->warps_m)) ||
        (st = get_int(r, o, w, "warps_n", 1, 32, &k->warps_n)) ||
        (st = get_int(r, o, w, "smem_bytes", 0, 1 << 24, &k->smem_bytes)) ||
        (st = get_int(r, o, w, "x_stages", 0, 16, &k->x_stages)) ||
        (st = get_int(r, o, w, "cluster_h", 1, 2, &k->cluster_h)) ||
        (st = get_int(r, o, w, "registers", 0, 255, &k->registers)) ||
        (st = get_int(r, o, w, "blocks_per_sm", 1, 1024, &k->blocks_per_sm)))
        return rf_status_annotate(st, "in %s", r->path);
    const cJSON *local = cJSON_GetObjectItemCaseSensitive(o, "local_ops"); /* optional */
    k->local_ops = cJSON_IsNumber(local) ? (int)local->valuedouble : -1;
    const cJSON *fault = cJSON_GetObjectItemCaseSensitive(o, "fault");
    if (cJSON_IsString(fault))
        snprintf(k->fault, sizeof k->fault, "%s", fault->valuestring);
    const cJSON *delay = cJSON_GetObjectItemCaseSensitive(o, "check_delay"); /* optional */
    k->check_delay = cJSON_IsNumber(delay) ? (int)delay->valuedouble : 0;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "grid_balanced");
    if (!cJSON_IsBool(b))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"grid_balanced\" must be true or false", r->path,
                      w);
    k->grid_balanced = cJSON_IsTrue(b);
    return RF_OK;
}

static rf_status_t read_schedules(const reader_t *r, const cJSON *root, rf_plan_t *p) {
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(root, "schedules");
    for (int s = 0; s < RF_SCHEDULE_COUNT; s++) {
        const char *name = rf_schedule_name((rf_schedule_t)s);
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(all, name);
        const cJSON *ks = cJSON_GetObjectItemCaseSensitive(o, "kernels");
        rf_plan_schedule_t *ps = &p->schedules[s];
        if (!cJSON_IsObject(o) || !cJSON_IsArray(ks) || cJSON_GetArraySize(ks) > 2)
            return RF_ERR(RF_CODE_PARSE_ERROR,
                          "%s: schedules.%s is missing or has no \"kernels\" list (at most 2)",
                          r->path, name);
        ps->available = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "available"));
        ps->kernel_count = cJSON_GetArraySize(ks);
        for (int i = 0; i < ps->kernel_count; i++) {
            const cJSON *ix = cJSON_GetArrayItem(ks, i);
            if (!cJSON_IsNumber(ix) || ix->valueint < 0 || ix->valueint >= p->kernel_count)
                return RF_ERR(RF_CODE_PARSE_ERROR,
                              "%s: schedules.%s.kernels[%d] is not a kernel "
                              "index below %d",
                              r->path, name, i, p->kernel_count);
            ps->kernel[i] = ix->valueint;
        }
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(o, "rejected");
        if (cJSON_IsString(why))
            snprintf(ps->rejected, sizeof ps->rejected, "%s", why->valuestring);
        if (ps->available && ps->kernel_count == 0 && s != RF_SCHEDULE_CUBLASLT)
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s: schedules.%s is available but has no kernels",
                          r->path, name);
    }
    return RF_OK;
}

static rf_status_t read_weights(const reader_t *r, const cJSON *root, rf_plan_t *p) {
    static const char *const names[RF_PLAN_WEIGHTS] = {"w1", "b1", "w2", "b2"};
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(root, "weights");
    for (int i = 0; i < RF_PLAN_WEIGHTS; i++) {
        rf_plan_weight_t *pw = &p->weights[i];
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(all, names[i]);
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "shape");
        char w[24], dtype[16];
        rf_status_t st;
        snprintf(w, sizeof w, "weights.%s.", names[i]);
        snprintf(pw->name, sizeof pw->name, "%s", names[i]);
        if ((st = get_str(r, o, w, "dtype", dtype, sizeof dtype)) ||
            (st = get_num(r, o, w, "offset", 0, INT64_MAX / 2, &pw->offset)) ||
            (st = get_num(r, o, w, "bytes", 0, INT64_MAX / 2, &pw->bytes)))
            return st;
        pw->dtype = !strcmp(dtype, "f16")   ? RF_DTYPE_F16
                    : !strcmp(dtype, "f32") ? RF_DTYPE_F32
                                            : -1;
        pw->rank = cJSON_GetArraySize(shape);
        if (pw->dtype < 0 || !cJSON_IsArray(shape) || pw->rank < 1 || pw->rank > 2)
            return RF_ERR(RF_CODE_PARSE_ERROR,
                          "%s: %s dtype must be f16 or f32 and the shape 1-D "
                          "or 2-D",
                          r->path, w);
        for (int d = 0; d < pw->rank; d++)
            pw->dims[d] = (int64_t)cJSON_GetArrayItem(shape, d)->valuedouble;
    }
    return RF_OK;
}

static rf_status_t read_kernels(const reader_t *r, const cJSON *root, rf_plan_t *p) {
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(root, "kernels");
    if (!cJSON_IsArray(ks) || cJSON_GetArraySize(ks) > RF_PLAN_MAX_KERNELS)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: \"kernels\" must be a list of at most %d", r->path,
                      RF_PLAN_MAX_KERNELS);
    p->kernel_count = cJSON_GetArraySize(ks);
    for (int i = 0; i < p->kernel_count; i++)
        RF_RETURN_IF_ERROR_PLAIN(read_kernel(r, cJSON_GetArrayItem(ks, i), i, &p->kernels[i]));
    return RF_OK;
}

static rf_status_t read_root(const reader_t *r, const cJSON *root, rf_plan_t *p) {
    char format[32], schedule[32];
    int64_t version;
    rf_status_t st;
    if ((st = get_str(r, root, "", "format", format, sizeof format)) ||
        strcmp(format, "rowfuse-package") != 0) {
        rf_status_free(st);
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s is not a rowfuse package plan (\"format\")",
                      r->path);
    }
    RF_RETURN_IF_ERROR_PLAIN(get_num(r, root, "", "version", 0, 1 << 20, &version));
    if (version != RF_PLAN_VERSION)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "%s is a version %lld plan; this runtime reads version %d: recompile the "
                      "package with this rowfuse (rowfuse compile)",
                      r->path, (long long)version, RF_PLAN_VERSION);
    p->version = (int)version;
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "chain")))
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "%s is a chain package (a \"chain\" object, one chain_mma kernel): it runs "
                      "through the chain runtime (rf_chain_pkg_load), not the MLP schedules",
                      r->path);
    if ((st = get_str(r, root, "", "model", p->model, sizeof p->model)) ||
        (st = get_str(r, root, "", "graph_hash", p->graph_hash, sizeof p->graph_hash)) ||
        (st = get_num(r, root, "", "rows", 1, RF_MAX_DIM, &p->rows)) ||
        (st = get_num(r, root, "", "channels", 1, RF_MAX_DIM, &p->channels)) ||
        (st = get_num(r, root, "", "hidden", 1, RF_MAX_DIM, &p->hidden)) ||
        (st = get_str(r, root, "", "schedule", schedule, sizeof schedule)) ||
        (st = rf_schedule_parse(schedule, &p->schedule)) ||
        (st = get_str(r, root, "", "schedule_reason", p->reason, sizeof p->reason)) ||
        (st = get_int(r, root, "", "max_grid", 0, 1 << 30, &p->max_grid)) ||
        (st = get_str(r, root, "", "library", p->library, sizeof p->library)) ||
        (st = get_str(r, root, "", "generator", p->generator, sizeof p->generator)) ||
        (st = read_target(r, root, &p->target)) || (st = read_kernels(r, root, p)) ||
        (st = read_schedules(r, root, p)) || (st = read_weights(r, root, p)))
        return rf_status_annotate(st, "in %s", r->path);
    if (strchr(p->library, '/') || !p->library[0])
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: \"library\" must be a file name in the package",
                      r->path);
    if (!p->schedules[p->schedule].available)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: the chosen schedule %s is not available", r->path,
                      schedule);
    return RF_OK;
}

rf_status_t rf_plan_read(const char *path, rf_plan_t *p) {
    reader_t r = {path};
    cJSON *root;
    memset(p, 0, sizeof(*p));
    RF_RETURN_IF_ERROR_PLAIN(rf_json_read_file(path, RF_PLAN_MAX_BYTES, &root));
    rf_status_t st = cJSON_IsObject(root) ? read_root(&r, root, p)
                                          : RF_ERR(RF_CODE_PARSE_ERROR,
                                                   "%s: the top level must be a JSON object", path);
    cJSON_Delete(root);
    if (st)
        memset(p, 0, sizeof(*p));
    return st;
}
