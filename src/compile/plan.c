/* The planner: every decision of a package, made once, before any file is written: the
 * schedule (schedule.c), and for each schedule the package carries, its kernels' tile rows,
 * prefetch and store options and geometry (tiling.c), on the target's SM count and shared
 * memory. rf_compile_package (package.c) adds the grid rule once the generator has
 * reported each kernel's registers. */
#include <stdio.h>
#include <string.h>

#include "compile/compile_internal.h"

/* A larger tile re-reads the weights fewer times but leaves SMs idle below ~one tile per
 * SM; X prefetch + split W2 measured a win (or even) from this many rows (notes/kernels.md,
 * H200 runs 3 and 4). */
#define RF_AUTO_XPF_ROWS 1000

void rf_compile_options_default(rf_compile_options_t *o) {
    memset(o, 0, sizeof(*o));
    o->schedule = "auto";
    o->target = "h200";
    o->x_prefetch = -1;
    o->hidden_split = -1;
    o->y_vec2 = -1;
    o->stream_tma = -1;
    o->stream_wide = -1;
    o->warp_rows = -1;
    o->stream_x_first = -1;
    o->grid = RF_GRID_AUTO;
    o->python = "python3";
}

/* The grid rule auto gives a schedule: registers counted and equal tiles per block for the
 * persistent schedules measured faster that way (persistent-smem; notes/kernels.md) or built for it
 * (persistent-wgmma: one block per SM's worth of tiles, every block the same count). */
int rf_schedule_grid_balanced(rf_schedule_t s) {
    return s == RF_SCHEDULE_PERSISTENT_SMEM || s == RF_SCHEDULE_PERSISTENT_WGMMA;
}

/* The planted faults (tests of the checks only): the name --plant-fault takes, the spelling
 * kernel_spec.json carries to the generator, where it is planted and what it does: in the
 * mma.sync kernels' code or the wgmma kernel's (the generator), or in the launcher of every
 * kernel (the shim, src/pkg/rf_pkg_shim.c, which the generator builds with
 * RF_PKG_FAULT_<SPELLING> defined: each launch goes to a stream other than the caller's, so
 * a capture records no kernel). `sites`: the kernel modes whose code has the fault's site
 * (the generator refuses a spec that plants it elsewhere); a kernel without the site is
 * written without the fault, so a schedule none of whose kernels has it stays correct and
 * serves as a control. A kernel fault leaves the other family's kernels correct. */
