/* `rowfuse verify MODEL.onnx [--contract OUT.json] [--quiet]`: import, infer shapes, check
 * the op set and row ownership, print the row contract (and write it as JSON).
 * Exit 0 accept, 1 reject, 2 unusable input. `rowfuse verify --list-ops` prints the ONNX
 * ops rowfuse claims (the importer, the verifier and the CPU reference accept them), one a
 * line; the ops rowfuse/graph.h imports only to reject them as row-mixing are left out. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "load.h"

int rf_cmd_verify(int argc, char **argv) {
    const char *model = NULL, *contract_path = NULL;
    int quiet = 0;
    if (argc == 1 && !strcmp(argv[0], "--list-ops")) {
        for (int op = RF_OP_UNKNOWN + 1; op < RF_OP_CUMSUM; op++)
            printf("%s\n", rf_op_name((rf_op_t)op));
        return 0;
    }
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--contract") && i + 1 < argc)
            contract_path = argv[++i];
        else if (!strcmp(argv[i], "--quiet"))
            quiet = 1;
        else if (argv[i][0] != '-' && !model)
            model = argv[i];
        else
            return rf_cli_report(
                "verify", RF_ERR(RF_CODE_INVALID_ARGUMENT, "unexpected argument '%s'", argv[i]));
    }
    if (!model)
        return rf_cli_report("verify", RF_ERR(RF_CODE_INVALID_ARGUMENT, "usage: rowfuse %s",
                                              rf_cli_synopsis("verify")));
    rf_graph_t *g;
    rf_contract_t *c;
    rf_status_t st = rf_cli_load_verified(model, &g, &c);
    if (st)
        return rf_cli_report("verify", st);
    if (!quiet)
        st = rf_contract_print(c, stdout);
    if (!st && contract_path) {
        FILE *f = fopen(contract_path, "w");
        if (!f) {
            st = RF_ERR(RF_CODE_IO_ERROR, "cannot open '%s' for writing", contract_path);
        } else {
            st = rf_contract_write_json(c, f);
            if (fclose(f) != 0 && !st)
                st = RF_ERR(RF_CODE_IO_ERROR, "error writing '%s'", contract_path);
        }
    }
    rf_contract_destroy(c);
    rf_graph_destroy(g);
    if (st)
        return rf_cli_report("verify", st);
    printf("accepted: %s is row-owned\n", model);
    return 0;
}
