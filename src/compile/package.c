/* Writes a GPU package (rowfuse/compile.h): weights as .npy in the plan's precision, the
 * kernels (kernels/build.py, run as a tool the way a compiler driver runs its assembler),
 * and plan.json tying them together. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/tool.h"
#include "rowfuse/compile.h"
#include "rowfuse/json.h"
#include "rowfuse/tensor.h"

static rf_status_t rf_mkdir_p(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "bad output directory '%s'", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return RF_ERR(RF_CODE_IO_ERROR, "cannot create directory '%s': %s", buf,
                          strerror(errno));
        buf[i] = saved;
    }
    return RF_OK;
}

/* Writes constant `value` as a [rows, cols] tensor of dtype, transposing if asked. */
static rf_status_t rf_write_weight(const rf_graph_t *g, int value, int transpose, rf_dtype_t dtype,
                                   const char *path) {
    const rf_value_t *v = rf_graph_value(g, value);
    rf_allocator_t a = rf_allocator_system();
    rf_shape_t shape = v->shape;
    if (transpose) {
        shape.dims[0] = v->shape.dims[1];
        shape.dims[1] = v->shape.dims[0];
    }
    rf_tensor_t t;
    RF_RETURN_IF_ERROR(rf_tensor_alloc(a, dtype, &shape, &t), "weight '%s'", v->name);
    int64_t n;
    rf_status_t st = rf_shape_numel(&shape, &n);
    int64_t cols = shape.rank == 2 ? shape.dims[1] : n;
    for (int64_t i = 0; !st && i < n; i++) {
        int64_t src = i;
        if (transpose) /* out[r, c] = in[c, r]; in has shape [cols, rows] */
            src = (i % cols) * shape.dims[0] + i / cols;
        double x = rf_value_get_f64(v, src);
        if (dtype == RF_DTYPE_F16) {
            uint16_t hbits = rf_f32_to_f16((float)x);
            memcpy((char *)t.data + 2 * i, &hbits, 2);
        } else {
            float f = (float)x;
            memcpy((char *)t.data + 4 * i, &f, 4);
        }
    }
    if (!st)
        st = rf_npy_write(path, &t);
    rf_tensor_free(a, &t);
    return st;
}

/* The tile rows the generator built `schedule` with (kernels.json, written by build.py). */
static rf_status_t rf_read_tile_rows(const char *dir, const char *schedule, int64_t *out) {
    char path[4096];
    snprintf(path, sizeof path, "%s/kernels.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return RF_ERR(RF_CODE_NOT_FOUND, "the kernel generator wrote no '%s'", path);
    char *text = NULL;
    size_t n = 0, cap = 0;
    rf_status_t st = RF_OK;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            char *grown = realloc(text, cap = 2 * cap + 8192);
            if (!grown) {
                st = RF_ERR(RF_CODE_OUT_OF_MEMORY, "reading '%s'", path);
                break;
            }
            text = grown;
        }
        size_t got = fread(text + n, 1, 4096, f);
        n += got;
        if (got < 4096)
            break;
    }
    fclose(f);
    cJSON *root = NULL;
    if (!st) {
        text[n] = '\0';
        root = cJSON_Parse(text);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "schedules"),
                                             schedule),
            "tile_rows");
        if (!cJSON_IsNumber(t))
            st = RF_ERR(RF_CODE_PARSE_ERROR, "'%s' has no schedules.%s.tile_rows", path, schedule);
        else
            *out = (int64_t)t->valuedouble;
    }
    cJSON_Delete(root);
    free(text);
    return st;
}

