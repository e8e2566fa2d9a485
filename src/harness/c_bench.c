/* `rowfuse bench --c`: builds the variants from a package and the runtime, checks each
 * against the fp64 reference, times them with bench_loop.c and writes rowfuse-bench/1 JSON
 * (see c_bench.h). The floor is our own one-empty-kernel graph (empty.cu). */
#define _POSIX_C_SOURCE 200809L
#include "harness/c_bench.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "base/json.h"
#include "base/json_read.h"
#include "rowfuse/mlp.h"
#include "rowfuse/rng.h"
#include "rowfuse/runtime.h"
#include "rowfuse/tensor.h"

int rf_bench_empty_launch(void *stream); /* empty.cu */

#define RF_BENCH_MAX_VARIANTS 6

typedef struct rf_bench_cvar {
    const char *name, *label;
    rf_variant_t *variant; /* NULL for the floor */
    rf_exec_t *exec;
    cudaGraph_t floor_graph;
    cudaGraphExec_t floor_exec;
    const rf_mlp_args_t *args;
    int ok, has_output, selected;
    double rel_l2, max_abs;
    int kernel_nodes;
    char error[400];
} rf_bench_cvar_t;

void rf_bench_c_options_default(rf_bench_c_options_t *o) {
    memset(o, 0, sizeof(*o));
    o->tol = rf_mlp_tolerance_default();
    o->timing.rounds = 5;
    o->timing.observations = 200;
    o->timing.b2b_replays = 50;
    o->timing.b2b_samples = 20;
    o->timing.span = 1;
    o->timing.control_observations = 200;
    o->timing.attribution = RF_BENCH_ATTRIBUTE_CORRELATION;
    o->ceilings = 1;
}