enum { FAULT_MMA, FAULT_WGMMA, FAULT_LAUNCHER, FAULT_STREAM };
#define M_(e) (1u << RF_KERNEL_##e)
#define ALL_MMA_ (M_(FUSED_SMEM) | M_(FUSED_GMEM) | M_(PROJ1) | M_(PROJ2))
#define ALL_ ((1u << RF_KERNEL_MODE_COUNT) - 1u)
static const struct {
    const char *name, *spelling;
    int where;
    unsigned sites;
    const char *schedules, *what;
} rf_faults[] = {
    /* conventional has no such barrier: H crosses global memory between its two launches */
    {"no-barrier", "no_barrier", FAULT_MMA, M_(FUSED_SMEM) | M_(FUSED_GMEM),
     "persistent-smem, persistent-gmem", "no block barrier between H's store and GEMM2"},
    {"no-pad", "no_pad", FAULT_MMA, ALL_MMA_, "persistent-smem, persistent-gmem, conventional",
     "the zero padding of partial tiles left unwritten"},
    {"no-relu", "no_relu", FAULT_MMA, M_(FUSED_SMEM) | M_(FUSED_GMEM) | M_(PROJ1),
     "persistent-smem, persistent-gmem, conventional", "H without its ReLU"},
    {"no-ring-wait", "no_ring_wait", FAULT_WGMMA, M_(FUSED_WGMMA), "persistent-wgmma",
     "the consumers read a weight stage without waiting on its full mbarrier"},
    {"ring-phase", "ring_phase", FAULT_WGMMA, M_(FUSED_WGMMA), "persistent-wgmma",
     "the consumers wait for the other phase parity of a weight stage (off by one)"},
    {"no-oob-fill", "no_oob_fill", FAULT_WGMMA, M_(FUSED_WGMMA), "persistent-wgmma",
     "TMA boxes of X, W1, W2 described with the padded extents: no zero fill past C, H"},
    {"wrong-stream-legacy", "stream_legacy", FAULT_LAUNCHER, ALL_,
     "persistent-smem, persistent-gmem, conventional, persistent-wgmma",
     "every launch on the legacy default stream"},
    {"wrong-stream-created", "stream_created", FAULT_LAUNCHER, ALL_,
     "persistent-smem, persistent-gmem, conventional, persistent-wgmma",
     "every launch on a stream the shim created"},
    {"wrong-stream-per-thread", "stream_thread", FAULT_LAUNCHER, ALL_,
     "persistent-smem, persistent-gmem, conventional, persistent-wgmma",
     "every launch on the per-thread default stream"},
    /* chain_stream (compile/chain_stream.c plants them; chain packages only) */
    {"stream-no-fence", "stream_no_fence", FAULT_STREAM, 0, "chain-stream",
     "the cross-block reduction without its release and acquire fences (relaxed counter)"},
    {"stream-early-reduce", "stream_early_reduce", FAULT_STREAM, 0, "chain-stream",
     "the reducers wait for all but one block's arrival: the last block's partial is read "
     "before it is written"},
    {"stream-no-reset", "stream_no_reset", FAULT_STREAM, 0, "chain-stream",
     "the last reader leaves the arrival counter set: the next launch's reducers do not "
     "wait"},
    {"stream-ring-no-wait", "stream_ring_no_wait", FAULT_STREAM, 0, "chain-stream",
     "the MMA warps read a weight stage of the TMA ring without waiting on its full mbarrier "
     "(planting it chooses the TMA ring)"},
    /* a chain's conventional schedule (compile/chain_package.c plants it; chain packages only) */
    {"conv-no-store", "conv_no_store", FAULT_STREAM, 0, "chain-conventional",
     "the conventional schedule's kernels skip their scratch stores: a later kernel reads "
     "the buffer's previous contents"},
};
#undef M_
#undef ALL_MMA_
#undef ALL_
enum { RF_FAULT_COUNT = (int)(sizeof rf_faults / sizeof rf_faults[0]) };

int rf_compile_fault_info(int i, const char **out_name, const char **out_what,
                          const char **out_schedules) {
    if (i < 0 || i >= RF_FAULT_COUNT)
        return 0;
    *out_name = rf_faults[i].name;
    *out_what = rf_faults[i].what;
    *out_schedules = rf_faults[i].schedules;
    return 1;
}

static int fault_find(const char *name) {
    for (int i = 0; name && i < RF_FAULT_COUNT; i++)
        if (!strcmp(name, rf_faults[i].name))
            return i;
    return -1;
}

const char *rf_fault_spelling(const char *name, const char *schedules) {
    int i = fault_find(name);
    return i >= 0 && !strcmp(rf_faults[i].schedules, schedules) ? rf_faults[i].spelling : NULL;
}

