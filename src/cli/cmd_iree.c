/* `rowfuse iree (MODEL.onnx | --mlp ROWSxCxH [--seed S]) ... -o DIR`: the block through the
 * MLIR schedule pass into an IREE module, the way `rowfuse compile` makes a package:
 *
 *   DIR/contract.mlir    the verified block's row contract (rf_mlp_contract_mlir_write)
 *   DIR/scheduled.mlir   after rowfuse-opt --rowfuse-schedule (the C planner's decision,
 *                        with its reason); not written for --schedule stock
 *   DIR/package/         with --kernels extern: the rowfuse package whose PTX the custom
 *                        dispatches run (rf_compile_package, same plan)
 *   DIR/<kernel>.iree.ptx  each kernel's PTX, entry adapted to IREE's CUDA ABI
 *   DIR/iree_input.mlir  after rowfuse-opt --rowfuse-to-iree: what iree-compile reads
 *   DIR/module.vmfb      iree-compile's module for --device llvm-cpu or cuda (sm_89 PTX; an
 *                        extern kernel's PTX is the package's sm_90a, JIT-compiled by the
 *                        driver); not with --function
 *
 * --function NAME emits the block as a private function NAME in DIR/iree_input.mlir (no
 * module.vmfb): the rowfuse region a larger model links and calls (python -m
 * rowfuse.iree.model builds that model; notes/mlir.md).
 *
 * --schedule auto|NAME runs --rowfuse-schedule with that mode; stock skips it, so IREE
 * forms the dispatches itself. --kernels codegen (the default for llvm-cpu) has IREE
 * generate each kernel of the schedule as one dispatch; extern (the default for cuda)
 * dispatches the package's kernels. Tools: rowfuse-opt from $RF_MLIR_BIN_DIR, beside rowfuse or
 * on PATH (`make mlir` builds it), iree-compile from $RF_IREE_COMPILE or PATH
 * (pip iree-base-compiler), the kernel generator as for `rowfuse compile`. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "base/tool.h"
#include "cli/compile_mlir.h"
#include "commands.h"
#include "load.h"
#include "paths.h"
#include "rowfuse/compile.h"
#include "rowfuse/mlir.h"

typedef struct iree_args {
    const char *model, *mlp, *schedule, *device, *kernels, *target, *cuda_target, *function, *out;
    int64_t seed;
    int64_t rows;
    int sms;
} iree_args_t;

/* An MLIR symbol rowfuse-opt's option string and the linker take as they are. */
static int valid_symbol(const char *s) {
    if (!s[0] || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

static rf_status_t parse(int argc, char **argv, iree_args_t *a) {
    memset(a, 0, sizeof *a);
    a->schedule = "auto";
    a->device = "llvm-cpu";
    a->target = "h200";
    a->cuda_target = "sm_89";
    a->seed = 1;
    for (int i = 0; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        rf_status_t bad = RF_OK;
        if (k[0] != '-' && !a->model) {
            a->model = k;
            continue;
        }
        if (!v)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s needs a value (rowfuse iree --help)", k);
        i++;
        if (!strcmp(k, "--mlp"))
            a->mlp = v;
        else if (!strcmp(k, "--seed"))
            bad = rf_cli_parse_int64(k, v, 0, INT64_MAX, &a->seed);
        else if (!strcmp(k, "--rows"))
            bad = rf_cli_parse_int64(k, v, 1, RF_MAX_DIM, &a->rows);
        else if (!strcmp(k, "--schedule"))
            a->schedule = v;
        else if (!strcmp(k, "--device"))
            a->device = v;
        else if (!strcmp(k, "--kernels"))
            a->kernels = v;
        else if (!strcmp(k, "--target"))
            a->target = v;
        else if (!strcmp(k, "--sms"))
            bad = rf_cli_parse_int(k, v, 1, 1024, &a->sms);
        else if (!strcmp(k, "--cuda-target"))
            a->cuda_target = v;
        else if (!strcmp(k, "--function"))
            a->function = v;
        else if (!strcmp(k, "-o") || !strcmp(k, "--output"))
            a->out = v;
        else
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "unknown option '%s' (rowfuse iree --help lists the options)", k);
        RF_RETURN_IF_ERROR_PLAIN(bad);
    }
    if (!!a->model == !!a->mlp || !a->out)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "usage: rowfuse %s", rf_cli_synopsis("iree"));
    if (strcmp(a->device, "llvm-cpu") && strcmp(a->device, "cuda"))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--device must be llvm-cpu or cuda, not '%s'",
                      a->device);
    if (!a->kernels)
        a->kernels = !strcmp(a->device, "cuda") ? "extern" : "codegen";
    if (strcmp(a->kernels, "extern") && strcmp(a->kernels, "codegen"))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--kernels must be extern or codegen, not '%s'",
                      a->kernels);
    if (!strcmp(a->kernels, "extern") && strcmp(a->device, "cuda"))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "--kernels extern dispatches the package's CUDA kernels: use --device "
                      "cuda, or --kernels codegen");
    if (a->function && !valid_symbol(a->function))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "--function wants a symbol name ([A-Za-z_][A-Za-z0-9_]*), not '%s'",
                      a->function);
    if (strcmp(a->schedule, "auto") && strcmp(a->schedule, "stock")) {
        rf_schedule_t s;
        RF_RETURN_IF_ERROR(rf_schedule_parse(a->schedule, &s),
                           "--schedule takes auto, stock or a schedule name");
    }
    return RF_OK;
}

/* The block's weights, hash and row count, from the model or the --mlp shape. */
static rf_status_t weights(iree_args_t *a, rf_mlp_weights_t *w, char hash[17], char *desc,
                           size_t desc_size) {
    return rf_cli_block_weights(a->model, a->mlp, (uint64_t)a->seed, &a->rows, w, hash, desc,
                                desc_size);
}

