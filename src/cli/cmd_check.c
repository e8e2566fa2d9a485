/* `rowfuse check PKGDIR... [--shapes LIST] [--variants LIST] [--seed N] [--json OUT]`:
 * runs the GPU check job (src/harness/check.h) and prints one table row per variant and
 * shape. Exit status 0 when every row passed, 1 when a check failed, 2 when the job could
 * not run (no GPU, bad arguments). Without the CUDA runtime built in, says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"

#ifdef RF_HAVE_CUDA
#include "harness/check.h"
#include "harness/check_chain.h"

static void print_table(const rf_device_info_t *d, const rf_check_result_t *res, int n) {
    int passed = 0;
    printf("device: %s (sm_%d%d, %d SMs, driver %d)\n", d->name, d->cc_major, d->cc_minor,
           d->sm_count, d->driver_version);
    printf("%-28s %-16s %-16s %6s %9s %9s %7s %8s  %s\n", "package", "variant", "shape", "kerns",
           "max_abs", "rel_l2", "replay", "result", "detail");
    for (int i = 0; i < n; i++) {
        const rf_check_result_t *r = &res[i];
        char shape[48];
        const char *pkg = r->pkg;
        size_t len = strlen(pkg);
        if (len > 28)
            pkg += len - 28;
        snprintf(shape, sizeof(shape), "%lldx%lldx%lld", (long long)r->rows, (long long)r->channels,
                 (long long)r->hidden);
        passed += r->passed;
        if (r->error[0]) {
            printf("%-28s %-16s %-16s %6s %9s %9s %7s %8s  %s\n", pkg[0] ? pkg : "-", r->variant,
                   shape, "-", "-", "-", "-", "ERROR", r->error);
            continue;
        }
        printf("%-28s %-16s %-16s %6d %9.2e %9.2e %6.1fu %8s  steps %.3f allow %.2f",
               pkg[0] ? pkg : "-", r->variant, shape, r->kernel_nodes, r->max_abs, r->rel_l2,
               r->replay_us, r->passed ? "pass" : "FAIL", r->steps, r->max_ratio);
        if (!r->passed)
            printf("  nonfinite=%lld over_allowance=%lld identical=%d worst[%lld]: got %g want %g",
                   (long long)r->nonfinite, (long long)r->out_of_tol, r->identical,
                   (long long)r->worst_index, r->worst_got, r->worst_ref);
        printf("\n");
    }
    printf("check: %d of %d passed\n", passed, n);
}

/* Chain packages (a plan.json with a "chain" object): one kernel, checked against the
 * chain's reference and per-element bound (src/harness/check_chain.h). */
static void print_chain_table(const rf_check_chain_result_t *res, int n) {
    int passed = 0;
    printf("%-28s %-20s %-18s %6s %9s %9s %8s  %s\n", "chain package", "kernel", "shape", "kerns",
           "max_abs", "/bound", "result", "detail");
    for (int i = 0; i < n; i++) {
        const rf_check_chain_result_t *r = &res[i];
        char shape[64];
        const char *pkg = r->pkg;
        size_t len = strlen(pkg);
        if (len > 28)
            pkg += len - 28;
        snprintf(shape, sizeof(shape), "%lldx%lld->%lld", (long long)r->rows,
                 (long long)r->in_width, (long long)r->out_width);
        passed += r->passed;
        if (r->error[0]) {
            printf("%-28s %-20s %-18s %6s %9s %9s %8s  %s\n", pkg, r->kernel[0] ? r->kernel : "-",
                   r->rows ? shape : "-", "-", "-", "-", "ERROR", r->error);
            continue;
        }
        printf("%-28s %-20s %-18s %6d %9.2e %9.3f %8s  seed %llu", pkg, r->kernel, shape,
               r->kernel_nodes, r->max_abs, r->max_ratio, r->passed ? "pass" : "FAIL",
               (unsigned long long)r->seed);
        if (!r->passed)
            printf("  nonfinite=%lld over_bound=%lld identical=%d worst[%lld]: got %g want %g "
                   "bound %g",
                   (long long)r->nonfinite, (long long)r->over_bound, r->identical,
                   (long long)r->worst_index, r->worst_got, r->worst_ref, r->worst_bound);
        printf("\n");
    }
    printf("check: %d of %d chain rows passed\n", passed, n);
}

