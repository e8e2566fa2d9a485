/* rowfuse: the compiler driver. Runs one stage per subcommand, the way a compiler driver
 * runs its tools; each stage reads the previous stage's file and writes its own. The
 * table below is the one list of subcommands: `rowfuse --help` lists it, `rowfuse CMD
 * --help` prints the entry's usage, and the commands' usage errors quote its synopsis. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "rowfuse/plan.h"

typedef struct rf_cli_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *synopsis; /* one line, after "rowfuse " */
    const char *help;     /* what it does and its options, printed by --help */
    int schedules;        /* --help also lists the schedule names */
} rf_cli_command_t;

static const rf_cli_command_t rf_commands[] = {
    {"verify", rf_cmd_verify, "verify MODEL.onnx [--contract OUT.json] [--quiet]",
     "Imports an ONNX model, infers its shapes, checks the op set and row ownership, and\n"
     "prints the row contract.\n"
     "  --contract OUT.json  also write the contract as JSON\n"
     "  --quiet              print only the verdict\n"
     "  --list-ops           print the ONNX ops rowfuse claims, one a line, and exit\n"
     "Exit status: 0 accepted, 1 rejected, 2 unusable input.\n",
     0},
    {"run", rf_cmd_run,
     "run MODEL.onnx --input X.npy [--input ...] --output Y.npy [--output ...] "
     "[--precision fp64|mixed]",
     "Runs a verified model on the CPU reference interpreter (its only mode; for the GPU,\n"
     "`rowfuse compile` then `rowfuse check`). Inputs match the model's inputs in order and\n"
     "must have their exact shapes; any float dtype is accepted.\n"
     "  --precision fp64   every op in fp64; the outputs are f64 .npy (default)\n"
     "  --precision mixed  the compiled kernels' rounding (fp16 operands, fp32 sums); f32 .npy\n",
     0},
    {"compile", rf_cmd_compile,
     "compile (MODEL.onnx | --mlp ROWSxCHANNELSxHIDDEN [--seed S]) [OPTIONS] -o PKGDIR",
     "Verifies the model, matches the residual MLP or a chain of row-local stages, plans it\n"
     "and writes a GPU package: plan, weights, kernels.\n"
     "  --mlp RxCxH        a synthetic block of that shape with seeded random weights\n"
     "  --seed S           the synthetic weights' seed (default 1)\n"
     "  --rows N           rows per call (default: the model's)\n"
     "  --schedule auto|NAME    the schedule (default auto: the cost model picks)\n"
     "  --tile-rows auto|16|32|64\n"
     "  --target h200|h100-sxm|h100-pcie   the GPU planned for (default h200)\n"
     "  --sms N            plan for N SMs\n"
     "  --x-prefetch auto|on|off   --y-vec2 auto|on|off   --hidden-split auto|on|off\n"
     "  --grid auto|smem|regs|balanced   --ring   --min-blocks N   --max-grid N\n"
     "  --stream-tma auto|on|off   the weight-streaming kernel's weight copies: TMA by a\n"
     "                     producer warp (on; auto above 50 MB of weights) or cp.async\n"
     "                     by every thread (off; auto below)\n"
     "  --stream-wide auto|on|off   its forms for wide blocks: X streamed beside the first\n"
     "                     weights above 16-32 rows, 96-column slices (auto: off, not\n"
     "                     yet checked on a GPU)\n"
     "  --stream-x-first auto|on|off   the TMA ring's producer waits for X after its\n"
     "                     first tiles (auto: off, not yet checked on a GPU)\n"
     "  --weight-buffers N  the whole chain's kernel, where its weights stream: a ring of\n"
     "                     N weight tiles (1-16, fewer where shared memory ends), N - 1\n"
     "                     in flight (auto: 8 where every row tile has a block, else 2)\n"
     "  --warp-rows auto|on|off   the whole chain's kernel gives each warp its own row\n"
     "                     tiles, the hidden values in registers (a chain of linears with\n"
     "                     activations, widths up to 128; auto: where the rows give every\n"
     "                     SM a warp tile)\n"
     "  --force            write into a non-empty folder that is not a rowfuse package\n"
     "  -o, --output PKGDIR   the package folder (an existing package there is replaced)\n"
     "rowfuse compile (MODEL.onnx | --mlp RxCxH) --target iree [--device llvm-cpu|cuda]\n"
     "    [--schedule auto|NAME|stock] -o DIR   writes an IREE module instead (see rowfuse iree)\n",
     1},
    {"schedule", rf_cmd_schedule, "schedule --rows M --channels C --hidden H",
     "Prints what `compile --schedule auto` picks for a residual MLP of that shape, and why,\n"
     "as one line: schedule<TAB>reason.\n",
     0},
    {"inspect", rf_cmd_inspect, "inspect PKGDIR [ARTIFACT] [--sass]",
     "Lists a package's files (or a `rowfuse lab` folder's index), or prints one artifact.\n"
     "  --sass   prints the kernels' SASS: the package's .sass files; where the package has\n"
     "           none, disassembles its .cubin files with cuobjdump (CUDA toolkit on PATH)\n",
     0},
    {"check", rf_cmd_check,
     "check [PKGDIR...] [--shapes LIST] [--variants LIST] [--seed N] [--replays N] "
     "[--device N] [--json OUT.json]",
     "Runs packages on the GPU against the CPU reference (needs a GPU).\n"
     "  --shapes    comma list of ROWS (every package) or ROWSxCxH (packages of that C and H;\n"
     "              else the cuBLASLt baseline alone); default: the plan's rows\n"
     "  --variants  comma list of schedule names; default: all the package has, and the\n"
     "              vendor baseline\n"
     "  --seed N    the inputs' seed   --device N   the CUDA device\n"
     "  --replays N N more replays must reproduce Y bit for bit\n"
     "  --json OUT  also write the results as JSON\n"
     "Pass: after CUDA Graph replays into Y poisoned with NaN and with a finite sentinel,\n"
     "every element within its derived allowance of the CPU reference in mixed precision.\n"
     "Exit status: 0 all passed, 1 a check failed, 2 the job could not run.\n",
     1},
    {"bench", rf_cmd_bench,
     "bench PKGDIR --c [--rows N] [--seed S] [--rounds R] [--obs K] [--tol T] "
     "[--control-obs K] [--no-span] [--span-attribution correlation|order] [--no-ceilings] "
     "[--cold-l2] [--variants A,B] [--git-rev REV] [-o OUT.json]",
     "Benchmarks a package from the C host (needs a GPU): the empty floor, the package's\n"
     "schedules and cuBLASLt, timed as CUDA Graph replays (docs/benchmarking.md). Progress\n"
     "goes to stderr, the JSON to -o (default stdout). The Python peers are\n"
     "`python -m rowfuse.bench`; `rowfuse report` merges both.\n"
     "  --variants A,B     time only these schedules (and the floor)\n"
     "  --control-obs K    observations of the control round without CUPTI (0: none)\n"
     "  --no-span          no CUPTI span at all   --no-ceilings   skip the copy/GEMM ceilings\n"
     "  --cold-l2          write 256 MiB before every observation (outside it): a cold L2\n"
     "A chain package is timed against the floor, with the rate its weights stream at.\n",
     1},
    {"report", rf_cmd_report, "report RUN.json... -o DIR [--no-plot]",
     "Merges benchmark runs (`rowfuse bench --c`, `python -m rowfuse.bench`) into a report:\n"
     "JSON, markdown tables and a plot (matplotlib).\n"
     "  --no-plot   skip the plot\n"
     "Exit status: 2 when a file is not a benchmark run.\n",
     0},
    {"eval", rf_cmd_eval,
     "eval --model MODEL.onnx --data DATA.csv|DATA.npz --features COLS --label COL [OPTIONS] "
     "-o OUTDIR",
     "Evaluates a model's quality as compiled against its fp64 reference on a data set,\n"
     "overall and per slice; writes OUTDIR/eval.json, eval.md, the outputs and a plot.\n"
     "  --features COLS   comma list of feature columns (spaces after commas are fine);\n"
     "                    ranges f0..f63 and globs 'f*' (CSV header names) expand in order\n"
     "  --label COL       the label column   --slice COL   a slice column (repeatable)\n"
     "  --cross           also every pair of slice columns\n"
     "  --cpu-mixed       (b) is the CPU in the kernels' mixed precision (default)\n"
     "  --gpu --package PKGDIR   (b) is the compiled package on the GPU\n"
     "  --task auto|classify|regress   --min-count N   --alpha A   --no-plot\n"
     "Exit status: 0 the report was written, 1 the model is rejected, 2 bad data or arguments.\n",
     0},
    {"lab", rf_cmd_lab,
     "lab MODEL -o DIR [--targets llvm-cpu,cuda] [--cuda-target SM] [--no-check]",
     "The stock-compiler lab: a model through torch.export, iree-turbine and iree-compile,\n"
     "every stage kept and indexed in DIR (`rowfuse inspect DIR` lists it); the llvm-cpu\n"
     "module is checked against PyTorch unless --no-check.\n"
     "Exit status: 0 ok, 1 the CPU module does not match PyTorch, 2 a failed stage.\n",
     0},
    {"iree", rf_cmd_iree,
     "iree (MODEL.onnx | --mlp ROWSxCHANNELSxHIDDEN [--seed S]) [--rows N] "
     "[--schedule auto|NAME|stock] [--device llvm-cpu|cuda] [--kernels extern|codegen] "
     "[--target h200|h100-sxm|h100-pcie] [--sms N] [--cuda-target sm_89] [--function NAME] -o DIR",
     "The block through the MLIR schedule pass into an IREE module: DIR/contract.mlir,\n"
     "scheduled.mlir, iree_input.mlir and module.vmfb.\n"
     "  --schedule stock   IREE forms the dispatches itself\n"
     "  --kernels extern   dispatch the package's CUDA kernels (default for cuda);\n"
     "  --kernels codegen  IREE generates each kernel (default for llvm-cpu)\n"
     "  --function NAME    emit the block as a private function for a larger model\n",
     1},
};