/* The specs of one schedule's kernels at tile rows tm; UNSUPPORTED when one does not fit. */
static rf_status_t schedule_specs(rf_schedule_t s, int c, int h, int tm, int xpf, int split,
                                  const rf_compile_options_t *o, const rf_target_t *t,
                                  rf_kernel_spec_t out[2], int *out_n) {
    rf_kernel_mode_t modes[2];
    int n = rf_schedule_kernel_modes(s, modes);
    int yv2 = o->y_vec2 >= 0 ? o->y_vec2 : s == RF_SCHEDULE_PERSISTENT_SMEM;
    for (int i = 0; i < n; i++)
        RF_RETURN_IF_ERROR_PLAIN(
            rf_kernel_geometry(modes[i], c, h, tm, xpf, split, yv2, o->ring, t, &out[i]));
    for (int i = 0; i < n; i++) {
        out[i].min_blocks = o->min_blocks;
        if (o->fault && (rf_faults[fault_find(o->fault)].sites >> out[i].mode & 1u))
            snprintf(out[i].fault, sizeof out[i].fault, "%s", /* the generator's spelling */
                     rf_faults[fault_find(o->fault)].spelling);
        out[i].check_delay = o->check_delay;
        out[i].grid_balanced = o->grid == RF_GRID_BALANCED ||
                               (o->grid == RF_GRID_AUTO && rf_schedule_grid_balanced(s));
    }
    *out_n = n;
    return RF_OK;
}

/* Tile rows: with --tile-rows auto the largest of 64/32 that still gives about one tile per
 * SM (ceil(rows / tile) >= 0.9 SMs), else 16; a tile the geometry rejects steps down. */
static rf_status_t schedule_tiling(rf_schedule_t s, int64_t rows, int c, int h,
                                   const rf_compile_options_t *o, const rf_target_t *t,
                                   rf_kernel_spec_t out[2], int *out_n) {
    int fusedsched = s == RF_SCHEDULE_PERSISTENT_SMEM || s == RF_SCHEDULE_PERSISTENT_GMEM;
    int xpf = o->x_prefetch >= 0 ? o->x_prefetch : (rows >= RF_AUTO_XPF_ROWS && fusedsched);
    int64_t min_tiles = ((int64_t)t->sm_count * 9 + 9) / 10;
    int tile = 16;
    rf_status_t st = RF_OK;
    if (s == RF_SCHEDULE_PERSISTENT_WGMMA) {
        /* its own tiles (64 or 128 rows); --tile-rows 64 forces 64, 16 and 32 do not apply */
        if (o->fault && rf_faults[fault_find(o->fault)].where == FAULT_MMA)
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "fused_wgmma has no variant of --plant-fault %s (planted in the "
                          "mma.sync kernels only; `rowfuse compile --plant-fault list`)",
                          o->fault);
        RF_RETURN_IF_ERROR_PLAIN(rf_kernel_geometry_hopper(c, h, rows, o->tile_rows == 64 ? 64 : 0,
                                                           o->hidden_split, t, &out[0]));
        out[0].grid_balanced = o->grid == RF_GRID_BALANCED ||
                               (o->grid == RF_GRID_AUTO && rf_schedule_grid_balanced(s));
        if (o->fault) /* a wgmma fault, or a launcher fault (the kernel unchanged) */
            snprintf(out[0].fault, sizeof out[0].fault, "%s",
                     rf_faults[fault_find(o->fault)].spelling);
        out[0].check_delay = o->check_delay;
        *out_n = 1;
        return RF_OK;
    }
    if (o->tile_rows)
        return schedule_specs(s, c, h, o->tile_rows, xpf, xpf, o, t, out, out_n);
    for (int cand = 64; cand >= 32; cand /= 2)
        if ((rows + cand - 1) / cand >= min_tiles) {
            tile = cand;
            break;
        }
    for (int cand = tile; cand >= 16; cand /= 2) {
        rf_status_free(st);
        st = schedule_specs(s, c, h, cand, xpf, xpf, o, t, out, out_n);
        if (!st)
            return RF_OK;
    }
    return st;
}

