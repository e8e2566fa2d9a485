/* `rowfuse run MODEL.onnx --input X.npy --output Y.npy [--precision fp64|mixed]`: runs a
 * verified graph on the CPU reference interpreter, its only mode (`--cpu`, once required,
 * is still accepted and changes nothing). Inputs are matched to graph
 * inputs in order and must have exactly the graph input's shape; a float input accepts any
 * float dtype, an integer or bool input its declared dtype. Outputs: f64 .npy for fp64, f32
 * .npy for mixed. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "load.h"
#include "rowfuse/ref.h"
#include "rowfuse/tensor.h"

#define RF_RUN_MAX_IO 16

static rf_status_t rf_run_check_input(const rf_graph_t *g, int i, const char *path,
                                      const rf_tensor_t *t) {
    const rf_value_t *v = rf_graph_value(g, rf_graph_input(g, i));
    char want[128], got[128];
    if (!rf_shape_equal(&v->shape, &t->shape))
        return RF_ERR(RF_CODE_SHAPE_ERROR, "%s: shape %s does not match model input '%s' %s", path,
                      rf_shape_format(&t->shape, got, sizeof got), v->name,
                      rf_shape_format(&v->shape, want, sizeof want));
    int data_float =
        t->dtype == RF_DTYPE_F16 || t->dtype == RF_DTYPE_F32 || t->dtype == RF_DTYPE_F64;
    int model_float = v->dtype == RF_DTYPE_F16 || v->dtype == RF_DTYPE_F32 ||
                      v->dtype == RF_DTYPE_F64 || v->dtype == RF_DTYPE_BF16;
    if (model_float && !data_float)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: dtype %s; model input '%s' takes float data (f16, f32 or f64)", path,
                      rf_dtype_name(t->dtype), v->name);
    /* An integer or bool input takes data of exactly its declared dtype. */
    if (!model_float && t->dtype != v->dtype)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s: dtype %s; model input '%s' is declared %s",
                      path, rf_dtype_name(t->dtype), v->name, rf_dtype_name(v->dtype));
    return RF_OK;
}

int rf_cmd_run(int argc, char **argv) {
    const char *model = NULL, *inputs[RF_RUN_MAX_IO], *outputs[RF_RUN_MAX_IO];
    static const char *const precisions[] = {"fp64", "mixed", NULL};
    int n_in = 0, n_out = 0, p = 0;
    rf_precision_t precision = RF_PRECISION_FP64;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--input") && i + 1 < argc && n_in < RF_RUN_MAX_IO)
            inputs[n_in++] = argv[++i];
        else if (!strcmp(a, "--output") && i + 1 < argc && n_out < RF_RUN_MAX_IO)
            outputs[n_out++] = argv[++i];
        else if (!strcmp(a, "--cpu"))
            continue; /* the only mode */
        else if (!strcmp(a, "--precision") && i + 1 < argc) {
            rf_status_t st = rf_cli_parse_choice(a, argv[++i], precisions, &p);
            if (st)
                return rf_cli_report("run", st);
            precision = p ? RF_PRECISION_MIXED : RF_PRECISION_FP64;
        } else if (a[0] != '-' && !model)
            model = a;
        else
            return rf_cli_report("run",
                                 RF_ERR(RF_CODE_INVALID_ARGUMENT, "unexpected argument '%s'", a));
    }
    if (!model || n_in == 0 || n_out == 0)
        return rf_cli_report(
            "run", RF_ERR(RF_CODE_INVALID_ARGUMENT, "usage: rowfuse %s", rf_cli_synopsis("run")));

    rf_allocator_t a = rf_allocator_system();
    rf_graph_t *g = NULL;
    rf_contract_t *c = NULL;
    rf_tensor_t in[RF_RUN_MAX_IO], out[RF_RUN_MAX_IO];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    rf_status_t st = rf_cli_load_verified(model, &g, &c);
    int model_error = st != RF_OK; /* a rejected model exits 1; bad data files exit 2 */
    if (!st && n_in != rf_graph_input_count(g))
        st = RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s has %d inputs, %d --input files given", model,
                    rf_graph_input_count(g), n_in);
    if (!st && n_out != rf_graph_output_count(g))
        st = RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s has %d outputs, %d --output files given", model,
                    rf_graph_output_count(g), n_out);
    for (int i = 0; !st && i < n_in; i++) {
        st = rf_npy_read(a, inputs[i], &in[i]);
        if (!st)
            st = rf_run_check_input(g, i, inputs[i], &in[i]);
    }
    if (!st)
        st = rf_ref_run(a, g, precision, in, n_in, out, n_out);
    for (int i = 0; !st && i < n_out; i++)
        st = rf_npy_write(outputs[i], &out[i]);
    for (int i = 0; i < RF_RUN_MAX_IO; i++) {
        rf_tensor_free(a, &in[i]);
        rf_tensor_free(a, &out[i]);
    }
    rf_contract_destroy(c);
    rf_graph_destroy(g);
    return model_error ? rf_cli_report("run", st) : rf_cli_fail("run", st, 2);
}
