/* The conventional schedule of a chain (compile/chain_conv.h): the segments, the scratch
 * layout of the values between them, each segment's kernel and its column split. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/chain_conv.h"
#include "compile/chain_stream.h"

void rf_chain_conv_plan_free(rf_chain_conv_plan_t *cp) {
    if (!cp)
        return;
    free(cp->segs);
    cp->segs = NULL;
    cp->n_segs = 0;
}

/* The segments' first stages (module comment); returns their count (-1: too many). With
 * `few` rows (fewer 16-row tiles than SMs) a norm after a segment's matmul starts a kernel of
 * its own, so that the matmul's columns can be split over blocks. */
static int cut(const rf_chain_t *c, int few, int *starts) {
    int n = 0, has_mm = 0;
    starts[n++] = 0;
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        if (st->op == RF_CHAIN_NORM && has_mm && few) {
            if (n == RF_CHAIN_CONV_MAX_SEGS)
                return -1;
            starts[n++] = s;
            has_mm = 0;
            continue;
        }
        if (!rf_chain_stage_is_mm(st))
            continue;
        if (has_mm) {
            int at = s;
            const rf_chain_stage_t *prev = &c->stages[s - 1];
            /* a norm feeding this matmul is its prologue */
            if (s - 1 > starts[n - 1] && prev->op == RF_CHAIN_NORM && prev->dst == st->src)
                at = s - 1;
            if (n == RF_CHAIN_CONV_MAX_SEGS)
                return -1;
            starts[n++] = at;
        }
        has_mm = 1;
    }
    starts[n] = c->n_stages;
    return n;
}

/* The column split of segment `seg` (module comment of chain_conv.h). */
static void split(const rf_chain_t *c, const rf_target_t *t, int64_t rows,
                  rf_chain_seg_plan_t *seg) {
    const rf_chain_plan_t *p = &seg->plan;
    int mm = -1, n_mm = 0;
    seg->split_stage = -1;
    seg->slices = 1;
    seg->slice_chunks = 0;
    for (int s = p->first_stage; s < p->end_stage; s++)
        if (rf_chain_stage_is_mm(&c->stages[s])) {
            mm = s;
            n_mm++;
        }
    if (n_mm != 1)
        return;
    int64_t n = c->stages[mm].n;
    for (int s = mm + 1; s < p->end_stage; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        if ((st->op != RF_CHAIN_ACT && st->op != RF_CHAIN_ADD) || c->values[st->dst].width != n)
            return;
    }
    int64_t nn = p->stages[mm].n_pad / p->stages[mm].n_chunk;
    int64_t tiles = rf_div_up(rows, p->tile_rows);
    int64_t slices = rf_div_up(t->sm_count, tiles);
    if (slices > nn)
        slices = nn;
    if (slices < 1)
        slices = 1;
    int64_t per = rf_div_up(nn, slices);
    seg->split_stage = mm;
    seg->slice_chunks = (int)per;
    seg->slices = (int)rf_div_up(nn, per);
}

/* Plans the segments that start at starts[0..n) (starts[n] = the chain's end) into cp;
 * *failed receives the segment whose kernel does not fit (-1: none). */
static rf_status_t plan_segments(const rf_chain_t *c, int64_t rows, const rf_target_t *t,
                                 int tile_rows, rf_chain_plan_t *whole, const int *starts, int n,
                                 rf_chain_conv_plan_t *cp, int *failed) {
    int seg_of[RF_CHAIN_MAX_STAGES];
    char aux[RF_CHAIN_MAX_STAGES + 1] = {0};
    *failed = -1;
    for (int i = 0; i < n; i++)
        for (int s = starts[i]; s < starts[i + 1]; s++)
            seg_of[s] = i;
    cp->segs = calloc((size_t)n, sizeof *cp->segs);
    if (!cp->segs)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "%d segment plans", n);
    cp->n_segs = n;
    /* the values a later segment reads, and every segment's inputs */
    for (int i = 0; i < n; i++) {
        rf_chain_seg_plan_t *seg = &cp->segs[i];
        char in[RF_CHAIN_MAX_STAGES + 1] = {0};
        for (int s = starts[i]; s < starts[i + 1]; s++) {
            int r[2 + RF_CHAIN_MAX_EPILOGUE];
            int k = rf_chain_stage_reads(&c->stages[s], r);
            for (int j = 0; j < k; j++) {
                int v = r[j], prod = v == 0 ? -1 : seg_of[v - 1];
                if (prod == i)
                    continue;
                in[v] = 1;
                if (v != 0)
                    aux[v] = 1;
            }
        }
        for (int v = 0; v < c->n_values; v++)
            if (in[v])
                seg->inputs[seg->n_inputs++] = v;
    }
    int64_t col = 0;
    for (int v = 0; v < c->n_values; v++) {
        cp->aux_col[v] = -1;
        if (!aux[v])
            continue;
        cp->aux_col[v] = col;
        col += whole->values[v].padded_width * (c->values[v].dtype == RF_DTYPE_F16 ? 1 : 2);
    }
    cp->aux_row = col;
    whole->aux_row = col;
    for (int i = 0; i < n; i++) {
        rf_chain_seg_plan_t *seg = &cp->segs[i];
        rf_status_t st =
            rf_chain_plan_range(c, rows, t, tile_rows, starts[i], starts[i + 1], 1, &seg->plan);
        if (st) {
            *failed = i;
            return rf_status_annotate(st, "the conventional schedule's kernel %d (stages %d..%d)",
                                      i, starts[i], starts[i + 1] - 1);
        }
        snprintf(seg->plan.name, sizeof seg->plan.name, "conv_%s_%d", whole->hash, i);
        /* inputs without a slot: streamed through the ring by their matmul, or read in place
         * element by element */
        int staged = 0;
        for (int j = 0; j < seg->n_inputs; j++) {
            int v = seg->inputs[j], streamed = 0;
            for (int s = starts[i]; s < starts[i + 1]; s++)
                streamed |= seg->plan.stages[s].a_stream && c->stages[s].src == v;
            if (seg->plan.values[v].smem_offset >= 0)
                seg->inputs[staged++] = v;
            else if (streamed)
                seg->streamed[seg->n_streamed++] = v;
            else
                seg->direct[seg->n_direct++] = v;
        }
        seg->n_inputs = staged;
        seg->plan.aux_row = cp->aux_row;
        split(c, t, rows, seg);
    }
    return RF_OK;
}