static rf_status_t make_dir(const char *path) {
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot create directory '%s': %s", path, strerror(errno));
    return RF_OK;
}

/* The rowfuse package whose kernels' PTX the custom dispatches run: the same plan
 * (rf_compile_plan, the same options) the schedule pass asks for. */
static rf_status_t build_package(const iree_args_t *a, const rf_mlp_weights_t *w, const char *hash,
                                 const char *desc, const char *dir) {
    rf_compile_options_t o;
    rf_compile_options_default(&o);
    o.model = desc;
    o.out_dir = dir;
    o.schedule = strcmp(a->schedule, "stock") ? a->schedule : "auto";
    o.rows = a->rows;
    o.target = a->target;
    o.sm_count = a->sms;
    o.python = rf_cli_python();
    return rf_compile_package(w, hash, &o, NULL);
}

static rf_status_t run(const iree_args_t *a, const rf_mlp_weights_t *w, const char *hash,
                       const char *desc) {
    char opt[4200], bindir[4096], contract[4200], scheduled[4200], input[4200], vmfb[4200];
    char pkg[4200], ptxdir[4300], sched_flag[512], iree_flag[9000], cuda_flag[128];
    int stock = !strcmp(a->schedule, "stock"), ext = !strcmp(a->kernels, "extern");
    RF_RETURN_IF_ERROR_PLAIN(
        rf_cli_find_tool_dir("RF_MLIR_BIN_DIR", "rowfuse-opt", bindir, sizeof bindir));
    snprintf(opt, sizeof opt, "%s/rowfuse-opt", bindir);
    const char *iree = getenv("RF_IREE_COMPILE");
    iree = iree && iree[0] ? iree : "iree-compile";
    snprintf(contract, sizeof contract, "%s/contract.mlir", a->out);
    snprintf(scheduled, sizeof scheduled, "%s/scheduled.mlir", a->out);
    snprintf(input, sizeof input, "%s/iree_input.mlir", a->out);
    snprintf(vmfb, sizeof vmfb, "%s/module.vmfb", a->out);
    snprintf(pkg, sizeof pkg, "%s/package", a->out);
    snprintf(ptxdir, sizeof ptxdir, "%s/kernels", pkg);

    RF_RETURN_IF_ERROR_PLAIN(make_dir(a->out));
    RF_RETURN_IF_ERROR_PLAIN(rf_cli_write_contract(w, a->rows, desc, contract));
    if (ext && !stock)
        RF_RETURN_IF_ERROR(build_package(a, w, hash, desc, pkg), "for --kernels extern");
    if (!stock) {
        snprintf(sched_flag, sizeof sched_flag, "--rowfuse-schedule=mode=%s target=%s sms=%d",
                 a->schedule, a->target, a->sms);
        char *argv[] = {opt, contract, sched_flag, "--rowfuse-explain", "-o", scheduled, NULL};
        RF_RETURN_IF_ERROR_PLAIN(rf_tool_run(argv, "the schedule pass"));
    }
    snprintf(iree_flag, sizeof iree_flag, "--rowfuse-to-iree=kernels=%s ptx-dir=%s dump-ptx=%s%s%s",
             a->kernels, ptxdir, a->out, a->function ? " function=" : "",
             a->function ? a->function : "");
    char *to_iree[] = {
        opt, stock ? contract : scheduled, "--allow-unregistered-dialect", iree_flag, "-o", input,
        NULL};
    RF_RETURN_IF_ERROR_PLAIN(rf_tool_run(to_iree, "rowfuse-opt --rowfuse-to-iree"));
    if (a->function) {
        printf("iree %s: residual MLP %lldx%lldx%lld, schedule %s, %s kernels -> private "
               "@%s in %s (%s; link it into a model: python -m rowfuse.iree.model)\n",
               desc, (long long)a->rows, (long long)w->channels, (long long)w->hidden, a->schedule,
               stock ? "IREE's" : a->kernels, a->function, input, a->device);
        return RF_OK;
    }
    snprintf(cuda_flag, sizeof cuda_flag, "--iree-cuda-target=%s", a->cuda_target);
    char *cpu[] = {(char *)iree,
                   input,
                   "--iree-hal-target-device=local",
                   "--iree-hal-local-target-device-backends=llvm-cpu",
                   "--iree-llvmcpu-target-cpu=host",
                   "-o",
                   vmfb,
                   NULL};
    char *cuda[] = {(char *)iree, input, "--iree-hal-target-device=cuda", cuda_flag, "-o",
                    vmfb,         NULL};
    RF_RETURN_IF_ERROR_PLAIN(
        rf_tool_run(!strcmp(a->device, "cuda") ? cuda : cpu, "iree-compile (set RF_IREE_COMPILE)"));
    printf("iree %s: residual MLP %lldx%lldx%lld, schedule %s, %s kernels -> %s (%s)\n", desc,
           (long long)a->rows, (long long)w->channels, (long long)w->hidden, a->schedule,
           stock ? "IREE's" : a->kernels, vmfb, a->device);
    return RF_OK;
}

int rf_cmd_iree(int argc, char **argv) {
    iree_args_t a;
    rf_mlp_weights_t w = {0};
    char hash[17], desc[256];
    rf_status_t st = parse(argc, argv, &a);
    if (!st)
        st = weights(&a, &w, hash, desc, sizeof desc);
    if (!st)
        st = run(&a, &w, hash, desc);
    rf_mlp_weights_free(rf_allocator_system(), &w);
    return rf_cli_report("iree", st);
}
