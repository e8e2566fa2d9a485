/* `rowfuse compile MODEL.onnx | --mlp RxCxH [--seed S] ... -o PKG`: the one path to a GPU
 * package. For a model: verifies it and matches the residual MLP block; for --mlp: a
 * synthetic block of that shape with seeded random weights (what the GPU checks and
 * benchmarks use). Then src/compile decides the plan and writes the package. The kernel
 * generator is the installed Python module rowfuse.kernels.build, run with the interpreter
 * rf_cli_python picks (paths.h). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cli/compile_mlir.h"
#include "commands.h"
#include "compile/chain_plan.h"
#include "load.h"
#include "paths.h"
#include "rowfuse/compile.h"

typedef struct compile_args {
    const char *model, *mlp;
    int64_t seed;
    int force; /* write into a non-empty folder that is not a package */
    rf_compile_options_t o;
} compile_args_t;

/* How an option's value is read into its field. */
typedef enum compile_value {
    VALUE_TEXT,      /* const char *, as given */
    VALUE_INT,       /* int in lo..hi */
    VALUE_INT64,     /* int64_t in lo..hi */
    VALUE_TRI,       /* int: auto|on|off -> -1|1|0 */
    VALUE_GRID,      /* rf_grid_rule_t: auto|smem|regs|balanced */
    VALUE_TILE_ROWS, /* int: auto|16|32|64 -> 0|16|32|64 */
} compile_value_t;

typedef struct compile_option {
    const char *name;
    compile_value_t kind;
    size_t field; /* offset in compile_args_t */
    int64_t lo, hi;
} compile_option_t;

#define FIELD(f) offsetof(compile_args_t, f)

/* The options that take a value; `rowfuse compile --help` (main.c) documents them. */
static const compile_option_t compile_options[] = {
    {"--mlp", VALUE_TEXT, FIELD(mlp), 0, 0},
    {"--seed", VALUE_INT64, FIELD(seed), 0, INT64_MAX},
    {"--rows", VALUE_INT64, FIELD(o.rows), 1, RF_MAX_DIM},
    {"--schedule", VALUE_TEXT, FIELD(o.schedule), 0, 0},
    {"--tile-rows", VALUE_TILE_ROWS, FIELD(o.tile_rows), 0, 0},
    {"--target", VALUE_TEXT, FIELD(o.target), 0, 0},
    {"--sms", VALUE_INT, FIELD(o.sm_count), 1, 1024},
    {"--x-prefetch", VALUE_TRI, FIELD(o.x_prefetch), 0, 0},
    {"--y-vec2", VALUE_TRI, FIELD(o.y_vec2), 0, 0},
    {"--hidden-split", VALUE_TRI, FIELD(o.hidden_split), 0, 0},
    {"--stream-tma", VALUE_TRI, FIELD(o.stream_tma), 0, 0},
    {"--stream-wide", VALUE_TRI, FIELD(o.stream_wide), 0, 0},
    {"--warp-rows", VALUE_TRI, FIELD(o.warp_rows), 0, 0},
    {"--stream-x-first", VALUE_TRI, FIELD(o.stream_x_first), 0, 0},
    {"--weight-buffers", VALUE_INT, FIELD(o.weight_buffers), 1, 16},
    {"--grid", VALUE_GRID, FIELD(o.grid), 0, 0},
    {"--min-blocks", VALUE_INT, FIELD(o.min_blocks), 0, 32},
    {"--max-grid", VALUE_INT, FIELD(o.max_grid), 0, 1 << 30},
    {"-o", VALUE_TEXT, FIELD(o.out_dir), 0, 0},
    {"--output", VALUE_TEXT, FIELD(o.out_dir), 0, 0},
    /* Tests of the checks only, so not in --help: a planted fault by name (the names are
     * src/compile/plan.c's table; src/harness/README.md lists them). */
    {"--plant-fault", VALUE_TEXT, FIELD(o.fault), 0, 0},
    /* ... and a checking build: cycles the producers spin before each async copy */
    {"--check-delay", VALUE_INT, FIELD(o.check_delay), 0, 1 << 24},
};