static void rf_bench_say(const rf_bench_c_options_t *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void rf_bench_say(const rf_bench_c_options_t *o, const char *fmt, ...) {
    char line[512];
    va_list ap;
    if (!o->progress)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->progress(o->progress_ctx, line);
}

static rf_status_t rf_bench_cuda_st(cudaError_t err, const char *what) {
    if (err == cudaSuccess)
        return RF_OK;
    return RF_ERR(RF_CODE_CUDA_ERROR, "%s: %s: %s", what, cudaGetErrorName(err),
                  cudaGetErrorString(err));
}

/* ---- enqueue callbacks ---- */

static rf_status_t rf_bench_replay_exec(void *ctx, cudaStream_t s) {
    return rf_exec_replay(((rf_bench_cvar_t *)ctx)->exec, (void *)s);
}

static rf_status_t rf_bench_launch_variant(void *ctx, cudaStream_t s) {
    rf_bench_cvar_t *v = ctx;
    return rf_variant_launch(v->variant, v->args, (void *)s);
}

static rf_status_t rf_bench_replay_floor(void *ctx, cudaStream_t s) {
    return rf_bench_cuda_st(cudaGraphLaunch(((rf_bench_cvar_t *)ctx)->floor_exec, s),
                            "cudaGraphLaunch(empty)");
}

static rf_status_t rf_bench_launch_floor(void *ctx, cudaStream_t s) {
    (void)ctx;
    return rf_bench_cuda_st((cudaError_t)rf_bench_empty_launch((void *)s),
                            "launching the empty kernel");
}

/* ---- the floor graph: one empty kernel, captured and checked like every variant ---- */

static rf_status_t rf_bench_floor_capture(rf_bench_cvar_t *v, cudaStream_t s) {
    size_t nodes = 0;
    RF_RETURN_IF_ERROR_PLAIN(rf_bench_launch_floor(v, s)); /* loads the module */
    RF_RETURN_IF_ERROR_PLAIN(rf_bench_cuda_st(cudaStreamSynchronize(s), "cudaStreamSynchronize"));
    RF_RETURN_IF_ERROR_PLAIN(rf_bench_cuda_st(
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"));
    rf_status_t st = rf_bench_launch_floor(v, s);
    cudaError_t err = cudaStreamEndCapture(s, &v->floor_graph);
    RF_RETURN_IF_ERROR_PLAIN(st);
    RF_RETURN_IF_ERROR_PLAIN(rf_bench_cuda_st(err, "cudaStreamEndCapture(empty)"));
    RF_RETURN_IF_ERROR_PLAIN(
        rf_bench_cuda_st(cudaGraphGetNodes(v->floor_graph, NULL, &nodes), "cudaGraphGetNodes"));
    if (nodes != 1)
        return RF_ERR(RF_CODE_INTERNAL, "the empty-kernel graph holds %zu nodes, expected 1",
                      nodes);
    v->kernel_nodes = 1;
    return rf_bench_cuda_st(cudaGraphInstantiate(&v->floor_exec, v->floor_graph, 0),
                            "cudaGraphInstantiate(empty)");
}

/* ---- check: poison, replay, compare ---- */

static rf_status_t rf_bench_check(rf_allocator_t a, rf_bench_cvar_t *v, rf_mlp_buffers_t *b,
                                  const rf_mlp_case_t *d, const rf_mlp_tolerance_t *tol,
                                  cudaStream_t s) {
    size_t n = (size_t)d->rows * (size_t)d->channels;
    float *y = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, n * sizeof(float), "Y copy", (void **)&y));
    rf_status_t st = rf_mlp_buffers_poison(b, (void *)s);
    if (!st)
        st = rf_exec_replay(v->exec, (void *)s);
    if (!st)
        st = rf_stream_sync((void *)s);
    if (!st)
        st = rf_mlp_buffers_download_y(b, y);
    if (!st) {
        rf_mlp_compare_result_t c;
        char why[256];
        rf_mlp_compare(y, d->ref, d->allow, d->step, n, tol, &c);
        v->rel_l2 = c.rel_l2;
        v->max_abs = c.max_abs;
        rf_mlp_compare_describe(&c, d->channels, why, sizeof why);
        if (!c.passed)
            st = RF_ERR(RF_CODE_MISMATCH, "replay into a NaN-poisoned Y: %s", why);
    }
    rf_free(a, y);
    return st;
}

/* ---- JSON ---- */

static void rf_bench_json_summary(rf_json_writer_t *w, const char *key,
                                  const rf_bench_summary_t *s) {
    rf_json_key(w, key);
    rf_json_object_begin(w);
    rf_json_key_int(w, "count", (int64_t)s->count);
    rf_json_key_double(w, "median", s->median);
    rf_json_key_double(w, "p10", s->p10);
    rf_json_key_double(w, "p90", s->p90);
    rf_json_key_double(w, "mean", s->mean);
    rf_json_key_double(w, "min", s->min);
    rf_json_key_double(w, "max", s->max);
    rf_json_key_double(w, "median_ci_lo", s->median_lo);
    rf_json_key_double(w, "median_ci_hi", s->median_hi);
    rf_json_object_end(w);
}

static void rf_bench_json_variant(rf_json_writer_t *w, const rf_bench_cvar_t *v,
                                  const rf_bench_timing_t *t, double tol) {
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", v->name);
    rf_json_key_string(w, "label", v->label);
    rf_json_key_string(w, "note", v->variant ? rf_variant_note(v->variant) : "");
    if (!v->ok || !t) {
        rf_json_key_string(w, "error", v->error[0] ? v->error : "not measured");
        rf_json_object_end(w);
        return;
    }
    rf_json_key_int(w, "kernel_nodes", v->kernel_nodes);
    if (t->have_span)
        rf_json_key_int(w, "kernels", t->span_kernels);
    rf_json_key(w, "check");
    rf_json_object_begin(w);
    rf_json_key_bool(w, "passed", 1);
    if (v->has_output) {
        rf_json_key_bool(w, "finite", 1);
        rf_json_key_double(w, "rel_l2", v->rel_l2);
        rf_json_key_double(w, "max_abs", v->max_abs);
        rf_json_key_double(w, "tol", tol);
    } else {
        rf_json_key_string(w, "note", "no output (floor)");
    }
    rf_json_object_end(w);
    rf_json_key(w, "graph");
    rf_json_object_begin(w);
    rf_bench_json_summary(w, "event_us", &t->graph_event);
    rf_bench_json_summary(w, "host_us", &t->graph_host);
    rf_bench_json_summary(w, "b2b_us", &t->b2b);
    if (t->have_span)
        rf_bench_json_summary(w, "span_us", &t->span);
    else {
        rf_json_key(w, "span_us");
        rf_json_null(w);
        rf_json_key_string(w, "span_note", t->span_note);
    }
    rf_json_key_bool(w, "cupti", t->cupti);
    if (t->have_control) {
        rf_bench_json_summary(w, "event_us_no_cupti", &t->control_event);
        rf_bench_json_summary(w, "host_us_no_cupti", &t->control_host);
    }
    rf_json_object_end(w);
    rf_json_key(w, "eager");
    rf_json_object_begin(w);
    rf_bench_json_summary(w, "event_us", &t->eager_event);
    rf_bench_json_summary(w, "host_us", &t->eager_host);
    rf_json_object_end(w);
    rf_json_object_end(w);
}

static void rf_bench_json_ceilings(rf_json_writer_t *w, const rf_bench_ceilings_t *c) {
    rf_json_key(w, "ceilings");
    rf_json_object_begin(w);
    rf_json_key_string(w, "copy",
                       "device-to-device cudaMemcpyAsync of 1 GiB, bytes read + written");
    rf_json_key_double(w, "copy_bytes", c->copy_bytes);
    rf_json_key_double(w, "copy_us", c->copy_us);
    rf_json_key_double(w, "bandwidth_gbs", c->bandwidth_gbs);
    rf_json_key_string(w, "gemm",
                       "cuBLASLt fp16 8192^3, fp32 accumulation, best of top algorithms");
    rf_json_key_double(w, "gemm_flops", c->gemm_flops);
    rf_json_key_double(w, "gemm_us", c->gemm_us);
    rf_json_key_double(w, "tflops", c->tflops);
    rf_json_key_int(w, "gemm_algos", c->gemm_algos);
    if (c->note[0])
        rf_json_key_string(w, "note", c->note);
    rf_json_object_end(w);
}

/* The L2 state of the timed observations (method.l2). */
static void rf_bench_json_l2(rf_json_writer_t *w, const rf_bench_c_options_t *o) {
    rf_json_key_string(w, "l2", o->cold_l2 ? "cold" : "warm");
    rf_json_key_int(w, "l2_flush_bytes", o->cold_l2 ? RF_BENCH_FLUSH_BYTES : 0);
    rf_json_key_string(w, "l2_note",
                       o->cold_l2 ? "a device buffer of l2_flush_bytes written and synchronised "
                                    "before every graph, eager and control observation, outside "
                                    "its events and host clock; back-to-back samples stay warm"
                                  : "replays find what the previous observation left in the L2");
}

static rf_status_t rf_bench_write_json(FILE *f, const rf_bench_c_options_t *o,
                                       const rf_device_info_t *info, const rf_mlp_case_t *d,
                                       const rf_pkg_t *pkg, rf_bench_cvar_t *vars, int nvars,
                                       const rf_bench_timing_t *timings, const int *timing_of,
                                       int cupti, const rf_bench_ceilings_t *ceil) {
    rf_json_writer_t w;
    char date[32];
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S+00:00", &tmv);
    rf_json_writer_init_file(&w, f, 1);
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "schema", "rowfuse-bench/1");
    rf_json_key_string(&w, "tool", "c");
    rf_json_key_string(&w, "date", date);
    rf_json_key_string(&w, "git_revision", o->git_revision ? o->git_revision : "unknown");
    rf_json_key_int(&w, "seed", (int64_t)o->seed);
    rf_json_key_string(&w, "package", o->pkg_dir);
    rf_json_key(&w, "gpu");
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "name", info->name);
    rf_json_key_int(&w, "sm_count", info->sm_count);
    char drv[32];
    snprintf(drv, sizeof drv, "CUDA %d.%d", info->driver_version / 1000,
             (info->driver_version % 1000) / 10);
    rf_json_key_string(&w, "driver", drv);
    rf_json_key_int(&w, "cuda_runtime", info->runtime_version);
    rf_json_key_int(&w, "sm_clock_khz", info->clock_khz);
    rf_json_key_int(&w, "mem_clock_khz", info->mem_clock_khz);
    rf_json_object_end(&w);
    rf_json_key(&w, "method");
    rf_json_object_begin(&w);
    rf_json_key_int(&w, "rounds", o->timing.rounds);
    rf_json_key_int(&w, "observations", o->timing.observations);
    rf_json_key_int(&w, "b2b_replays", o->timing.b2b_replays);
    rf_json_key_int(&w, "b2b_samples", o->timing.b2b_samples);
    /* the span is measured over the timed graph observations themselves (not over separate
     * replays); cupti_during_timing says whether CUPTI ran while they were timed, and the
     * control round without CUPTI shows what it costs the host figures */
    rf_json_key_string(&w, "span_source", cupti ? "timed-observations" : "none");
    rf_json_key_bool(&w, "cupti_during_timing", cupti);
    rf_json_key_string(&w, "span_attribution", rf_bench_attribution_name(o->timing.attribution));
    rf_json_key_int(&w, "control_observations", cupti ? o->timing.control_observations : 0);
    rf_json_key_double(&w, "tolerance_step_fraction", o->tol.step_fraction);
    rf_json_key_double(&w, "tolerance_allow_factor", o->tol.allow_factor);
    rf_json_key_string(&w, "reference", "CPU interpreter, mixed precision (H rounded to fp16)");
    rf_json_key_string(&w, "event", "CUDA events around one cudaGraphLaunch / eager launch");
    rf_json_key_string(&w, "host", "CLOCK_MONOTONIC from before the launch to after sync");
    rf_json_key_string(&w, "span",
                       "CUPTI concurrent-kernel records of every timed graph observation, "
                       "attributed to its replay: first kernel start to last kernel end");
    rf_json_key_string(&w, "control",
                       "one further interleaved graph round per variant with CUPTI off, after "
                       "the CUPTI rounds: event_us_no_cupti / host_us_no_cupti");
    rf_bench_json_l2(&w, o);
    rf_json_object_end(&w);
    if (ceil)
        rf_bench_json_ceilings(&w, ceil);
    rf_json_key(&w, "runs");
    rf_json_array_begin(&w);
    rf_json_object_begin(&w);
    rf_json_key(&w, "shape");
    rf_json_object_begin(&w);
    rf_json_key_int(&w, "rows", d->rows);
    rf_json_key_int(&w, "channels", d->channels);
    rf_json_key_int(&w, "hidden", d->hidden);
    rf_json_object_end(&w);
    rf_json_key_int(&w, "seed", (int64_t)o->seed);
    rf_json_key(&w, "plan");
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "schedule", rf_pkg_schedule(pkg));
    rf_json_key_string(&w, "reason", rf_pkg_plan(pkg)->reason);
    rf_json_key_int(&w, "tile_rows", rf_pkg_tile_rows(pkg));
    rf_json_object_end(&w);
    rf_json_key(&w, "variants");
    rf_json_array_begin(&w);
    for (int i = 0; i < nvars; i++)
        if (vars[i].selected)
            rf_bench_json_variant(&w, &vars[i], timing_of[i] >= 0 ? &timings[timing_of[i]] : NULL,
                                  o->tol.step_fraction);
    rf_json_array_end(&w);
    rf_json_object_end(&w);
    rf_json_array_end(&w);
    rf_json_object_end(&w);
    return rf_json_writer_finish(&w);
}