#define RF_COMMAND_COUNT (sizeof rf_commands / sizeof rf_commands[0])

static const rf_cli_command_t *rf_cli_command_find(const char *name) {
    for (size_t i = 0; i < RF_COMMAND_COUNT; i++)
        if (!strcmp(name, rf_commands[i].name))
            return &rf_commands[i];
    return NULL;
}

const char *rf_cli_synopsis(const char *cmd) {
    const rf_cli_command_t *c = rf_cli_command_find(cmd);
    return c ? c->synopsis : cmd;
}

static void rf_usage(FILE *f) {
    fprintf(f, "usage: rowfuse COMMAND [ARGS]   (rowfuse COMMAND --help for its options)\n"
               "       rowfuse --version\n"
               "commands:\n");
    for (size_t i = 0; i < RF_COMMAND_COUNT; i++)
        fprintf(f, "  rowfuse %s\n", rf_commands[i].synopsis);
}

static void rf_command_help(const rf_cli_command_t *c) {
    printf("usage: rowfuse %s\n\n%s", c->synopsis, c->help);
    if (c->schedules) {
        printf("schedule names:");
        for (int s = 0; s < RF_SCHEDULE_COUNT; s++)
            printf("%s %s", s ? "," : "", rf_schedule_name((rf_schedule_t)s));
        printf("\n");
        printf("a chain's schedules (and the residual MLP's when asked for): chain, "
               "chain-stream, conventional-wgmma (one Hopper GEMM per linear); a chain's "
               "conventional: one kernel per linear\n");
    }
}

