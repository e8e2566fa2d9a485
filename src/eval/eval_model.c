/* Running the evaluated model over a table: checks that the verified graph takes the
 * table's features and gives one output row per input row, then feeds the rows through the
 * CPU reference interpreter M at a time (M = the graph's static row count). The last chunk
 * is padded with zero rows; the row contract from the verifier guarantees each output row
 * depends only on its own input row, so the padding cannot change the real rows, and its
 * outputs are dropped. */
#include <string.h>

#include "eval/eval_internal.h"

static int rf_is_float(rf_dtype_t dt) {
    return dt == RF_DTYPE_F32 || dt == RF_DTYPE_F16 || dt == RF_DTYPE_BF16 || dt == RF_DTYPE_F64;
}

rf_status_t rf_eval_model_check(const rf_graph_t *g, const rf_contract_t *contract,
                                const rf_eval_table_t *table, rf_eval_model_t *out) {
    char sbuf[160];
    memset(out, 0, sizeof *out);
    if (rf_graph_input_count(g) != 1)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "rowfuse eval takes models with one input (the feature rows); this one "
                      "has %d",
                      rf_graph_input_count(g));
    if (rf_graph_output_count(g) != 1)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "rowfuse eval takes models with one output; this one has %d",
                      rf_graph_output_count(g));
    int in = rf_graph_input(g, 0), o = rf_graph_output(g, 0);
    const rf_value_t *iv = rf_graph_value(g, in), *ov = rf_graph_value(g, o);
    if (!iv->has_shape || iv->shape.rank != 2 || !rf_is_float(iv->dtype))
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "input '%s' is %s %s; rowfuse eval feeds float rows [rows, features]",
                      iv->name, rf_dtype_name(iv->dtype),
                      iv->has_shape ? rf_shape_format(&iv->shape, sbuf, sizeof sbuf) : "[?]");
    int64_t m = iv->shape.dims[0], f = iv->shape.dims[1];
    if (f != table->n_features)
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "the model's input '%s' %s takes %lld features per row, but %d feature "
                      "columns were given (%s first, %s last)",
                      iv->name, rf_shape_format(&iv->shape, sbuf, sizeof sbuf), (long long)f,
                      table->n_features, table->feature_names[0],
                      table->feature_names[table->n_features - 1]);
    if (!ov->has_shape || (ov->shape.rank != 1 && ov->shape.rank != 2) || ov->shape.dims[0] != m ||
        rf_contract_row_state(contract, o) != RF_ROW_OWNED)
        return RF_ERR(
            RF_CODE_UNSUPPORTED,
            "output '%s' has shape %s%s; rowfuse eval needs one output row per input "
            "row: [%lld] or [%lld, K], row-owned",
            ov->name, ov->has_shape ? rf_shape_format(&ov->shape, sbuf, sizeof sbuf) : "[?]",
            rf_contract_row_state(contract, o) == RF_ROW_OWNED ? "" : " and depends on no row",
            (long long)m, (long long)m);
    out->input = in;
    out->output = o;
    out->rows = m;
    out->features = f;
    out->outputs = ov->shape.rank == 2 ? ov->shape.dims[1] : 1;
    if (out->outputs < 1)
        return RF_ERR(RF_CODE_UNSUPPORTED, "output '%s' has no columns", ov->name);
    return RF_OK;
}

/* One chunk: rows [r0, r0 + n) of the table, padded to M rows. */
static rf_status_t rf_eval_chunk(rf_allocator_t a, const rf_graph_t *graph,
                                 const rf_eval_model_t *m, const rf_eval_table_t *table,
                                 rf_precision_t precision, int64_t r0, int64_t n, double *x,
                                 const rf_ref_given_t *given, double *out_y, int *ran) {
    int64_t F = m->features, K = m->outputs;
    memcpy(x, table->features + r0 * F, (size_t)(n * F) * sizeof *x);
    memset(x + n * F, 0, (size_t)((m->rows - n) * F) * sizeof *x);
    rf_tensor_t xt = {RF_DTYPE_F64, {2, {m->rows, F}}, x, (size_t)(m->rows * F) * sizeof *x};
    rf_tensor_t y;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_ref_run_given(a, graph, precision, &xt, 1, given, given ? 1 : 0, &y, 1, ran));
    rf_status_t st = RF_OK;
    size_t esize = y.dtype == RF_DTYPE_F64 ? sizeof(double) : sizeof(float);
    if ((y.dtype != RF_DTYPE_F64 && y.dtype != RF_DTYPE_F32) ||
        y.nbytes != (size_t)(m->rows * K) * esize)
        st = RF_ERR(RF_CODE_INTERNAL,
                    "the interpreter returned %zu bytes of %s, expected [%lld, %lld]", y.nbytes,
                    rf_dtype_name(y.dtype), (long long)m->rows, (long long)K);
    for (int64_t i = 0; !st && i < n * K; i++)
        out_y[r0 * K + i] =
            y.dtype == RF_DTYPE_F64 ? ((const double *)y.data)[i] : ((const float *)y.data)[i];
    rf_tensor_free(a, &y);
    return st;
}

rf_status_t rf_eval_model_forward(rf_allocator_t a, const rf_graph_t *graph,
                                  const rf_eval_model_t *m, const rf_eval_table_t *table,
                                  rf_precision_t precision, int given_value, const float *given,
                                  int64_t given_cols, double *out_y, int *ran) {
    int64_t M = m->rows, N = table->rows;
    double *x = NULL;
    float *g = NULL;
    rf_tensor_t gt;
    rf_ref_given_t gv = {given_value, &gt};
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(a, (size_t)(M * m->features) * sizeof *x, "model input rows", (void **)&x));
    rf_status_t st = RF_OK;
    if (given_value >= 0) {
        const rf_value_t *v = rf_graph_value(graph, given_value);
        gt = (rf_tensor_t){
            RF_DTYPE_F32, {2, {M, given_cols}}, NULL, (size_t)(M * given_cols) * sizeof *g};
        if (v->has_shape && !rf_shape_equal(&v->shape, &gt.shape))
            st = RF_ERR(RF_CODE_SHAPE_ERROR, "value '%s' is not [%lld, %lld]", v->name,
                        (long long)M, (long long)given_cols);
        if (!st)
            st = rf_alloc(a, gt.nbytes, "given block output rows", (void **)&g);
        gt.data = g;
    }
    for (int64_t r0 = 0; !st && r0 < N; r0 += M) {
        int64_t n = N - r0 < M ? N - r0 : M;
        if (g) {
            memcpy(g, given + r0 * given_cols, (size_t)(n * given_cols) * sizeof *g);
            memset(g + n * given_cols, 0, (size_t)((M - n) * given_cols) * sizeof *g);
        }
        st = rf_eval_chunk(a, graph, m, table, precision, r0, n, x, g ? &gv : NULL, out_y,
                           r0 == 0 ? ran : NULL);
        if (st)
            st = rf_status_annotate(st, "running rows %lld-%lld (%s)", (long long)(r0 + 1),
                                    (long long)(r0 + n),
                                    precision == RF_PRECISION_FP64 ? "fp64" : "mixed precision");
    }
    rf_free(a, x);
    rf_free(a, g);
    return st;
}
