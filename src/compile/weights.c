/* The block's constants in the kernels' layout (rowfuse/compile.h): taken from a matched
 * graph or drawn by the one test-data generator, and hashed for plan.json. */
#include <string.h>

#include "rowfuse/compile.h"
#include "rowfuse/mlp.h"

void rf_mlp_weights_free(rf_allocator_t a, rf_mlp_weights_t *w) {
    rf_free(a, w->w1);
    rf_free(a, w->w2);
    rf_free(a, w->b1);
    rf_free(a, w->b2);
    memset(w, 0, sizeof(*w));
}

static rf_status_t alloc_all(rf_allocator_t a, int64_t c, int64_t h, rf_mlp_weights_t *w) {
    rf_status_t st;
    memset(w, 0, sizeof(*w));
    w->channels = c;
    w->hidden = h;
    if ((st = rf_alloc(a, (size_t)(c * h) * 2, "W1", (void **)&w->w1)) ||
        (st = rf_alloc(a, (size_t)(h * c) * 2, "W2", (void **)&w->w2)) ||
        (st = rf_alloc(a, (size_t)h * 4, "b1", (void **)&w->b1)) ||
        (st = rf_alloc(a, (size_t)c * 4, "b2", (void **)&w->b2)))
        rf_mlp_weights_free(a, w);
    return st;
}

/* out[r, c] of a [rows, cols] matrix from constant `value`, stored transposed if asked. */
static void get_matrix(const rf_graph_t *g, int value, int trans, int64_t rows, int64_t cols,
                       uint16_t *out) {
    const rf_value_t *v = rf_graph_value(g, value);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            int64_t src = trans ? c * rows + r : r * cols + c;
            out[r * cols + c] = rf_f32_to_f16((float)rf_value_get_f64(v, src));
        }
}

static void get_vector(const rf_graph_t *g, int value, int64_t n, float *out) {
    const rf_value_t *v = rf_graph_value(g, value);
    for (int64_t i = 0; i < n; i++)
        out[i] = (float)rf_value_get_f64(v, i);
}

rf_status_t rf_mlp_weights_from_graph(rf_allocator_t a, const rf_graph_t *g,
                                      const rf_mlp_block_t *b, rf_mlp_weights_t *w) {
    RF_RETURN_IF_ERROR_PLAIN(alloc_all(a, b->channels, b->hidden, w));
    get_matrix(g, b->w1, b->w1_trans, b->channels, b->hidden, w->w1);
    get_matrix(g, b->w2, b->w2_trans, b->hidden, b->channels, w->w2);
    get_vector(g, b->b1, b->hidden, w->b1);
    get_vector(g, b->b2, b->channels, w->b2);
    return RF_OK;
}

rf_status_t rf_mlp_weights_random(rf_allocator_t a, int64_t c, int64_t h, uint64_t seed,
                                  rf_mlp_weights_t *w) {
    rf_mlp_case_t k;
    memset(w, 0, sizeof(*w));
    RF_RETURN_IF_ERROR_PLAIN(rf_mlp_case_create(a, 0, c, h, seed, 0, &k));
    /* the case's arrays move into the weights */
    w->channels = c;
    w->hidden = h;
    w->w1 = k.w1;
    w->w2 = k.w2;
    w->b1 = k.b1;
    w->b2 = k.b2;
    return RF_OK;
}

static uint64_t fnv(uint64_t hash, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        hash = (hash ^ p[i]) * 0x100000001b3ull;
    return hash;
}

void rf_mlp_weights_hash(const rf_mlp_weights_t *w, char out[17]) {
    static const char hex[] = "0123456789abcdef";
    int64_t dims[2] = {w->channels, w->hidden};
    size_t ch = (size_t)(w->channels * w->hidden);
    uint64_t hash = fnv(0xcbf29ce484222325ull, dims, sizeof dims);
    hash = fnv(hash, w->w1, ch * 2);
    hash = fnv(hash, w->b1, (size_t)w->hidden * 4);
    hash = fnv(hash, w->w2, ch * 2);
    hash = fnv(hash, w->b2, (size_t)w->channels * 4);
    for (int i = 0; i < 16; i++)
        out[i] = hex[(hash >> (60 - 4 * i)) & 15];
    out[16] = '\0';
}
