/* `rowfuse compile MODEL.onnx | --mlp RxCxH [--seed S] ... -o PKG`: the one path to a GPU
 * package. For a model: verifies it and matches the residual MLP block; for --mlp: a
 * synthetic block of that shape with seeded random weights (what the GPU checks and
 * benchmarks use). Then src/compile decides the plan and writes the package. The kernel
 * generator is python/rowfuse/kernels/build.py (found through $RF_KERNELS_DIR, else next to the
 * source tree, else ./kernels), run with $RF_PYTHON (default python3). */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/compile_mlir.h"
#include "commands.h"
#include "load.h"
#include "paths.h"
#include "rowfuse/compile.h"

#define RF_COMPILE_USAGE                                                                           \
    "usage: rowfuse compile (MODEL.onnx | --mlp ROWSxCHANNELSxHIDDEN [--seed S]) [--rows N] "      \
    "[--schedule auto|NAME] [--tile-rows auto|16|32|64] [--target h200|h100-sxm|h100-pcie] "       \
    "[--sms N] [--x-prefetch auto|on|off] [--y-vec2 auto|on|off] [--hidden-split auto|on|off] "    \
    "[--grid auto|smem|regs|balanced] [--ring] [--min-blocks N] [--max-grid N] "                   \
    "[--plant-fault no-barrier|no-pad (tests of the gates)] -o PKGDIR\n"                           \
    "       rowfuse compile (MODEL.onnx | --mlp RxCxH) --target iree [--device llvm-cpu|cuda] "    \
    "[--schedule auto|NAME|stock] -o DIR   (an IREE module: see rowfuse iree)"

typedef struct compile_args {
    const char *model, *mlp;
    uint64_t seed;
    rf_compile_options_t o;
} compile_args_t;

static int parse_int(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

static int parse_tri(const char *s, int *out) { /* auto|on|off -> -1|1|0 */
    *out = !strcmp(s, "auto") ? -1 : !strcmp(s, "on") ? 1 : !strcmp(s, "off") ? 0 : -2;
    return *out != -2;
}

static int parse_grid(const char *s, rf_grid_rule_t *out) {
    static const char *const names[] = {"auto", "smem", "regs", "balanced"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) {
            *out = (rf_grid_rule_t)i;
            return 1;
        }
    return 0;
}

/* One option with its value; 0 when the option is unknown or the value bad. */
static int parse_option(compile_args_t *c, const char *a, const char *v) {
    rf_compile_options_t *o = &c->o;
    long long n = 0;
    int ok = 1;
    if (!strcmp(a, "--rows"))
        ok = parse_int(v, 1, RF_MAX_DIM, &n), o->rows = n;
    else if (!strcmp(a, "--mlp"))
        c->mlp = v;
    else if (!strcmp(a, "--seed"))
        ok = parse_int(v, 0, INT64_MAX, &n), c->seed = (uint64_t)n;
    else if (!strcmp(a, "--schedule"))
        o->schedule = v;
    else if (!strcmp(a, "--tile-rows"))
        ok = !strcmp(v, "auto") || (parse_int(v, 16, 64, &n) && (o->tile_rows = (int)n));
    else if (!strcmp(a, "--target"))
        o->target = v;
    else if (!strcmp(a, "--sms"))
        ok = parse_int(v, 1, 1024, &n), o->sm_count = (int)n;
    else if (!strcmp(a, "--x-prefetch"))
        ok = parse_tri(v, &o->x_prefetch);
    else if (!strcmp(a, "--y-vec2"))
        ok = parse_tri(v, &o->y_vec2);
    else if (!strcmp(a, "--hidden-split"))
        ok = parse_tri(v, &o->hidden_split);
    else if (!strcmp(a, "--grid"))
        ok = parse_grid(v, &o->grid);
    else if (!strcmp(a, "--min-blocks"))
        ok = parse_int(v, 0, 32, &n), o->min_blocks = (int)n;
    else if (!strcmp(a, "--plant-fault"))
        o->fault = v;
    else if (!strcmp(a, "--max-grid"))
        ok = parse_int(v, 0, 1 << 30, &n), o->max_grid = (int)n;
    else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
        o->out_dir = v;
    else
        return 0;
    return ok;
}

static rf_status_t parse_args(int argc, char **argv, compile_args_t *c) {
    memset(c, 0, sizeof *c);
    rf_compile_options_default(&c->o);
    c->seed = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--ring"))
            c->o.ring = 1;
        else if (a[0] != '-' && !c->model)
            c->model = a;
        else if (i + 1 >= argc || !parse_option(c, a, argv[i + 1]))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "bad argument '%s%s%s'\n%s", a,
                          i + 1 < argc ? " " : "", i + 1 < argc ? argv[i + 1] : "",
                          RF_COMPILE_USAGE);
        else
            i++;
    }
    if (!!c->model == !!c->mlp || !c->o.out_dir)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s", RF_COMPILE_USAGE);
    return RF_OK;
}