/* Reads option `opt`'s value `v` into its field of c. */
static rf_status_t parse_value(compile_args_t *c, const compile_option_t *opt, const char *v) {
    static const char *const tri[] = {"auto", "on", "off", NULL};
    static const int tri_value[] = {-1, 1, 0};
    static const char *const grid[] = {"auto", "smem", "regs", "balanced", NULL};
    static const char *const tile[] = {"auto", "16", "32", "64", NULL};
    static const int tile_value[] = {0, 16, 32, 64};
    char *field = (char *)c + opt->field;
    int k = 0;
    switch (opt->kind) {
    case VALUE_TEXT:
        *(const char **)field = v;
        return RF_OK;
    case VALUE_INT:
        return rf_cli_parse_int(opt->name, v, (int)opt->lo, (int)opt->hi, (int *)field);
    case VALUE_INT64:
        return rf_cli_parse_int64(opt->name, v, opt->lo, opt->hi, (int64_t *)field);
    case VALUE_TRI:
        RF_RETURN_IF_ERROR_PLAIN(rf_cli_parse_choice(opt->name, v, tri, &k));
        *(int *)field = tri_value[k];
        return RF_OK;
    case VALUE_GRID:
        RF_RETURN_IF_ERROR_PLAIN(rf_cli_parse_choice(opt->name, v, grid, &k));
        *(rf_grid_rule_t *)field = (rf_grid_rule_t)k;
        return RF_OK;
    case VALUE_TILE_ROWS:
        RF_RETURN_IF_ERROR_PLAIN(rf_cli_parse_choice(opt->name, v, tile, &k));
        *(int *)field = tile_value[k];
        return RF_OK;
    }
    return RF_ERR(RF_CODE_INTERNAL, "option %s has no reader", opt->name);
}

static rf_status_t parse_args(int argc, char **argv, compile_args_t *c) {
    memset(c, 0, sizeof *c);
    rf_compile_options_default(&c->o);
    c->seed = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const compile_option_t *opt = NULL;
        for (size_t k = 0; k < sizeof compile_options / sizeof compile_options[0]; k++)
            if (!strcmp(a, compile_options[k].name))
                opt = &compile_options[k];
        if (!strcmp(a, "--ring"))
            c->o.ring = 1;
        else if (!strcmp(a, "--force"))
            c->force = 1;
        else if (!strcmp(a, "--timeline")) /* (a measurement build; not in --help) */
            c->o.timeline = 1;
        else if (a[0] != '-' && !c->model)
            c->model = a;
        else if (!opt)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "unexpected argument '%s' (rowfuse compile --help lists the options)", a);
        else if (i + 1 >= argc)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s needs a value", a);
        else {
            const char *v = argv[++i];
            RF_RETURN_IF_ERROR(parse_value(c, opt, v), "bad argument '%s %s'", a, v);
        }
    }
    if (!!c->model == !!c->mlp || !c->o.out_dir)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "usage: rowfuse %s", rf_cli_synopsis("compile"));
    return RF_OK;
}

/* A package folder: what rf_compile_package writes first (kernel_spec.json) or last
 * (plan.json). */
static int is_package(const char *dir) {
    static const char *const marks[] = {"plan.json", "kernel_spec.json"};
    char path[8192];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, marks[i]);
        if (access(path, F_OK) == 0)
            return 1;
    }
    return 0;
}

/* -o must be new, empty, or a rowfuse package (replaced), so that a compile never mixes
 * its files into a folder of other files; --force allows that. */
static rf_status_t check_out_dir(const char *dir, int force) {
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return RF_OK; /* new: rf_compile_package creates it */
    if (!S_ISDIR(sb.st_mode))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "-o %s: exists and is not a folder", dir);
    if (force || is_package(dir))
        return RF_OK;
    DIR *d = opendir(dir);
    if (!d)
        return RF_ERR(RF_CODE_IO_ERROR, "-o %s: cannot read the folder", dir);
    const struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)) != NULL)
        empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    if (!empty)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "-o %s: the folder is not empty and holds no rowfuse package; name a new "
                      "or empty folder, or pass --force to write into it",
                      dir);
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