/* ---- the run ---- */

/* 1 when `name` is an item of the comma-separated `list` (NULL: every name). */
static int rf_bench_selected(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return list == NULL;
}

/* The floor, then every schedule in the plan's table (-1: the floor). */
static const struct {
    int schedule;
    const char *label;
} rf_bench_c_variants[RF_BENCH_MAX_VARIANTS] = {
    {-1, "empty kernel (floor)"},
    {RF_SCHEDULE_CONVENTIONAL, "conventional CuTe + graph"},
    {RF_SCHEDULE_PERSISTENT_SMEM, "persistent-smem + graph"},
    {RF_SCHEDULE_PERSISTENT_GMEM, "persistent-gmem + graph"},
    {RF_SCHEDULE_PERSISTENT_WGMMA, "persistent-wgmma + graph"},
    {RF_SCHEDULE_CUBLASLT, "cuBLASLt (C) + graph"},
};

static void rf_bench_record_error(rf_bench_cvar_t *v, rf_status_t st) {
    snprintf(v->error, sizeof v->error, "%s: %s", rf_code_name(rf_status_code(st)),
             rf_status_message(st));
    rf_status_free(st);
    v->ok = 0;
}

/* The cold-L2 flush buffer (c_bench.h); the caller frees timing->flush. */
static rf_status_t rf_bench_flush_alloc(rf_bench_options_t *timing) {
    timing->flush_bytes = RF_BENCH_FLUSH_BYTES;
    return rf_bench_cuda_st(cudaMalloc(&timing->flush, (size_t)timing->flush_bytes),
                            "cudaMalloc(L2 flush buffer)");
}