/* Edit distance with adjacent transpositions (optimal string alignment), for short names. */
static size_t rf_edit_distance(const char *a, const char *b) {
    enum { N = 32 };
    size_t n = strlen(a), m = strlen(b), d[N + 1][N + 1];
    if (n > N || m > N)
        return (size_t)-1;
    for (size_t i = 0; i <= n; i++)
        for (size_t j = 0; j <= m; j++) {
            if (!i || !j) {
                d[i][j] = i + j;
                continue;
            }
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

/* The command a mistyped name most likely meant: within two edits (fewer than the name's
 * length), else the one command it is a prefix of; NULL when none is close. */
static const char *rf_cli_suggest(const char *typed) {
    const char *best = NULL, *prefix_of = NULL;
    size_t best_d = 3, len = strlen(typed);
    int prefixes = 0;
    for (size_t i = 0; i < RF_COMMAND_COUNT; i++) {
        const char *name = rf_commands[i].name;
        size_t d = rf_edit_distance(typed, name);
        if (d < best_d && d < len) {
            best_d = d;
            best = name;
        }
        if (len >= 2 && !strncmp(name, typed, len)) {
            prefix_of = name;
            prefixes++;
        }
    }
    return best ? best : prefixes == 1 ? prefix_of : NULL;
}

/* -h or --help among a command's arguments (before a "--"). */
static int rf_wants_help(int argc, char **argv) {
    for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return 1;
    return 0;
}

int rf_cli_report(const char *cmd, rf_status_t status) {
    if (status == RF_OK)
        return 0;
    rf_code_t code = rf_status_code(status);
    fprintf(stderr, "rowfuse %s: %s: %s\n", cmd, rf_code_name(code), rf_status_message(status));
    rf_status_free(status);
    return (code == RF_CODE_ROW_VIOLATION || code == RF_CODE_UNSUPPORTED ||
            code == RF_CODE_SHAPE_ERROR || code == RF_CODE_MISMATCH)
               ? 1
               : 2;
}

int rf_cli_fail(const char *cmd, rf_status_t status, int exit_status) {
    if (status == RF_OK)
        return 0;
    fprintf(stderr, "rowfuse %s: %s: %s\n", cmd, rf_code_name(rf_status_code(status)),
            rf_status_message(status));
    rf_status_free(status);
    return exit_status;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        rf_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        const rf_cli_command_t *c = argc > 2 ? rf_cli_command_find(argv[2]) : NULL;
        if (c)
            rf_command_help(c);
        else
            rf_usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        rf_cli_print_version(stdout);
        return 0;
    }
    const rf_cli_command_t *c = rf_cli_command_find(cmd);
    if (c) {
        if (rf_wants_help(argc - 2, argv + 2)) {
            rf_command_help(c);
            return 0;
        }
        return c->fn(argc - 2, argv + 2);
    }
    const char *guess = cmd[0] == '-' ? NULL : rf_cli_suggest(cmd);
    fprintf(stderr, "rowfuse: unknown %s '%s'%s%s%s (rowfuse --help lists the commands)\n",
            cmd[0] == '-' ? "option" : "command", cmd, guess ? "; did you mean '" : "",
            guess ? guess : "", guess ? "'?" : "");
    return 2;
}