rf_status_t rf_compile_plan(int64_t channels, int64_t hidden, const rf_compile_options_t *o,
                            rf_plan_t *p) {
    memset(p, 0, sizeof(*p));
    if (o->rows < 1 || o->rows > RF_MAX_DIM)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rows %lld outside 1..%lld", (long long)o->rows,
                      (long long)RF_MAX_DIM);
    if (o->tile_rows != 0 && o->tile_rows != 16 && o->tile_rows != 32 && o->tile_rows != 64)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "tile rows must be auto, 16, 32 or 64, not %d",
                      o->tile_rows);
    RF_RETURN_IF_ERROR_PLAIN(rf_target_lookup(o->target ? o->target : "h200", &p->target));
    if (o->fault && fault_find(o->fault) < 0) {
        char names[256] = "";
        for (int i = 0; i < RF_FAULT_COUNT; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     rf_faults[i].name);
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--plant-fault must be one of %s, not '%s'", names,
                      o->fault);
    }
    if (o->fault && rf_faults[fault_find(o->fault)].where == FAULT_STREAM)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "--plant-fault %s is planted in the %s kernels of a chain package "
                      "(the residual MLP's schedules have no variant of it)",
                      o->fault, rf_faults[fault_find(o->fault)].schedules);
    if (o->sm_count < 0 || o->sm_count > 1024)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "SM count %d outside 1..1024", o->sm_count);
    if (o->sm_count)
        p->target.sm_count = o->sm_count;
    p->version = RF_PLAN_VERSION;
    p->rows = o->rows;
    p->channels = channels;
    p->hidden = hidden;
    p->max_grid = o->max_grid;
    snprintf(p->model, sizeof p->model, "%s", o->model ? o->model : "");
    snprintf(p->library, sizeof p->library, "librowfuse_pkg.so");
    int is_auto = !o->schedule || !strcmp(o->schedule, "auto");
    if (!is_auto) {
        RF_RETURN_IF_ERROR_PLAIN(rf_schedule_parse(o->schedule, &p->schedule));
        snprintf(p->reason, sizeof p->reason, "chosen with --schedule");
    }
    for (int s = 0; s < RF_SCHEDULE_COUNT; s++) {
        rf_plan_schedule_t *ps = &p->schedules[s];
        rf_kernel_spec_t specs[2];
        int n = 0;
        if (s == RF_SCHEDULE_CUBLASLT) {
            ps->available = 1; /* the runtime's vendor variant: no package kernels */
            continue;
        }
        rf_status_t st = schedule_tiling((rf_schedule_t)s, o->rows, (int)channels, (int)hidden, o,
                                         &p->target, specs, &n);
        if (st) {
            snprintf(ps->rejected, sizeof ps->rejected, "%s", rf_status_message(st));
            rf_status_free(st);
            continue;
        }
        ps->available = 1;
        ps->kernel_count = n;
        for (int i = 0; i < n; i++) {
            ps->kernel[i] = p->kernel_count;
            p->kernels[p->kernel_count++] = specs[i];
        }
    }
    for (int i = 0; i < p->kernel_count; i++)
        p->kernels[i].local_ops = -1; /* known once the generator reports it */
    if (is_auto) {                    /* among the schedules that fit (cuBLASLt always does) */
        rf_schedule_fit_t fit[RF_SCHEDULE_COUNT];
        rf_schedule_fits(p, fit);
        p->schedule = rf_schedule_choose(o->rows, channels, hidden, &p->target, fit, p->reason,
                                         sizeof p->reason);
    }
    if (!p->schedules[p->schedule].available)
        return RF_ERR(RF_CODE_UNSUPPORTED, "schedule %s cannot run %lldx%lldx%lld on %s: %s",
                      rf_schedule_name(p->schedule), (long long)o->rows, (long long)channels,
                      (long long)hidden, p->target.name, p->schedules[p->schedule].rejected);
    if (p->kernel_count == 0)
        return RF_ERR(RF_CODE_UNSUPPORTED, "no rowfuse kernel fits C=%lld H=%lld on %s: %s",
                      (long long)channels, (long long)hidden, p->target.name,
                      p->schedules[RF_SCHEDULE_PERSISTENT_SMEM].rejected);
    return RF_OK;
}