static rf_status_t rf_bench_c_run_chain(rf_allocator_t a, const rf_bench_c_options_t *o,
                                        FILE *json_out);

static rf_status_t rf_bench_check_build_error(const char *dir, const char *kernel, int delay) {
    return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                  "%s: kernel %s is a checking build (compiled with --check-delay %d: its "
                  "copies or stores wait on spins); check it with `rowfuse check`, time a "
                  "package compiled without --check-delay",
                  dir, kernel, delay);
}

/* A chain package's checking build: a kernel entry of plan.json with "check_delay" > 0
 * (an unreadable plan is left to rf_chain_pkg_load, which says what is wrong with it). */
static rf_status_t rf_bench_refuse_chain_check_build(const char *dir, const char *path) {
    cJSON *root;
    rf_status_free(rf_json_read_file(path, 16l << 20, &root));
    const cJSON *k;
    rf_status_t st = RF_OK;
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(root, "kernels")) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(k, "check_delay");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(k, "name");
        if (cJSON_IsNumber(d) && d->valuedouble > 0) {
            st = rf_bench_check_build_error(dir, cJSON_IsString(name) ? name->valuestring : "?",
                                            (int)d->valuedouble);
            break;
        }
    }
    cJSON_Delete(root);
    return st;
}

/* A checking build (rowfuse compile --check-delay: producers spin before their copies)
 * computes the right answer slowly; its time would be the spins', so it is not timed. */
static rf_status_t rf_bench_refuse_check_build(const char *dir) {
    char path[1100];
    if (strlen(dir) >= sizeof path - 16)
        return RF_OK;
    snprintf(path, sizeof path, "%s/plan.json", dir);
    if (rf_chain_pkg_probe(dir))
        return rf_bench_refuse_chain_check_build(dir, path);
    rf_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "plan of %s", dir);
    rf_status_t st = rf_plan_read(path, p);
    for (int i = 0; !st && i < p->kernel_count; i++)
        if (p->kernels[i].check_delay > 0)
            st = rf_bench_check_build_error(dir, p->kernels[i].name, p->kernels[i].check_delay);
    free(p);
    return st;
}

