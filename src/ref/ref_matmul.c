/* CPU reference: MatMul (numpy semantics: 1-D operands promoted, batch dims broadcast) and
 * Gemm (transA, transB, alpha, beta, optional C broadcast to [M, N]).
 *
 * MIXED precision follows the GPU plan: both operands are rounded to fp16, the products
 * (exact in double, 11 x 11 significant bits) are summed in double and the sum is rounded
 * to fp32, as a tensor-core MMA with fp32 accumulation would give up to accumulation order.
 * Gemm then applies alpha and beta*C in double and the driver rounds the result to fp32,
 * so Gemm(A, B, C) equals MatMul(A, B) followed by Add(C) when alpha = beta = 1.
 */
#include <string.h>

#include "ref/ref_internal.h"

/* Copies rows x cols of src (row stride ld) into dst transposed or not, rounding to fp16
 * if asked. dst is [rows, cols] row-major when !transpose, [cols, rows] when transpose. */
static void rf_ref_pack(const double *src, int64_t rows, int64_t cols, int transpose, int round16,
                        double *dst) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double v = src[r * cols + c];
            if (round16)
                v = rf_ref_round_f16(v);
            if (transpose)
                dst[c * rows + r] = v;
            else
                dst[r * cols + c] = v;
        }
}

/* y[M, N] = a[M, K] . bt[N, K]^T, with the MIXED fp32 rounding of each sum. Four columns
 * are computed together (four independent sums, so the loop is not bound by the latency of
 * one addition chain); each sum still runs over k in order, so the result does not depend
 * on the blocking. The check job runs this at benchmark shapes, hence the care. */
static void rf_ref_gemm_kernel(const double *a, const double *bt, int64_t m, int64_t n, int64_t k,
                               int round32, double *y) {
    /* rows are independent (each thread writes its own rows of y) */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 8) if (m * n * k > (1 << 20))
#endif
    for (int64_t i = 0; i < m; i++) {
        const double *ar = a + i * k;
        double *yr = y + i * n;
        int64_t j = 0;
        for (; j + 4 <= n; j += 4) {
            const double *b0 = bt + j * k, *b1 = b0 + k, *b2 = b1 + k, *b3 = b2 + k;
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
            for (int64_t q = 0; q < k; q++) {
                double av = ar[q];
                s0 += av * b0[q];
                s1 += av * b1[q];
                s2 += av * b2[q];
                s3 += av * b3[q];
            }
            yr[j] = s0;
            yr[j + 1] = s1;
            yr[j + 2] = s2;
            yr[j + 3] = s3;
        }
        for (; j < n; j++) {
            const double *br = bt + j * k;
            double s = 0.0;
            for (int64_t q = 0; q < k; q++)
                s += ar[q] * br[q];
            yr[j] = s;
        }
        if (round32)
            for (j = 0; j < n; j++)
                yr[j] = rf_ref_round_f32(yr[j]);
    }
}

rf_status_t rf_ref_matmul(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *a, *b;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "A", &a));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 1, "B", &b));
    char sa[160], sb[160];
    int ra = a->shape.rank, rb = b->shape.rank;
    if (ra < 1 || rb < 1)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "MatMul of %s and %s: operands must have rank >= 1",
                      rf_shape_format(&a->shape, sa, sizeof sa),
                      rf_shape_format(&b->shape, sb, sizeof sb));
    int64_t m = ra == 1 ? 1 : a->shape.dims[ra - 2], k = a->shape.dims[ra - 1];
    int64_t k2 = rb == 1 ? b->shape.dims[0] : b->shape.dims[rb - 2];
    int64_t n = rb == 1 ? 1 : b->shape.dims[rb - 1];
    if (k != k2)
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "MatMul of %s and %s: inner dimensions %lld and %lld differ",
                      rf_shape_format(&a->shape, sa, sizeof sa),
                      rf_shape_format(&b->shape, sb, sizeof sb), (long long)k, (long long)k2);
    rf_shape_t ba = {.rank = ra > 2 ? ra - 2 : 0}, bb = {.rank = rb > 2 ? rb - 2 : 0}, batch;
    memcpy(ba.dims, a->shape.dims, sizeof(int64_t) * (size_t)ba.rank);
    memcpy(bb.dims, b->shape.dims, sizeof(int64_t) * (size_t)bb.rank);
    RF_RETURN_IF_ERROR(rf_ref_broadcast_shape(&ba, &bb, &batch), "MatMul batch dims");
    rf_shape_t os = batch;
    if (os.rank + (ra > 1) + (rb > 1) > RF_MAX_RANK)
        return RF_ERR(RF_CODE_UNSUPPORTED, "MatMul output rank exceeds %d", RF_MAX_RANK);
    if (ra > 1)
        os.dims[os.rank++] = m;
    if (rb > 1)
        os.dims[os.rank++] = n;
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &os, &y));
    if (!y)
        return RF_OK;

    int mixed = ctx->precision == RF_PRECISION_MIXED;
    double *ta = NULL, *tb = NULL;
    rf_status_t st = rf_ref_scratch(ctx, m * k, "MatMul A operand", &ta);
    if (!st)
        st = rf_ref_scratch(ctx, k * n, "MatMul B operand", &tb);
    if (!st) {
        int64_t stride_a[RF_MAX_RANK], stride_b[RF_MAX_RANK], idx[RF_MAX_RANK] = {0};
        rf_ref_broadcast_strides(&ba, &batch, stride_a);
        rf_ref_broadcast_strides(&bb, &batch, stride_b);
        int64_t nbatch = 1, oa = 0, ob = 0;
        for (int d = 0; d < batch.rank; d++)
            nbatch *= batch.dims[d];
        for (int64_t bi = 0; bi < nbatch; bi++) {
            rf_ref_pack(a->data + oa * m * k, m, k, 0, mixed, ta);
            rf_ref_pack(b->data + ob * k * n, k, n, 1, mixed, tb);
            rf_ref_gemm_kernel(ta, tb, m, n, k, mixed, y + bi * m * n);
            for (int d = batch.rank - 1; d >= 0; d--) {
                idx[d]++;
                oa += stride_a[d];
                ob += stride_b[d];
                if (idx[d] < batch.dims[d])
                    break;
                oa -= stride_a[d] * batch.dims[d];
                ob -= stride_b[d] * batch.dims[d];
                idx[d] = 0;
            }
        }
    }
    rf_ref_scratch_free(ctx, ta);
    rf_ref_scratch_free(ctx, tb);
    return st;
}

