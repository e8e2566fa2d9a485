/* Import + shape inference + verification, as every job after `verify` needs it. */
#include "load.h"

#include "rowfuse/onnx.h"

rf_status_t rf_cli_load_verified(const char *path, rf_graph_t **out_graph,
                                 rf_contract_t **out_contract) {
    rf_graph_t *g = NULL;
    rf_contract_t *c = NULL;
    *out_graph = NULL;
    *out_contract = NULL;
    rf_status_t st = rf_onnx_import_file(rf_allocator_system(), path, &g);
    if (!st)
        st = rf_status_annotate(rf_graph_infer_shapes(g), "%s", path);
    if (!st)
        st = rf_status_annotate(rf_verify(g, &c), "%s", path);
    if (st) {
        rf_contract_destroy(c);
        rf_graph_destroy(g);
        return st;
    }
    *out_graph = g;
    *out_contract = c;
    return RF_OK;
}