rf_status_t rf_bench_c_run(rf_allocator_t a, const rf_bench_c_options_t *o, FILE *json_out) {
    rf_device_info_t info;
    rf_pkg_t *pkg = NULL;
    rf_mlp_case_t d = {0};
    rf_mlp_buffers_t bufs;
    int have_bufs = 0;
    void *stream = NULL;
    rf_bench_cvar_t vars[RF_BENCH_MAX_VARIANTS];
    rf_bench_item_t items[RF_BENCH_MAX_VARIANTS];
    rf_bench_timing_t timings[RF_BENCH_MAX_VARIANTS];
    int timing_of[RF_BENCH_MAX_VARIANTS], nitems = 0;
    rf_status_t st;

    if (!o || !o->pkg_dir || !json_out)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_bench_c_run: options, package and output "
                                                "are required");
    memset(vars, 0, sizeof vars);
    RF_RETURN_IF_ERROR_PLAIN(rf_bench_refuse_check_build(o->pkg_dir));
    RF_RETURN_IF_ERROR(rf_device_open(0, &info), "bench --c");
    rf_status_t cupti = o->timing.span ? rf_bench_span_init() : RF_OK;
    if (cupti) {
        rf_bench_say(o, "CUPTI unavailable, no GPU span: %s", rf_status_message(cupti));
        rf_status_free(cupti);
    }
    if (rf_chain_pkg_probe(o->pkg_dir))
        return rf_bench_c_run_chain(a, o, json_out);
    if ((st = rf_pkg_load(a, o->pkg_dir, &pkg)))
        goto done;
    int64_t rows = o->rows > 0 ? o->rows : rf_pkg_rows(pkg);
    int64_t C = rf_pkg_channels(pkg), H = rf_pkg_hidden(pkg);
    rf_bench_say(o, "%lldx%lldx%lld: package %s, seed %llu", (long long)rows, (long long)C,
                 (long long)H, o->pkg_dir, (unsigned long long)o->seed);
    if ((st = rf_mlp_case_create(a, rows, C, H, o->seed, 1, &d)) ||
        (st = rf_mlp_buffers_alloc(rows, C, H, &bufs)))
        goto done;
    have_bufs = 1;
    if ((st = rf_mlp_buffers_upload(&bufs, d.x, d.w1, d.b1, d.w2, d.b2)) ||
        (st = rf_stream_create(&stream)))
        goto done;

    for (int i = 0; i < RF_BENCH_MAX_VARIANTS; i++) {
        rf_bench_cvar_t *v = &vars[i];
        int sched = rf_bench_c_variants[i].schedule;
        v->name = sched < 0 ? "empty" : rf_schedule_name((rf_schedule_t)sched);
        v->label = rf_bench_c_variants[i].label;
        v->args = &bufs.args;
        v->ok = 1;
        v->selected = i == 0 || rf_bench_selected(o->variants, v->name);
        if (!v->selected)
            continue;
        rf_status_t vs;
        if (i == 0) {
            vs = rf_bench_floor_capture(v, (cudaStream_t)stream);
        } else {
            v->has_output = 1;
            vs = rf_variant_create_pkg(a, pkg, v->name, &v->variant);
            for (int k = 0; !vs && k < 3; k++) /* warm up outside capture */
                vs = rf_variant_launch(v->variant, &bufs.args, stream);
            if (!vs)
                vs = rf_stream_sync(stream);
            if (!vs)
                vs = rf_exec_capture(a, v->variant, &bufs.args, stream, &v->exec);
            if (!vs) {
                v->kernel_nodes = rf_exec_kernel_nodes(v->exec);
                vs = rf_bench_check(a, v, &bufs, &d, &o->tol, (cudaStream_t)stream);
            }
        }
        if (vs) {
            rf_bench_record_error(v, vs);
            rf_bench_say(o, "%s: not measured: %s", v->name, v->error);
            continue;
        }
        if (v->has_output)
            rf_bench_say(o, "%s: check ok (rel. L2 %.2e, %d kernel nodes)", v->name, v->rel_l2,
                         v->kernel_nodes);
        items[nitems].name = v->name;
        items[nitems].kernels = v->kernel_nodes;
        items[nitems].replay = i == 0 ? rf_bench_replay_floor : rf_bench_replay_exec;
        items[nitems].replay_ctx = v;
        items[nitems].eager = i == 0 ? rf_bench_launch_floor : rf_bench_launch_variant;
        items[nitems].eager_ctx = v;
        timing_of[i] = nitems++;
    }
    for (int i = 0; i < RF_BENCH_MAX_VARIANTS; i++)
        if (!vars[i].ok || !vars[i].selected)
            timing_of[i] = -1;
    rf_bench_say(o,
                 "timing %d variants: %d rounds x %d observations, graph (CUPTI %s, %s "
                 "attribution), control round of %d without CUPTI, then eager",
                 nitems, o->timing.rounds, o->timing.observations,
                 o->timing.span && rf_bench_span_ready() ? "on" : "off",
                 rf_bench_attribution_name(o->timing.attribution),
                 o->timing.span && rf_bench_span_ready() ? o->timing.control_observations : 0);
    rf_bench_options_t timing = o->timing;
    if (o->cold_l2 && (st = rf_bench_flush_alloc(&timing)))
        goto done;
    st = rf_bench_time_items(a, &timing, items, nitems, (cudaStream_t)stream, timings);
    (void)cudaFree(timing.flush);
    if (st)
        goto done;
    for (int i = 0; i < RF_BENCH_MAX_VARIANTS; i++) {
        if (timing_of[i] < 0)
            continue;
        const rf_bench_timing_t *t = &timings[timing_of[i]];
        rf_bench_say(o, "%s: span %.2f us, event %.2f us, host %.2f us, b2b %.2f us", vars[i].name,
                     t->have_span ? t->span.median : NAN, t->graph_event.median,
                     t->graph_host.median, t->b2b.median);
        if (t->have_control)
            rf_bench_say(o, "%s: without CUPTI: event %.2f us, host %.2f us", vars[i].name,
                         t->control_event.median, t->control_host.median);
        if (!t->have_span)
            rf_bench_say(o, "%s: no span: %s", vars[i].name, t->span_note);
    }
    rf_bench_ceilings_t ceil;
    if (o->ceilings) {
        rf_bench_ceilings_measure(stream, &ceil);
        rf_bench_say(o, "ceilings: copy %.0f GB/s, fp16 GEMM %.0f TFLOP/s%s%s", ceil.bandwidth_gbs,
                     ceil.tflops, ceil.note[0] ? "; " : "", ceil.note);
    }
    st = rf_bench_write_json(json_out, o, &info, &d, pkg, vars, RF_BENCH_MAX_VARIANTS, timings,
                             timing_of, nitems > 0 && timings[0].cupti, o->ceilings ? &ceil : NULL);
    if (!st) { /* the JSON keeps the failed rows; the run still fails */
        char failed[256] = "";
        int n = 0;
        for (int i = 0; i < RF_BENCH_MAX_VARIANTS; i++)
            if (vars[i].selected && !vars[i].ok && ++n)
                snprintf(failed + strlen(failed), sizeof failed - strlen(failed), " %s",
                         vars[i].name);
        if (n)
            st = RF_ERR(RF_CODE_MISMATCH, "%d variant(s) FAILED:%s (reasons in the JSON)", n,
                        failed);
        else if (nitems > 0 && timings[0].span_failed)
            st = RF_ERR(RF_CODE_MISMATCH, "%s", timings[0].span_note);
    }