int64_t rf_chain_wgmma_smem(int tile_m, int tile_n, int k_block, int stages, int mats) {
    int64_t off = 16 * (int64_t)stages; /* the mbarriers, from 0 */
    off = rf_round_up(off, 1024) + 2 * (int64_t)tile_m * k_block * stages;
    for (int m = 0; m < mats; m++)
        off = rf_round_up(off, 1024) + 2 * (int64_t)k_block * tile_n * stages;
    return off + 1024;
}

static int aligned_col(const rf_chain_conv_plan_t *cp, int v) {
    return v == 0 || (cp->aux_col[v] >= 0 && cp->aux_col[v] % 8 == 0);
}

/* Segment i as a Hopper GEMM (rf_chain_conv_plan_make's wgmma): its fields set when its
 * operands allow one and a ring of two stages fits; otherwise it stays chain_mma. */
static void wgmma_geometry(const rf_chain_t *c, int64_t rows, const rf_target_t *t,
                           rf_chain_conv_plan_t *cp, int i) {
    rf_chain_seg_plan_t *seg = &cp->segs[i];
    rf_chain_plan_t *p = &seg->plan;
    int s = p->first_stage, last = c->n_values - 1;
    if (p->end_stage - s != 1 || !rf_chain_stage_is_mm(&c->stages[s]))
        return;
    const rf_chain_stage_t *st = &c->stages[s];
    const rf_chain_stage_plan_t *ps = &p->stages[s];
    int gated = st->op == RF_CHAIN_GATED;
    if (c->values[st->src].dtype != RF_DTYPE_F16 || !aligned_col(cp, st->src) || st->k % 8 != 0 ||
        st->n % 8 != 0 || cp->aux_row % 8 != 0)
        return;
    if (ps->w % 8 != 0 || (gated && ps->wu % 8 != 0))
        return;
    if (st->dst != last && (cp->aux_col[st->dst] < 0 || cp->aux_col[st->dst] % 8 != 0))
        return;
    for (int e = 0; e < st->n_epi; e++) /* operands read element by element, in place */
        if (st->epi[e].op != RF_CHAIN_EPI_ACT && st->epi[e].src != 0 &&
            cp->aux_col[st->epi[e].src] < 0)
            return;
    /* the largest tiles that still give every SM one */
    static const int tm_of[] = {128, 128, 64, 64}, tn_of[] = {128, 64, 128, 64};
    int tm = 64, tn = 64;
    for (int k = 0; k < 4; k++) {
        int64_t items = rf_div_up(rows, tm_of[k]) * rf_div_up(st->n, tn_of[k]);
        if (items >= t->sm_count) {
            tm = tm_of[k];
            tn = tn_of[k];
            break;
        }
    }
    if (st->n < 64)
        tn = (int)rf_round_up(st->n, 16);
    int64_t tiles_n = rf_div_up(st->n, tn);
    if (p->values[st->dst].padded_width > tiles_n * tn)
        return;
    int stages = 0;
    for (int k = 8; k >= 2 && !stages; k--)
        if (rf_chain_wgmma_smem(tm, tn, 64, k, gated ? 2 : 1) <= t->smem_per_block)
            stages = k;
    if (!stages)
        return;
    seg->wg_tile_m = tm;
    seg->wg_tile_n = tn;
    seg->wg_k_block = 64;
    seg->wg_stages = stages;
    seg->split_stage = s;
    seg->slices = (int)tiles_n;
    seg->slice_chunks = 0;
    p->tile_rows = tm;
    p->warps = 4 * (tm / 64 + 1);
    p->smem_bytes = rf_chain_wgmma_smem(tm, tn, 64, stages, gated ? 2 : 1);
}

