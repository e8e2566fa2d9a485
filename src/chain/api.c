/* rf_chain_onnx_reference (chain.h): model file -> verified graph -> chain -> reference, in
 * one call that librowfuse.so exports for tools and tests. */
#include <string.h>

#include "chain/chain.h"
#include "rowfuse/onnx.h"

rf_status_t rf_chain_onnx_reference(const char *path, const uint16_t *x, int64_t rows,
                                    int precision, double *out_y, double *out_bound, char *desc,
                                    size_t desc_size, int64_t widths[3]) {
    rf_allocator_t a = rf_allocator_system();
    rf_graph_t *g = NULL;
    rf_contract_t *ct = NULL;
    rf_chain_t *c = NULL;
    if (desc && desc_size)
        desc[0] = '\0';
    if (!path)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_chain_onnx_reference: no path");
    if (precision != 0 && precision != 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_chain_onnx_reference: precision %d", precision);
    rf_status_t st = rf_onnx_import_file(a, path, &g);
    if (!st)
        st = rf_status_annotate(rf_graph_infer_shapes(g), "%s", path);
    if (!st)
        st = rf_status_annotate(rf_verify(g, &ct), "%s", path);
    if (!st)
        st = rf_status_annotate(rf_chain_match(a, g, ct, &c), "%s", path);
    if (!st && desc && desc_size)
        rf_chain_describe(c, desc, desc_size);
    if (!st && widths) {
        widths[0] = rf_chain_in_width(c);
        widths[1] = rf_chain_out_width(c);
        widths[2] = c->rows;
    }
    if (!st && rows > 0)
        st = rf_chain_reference(c, x, rows, precision ? RF_CHAIN_MIXED : RF_CHAIN_FP64, out_y,
                                out_bound);
    rf_chain_destroy(c);
    rf_contract_destroy(ct);
    rf_graph_destroy(g);
    return st;
}
