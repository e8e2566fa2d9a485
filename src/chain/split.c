/* The split reduction's depth against the reference's bound, and the CPU model of a kernel
 * that reduces a linear's partials in block order (split.h). */
#include "chain/split.h"

#include <math.h>
#include <string.h>

#include "rowfuse/tensor.h"

int64_t rf_chain_bound_depth(int64_t k) {
    return (k + 15) / 16 + 1;
}

int64_t rf_chain_split_depth(int64_t k, int64_t slice, int64_t blocks) {
    int64_t deepest = 0;
    for (int64_t b = 0; b < blocks; b++) {
        int64_t lo = b * slice, hi = lo + slice < k ? lo + slice : k;
        int64_t steps = hi > lo ? (hi - lo + 15) / 16 : 0;
        deepest = steps > deepest ? steps : deepest;
    }
    return deepest + (blocks > 0 ? blocks - 1 : 0);
}

rf_status_t rf_chain_split_covered(int64_t k, int64_t slice, int64_t blocks) {
    if (k < 1 || slice < 16 || slice % 16 || blocks < 1 || blocks * slice < k ||
        (blocks - 1) * slice >= k)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "a split of %lld terms into %lld slices of %lld: slices must be positive "
                      "multiples of 16 that cover the terms, every slice holding one",
                      (long long)k, (long long)blocks, (long long)slice);
    int64_t d = rf_chain_split_depth(k, slice, blocks), bound = rf_chain_bound_depth(k);
    if (d > bound)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "a split of %lld terms into %lld slices of %lld adds %lld times on a "
                      "term's path; the reference's bound allows %lld",
                      (long long)k, (long long)blocks, (long long)slice, (long long)d,
                      (long long)bound);
    return RF_OK;
}

/* ---- the fp32 model ---- */

static float store(rf_dtype_t dt, float v) {
    return dt == RF_DTYPE_F16 ? rf_f16_to_f32(rf_f32_to_f16(v)) : v;
}

/* sum over i in [lo, hi) of x[i] * w[i][j] as the MMA model: 16 exact products per step,
 * each step rounded once into the fp32 accumulator. */
static float dot32(const float *x, const float *w, int64_t n, int64_t j, int64_t lo, int64_t hi) {
    float acc = 0.0f;
    for (int64_t s = lo; s < hi; s += 16) {
        double step = 0.0;
        for (int64_t i = s; i < s + 16 && i < hi; i++)
            step += (double)x[i] * (double)(float)rf_round_f16(w[i * n + j]);
        acc = (float)((double)acc + step);
    }
    return acc;
}

static void norm32(const rf_chain_stage_t *st, int64_t C, const float *x, float *y) {
    float mean = 0.0f, var = 0.0f;
    if (st->norm == RF_CHAIN_LAYERNORM) {
        for (int64_t i = 0; i < C; i++)
            mean += x[i];
        mean /= (float)C;
    }
    for (int64_t i = 0; i < C; i++)
        var += (x[i] - mean) * (x[i] - mean);
    var /= (float)C;
    float rstd = 1.0f / sqrtf(var + (float)st->eps);
    for (int64_t i = 0; i < C; i++) {
        float v = (x[i] - mean) * rstd;
        if (st->gamma)
            v *= st->gamma[i];
        if (st->beta)
            v += st->beta[i];
        y[i] = v;
    }
}

rf_status_t rf_chain_split_emulate(const rf_chain_t *c, const uint16_t *x, int64_t rows,
                                   int split_stage, int64_t slice, rf_chain_split_fault_t fault,
                                   float *out_y) {
    if (!c || !x || !out_y || rows < 0 || slice < 16 || split_stage < 0 ||
        split_stage >= c->n_stages || c->stages[split_stage].op != RF_CHAIN_LINEAR)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "rf_chain_split_emulate: bad arguments (the split stage must be a linear)");
    RF_RETURN_IF_ERROR(rf_chain_validate(c), "split model");
    int64_t off[RF_CHAIN_MAX_STAGES + 2], total = 0;
    for (int v = 0; v < c->n_values; v++) {
        off[v] = total;
        total += c->values[v].width;
    }
    void *mem;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(c->allocator, sizeof(float) * (size_t)total, "split model values", &mem));
    float *vals = mem;
    int64_t C0 = c->values[0].width, last = c->n_values - 1, N_out = c->values[last].width;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < C0; i++)
            vals[i] = rf_f16_to_f32(x[r * C0 + i]);
        for (int s = 0; s < c->n_stages; s++) {
            const rf_chain_stage_t *st = &c->stages[s];
            rf_dtype_t dt = c->values[st->dst].dtype;
            int64_t W = c->values[st->dst].width;
            float *y = vals + off[st->dst];
            const float *a = st->src >= 0 ? vals + off[st->src] : NULL;
            switch (st->op) {
            case RF_CHAIN_LINEAR:
                for (int64_t j = 0; j < W; j++) {
                    float t;
                    if (s == split_stage) {
                        int64_t blocks = (st->k + slice - 1) / slice;
                        t = 0.0f;
                        for (int64_t b = 0; b < blocks; b++) {
                            int64_t lo = b * slice, hi = lo + slice < st->k ? lo + slice : st->k;
                            float part = dot32(a, st->w, st->n, j, lo, hi);
                            if (fault == RF_CHAIN_SPLIT_EARLY_REDUCE && b == blocks - 1)
                                part = 0.0f;
                            t = b == 0 ? part : t + part;
                        }
                    } else {
                        t = dot32(a, st->w, st->n, j, 0, st->k);
                    }
                    if (st->b)
                        t += st->b[j];
                    for (int e = 0; e < st->n_epi; e++) {
                        const rf_chain_epi_t *ep = &st->epi[e];
                        if (ep->op == RF_CHAIN_EPI_ACT)
                            t = rf_chain_fn_eval32(ep->fn, ep->alpha, t);
                        else if (ep->op == RF_CHAIN_EPI_ADD)
                            t += vals[off[ep->src] + j];
                        else
                            t *= vals[off[ep->src] + j];
                    }
                    y[j] = store(dt, t);
                }
                break;
            case RF_CHAIN_GATED:
                for (int64_t j = 0; j < W; j++) {
                    float g = dot32(a, st->w, st->n, j, 0, st->k) + (st->b ? st->b[j] : 0.0f);
                    float u = dot32(a, st->wu, st->n, j, 0, st->k) + (st->bu ? st->bu[j] : 0.0f);
                    y[j] = store(dt, rf_chain_fn_eval32(st->fn, st->alpha, g) * u);
                }
                break;
            case RF_CHAIN_ACT:
                for (int64_t j = 0; j < W; j++)
                    y[j] = store(dt, rf_chain_fn_eval32(st->fn, st->alpha, a[j]));
                break;
            case RF_CHAIN_ADD:
                for (int64_t j = 0; j < W; j++)
                    y[j] = store(dt, a[j] + vals[off[st->src2] + j]);
                break;
            case RF_CHAIN_NORM:
                norm32(st, W, a, y);
                for (int64_t j = 0; j < W; j++)
                    y[j] = store(dt, y[j]);
                break;
            default:
                rf_free(c->allocator, vals);
                return RF_ERR(RF_CODE_UNSUPPORTED, "split model: stage %d (%s)", s,
                              rf_chain_op_name(st->op));
            }
        }
        memcpy(out_y + r * N_out, vals + off[last], sizeof(float) * (size_t)N_out);
    }
    rf_free(c->allocator, vals);
    return RF_OK;
}