double rf_chain_wgmma_cost_us(const rf_chain_t *c, int64_t rows) {
    double flops = 0.0, bytes = 0.0;
    int kernels = 0;
    for (int i = 0; i < c->n_stages; i++) {
        const rf_chain_stage_t *s = &c->stages[i];
        double mats = s->op == RF_CHAIN_GATED ? 2.0 : 1.0;
        if (rf_chain_stage_is_mm(s)) {
            flops += 2.0 * (double)rows * (double)s->k * (double)s->n * mats;
            bytes += 2.0 * (double)s->k * (double)s->n * mats;
        }
        kernels += rf_chain_stage_is_mm(s) || s->op == RF_CHAIN_NORM;
    }
    double math = flops / (RF_CHAIN_WGMMA_TFLOPS * 1e6);
    double weights = bytes / (RF_STREAM_HBM_GBS * 1e3);
    return RF_CHAIN_WGMMA_KERNEL_US * kernels + (math > weights ? math : weights);
}

rf_status_t rf_chain_conv_plan_make(const rf_chain_t *c, int64_t rows, const rf_target_t *t,
                                    int tile_rows, int wgmma, rf_chain_plan_t *whole,
                                    rf_chain_conv_plan_t *cp) {
    int starts[RF_CHAIN_CONV_MAX_SEGS + 1];
    memset(cp, 0, sizeof *cp);
    /* the whole chain's plan: its hash and weight offsets (no shared-memory limit) */
    rf_target_t unbounded = *t;
    unbounded.smem_per_block = INT32_MAX;
    RF_RETURN_IF_ERROR(rf_chain_plan_make(c, rows, &unbounded, 16, whole),
                       "placing the weights of the conventional schedule");
    whole->target = *t;
    int n = cut(c, wgmma || (rows + 15) / 16 < t->sm_count, starts);
    rf_chain_plan_t *alt = calloc(1, sizeof *alt);
    if (!alt)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "a segment plan");
    for (;;) {
        if (n < 0 || n > RF_CHAIN_CONV_MAX_SEGS) {
            free(alt);
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "the chain needs more than %d kernels in the conventional schedule",
                          RF_CHAIN_CONV_MAX_SEGS);
        }
        int failed = -1, apart = -1;
        rf_status_t st = plan_segments(c, rows, t, tile_rows, whole, starts, n, cp, &failed);
        if (st) {
            /* a prologue norm whose kernel does not fit (the norm's input and output rows
             * beside the ring) gets a kernel of its own */
            int f = failed >= 0 ? starts[failed] : -1;
            if (f >= 0 && rf_status_code(st) == RF_CODE_UNSUPPORTED && starts[failed + 1] - f > 1 &&
                c->stages[f].op == RF_CHAIN_NORM)
                apart = failed;
        } else {
            /* so does one whose matmul, streaming the normalised rows instead, would run
             * larger row tiles (each row tile streams every weight once) */
            for (int g = 0; g < n && apart < 0; g++) {
                int f = starts[g];
                if (starts[g + 1] - f < 2 || c->stages[f].op != RF_CHAIN_NORM)
                    continue;
                if (wgmma) { /* the matmul's kernel is to be a GEMM alone */
                    apart = g;
                    break;
                }
                rf_status_t a =
                    rf_chain_plan_range(c, rows, t, tile_rows, f + 1, starts[g + 1], 1, alt);
                if (!a && alt->tile_rows > cp->segs[g].plan.tile_rows)
                    apart = g;
                rf_status_free(a);
            }
            if (apart < 0)
                break;
        }
        rf_chain_conv_plan_free(cp);
        memset(cp, 0, sizeof *cp);
        if (apart < 0 || n >= RF_CHAIN_CONV_MAX_SEGS) {
            free(alt);
            return st;
        }
        rf_status_free(st);
        memmove(&starts[apart + 2], &starts[apart + 1], sizeof(int) * (size_t)(n - apart));
        starts[apart + 1] = starts[apart] + 1;
        n++;
    }
    free(alt);
    cp->wgmma = wgmma;
    int gemms = 0;
    for (int i = 0; i < n && wgmma; i++) {
        wgmma_geometry(c, rows, t, cp, i);
        gemms += cp->segs[i].wg_tile_m > 0;
    }
    snprintf(whole->name, sizeof whole->name, "conv_%s", whole->hash);
    int with_mm = 0;
    for (int s = 0; s < c->n_stages; s++)
        with_mm += rf_chain_stage_is_mm(&c->stages[s]);
    snprintf(whole->reason, sizeof whole->reason,
             "conventional: %d kernels (%d with a linear stage and its epilogue, %d without: "
             "a norm's), %lld bytes of scratch per row between them",
             n, with_mm, n - with_mm, (long long)(2 * cp->aux_row));
    if (wgmma) {
        size_t len = strlen(whole->reason);
        snprintf(whole->reason + len, sizeof whole->reason - len,
                 "; %d of them Hopper GEMMs (chain_wgmma)", gemms);
    }
    return RF_OK;
}