rf_status_t rf_compile_package(const rf_graph_t *g, const rf_mlp_block_t *b,
                               const rf_compile_options_t *o, rf_compile_result_t *out_result) {
    static const char *const schedules[] = {"persistent-smem", "persistent-gmem", "conventional",
                                            "cublaslt"};
    const char *schedule = o->schedule, *reason = "chosen with --schedule";
    if (!strcmp(schedule, "auto"))
        schedule = rf_schedule_choose(b, o->rows, &reason);
    int known = 0;
    for (size_t i = 0; i < sizeof schedules / sizeof schedules[0]; i++)
        if (!strcmp(schedule, schedules[i])) {
            schedule = schedules[i]; /* static storage for out_result */
            known = 1;
        }
    if (!known)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "unknown schedule '%s' (persistent-smem, persistent-gmem, conventional, "
                      "cublaslt, auto)",
                      schedule);
    if (o->tile_rows != 0 && o->tile_rows != 16 && o->tile_rows != 32 && o->tile_rows != 64)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--tile-rows must be auto, 16, 32 or 64, not %d",
                      o->tile_rows);
    if (o->rows < 1 || o->rows > RF_MAX_DIM)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--rows %lld outside 1..%lld", (long long)o->rows,
                      (long long)RF_MAX_DIM);

    char path[4096];
    snprintf(path, sizeof path, "%s/weights", o->out_dir);
    RF_RETURN_IF_ERROR_PLAIN(rf_mkdir_p(path));
    struct {
        const char *name;
        int value, trans;
        rf_dtype_t dtype;
    } wts[4] = {{"w1", b->w1, b->w1_trans, RF_DTYPE_F16},
                {"b1", b->b1, 0, RF_DTYPE_F32},
                {"w2", b->w2, b->w2_trans, RF_DTYPE_F16},
                {"b2", b->b2, 0, RF_DTYPE_F32}};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/weights/%s.npy", o->out_dir, wts[i].name);
        RF_RETURN_IF_ERROR(rf_write_weight(g, wts[i].value, wts[i].trans, wts[i].dtype, path),
                           "writing %s", path);
    }

    char build_py[4096], cs[32], hs[32], rs[32], ts[32];
    snprintf(build_py, sizeof build_py, "%s/build.py", o->kernels_dir);
    snprintf(cs, sizeof cs, "%lld", (long long)b->channels);
    snprintf(hs, sizeof hs, "%lld", (long long)b->hidden);
    snprintf(rs, sizeof rs, "%lld", (long long)o->rows);
    if (o->tile_rows)
        snprintf(ts, sizeof ts, "%d", o->tile_rows);
    else
        snprintf(ts, sizeof ts, "auto");
    char *argv[] = {(char *)o->python,
                    build_py,
                    "--channels",
                    cs,
                    "--hidden",
                    hs,
                    "--rows",
                    rs,
                    "--tile-rows",
                    ts,
                    "--arch",
                    (char *)o->arch,
                    "--out",
                    (char *)o->out_dir,
                    NULL};
    RF_RETURN_IF_ERROR(rf_tool_run(argv, "kernel generator"), "generating kernels for C=%s H=%s",
                       cs, hs);
    int64_t tile_rows = 0;
    /* cublaslt runs no package kernels; its plan records the megakernel's tiles, which the
     * package still holds for the other schedules. */
    RF_RETURN_IF_ERROR_PLAIN(rf_read_tile_rows(
        o->out_dir, strcmp(schedule, "cublaslt") ? schedule : "persistent-smem", &tile_rows));

    snprintf(path, sizeof path, "%s/plan.json", o->out_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot open '%s' for writing", path);
    rf_json_writer_t w;
    rf_json_writer_init_file(&w, f, 2);
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "format", "rowfuse-package");
    rf_json_key_int(&w, "version", 1);
    rf_json_key_string(&w, "model", o->model_path ? o->model_path : "");
    rf_json_key_string(&w, "block", "residual-mlp");
    rf_json_key_int(&w, "rows", o->rows);
    rf_json_key_int(&w, "channels", b->channels);
    rf_json_key_int(&w, "hidden", b->hidden);
    rf_json_key_string(&w, "schedule", schedule);
    rf_json_key_string(&w, "schedule_reason", reason);
    rf_json_key(&w, "schedules");
    rf_json_array_begin(&w);
    for (size_t i = 0; i < sizeof schedules / sizeof schedules[0]; i++)
        rf_json_string(&w, schedules[i]);
    rf_json_array_end(&w);
    rf_json_key_int(&w, "tile_rows", tile_rows);
    rf_json_key_string(&w, "tile_rows_chosen_by", o->tile_rows ? "--tile-rows" : "auto");
    rf_json_key_string(&w, "arch", o->arch);
    rf_json_key(&w, "precision");
    rf_json_object_begin(&w);
    static const char *const prec[][2] = {{"x", "f16"},      {"weights", "f16"},
                                          {"hidden", "f16"}, {"accumulate", "f32"},
                                          {"bias", "f32"},   {"y", "f32"}};
    for (size_t i = 0; i < sizeof prec / sizeof prec[0]; i++)
        rf_json_key_string(&w, prec[i][0], prec[i][1]);
    rf_json_object_end(&w);
    rf_json_key(&w, "weights");
    rf_json_object_begin(&w);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "weights/%s.npy", wts[i].name);
        rf_json_key_string(&w, wts[i].name, path);
    }
    rf_json_object_end(&w);
    rf_json_key_string(&w, "kernels", "kernels.json");
    rf_json_object_end(&w);
    rf_status_t st = rf_json_writer_finish(&w);
    if (fclose(f) != 0 && !st)
        st = RF_ERR(RF_CODE_IO_ERROR, "error writing plan.json in '%s'", o->out_dir);
    if (!st && out_result) {
        out_result->schedule = schedule;
        out_result->reason = reason;
        out_result->tile_rows = tile_rows;
    }
    return st;
}
