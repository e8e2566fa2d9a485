/* Writes a GPU package (rowfuse/compile.h, rowfuse/plan.h): decides the plan, writes the
 * weights and the generator's specification, runs the kernel generator as a tool (the
 * way a compiler driver runs its assembler), reads back the facts it reports, completes
 * the grid rule from them and writes plan.json. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/tool.h"
#include "compile/compile_internal.h"
#include "rowfuse/tensor.h"

rf_status_t rf_compile_mkdir_p(const char *path) {
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

/* weights.bin: w1, b1, w2, b2, each at a 64-byte aligned offset; the plan records where. */
static rf_status_t write_weights(const rf_mlp_weights_t *w, const char *dir, rf_plan_t *p) {
    int64_t c = w->channels, h = w->hidden;
    const void *data[RF_PLAN_WEIGHTS] = {w->w1, w->b1, w->w2, w->b2};
    const rf_plan_weight_t layout[RF_PLAN_WEIGHTS] = {{"w1", RF_DTYPE_F16, 2, {c, h}, 0, c * h * 2},
                                                      {"b1", RF_DTYPE_F32, 1, {h, 0}, 0, h * 4},
                                                      {"w2", RF_DTYPE_F16, 2, {h, c}, 0, h * c * 2},
                                                      {"b2", RF_DTYPE_F32, 1, {c, 0}, 0, c * 4}};
    static const char zeros[64];
    char path[4096];
    int64_t offset = 0;
    snprintf(path, sizeof path, "%s/weights.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot open '%s' for writing: %s", path, strerror(errno));
    int ok = 1;
    for (int i = 0; i < RF_PLAN_WEIGHTS; i++) {
        int64_t pad = (64 - offset % 64) % 64;
        ok = ok && fwrite(zeros, 1, (size_t)pad, f) == (size_t)pad;
        offset += pad;
        p->weights[i] = layout[i];
        p->weights[i].offset = offset;
        ok = ok && fwrite(data[i], 1, (size_t)layout[i].bytes, f) == (size_t)layout[i].bytes;
        offset += layout[i].bytes;
    }
    if (fclose(f) != 0 || !ok)
        return RF_ERR(RF_CODE_IO_ERROR, "error writing '%s'", path);
    return RF_OK;
}

rf_status_t rf_compile_run_generator(const rf_compile_options_t *o) {
    char spec[4096];
    snprintf(spec, sizeof spec, "%s/kernel_spec.json", o->out_dir);
    char *argv[] = {(char *)(o->python ? o->python : "python3"),
                    "-m",
                    "rowfuse.kernels.build",
                    "--spec",
                    spec,
                    "--out",
                    (char *)o->out_dir,
                    "--quiet",
                    NULL};
    return rf_tool_run(argv, "kernel generator");
}

/* The persistent-grid rule of every kernel, now that the generator reported registers. */
static void decide_grids(const rf_compile_options_t *o, rf_plan_t *p) {
    for (int s = 0; s < RF_SCHEDULE_COUNT; s++)
        for (int i = 0; i < p->schedules[s].kernel_count; i++) {
            rf_kernel_spec_t *k = &p->kernels[p->schedules[s].kernel[i]];
            int regs = o->grid == RF_GRID_REGS || o->grid == RF_GRID_BALANCED ||
                       (o->grid == RF_GRID_AUTO && rf_schedule_grid_balanced((rf_schedule_t)s));
            k->blocks_per_sm = rf_kernel_blocks_per_sm(k, &p->target, regs);
        }
}

rf_status_t rf_compile_package(const rf_mlp_weights_t *w, const char *graph_hash,
                               const rf_compile_options_t *o, rf_plan_t *out_plan) {
    rf_plan_t *p = NULL;
    char path[4096];
    rf_status_t st;
    if (!o->out_dir || !o->out_dir[0])
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "no output directory (-o)");
    p = calloc(1, sizeof *p);
    if (!p)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "plan");
    st = rf_compile_plan(w->channels, w->hidden, o, p);
    if (!st) {
        snprintf(p->graph_hash, sizeof p->graph_hash, "%s", graph_hash ? graph_hash : "");
        st = rf_compile_mkdir_p(o->out_dir);
    }
    if (!st)
        st = write_weights(w, o->out_dir, p);
    if (!st) {
        snprintf(path, sizeof path, "%s/kernel_spec.json", o->out_dir);
        st = rf_kernel_spec_write(p, path);
    }
    if (!st)
        st = rf_compile_run_generator(o);
    if (!st) {
        snprintf(path, sizeof path, "%s/kernels.json", o->out_dir);
        st = rf_kernel_facts_read(path, p);
    }
    if (!st) {
        decide_grids(o, p);
        if (!o->schedule || !strcmp(o->schedule, "auto"))
            rf_schedule_rechoose_spills(p);
        snprintf(path, sizeof path, "%s/plan.json", o->out_dir);
        st = rf_plan_write(p, path);
    }
    if (!st && out_plan)
        *out_plan = *p;
    free(p);
    return st ? rf_status_annotate(st, "while compiling the package %s", o->out_dir) : RF_OK;
}