rf_status_t rf_ref_gemm(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *a, *b, *c = rf_ref_input(ctx, node, 2);
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "A", &a));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 1, "B", &b));
    char sa[160], sb[160];
    if (a->shape.rank != 2 || b->shape.rank != 2)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "Gemm of %s and %s: operands must be 2-D",
                      rf_shape_format(&a->shape, sa, sizeof sa),
                      rf_shape_format(&b->shape, sb, sizeof sb));
    int trans_a = rf_node_attr_int(node, "transA", 0) != 0;
    int trans_b = rf_node_attr_int(node, "transB", 0) != 0;
    double alpha = rf_node_attr_float(node, "alpha", 1.0);
    double beta = rf_node_attr_float(node, "beta", 1.0);
    int64_t m = a->shape.dims[trans_a ? 1 : 0], k = a->shape.dims[trans_a ? 0 : 1];
    int64_t k2 = b->shape.dims[trans_b ? 1 : 0], n = b->shape.dims[trans_b ? 0 : 1];
    if (k != k2)
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "Gemm of %s%s and %s%s: inner dimensions %lld and %lld differ",
                      rf_shape_format(&a->shape, sa, sizeof sa), trans_a ? "^T" : "",
                      rf_shape_format(&b->shape, sb, sizeof sb), trans_b ? "^T" : "", (long long)k,
                      (long long)k2);
    rf_shape_t os = {.rank = 2, .dims = {m, n}};
    int64_t stride_c[RF_MAX_RANK] = {0};
    if (c) {
        rf_shape_t cs;
        RF_RETURN_IF_ERROR(rf_ref_broadcast_shape(&c->shape, &os, &cs), "Gemm C");
        if (!rf_shape_equal(&cs, &os) || c->shape.rank > 2)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "Gemm C of shape %s does not broadcast to %s",
                          rf_shape_format(&c->shape, sa, sizeof sa),
                          rf_shape_format(&os, sb, sizeof sb));
        rf_ref_broadcast_strides(&c->shape, &os, stride_c);
    }
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &os, &y));
    if (!y)
        return RF_OK;

    int mixed = ctx->precision == RF_PRECISION_MIXED;
    double *ta = NULL, *tb = NULL;
    rf_status_t st = rf_ref_scratch(ctx, m * k, "Gemm A operand", &ta);
    if (!st)
        st = rf_ref_scratch(ctx, k * n, "Gemm B operand", &tb);
    if (!st) {
        /* ta is [M, K]; tb is [N, K] (B^T). */
        rf_ref_pack(a->data, a->shape.dims[0], a->shape.dims[1], trans_a, mixed, ta);
        rf_ref_pack(b->data, b->shape.dims[0], b->shape.dims[1], !trans_b, mixed, tb);
        rf_ref_gemm_kernel(ta, tb, m, n, k, mixed, y);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double v = alpha * y[i * n + j];
                if (c)
                    v += beta * c->data[i * stride_c[0] + j * stride_c[1]];
                y[i * n + j] = v;
            }
    }
    rf_ref_scratch_free(ctx, ta);
    rf_ref_scratch_free(ctx, tb);
    return st;
}
