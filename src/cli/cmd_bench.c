/* `rowfuse bench PKGDIR --c [--rows N] [--seed S] [--rounds R] [--obs K] [--tol T]
 *  [--control-obs K] [--no-span] [--span-attribution correlation|order] [--cold-l2]
 *  [--git-rev REV] [-o out.json]`: the benchmark of docs/benchmarking.md from a C host (the
 * empty floor, the package's schedules and cuBLASLt; see src/harness/c_bench.h). Progress
 * lines go to stderr, the JSON to -o (default stdout). The GPU span comes from CUPTI over
 * the timed graph observations; --control-obs sets the control round without CUPTI (0:
 * none), --no-span keeps CUPTI off altogether, --cold-l2 evicts the L2 before every
 * observation (c_bench.h). The Python variants (PyTorch,
 * torch.compile, Triton) are `python -m rowfuse.bench`; `python -m rowfuse.bench.report`
 * merges both. Built without CUDA, the command says so. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "commands.h"
#include "rowfuse/mlp.h"
#include "rowfuse/plan.h"

#ifdef RF_HAVE_BENCH
#include "harness/c_bench.h"
#endif

static int rf_bench_usage(const char *why) {
    return rf_cli_report("bench",
                         RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s (rowfuse bench --help)", why));
}

#ifdef RF_HAVE_BENCH
static void rf_bench_progress(void *ctx, const char *line) {
    (void)ctx;
    fprintf(stderr, "[bench --c] %s\n", line);
}
#endif

int rf_cmd_bench(int argc, char **argv) {
    const char *pkg = NULL, *out_path = NULL, *git = NULL, *variants = NULL;
    int c_host = 0, span = 1, ceilings = 1, cold_l2 = 0;
    int64_t rows = 0, seed = -1, rounds = 5, obs = 200, control = 200;
    const char *attribution = "correlation";
    double tol = rf_mlp_tolerance_default().step_fraction;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--c")) {
            c_host = 1;
        } else if (!strcmp(a, "--cold-l2")) {
            cold_l2 = 1; /* a 256 MiB write before every observation evicts the L2 */
        } else if (!strcmp(a, "--no-ceilings")) {
            ceilings = 0; /* skip the copy and GEMM ceilings (ceilings.c) */
        } else if (!strcmp(a, "--variants")) {
            /* schedule names, comma-separated: time only these (and the floor) */
            if (!val || !*val)
                return rf_bench_usage("expected schedule names after --variants");
            for (const char *p = val; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
                char name[64];
                size_t n = strchr(p, ',') ? (size_t)(strchr(p, ',') - p) : strlen(p);
                rf_schedule_t sched;
                snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), p);
                rf_status_t bad = rf_schedule_parse(name, &sched);
                if (bad) {
                    fprintf(stderr, "rowfuse bench: --variants: %s\n", rf_status_message(bad));
                    rf_status_free(bad);
                    return 2;
                }
            }
            variants = val;
            i++;
        } else if (!strcmp(a, "--no-span")) {
            span = 0;
        } else if (!strcmp(a, "--control-obs")) {
            if (!val)
                return rf_bench_usage("--control-obs needs a value");
            rf_status_t bad = rf_cli_parse_int64(a, val, 0, 100000, &control);
            if (bad)
                return rf_cli_report("bench", bad);
            i++;
        } else if (!strcmp(a, "--span-attribution")) {
            if (!val || (strcmp(val, "correlation") && strcmp(val, "order")))
                return rf_bench_usage("--span-attribution takes correlation or order");
            attribution = val;
            i++;
        } else if (!strcmp(a, "--rows") || !strcmp(a, "--seed") || !strcmp(a, "--rounds") ||
                   !strcmp(a, "--obs")) {
            int64_t *dst = !strcmp(a, "--rows")     ? &rows
                           : !strcmp(a, "--seed")   ? &seed
                           : !strcmp(a, "--rounds") ? &rounds
                                                    : &obs;
            int64_t hi = dst == &seed || dst == &rows ? INT64_MAX : 1000000;
            if (!val)
                return rf_bench_usage("missing value after --rows/--seed/--rounds/--obs");
            rf_status_t bad = rf_cli_parse_int64(a, val, dst == &seed ? 0 : 1, hi, dst);
            if (bad)
                return rf_cli_report("bench", bad);
            i++;
        } else if (!strcmp(a, "--tol")) {
            if (!val)
                return rf_bench_usage("missing value after --tol");
            rf_status_t bad = rf_cli_parse_double(a, val, 0.0, INFINITY, &tol);
            if (bad)
                return rf_cli_report("bench", bad);
            i++;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--git-rev")) {
            if (!val)
                return rf_bench_usage("missing value after -o / --git-rev");
            if (!strcmp(a, "-o"))
                out_path = val;
            else
                git = val;
            i++;
        } else if (a[0] == '-') {
            char why[128];
            snprintf(why, sizeof why, "unknown option '%.64s'", a);
            return rf_bench_usage(why);
        } else if (!pkg) {
            pkg = a;
        } else {
            return rf_bench_usage("only one package directory");
        }
    }
    if (!pkg)
        return rf_bench_usage("missing PKGDIR (a directory made by `rowfuse compile`)");
    if (!c_host)
        return rf_bench_usage("only the C host is run from here (--c); the Python variants are "
                              "`python -m rowfuse.bench`");
#ifndef RF_HAVE_BENCH
    (void)out_path;
    (void)git;
    (void)ceilings;
    (void)cold_l2;
    (void)variants;
    (void)span;
    (void)control;
    (void)attribution;
    return rf_cli_report("bench", RF_ERR(RF_CODE_UNSUPPORTED,
                                         "this rowfuse was built without CUDA: bench --c "
                                         "needs the CUDA runtime (src/runtime) and a GPU"));
#else
    rf_bench_c_options_t o;
    rf_bench_c_options_default(&o);
    o.pkg_dir = pkg;
    o.rows = rows;
    o.seed = seed >= 0 ? (uint64_t)seed : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    o.timing.rounds = (int)rounds;
    o.timing.observations = (int)obs;
    o.timing.span = span;
    o.timing.control_observations = (int)control;
    rf_status_t pst = rf_bench_attribution_parse(attribution, &o.timing.attribution);
    if (pst)
        return rf_cli_report("bench", pst);
    o.tol.step_fraction = tol;
    o.ceilings = ceilings;
    o.cold_l2 = cold_l2;
    o.variants = variants;
    o.git_revision = git ? git : getenv("ROWFUSE_GIT_REV");
    o.progress = rf_bench_progress;
    FILE *f = out_path ? fopen(out_path, "w") : stdout;
    if (!f)
        return rf_cli_report("bench", RF_ERR(RF_CODE_IO_ERROR, "cannot open %s for writing: %s",
                                             out_path, strerror(errno)));
    rf_status_t st = rf_bench_c_run(rf_allocator_system(), &o, f);
    if (out_path && fclose(f) != 0 && !st)
        st = RF_ERR(RF_CODE_IO_ERROR, "writing %s failed", out_path);
    if (st)
        return rf_cli_report("bench", st);
    if (out_path)
        fprintf(stderr, "[bench --c] wrote %s\n", out_path);
    return 0;
#endif
}
