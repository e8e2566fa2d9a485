/* libFuzzer target for the ONNX importer: any byte string must import into a graph (which
 * is then toposorted again and walked) or fail with a status that has a message; never a
 * crash, leak, sanitizer report or abort. Build with -DRF_FUZZ=ON (clang) and run e.g.
 *   build-fuzz/fuzz_onnx -max_total_time=60 -max_len=65536 corpus/ tests/fuzz/seeds/
 * Seeds: python tests/fuzz/make_seeds.py tests/fuzz/seeds (small valid models). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rowfuse/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rf_graph_t *g = NULL;
    rf_status_t st = rf_onnx_import_buffer(rf_allocator_system(), data, size, &g);
    if (st) {
        if (g != NULL || rf_status_message(st)[0] == '\0')
            __builtin_trap(); /* errors must leave no graph and must say something */
        rf_status_free(st);
        return 0;
    }
    /* Touch everything the graph lends, so ASan checks every pointer it holds. */
    size_t sum = 0;
    for (int i = 0; i < rf_graph_value_count(g); i++) {
        const rf_value_t *v = rf_graph_value(g, i);
        sum += strlen(v->name);
        if (v->is_const && v->nbytes)
            sum += ((const unsigned char *)v->data)[v->nbytes - 1];
    }
    for (int k = 0; k < rf_graph_node_count(g); k++) {
        const rf_node_t *n = rf_graph_node(g, k);
        char buf[128];
        sum += strlen(rf_node_describe(g, k, buf, sizeof buf)) + strlen(n->domain);
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0)
                sum += (size_t)rf_graph_value(g, n->inputs[i])->dtype;
        for (int i = 0; i < n->n_attrs; i++) {
            const rf_attr_t *a = &n->attrs[i];
            sum += strlen(a->name) + (a->s ? strlen(a->s) : 0);
            if (a->type == RF_ATTR_INTS && a->n)
                sum += (size_t)a->ints[a->n - 1];
            if (a->type == RF_ATTR_FLOATS && a->n)
                sum += a->floats[a->n - 1] > 0;
            if (a->type == RF_ATTR_TENSOR && !rf_graph_value(g, a->tensor)->is_const)
                __builtin_trap();
        }
    }
    rf_status_t again = rf_graph_toposort(g);
    if (again) /* an imported graph is already sorted */
        __builtin_trap();
    rf_graph_destroy(g);
    return sum == 0xdeadbeef; /* keep `sum` alive */
}
