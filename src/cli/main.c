/* rowfuse: the compiler driver. Runs one stage per subcommand (verify, run, compile,
 * inspect, check, bench), the way a compiler driver runs its tools; each stage reads the
 * previous stage's file and writes its own. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

typedef struct rf_cli_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *usage;
} rf_cli_command_t;

static const rf_cli_command_t rf_commands[] = {
    {"verify", rf_cmd_verify, "verify MODEL.onnx [--contract OUT.json] [--quiet]"},
    {"run", rf_cmd_run,
     "run MODEL.onnx --input X.npy [--input ...] --output Y.npy [--output ...] --cpu "
     "[--precision fp64|mixed]"},
    {"compile", rf_cmd_compile,
     "compile (MODEL.onnx | --mlp ROWSxCxH [--seed S]) [--rows N] [--schedule auto|NAME] "
     "[--tile-rows auto|16|32|64] [--target h200] [--sms N] -o PKGDIR"},
    {"schedule", rf_cmd_schedule, "schedule --rows M --channels C --hidden H"},
    {"inspect", rf_cmd_inspect, "inspect PKGDIR [ARTIFACT] [--sass]"},
    {"check", rf_cmd_check, "check PKGDIR... (needs a GPU)"},
    {"bench", rf_cmd_bench, "bench PKGDIR --c (needs a GPU)"},
    {"report", rf_cmd_report, "report RUN.json... -o DIR [--no-plot]"},
    {"eval", rf_cmd_eval, "eval --model M.onnx --data D.csv|D.npz --features COLS --label COL ..."},
    {"lab", rf_cmd_lab, "lab MODEL -o DIR [--targets llvm-cpu,cuda] [--no-check]"},
    {"iree", rf_cmd_iree,
     "iree (MODEL.onnx | --mlp ROWSxCxH) [--schedule auto|NAME|stock] [--device llvm-cpu|cuda] "
     "[--kernels extern|codegen] -o DIR"},
};

static void rf_usage(FILE *f) {
    fprintf(f, "usage: rowfuse COMMAND ...\n");
    for (size_t i = 0; i < sizeof rf_commands / sizeof rf_commands[0]; i++)
        fprintf(f, "  rowfuse %s\n", rf_commands[i].usage);
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
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        rf_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof rf_commands / sizeof rf_commands[0]; i++)
        if (!strcmp(argv[1], rf_commands[i].name))
            return rf_commands[i].fn(argc - 2, argv + 2);
    fprintf(stderr, "rowfuse: unknown command '%s'\n", argv[1]);
    rf_usage(stderr);
    return 2;
}