done:
    for (int i = 0; i < RF_BENCH_MAX_VARIANTS; i++) {
        rf_exec_destroy(vars[i].exec);
        rf_variant_destroy(vars[i].variant);
        if (vars[i].floor_exec)
            (void)cudaGraphExecDestroy(vars[i].floor_exec);
        if (vars[i].floor_graph)
            (void)cudaGraphDestroy(vars[i].floor_graph);
    }
    if (stream)
        rf_stream_destroy(stream);
    if (have_bufs)
        rf_mlp_buffers_free(&bufs);
    rf_mlp_case_free(a, &d);
    rf_pkg_destroy(pkg);
    return st;
}

/* ---- chain packages ---- */

typedef struct rf_bench_chain {
    rf_chain_exec_t *exec;
} rf_bench_chain_t;

static rf_status_t rf_bench_replay_chain(void *ctx, cudaStream_t s) {
    return rf_chain_run(((rf_bench_chain_t *)ctx)->exec, (void *)s);
}

static rf_status_t rf_bench_launch_chain(void *ctx, cudaStream_t s) {
    return rf_chain_launch(((rf_bench_chain_t *)ctx)->exec, (void *)s);
}

/* plan.json's schedule, kernel mode and fp16 weight bytes (2 * chain.wh_elems). */
static rf_status_t rf_bench_chain_facts(const char *dir, char *schedule, size_t size,
                                        double *out_weight_bytes) {
    char path[1100];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    cJSON *root;
    RF_RETURN_IF_ERROR_PLAIN(rf_json_read_file(path, 16l << 20, &root));
    const cJSON *sch = cJSON_GetObjectItemCaseSensitive(root, "schedule");
    const cJSON *wh = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "chain"), "wh_elems");
    rf_status_t st = RF_OK;
    if (!cJSON_IsString(sch) || !cJSON_IsNumber(wh))
        st = RF_ERR(RF_CODE_PARSE_ERROR, "%s: no \"schedule\" or \"chain\".\"wh_elems\"", path);
    else {
        snprintf(schedule, size, "%s", sch->valuestring);
        *out_weight_bytes = 2.0 * wh->valuedouble;
    }
    cJSON_Delete(root);
    return st;
}

