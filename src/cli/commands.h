/* The rowfuse CLI's subcommands. Each takes the arguments after its name and returns
 * the process exit status; each prints its own errors to stderr (only CLI code prints).
 * Exit status convention: 0 success/accepted, 1 rejected or check failed, 2 unusable
 * input or usage error. */
#ifndef RF_CLI_COMMANDS_H
#define RF_CLI_COMMANDS_H

#include <stdio.h>

#include "rowfuse/status.h"

int rf_cmd_verify(int argc, char **argv);
int rf_cmd_run(int argc, char **argv);
int rf_cmd_compile(int argc, char **argv);
int rf_cmd_inspect(int argc, char **argv);
int rf_cmd_check(int argc, char **argv);
int rf_cmd_bench(int argc, char **argv);
int rf_cmd_report(int argc, char **argv);
int rf_cmd_schedule(int argc, char **argv);
int rf_cmd_eval(int argc, char **argv);
int rf_cmd_lab(int argc, char **argv);
int rf_cmd_iree(int argc, char **argv);

/* Prints "rowfuse <cmd>: <code>: <message>" to stderr and frees the status. Returns the
 * exit status for it: 1 for a rejected graph (row violation, unsupported op, shape
 * error), 2 for anything else. */
int rf_cli_report(const char *cmd, rf_status_t status);
/* Same, with a fixed exit status for a non-OK status (e.g. 2 for bad data files, whose
 * UNSUPPORTED is unusable input rather than a rejected graph). */
int rf_cli_fail(const char *cmd, rf_status_t status, int exit_status);

/* The command's one-line synopsis from main.c's command table ("compile (MODEL.onnx |
 * ...) -o PKGDIR"), for usage errors; `cmd` itself when it is not a command. */
const char *rf_cli_synopsis(const char *cmd);

/* Prints rowfuse's version, the git revision and the CUDA and CuTe DSL versions it was
 * built with (version.c; the build passes them in). */
void rf_cli_print_version(FILE *f);

#endif