int rf_cmd_check(int argc, char **argv) {
    rf_allocator_t a = rf_allocator_system();
    rf_check_options_t o;
    rf_device_info_t dev;
    rf_check_result_t *res = NULL;
    rf_check_shape_t *shapes = NULL;
    const char **dirs = NULL, **chain_dirs = NULL;
    const char *json = NULL;
    rf_check_chain_result_t *cres = NULL;
    rf_status_t st = RF_OK;
    int n = 0, rc = 0, passed = 0, n_chain = 0, n_mlp = 0, n_cres = 0;
    rf_check_options_default(&o);
    dirs = calloc((size_t)argc + 1, sizeof(*dirs));
    chain_dirs = calloc((size_t)argc + 1, sizeof(*chain_dirs));
    if (!dirs || !chain_dirs) {
        free(dirs);
        free(chain_dirs);
        return rf_cli_report("check", RF_ERR(RF_CODE_OUT_OF_MEMORY, "argument list"));
    }
    for (int i = 0; i < argc && !st; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(arg, "--shapes") || !strcmp(arg, "--variants") || !strcmp(arg, "--seed") ||
            !strcmp(arg, "--json") || !strcmp(arg, "--device") || !strcmp(arg, "--replays")) {
            if (!val) {
                st = RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s needs a value", arg);
                break;
            }
            i++;
            if (!strcmp(arg, "--shapes")) {
                rf_free(a, shapes);
                shapes = NULL;
                st = rf_check_parse_shapes(a, val, &shapes, &o.n_shapes);
                o.shapes = shapes;
            } else if (!strcmp(arg, "--variants")) {
                o.variants = val;
            } else if (!strcmp(arg, "--seed")) {
                int64_t seed = 0;
                st = rf_cli_parse_int64(arg, val, 0, INT64_MAX, &seed);
                o.seed = (uint64_t)seed;
            } else if (!strcmp(arg, "--device")) {
                st = rf_cli_parse_int(arg, val, 0, 1023, &o.device);
            } else if (!strcmp(arg, "--replays")) {
                st = rf_cli_parse_int(arg, val, 0, 100000, &o.replays);
            } else {
                json = val;
            }
        } else if (arg[0] == '-') {
            st = RF_ERR(RF_CODE_INVALID_ARGUMENT, "unknown option %s (see rowfuse check --help)",
                        arg);
        } else {
            dirs[o.n_pkgs++] = arg;
        }
    }
    /* chain packages go to the chain check, the others (and no package at all) to the MLP
     * check */
    for (int i = 0; i < o.n_pkgs; i++)
        if (rf_chain_pkg_probe(dirs[i]))
            chain_dirs[n_chain++] = dirs[i];
        else
            dirs[n_mlp++] = dirs[i];
    o.pkg_dirs = dirs;
    o.n_pkgs = n_mlp;
    if (!st && n_chain && n_mlp && json)
        st = RF_ERR(RF_CODE_UNSUPPORTED,
                    "--json takes MLP packages or chain packages, not both in one call (%s is a "
                    "chain package, %s is not): check them in two calls",
                    chain_dirs[0], dirs[0]);
    if (!st && (n_mlp || !n_chain))
        st = rf_check_run(a, &o, &dev, &res, &n);
    if (!st && (n_mlp || !n_chain)) {
        print_table(&dev, res, n);
        for (int i = 0; i < n; i++)
            passed += res[i].passed;
        if (json)
            st = rf_check_write_json(json, &o, &dev, res, n);
    }
    if (!st && n_chain) {
        rf_check_options_t oc = o;
        oc.pkg_dirs = chain_dirs;
        oc.n_pkgs = n_chain;
        st = rf_check_chain_run(a, &oc, &dev, &cres, &n_cres);
        if (!st) {
            if (!n_mlp)
                printf("device: %s (sm_%d%d, %d SMs, driver %d)\n", dev.name, dev.cc_major,
                       dev.cc_minor, dev.sm_count, dev.driver_version);
            print_chain_table(cres, n_cres);
            for (int i = 0; i < n_cres; i++)
                passed += cres[i].passed;
            if (json)
                st = rf_check_chain_write_json(json, &oc, &dev, cres, n_cres);
        }
    }
    if (!st)
        rc = passed == n + n_cres && n + n_cres > 0 ? 0 : 1;
    rf_free(a, res);
    rf_free(a, cres);
    free(chain_dirs);
    rf_free(a, shapes);
    free(dirs);
    if (st)
        return rf_cli_report("check", st);
    return rc;
}

#else

int rf_cmd_check(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return rf_cli_report("check", RF_ERR(RF_CODE_NO_DEVICE,
                                         "this rowfuse was built without the CUDA runtime (no "
                                         "CUDA toolkit at build time); `rowfuse check` needs it"));
}

#endif