/* A replay into a NaN-poisoned Y is finite and a second replay gives the same bits. */
static rf_status_t rf_bench_chain_sanity(rf_allocator_t a, rf_chain_exec_t *e, int64_t n,
                                         void *stream) {
    float *y = NULL, *y2 = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, 2 * (size_t)n * sizeof(float), "Y copies", (void **)&y));
    y2 = y + n;
    rf_status_t st = rf_chain_exec_fill_y(e, 0xff, stream);
    if (!st)
        st = rf_chain_run(e, stream);
    if (!st)
        st = rf_chain_exec_download_y(e, stream, y);
    if (!st)
        st = rf_chain_exec_fill_y(e, 0x7f, stream);
    if (!st)
        st = rf_chain_run(e, stream);
    if (!st)
        st = rf_chain_exec_download_y(e, stream, y2);
    for (int64_t i = 0; !st && i < n; i++)
        if (!isfinite(y[i]) || memcmp(&y[i], &y2[i], sizeof(float)) != 0)
            st = RF_ERR(RF_CODE_MISMATCH,
                        "Y[%lld] is %g after a replay into NaN and %g after the next: not "
                        "finite or not replay-identical (rowfuse check says more)",
                        (long long)i, (double)y[i], (double)y2[i]);
    rf_free(a, y);
    return st;
}