/* The block's weights, hash and row count from the model or the --mlp shape. */
static rf_status_t block_weights(compile_args_t *c, rf_mlp_weights_t *w, char hash[17],
                                 char *model_desc, size_t desc_size) {
    rf_allocator_t a = rf_allocator_system();
    if (c->mlp) {
        long long r, ch, h;
        char tail;
        if (sscanf(c->mlp, "%lldx%lldx%lld%c", &r, &ch, &h, &tail) != 3 || r < 1 || ch < 1 || h < 1)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "--mlp wants ROWSxCHANNELSxHIDDEN with each >= 1, not '%s'", c->mlp);
        if (!c->o.rows)
            c->o.rows = r;
        snprintf(model_desc, desc_size, "mlp:%lldx%lldx%lld seed %" PRIu64, r, ch, h, c->seed);
        RF_RETURN_IF_ERROR_PLAIN(rf_mlp_weights_random(a, ch, h, c->seed, w));
    } else {
        rf_graph_t *g;
        rf_contract_t *ct;
        rf_mlp_block_t block;
        snprintf(model_desc, desc_size, "%s", c->model);
        RF_RETURN_IF_ERROR_PLAIN(rf_cli_load_verified(c->model, &g, &ct));
        rf_status_t st = rf_mlp_match(g, &block);
        if (!st && !c->o.rows)
            c->o.rows = block.rows;
        if (!st)
            st = rf_mlp_weights_from_graph(a, g, &block, w);
        rf_contract_destroy(ct);
        rf_graph_destroy(g);
        RF_RETURN_IF_ERROR_PLAIN(st);
    }
    rf_mlp_weights_hash(w, hash);
    return RF_OK;
}

static void print_plan(const rf_plan_t *p, const char *out_dir) {
    printf("compiled %s: residual MLP %lldx%lldx%lld on %s (%d SMs) -> %s/\n", p->model,
           (long long)p->rows, (long long)p->channels, (long long)p->hidden, p->target.name,
           p->target.sm_count, out_dir);
    printf("  schedule %s: %s\n", rf_schedule_name(p->schedule), p->reason);
    for (int i = 0; i < p->kernel_count; i++) {
        const rf_kernel_spec_t *k = &p->kernels[i];
        char rings[160] = "", pair[80] = "";
        if (rf_kernel_spec_blocks_per_tile(k) > 1)
            snprintf(pair, sizeof pair,
                     "; a cluster of %d blocks per tile, each its share of chunks",
                     rf_kernel_spec_blocks_per_tile(k));
        if (k->x_stages > 0)
            snprintf(rings, sizeof rings, " (TMA rings: %d X, %d chunk%s)", k->x_stages,
                     k->weight_buffers, pair);
        printf("  kernel %s: %d threads, %d B smem, hidden chunk %d x%d%s, %d registers, %d "
               "blocks/SM%s, grid %d at %lld rows\n",
               k->name, rf_kernel_spec_threads(k), k->smem_bytes, k->hidden_chunk,
               k->padded_hidden / k->hidden_chunk, rings, k->registers, k->blocks_per_sm,
               k->grid_balanced ? " (balanced)" : "", (int)rf_plan_grid(p, k, p->rows),
               (long long)p->rows);
    }
    for (int s = 0; s < RF_SCHEDULE_COUNT; s++)
        if (!p->schedules[s].available)
            printf("  %s not in this package: %s\n", rf_schedule_name((rf_schedule_t)s),
                   p->schedules[s].rejected);
}

/* `rowfuse compile ... --target iree`: the block through the schedule pass into an IREE
 * module instead of a rowfuse package; the same flow as `rowfuse iree`, which takes the
 * remaining arguments (--device llvm-cpu|cuda picks IREE's target). */
static int compile_for_iree(int argc, char **argv, int at) {
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int n = 0;
    if (!rest)
        return rf_cli_report("compile", RF_ERR(RF_CODE_OUT_OF_MEMORY, "argument list"));
    for (int i = 0; i < argc; i++)
        if (i != at && i != at + 1) /* drop "--target iree" */
            rest[n++] = argv[i];
    int rc = rf_cmd_iree(n, rest);
    free(rest);
    return rc;
}

int rf_cmd_compile(int argc, char **argv) {
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--target") && !strcmp(argv[i + 1], "iree"))
            return compile_for_iree(argc, argv, i);
    compile_args_t c;
    rf_mlp_weights_t w = {0};
    char hash[17], desc[256], kdir[4096];
    rf_status_t st = parse_args(argc, argv, &c);
    if (!st)
        st = rf_cli_find_dir("RF_KERNELS_DIR", "python/rowfuse/kernels", "build.py", kdir,
                             sizeof kdir);
    if (!st)
        st = block_weights(&c, &w, hash, desc, sizeof desc);
    if (st) {
        rf_mlp_weights_free(rf_allocator_system(), &w);
        return rf_cli_report("compile", st);
    }
    c.o.kernels_dir = kdir;
    c.o.python = getenv("RF_PYTHON") && getenv("RF_PYTHON")[0] ? getenv("RF_PYTHON") : "python3";
    c.o.model = desc;
    rf_plan_t *plan = calloc(1, sizeof *plan);
    st = plan ? rf_compile_package(&w, hash, &c.o, plan) : RF_ERR(RF_CODE_OUT_OF_MEMORY, "plan");
    int scheduled = 0;
    if (!st)
        st = rf_compile_package_mlir(plan, &w, desc, c.o.out_dir, c.o.tile_rows, c.o.hidden_split,
                                     &scheduled);
    if (!st) {
        print_plan(plan, c.o.out_dir);
        printf("  MLIR: %s/contract.mlir%s\n", c.o.out_dir,
               scheduled ? " and scheduled.mlir (the schedule pass agrees with the plan)"
                         : " (no rowfuse-opt built: no scheduled.mlir; make mlir builds it)");
    }
    free(plan);
    rf_mlp_weights_free(rf_allocator_system(), &w);
    return rf_cli_report("compile", st);
}