/* `rowfuse compile --plant-fault list`: every planted fault (tests of the checks only) and
 * the schedules it applies to, one a line: NAME<TAB>SCHEDULES<TAB>WHAT. */
static int print_faults(void) {
    const char *name, *what, *schedules;
    for (int i = 0; rf_compile_fault_info(i, &name, &what, &schedules); i++)
        printf("%s\t%s\t%s\n", name, schedules, what);
    return 0;
}

/* A model that is a chain and not the residual MLP: its chain_mma package (src/compile,
 * chain_plan.h). *chain = 0 leaves the model to the residual MLP's schedules. */
static void print_chain(const rf_chain_plan_t *p, const char *what, const char *out_dir) {
    printf("compiled the chain of %s into %s\n", what, out_dir);
    int conv = !strncmp(p->name, "conv_", 5);
    const char *kinds = !strncmp(p->name, "stream_", 7) ? "chain_stream" : "chain_mma";
    if (conv)
        kinds = strstr(p->reason, "chain_wgmma")
                    ? "one per segment: chain_wgmma for a Hopper GEMM, chain_mma otherwise"
                    : "chain_mma, one per segment";
    printf("  kernel%s %s (%s): %s\n", conv ? "s" : "", p->name, kinds, p->reason);
    printf("  %d registers%s, %d blocks per SM%s; wh %lld fp16, wf %lld fp32 weights\n",
           p->registers, conv ? " (the most of its kernels)" : "", p->blocks_per_sm,
           conv ? " (the fewest)" : "", (long long)p->wh_elems, (long long)p->wf_elems);
}

static rf_status_t compile_chain(compile_args_t *c, int *chain) {
    rf_compile_options_t o = c->o;
    rf_chain_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "chain plan");
    o.model = c->model;
    o.python = rf_cli_python();
    rf_status_t st = rf_compile_chain_model(c->model, &o, chain, p);
    if (!st && *chain)
        print_chain(p, c->model, o.out_dir);
    free(p);
    return st;
}

/* --mlp RxCxH --schedule chain|chain-stream: the synthetic block as a chain package. */
static rf_status_t compile_mlp_chain(compile_args_t *c, const rf_mlp_weights_t *w,
                                     const char *desc) {
    rf_compile_options_t o = c->o;
    rf_chain_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "chain plan");
    o.model = desc;
    o.python = rf_cli_python();
    rf_status_t st = rf_compile_chain_mlp(w, &o, p);
    if (!st)
        print_chain(p, desc, o.out_dir);
    free(p);
    return st;
}

int rf_cmd_compile(int argc, char **argv) {
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--target") && !strcmp(argv[i + 1], "iree"))
            return compile_for_iree(argc, argv, i);
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--plant-fault") && !strcmp(argv[i + 1], "list"))
            return print_faults();
    compile_args_t c;
    rf_mlp_weights_t w = {0};
    char hash[17], desc[256];
    rf_status_t st = parse_args(argc, argv, &c);
    if (!st)
        st = check_out_dir(c.o.out_dir, c.force);
    int chain = 0;
    if (!st && c.model && !c.mlp)
        st = compile_chain(&c, &chain);
    if (chain)
        return rf_cli_report("compile", st);
    if (!st)
        st = rf_cli_block_weights(c.model, c.mlp, (uint64_t)c.seed, &c.o.rows, &w, hash, desc,
                                  sizeof desc);
    if (st) {
        rf_mlp_weights_free(rf_allocator_system(), &w);
        return rf_cli_report("compile", st);
    }
    if (c.mlp && rf_compile_is_chain_schedule(c.o.schedule)) {
        st = compile_mlp_chain(&c, &w, desc);
        rf_mlp_weights_free(rf_allocator_system(), &w);
        return rf_cli_report("compile", st);
    }
    c.o.python = rf_cli_python();
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
                         : " (no rowfuse-opt found: no scheduled.mlir; make mlir builds it)");
    }
    free(plan);
    rf_mlp_weights_free(rf_allocator_system(), &w);
    return rf_cli_report("compile", st);
}