static rf_status_t rf_bench_c_run_chain(rf_allocator_t a, const rf_bench_c_options_t *o,
                                        FILE *json_out) {
    rf_device_info_t info;
    rf_chain_pkg_t *pkg = NULL;
    rf_bench_chain_t chain = {0};
    rf_bench_cvar_t floor;
    rf_bench_item_t items[2];
    rf_bench_timing_t timings[2];
    rf_bench_options_t timing = o->timing;
    void *stream = NULL;
    uint16_t *x = NULL;
    char schedule[64] = "";
    double weight_bytes = 0.0;
    rf_status_t st;
    memset(&floor, 0, sizeof floor);
    RF_RETURN_IF_ERROR(rf_device_open(0, &info), "bench --c");
    if (o->timing.span) {
        rf_status_t cupti = rf_bench_span_init();
        if (cupti) {
            rf_bench_say(o, "CUPTI unavailable, no GPU span: %s", rf_status_message(cupti));
            rf_status_free(cupti);
        }
    }
    if ((st = rf_bench_chain_facts(o->pkg_dir, schedule, sizeof schedule, &weight_bytes)) ||
        (st = rf_chain_pkg_load(a, o->pkg_dir, &pkg)) || (st = rf_stream_create(&stream)))
        goto done;
    int64_t rows = o->rows > 0 ? o->rows : rf_chain_pkg_rows(pkg);
    int64_t C = rf_chain_pkg_in_width(pkg), N = rf_chain_pkg_out_width(pkg);
    rf_bench_say(o, "chain %s (%s) at %lld rows: %lld -> %lld, %.0f weight bytes, seed %llu",
                 rf_chain_pkg_kernel_name(pkg), schedule, (long long)rows, (long long)C,
                 (long long)N, weight_bytes, (unsigned long long)o->seed);
    if ((st = rf_alloc(a, (size_t)(rows * C) * 2, "X", (void **)&x)))
        goto done;
    rf_rng_t rng;
    rf_rng_seed(&rng, o->seed);
    for (int64_t i = 0; i < rows * C; i++)
        x[i] = rf_f32_to_f16((float)rf_rng_uniform(&rng, 1.0));
    if ((st = rf_chain_exec_create(a, pkg, rows, stream, &chain.exec)) ||
        (st = rf_chain_exec_upload_x(chain.exec, x)) ||
        (st = rf_bench_chain_sanity(a, chain.exec, rows * N, stream)) ||
        (st = rf_bench_floor_capture(&floor, (cudaStream_t)stream)))
        goto done;
    items[0] =
        (rf_bench_item_t){"empty", 1, rf_bench_replay_floor, &floor, rf_bench_launch_floor, &floor};
    items[1] = (rf_bench_item_t){schedule,
                                 rf_chain_exec_kernel_nodes(chain.exec),
                                 rf_bench_replay_chain,
                                 &chain,
                                 rf_bench_launch_chain,
                                 &chain};
    if (o->cold_l2 && (st = rf_bench_flush_alloc(&timing)))
        goto done;
    st = rf_bench_time_items(a, &timing, items, 2, (cudaStream_t)stream, timings);
    (void)cudaFree(timing.flush);
    if (st)
        goto done;
    const rf_bench_timing_t *t = &timings[1];
    double us = t->have_span ? t->span.median : t->graph_event.median;
    rf_bench_say(o, "%s: span %.2f us, event %.2f us; weights stream at %.0f GB/s (%s L2)",
                 schedule, t->have_span ? t->span.median : NAN, t->graph_event.median,
                 weight_bytes / (us * 1e3), o->cold_l2 ? "cold" : "warm");
    rf_bench_ceilings_t ceil;
    if (o->ceilings)
        rf_bench_ceilings_measure(stream, &ceil);
    rf_json_writer_t w;
    rf_json_writer_init_file(&w, json_out, 1);
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "schema", "rowfuse-bench/1");
    rf_json_key_string(&w, "tool", "c");
    rf_json_key_string(&w, "git_revision", o->git_revision ? o->git_revision : "unknown");
    rf_json_key_int(&w, "seed", (int64_t)o->seed);
    rf_json_key_string(&w, "package", o->pkg_dir);
    rf_json_key(&w, "gpu");
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "name", info.name);
    rf_json_key_int(&w, "sm_count", info.sm_count);
    rf_json_object_end(&w);
    rf_json_key(&w, "method");
    rf_json_object_begin(&w);
    rf_json_key_int(&w, "rounds", o->timing.rounds);
    rf_json_key_int(&w, "observations", o->timing.observations);
    rf_json_key_bool(&w, "cupti_during_timing", t->cupti);
    rf_json_key_string(&w, "check",
                       "a replay into a NaN-poisoned Y is finite and equal, bit for "
                       "bit, to the next (the bound: rowfuse check)");
    rf_bench_json_l2(&w, o);
    rf_json_object_end(&w);
    if (o->ceilings)
        rf_bench_json_ceilings(&w, &ceil);
    rf_json_key(&w, "runs");
    rf_json_array_begin(&w);
    rf_json_object_begin(&w);
    rf_json_key(&w, "shape");
    rf_json_object_begin(&w);
    rf_json_key_int(&w, "rows", rows);
    rf_json_key_int(&w, "in_width", C);
    rf_json_key_int(&w, "out_width", N);
    rf_json_object_end(&w);
    rf_json_key(&w, "plan");
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "schedule", schedule);
    rf_json_key_string(&w, "kernel", rf_chain_pkg_kernel_name(pkg));
    rf_json_key_int(&w, "grid", rf_chain_exec_grid(chain.exec));
    rf_json_object_end(&w);
    rf_json_key_double(&w, "weight_bytes", weight_bytes);
    rf_json_key_double(&w, "weights_gbs", weight_bytes / (us * 1e3));
    rf_json_key_string(&w, "weights_gbs_from", t->have_span ? "span_us median" : "event_us median");
    if (o->ceilings && ceil.bandwidth_gbs > 0)
        rf_json_key_double(&w, "of_copy_rate", weight_bytes / (us * 1e3) / ceil.bandwidth_gbs);
    rf_json_key(&w, "variants");
    rf_json_array_begin(&w);
    floor.name = "empty";
    floor.label = "empty kernel (floor)";
    floor.ok = 1;
    rf_bench_json_variant(&w, &floor, &timings[0], o->tol.step_fraction);
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "name", schedule);
    rf_json_key_string(&w, "label", "chain kernel + graph");
    rf_json_key_int(&w, "kernel_nodes", rf_chain_exec_kernel_nodes(chain.exec));
    rf_json_key(&w, "graph");
    rf_json_object_begin(&w);
    rf_bench_json_summary(&w, "event_us", &t->graph_event);
    rf_bench_json_summary(&w, "host_us", &t->graph_host);
    rf_bench_json_summary(&w, "b2b_us", &t->b2b);
    if (t->have_span) {
        rf_bench_json_summary(&w, "span_us", &t->span);
    } else {
        rf_json_key(&w, "span_us");
        rf_json_null(&w);
        rf_json_key_string(&w, "span_note", t->span_note);
    }
    rf_json_object_end(&w);
    rf_json_key(&w, "eager");
    rf_json_object_begin(&w);
    rf_bench_json_summary(&w, "event_us", &t->eager_event);
    rf_bench_json_summary(&w, "host_us", &t->eager_host);
    rf_json_object_end(&w);
    rf_json_object_end(&w);
    rf_json_array_end(&w);
    rf_json_object_end(&w);
    rf_json_array_end(&w);
    rf_json_object_end(&w);
    st = rf_json_writer_finish(&w);
    if (!st && t->span_failed)
        st = RF_ERR(RF_CODE_MISMATCH, "%s", t->span_note);
done:
    if (floor.floor_exec)
        (void)cudaGraphExecDestroy(floor.floor_exec);
    if (floor.floor_graph)
        (void)cudaGraphDestroy(floor.floor_graph);
    rf_chain_exec_destroy(chain.exec);
    if (stream)
        rf_stream_destroy(stream);
    rf_free(a, x);
    rf_chain_pkg_destroy(pkg);
    return st ? rf_status_annotate(st, "bench --c of chain package %s", o->pkg_dir) : RF_OK;
}
