/* `rowfuse run MODEL.onnx --input X.npy --output Y.npy --cpu [--precision fp64|mixed]`:
 * runs a verified graph on the CPU reference interpreter. Inputs are matched to graph
 * inputs in order and must have exactly the graph input's shape; any float dtype is
 * accepted. Outputs: f64 .npy for fp64, f32 .npy for mixed. */
#include <stdio.h>
#include <string.h>

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
    if (t->dtype != RF_DTYPE_F16 && t->dtype != RF_DTYPE_F32 && t->dtype != RF_DTYPE_F64)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: dtype %s; model input '%s' takes float data (f16, f32 or f64)", path,
                      rf_dtype_name(t->dtype), v->name);
    return RF_OK;
}

int rf_cmd_run(int argc, char **argv) {
    const char *model = NULL, *inputs[RF_RUN_MAX_IO], *outputs[RF_RUN_MAX_IO];
    int n_in = 0, n_out = 0, cpu = 0;
    rf_precision_t precision = RF_PRECISION_FP64;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--input") && i + 1 < argc && n_in < RF_RUN_MAX_IO)
            inputs[n_in++] = argv[++i];
        else if (!strcmp(a, "--output") && i + 1 < argc && n_out < RF_RUN_MAX_IO)
            outputs[n_out++] = argv[++i];
        else if (!strcmp(a, "--cpu"))
            cpu = 1;
        else if (!strcmp(a, "--precision") && i + 1 < argc) {
            const char *p = argv[++i];
            if (!strcmp(p, "fp64"))
                precision = RF_PRECISION_FP64;
            else if (!strcmp(p, "mixed"))
                precision = RF_PRECISION_MIXED;
            else
                return rf_cli_report("run",
                                     RF_ERR(RF_CODE_INVALID_ARGUMENT,
                                            "--precision must be fp64 or mixed, not '%s'", p));
        } else if (a[0] != '-' && !model)
            model = a;
        else
            return rf_cli_report("run",
                                 RF_ERR(RF_CODE_INVALID_ARGUMENT, "unexpected argument '%s'", a));
    }
    if (!model || n_in == 0 || n_out == 0)
        return rf_cli_report("run", RF_ERR(RF_CODE_INVALID_ARGUMENT,
                                           "usage: rowfuse run MODEL.onnx --input X.npy "
                                           "--output Y.npy --cpu [--precision fp64|mixed]"));
    if (!cpu)
        return rf_cli_report(
            "run", RF_ERR(RF_CODE_UNSUPPORTED,
                          "run executes on the CPU reference only (pass --cpu); for the GPU, "
                          "use `rowfuse compile` then `rowfuse check`"));

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
