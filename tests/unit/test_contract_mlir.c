/* rf_mlp_contract_mlir_write (rowfuse/mlir.h): the block's row contract as MLIR text. The
 * text is what rowfuse-opt parses (mlir/test and tests/mlir/flow.sh check that); here:
 * the function's signature and ops at the plan's precision, the weights' bytes in the hex
 * constants (little-endian, the kernels' layout), and the refusals. */
#include <stdint.h>

#include "rf_test.h"
#include "rowfuse/compile.h"
#include "rowfuse/mlir.h"

/* The whole text written for w at `rows`, or NULL; the caller frees it. */
static char *written(const rf_mlp_weights_t *w, int64_t rows, const char *source) {
    FILE *f = tmpfile();
    if (!f)
        return NULL;
    rf_status_t st = rf_mlp_contract_mlir_write(w, rows, source, f);
    long n = ftell(f);
    char *text = NULL;
    if (!st && n > 0 && (text = calloc(1, (size_t)n + 1))) {
        rewind(f);
        if (fread(text, 1, (size_t)n, f) != (size_t)n) {
            free(text);
            text = NULL;
        }
    }
    rf_status_free(st);
    fclose(f);
    return text;
}

static void test_text(void) {
    uint16_t w1[6] = {0x3C00, 0xBC00, 0x0001, 0x7BFF, 0x3800, 0x0000}; /* [2, 3] */
    uint16_t w2[6] = {0x4000, 0x4200, 0x4400, 0x4500, 0x4600, 0x4700}; /* [3, 2] */
    float b1[3] = {1.0f, -2.0f, 0.5f}, b2[2] = {0.25f, -0.0f};
    rf_mlp_weights_t w = {2, 3, w1, w2, b1, b2};
    char *t = written(&w, 5, "model.onnx\nwith a newline");
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK(strstr(t, "func.func @main(%x: tensor<5x2xf16> {rowfuse.row}) -> tensor<5x2xf32>"));
    /* W1's fp16 bit patterns, least significant byte first */
    CHECK(strstr(t, "%w1 = arith.constant dense<\"0x003C00BC0100FF7B00380000\"> : "
                    "tensor<2x3xf16>"));
    CHECK(strstr(t, "%w2 = arith.constant dense<\"0x004000420044004500460047\"> : "
                    "tensor<3x2xf16>"));
    /* 1.0f = 0x3F800000, -2.0f = 0xC0000000, 0.5f = 0x3F000000 */
    CHECK(strstr(t, "%b1 = arith.constant dense<\"0x0000803F000000C00000003F\"> : "
                    "tensor<3xf32>"));
    CHECK(strstr(t, "%b2 = arith.constant dense<\"0x0000803E00000080\"> : tensor<2xf32>"));
    CHECK(strstr(t, "rowfuse.linear %x, %w1 : tensor<5x2xf16>, tensor<2x3xf16> -> "
                    "tensor<5x3xf32>"));
    CHECK(strstr(t, "rowfuse.bias %0, %b1 : tensor<5x3xf32>, tensor<3xf32>"));
    CHECK(strstr(t, "rowfuse.round_f16 %2 : tensor<5x3xf32> -> tensor<5x3xf16>"));
    CHECK(strstr(t, "rowfuse.linear %3, %w2 : tensor<5x3xf16>, tensor<3x2xf16> -> "
                    "tensor<5x2xf32>"));
    CHECK(strstr(t, "rowfuse.residual_add %5, %x : tensor<5x2xf32>, tensor<5x2xf16>"));
    CHECK(strstr(t, "%7 = rowfuse.relu %6 : tensor<5x2xf32>\n  return %7 : tensor<5x2xf32>\n}"));
    /* the source goes into a comment on one line */
    CHECK(strstr(t, "from model.onnx with a newline; weights hash "));
    free(t);
}

static void test_refusals(void) {
    uint16_t w1[1] = {0}, w2[1] = {0};
    float b1[1] = {0}, b2[1] = {0};
    rf_mlp_weights_t w = {1, 1, w1, w2, b1, b2};
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK_ERR(rf_mlp_contract_mlir_write(&w, 0, "", f), RF_CODE_INVALID_ARGUMENT, "bad shape");
    w.w2 = NULL;
    CHECK_ERR(rf_mlp_contract_mlir_write(&w, 1, "", f), RF_CODE_INVALID_ARGUMENT,
              "missing weights");
    fclose(f);
}

static void test_random_weights(void) {
    /* The synthetic block `rowfuse iree --mlp` writes: every weight byte in the text. */
    rf_mlp_weights_t w;
    CHECK_OK(rf_mlp_weights_random(rf_allocator_system(), 48, 96, 1, &w));
    char *t = written(&w, 49, "mlp:49x48x96 seed 1");
    CHECK(t != NULL);
    if (t) {
        char hex[8];
        snprintf(hex, sizeof hex, "%02X%02X", w.w1[0] & 0xFF, w.w1[0] >> 8);
        const char *at = strstr(t, "%w1 = arith.constant dense<\"0x");
        CHECK(at && !strncmp(at + strlen("%w1 = arith.constant dense<\"0x"), hex, 4));
        CHECK(strstr(t, "\"> : tensor<48x96xf16>"));
        CHECK(strstr(t, "weights hash b27b630960d8ead2")); /* plan.json's for this seed */
        free(t);
    }
    rf_mlp_weights_free(rf_allocator_system(), &w);
}

int main(void) {
    test_text();
    test_refusals();
    test_random_weights();
    return rf_test_finish();
}
