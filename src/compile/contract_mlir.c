/* The residual MLP block's row contract as MLIR text (rowfuse/mlir.h): the C graph's
 * matched block, written in the rowfuse dialect for rowfuse-opt, with no Python between
 * the verifier and the schedule pass. */
#include <ctype.h>
#include <stdint.h>

#include "rowfuse/mlir.h"

/* dense<"0x..."> of n elements of `size` bytes each, little-endian. */
static void write_hex(FILE *f, const void *data, size_t n, size_t size) {
    const unsigned char *p = data;
    fputs("dense<\"0x", f);
    for (size_t i = 0; i < n * size; i += size)
        for (size_t b = 0; b < size; b++) /* value bytes, least significant first */
            fprintf(f, "%02X", p[i + b]);
    fputs("\">", f);
}

static int host_little_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

rf_status_t rf_mlp_contract_mlir_write(const rf_mlp_weights_t *w, int64_t rows, const char *source,
                                       FILE *f) {
    if (!w || !f || rows < 1 || w->channels < 1 || w->hidden < 1 || !w->w1 || !w->w2 || !w->b1 ||
        !w->b2)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "contract MLIR: missing weights or bad shape");
    if (!host_little_endian())
        return RF_ERR(RF_CODE_UNSUPPORTED, "contract MLIR: hex constants assume a little-endian "
                                           "host");
    long long m = (long long)rows, c = (long long)w->channels, h = (long long)w->hidden;
    char hash[17], desc[256];
    rf_mlp_weights_hash(w, hash);
    /* the source into a one-line comment */
    size_t i = 0;
    for (const char *s = source ? source : ""; *s && i + 1 < sizeof desc; s++)
        desc[i++] = isprint((unsigned char)*s) ? *s : ' ';
    desc[i] = '\0';

    fprintf(f, "// The row contract of the residual MLP block %lldx%lldx%lld, written by rowfuse\n",
            m, c, h);
    fprintf(f, "// (src/compile/contract_mlir.c) from %s; weights hash %s.\n", desc, hash);
    fprintf(f, "//   H = fp16(relu(X W1 + b1));  Y = relu(H W2 + b2 + X)\n");
    fprintf(f, "//   X, W1, W2 fp16; b1, b2, Y fp32; X row-owned (rowfuse.row)\n");
    fprintf(f,
            "func.func @main(%%x: tensor<%lldx%lldxf16> {rowfuse.row}) -> tensor<%lldx%lldxf32> "
            "{\n",
            m, c, m, c);
    fputs("  %w1 = arith.constant ", f);
    write_hex(f, w->w1, (size_t)(c * h), 2);
    fprintf(f, " : tensor<%lldx%lldxf16>\n", c, h);
    fputs("  %b1 = arith.constant ", f);
    write_hex(f, w->b1, (size_t)h, 4);
    fprintf(f, " : tensor<%lldxf32>\n", h);
    fputs("  %w2 = arith.constant ", f);
    write_hex(f, w->w2, (size_t)(h * c), 2);
    fprintf(f, " : tensor<%lldx%lldxf16>\n", h, c);
    fputs("  %b2 = arith.constant ", f);
    write_hex(f, w->b2, (size_t)c, 4);
    fprintf(f, " : tensor<%lldxf32>\n", c);
    fprintf(f,
            "  %%0 = rowfuse.linear %%x, %%w1 : tensor<%lldx%lldxf16>, tensor<%lldx%lldxf16> -> "
            "tensor<%lldx%lldxf32>\n",
            m, c, c, h, m, h);
    fprintf(f, "  %%1 = rowfuse.bias %%0, %%b1 : tensor<%lldx%lldxf32>, tensor<%lldxf32>\n", m, h,
            h);
    fprintf(f, "  %%2 = rowfuse.relu %%1 : tensor<%lldx%lldxf32>\n", m, h);
    fprintf(f, "  %%3 = rowfuse.round_f16 %%2 : tensor<%lldx%lldxf32> -> tensor<%lldx%lldxf16>\n",
            m, h, m, h);
    fprintf(f,
            "  %%4 = rowfuse.linear %%3, %%w2 : tensor<%lldx%lldxf16>, tensor<%lldx%lldxf16> -> "
            "tensor<%lldx%lldxf32>\n",
            m, h, h, c, m, c);
    fprintf(f, "  %%5 = rowfuse.bias %%4, %%b2 : tensor<%lldx%lldxf32>, tensor<%lldxf32>\n", m, c,
            c);
    fprintf(f,
            "  %%6 = rowfuse.residual_add %%5, %%x : tensor<%lldx%lldxf32>, "
            "tensor<%lldx%lldxf16>\n",
            m, c, m, c);
    fprintf(f, "  %%7 = rowfuse.relu %%6 : tensor<%lldx%lldxf32>\n", m, c);
    fprintf(f, "  return %%7 : tensor<%lldx%lldxf32>\n}\n", m, c);
    if (ferror(f))
        return RF_ERR(RF_CODE_IO_ERROR, "error writing the contract MLIR");
    return RF_OK;
}
