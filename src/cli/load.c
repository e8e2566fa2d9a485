/* Import + shape inference + verification, as every job after `verify` needs it; and the
 * residual MLP block that `compile` and `iree` work on. */
#include "load.h"

#include <inttypes.h>
#include <stdio.h>

#include "args.h"
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

rf_status_t rf_cli_block_weights(const char *model, const char *mlp, uint64_t seed, int64_t *rows,
                                 rf_mlp_weights_t *w, char hash[17], char *desc, size_t desc_size) {
    rf_allocator_t a = rf_allocator_system();
    if (mlp) {
        int64_t d[3];
        RF_RETURN_IF_ERROR_PLAIN(rf_cli_parse_shape("--mlp", mlp, d));
        if (!*rows)
            *rows = d[0];
        snprintf(desc, desc_size, "mlp:%" PRId64 "x%" PRId64 "x%" PRId64 " seed %" PRIu64, d[0],
                 d[1], d[2], seed);
        RF_RETURN_IF_ERROR_PLAIN(rf_mlp_weights_random(a, d[1], d[2], seed, w));
    } else {
        rf_graph_t *g;
        rf_contract_t *ct;
        rf_mlp_block_t block;
        snprintf(desc, desc_size, "%s", model);
        RF_RETURN_IF_ERROR_PLAIN(rf_cli_load_verified(model, &g, &ct));
        rf_status_t st = rf_mlp_match(g, &block);
        if (!st && !*rows)
            *rows = block.rows;
        if (!st)
            st = rf_mlp_weights_from_graph(a, g, &block, w);
        rf_contract_destroy(ct);
        rf_graph_destroy(g);
        RF_RETURN_IF_ERROR_PLAIN(st);
    }
    rf_mlp_weights_hash(w, hash);
    return RF_OK;
}
