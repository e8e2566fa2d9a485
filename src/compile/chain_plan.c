/* The chain planner (compile/chain_plan.h, rf_chain_plan_make): tile rows, warps, chunks,
 * the shared-memory layout of every value with lifetime reuse, the weight ring and the
 * offsets of every weight, checked against the target's shared memory. */
#include <stdio.h>
#include <string.h>

#include "compile/chain_plan.h"

int rf_chain_stage_is_mm(const rf_chain_stage_t *s) {
    return s->op == RF_CHAIN_LINEAR || s->op == RF_CHAIN_GATED;
}

int rf_chain_stage_reads(const rf_chain_stage_t *s, int *out) {
    int n = 0;
    if (s->src >= 0)
        out[n++] = s->src;
    if (s->src2 >= 0)
        out[n++] = s->src2;
    for (int e = 0; e < s->n_epi; e++)
        if (s->epi[e].op != RF_CHAIN_EPI_ACT)
            out[n++] = s->epi[e].src;
    return n;
}

/* FNV-1a 64 over the structure and the weights' bits. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static void chain_hash(const rf_chain_t *c, char out[17]) {
    uint64_t h = 1469598103934665603ull;
    for (int v = 0; v < c->n_values; v++) {
        h = fnv(h, &c->values[v].width, sizeof c->values[v].width);
        h = fnv(h, &c->values[v].dtype, sizeof c->values[v].dtype);
    }
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        int64_t w = c->values[st->dst].width;
        int head[6] = {(int)st->op, st->src, st->src2, (int)st->fn, st->n_epi, (int)st->norm};
        h = fnv(h, head, sizeof head);
        for (int e = 0; e < st->n_epi; e++) {
            int ep[3] = {(int)st->epi[e].op, (int)st->epi[e].fn, st->epi[e].src};
            h = fnv(h, ep, sizeof ep);
            h = fnv(h, &st->epi[e].alpha, sizeof st->epi[e].alpha);
        }
        h = fnv(h, &st->eps, sizeof st->eps);
        h = fnv(h, &st->alpha, sizeof st->alpha);
        const float *arrays[6] = {st->w, st->b, st->wu, st->bu, st->gamma, st->beta};
        int64_t lens[6] = {st->k * st->n, st->n, st->k * st->n, st->n, w, w};
        for (int i = 0; i < 6; i++)
            if (arrays[i])
                h = fnv(h, arrays[i], sizeof(float) * (size_t)lens[i]);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* Lifetimes, padded widths, row strides and slot sizes at tile_rows for the kernel of stages
 * [first_stage, end_stage): a value produced in the range gets a slot when a stage of the
 * range reads it; one produced before the range gets one when a stage reads its whole rows
 * (a matmul's or a norm's input: it is staged from global memory and lives from the range's
 * start), and none when it is only read element by element (an epilogue's or an elementwise
 * stage's operand: the kernel reads it from global memory where it uses it). Padded widths
 * and chunks are the chain's, whatever the range (every kernel of a chain agrees on them). */
static void plan_values(const rf_chain_t *c, rf_chain_plan_t *p) {
    int s0 = p->first_stage, s1 = p->end_stage;
    char read[RF_CHAIN_MAX_STAGES + 1] = {0}, rows_read[RF_CHAIN_MAX_STAGES + 1] = {0};
    for (int v = 0; v < c->n_values; v++) {
        rf_chain_value_plan_t *vp = &p->values[v];
        vp->padded_width = rf_round_up(c->values[v].width, 16);
        vp->first = v - 1; /* value v is produced by stage v - 1; X (-1) before stage 0 */
        if (vp->first < s0 - 1)
            vp->first = s0 - 1;
        vp->last = vp->first;
    }
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        int reads[2 + RF_CHAIN_MAX_EPILOGUE];
        int n = rf_chain_stage_reads(st, reads);
        for (int i = 0; i < n && s >= s0 && s < s1; i++) {
            read[reads[i]] = 1;
            if (p->values[reads[i]].last < s)
                p->values[reads[i]].last = s;
        }
        if (s >= s0 && s < s1 && (rf_chain_stage_is_mm(st) || st->op == RF_CHAIN_NORM))
            rows_read[st->src] = 1;
        if (rf_chain_stage_is_mm(st)) {
            rf_chain_stage_plan_t *sp = &p->stages[s];
            sp->k_chunk = (int)(st->k >= 64 ? 64 : rf_round_up(st->k, 16));
            sp->n_chunk = (int)(st->n >= 64 ? 64 : rf_round_up(st->n, 16));
            sp->k_pad = rf_round_up(st->k, sp->k_chunk);
            if (p->values[st->src].padded_width < sp->k_pad)
                p->values[st->src].padded_width = sp->k_pad;
        }
    }
    int last = c->n_values - 1;
    for (int v = 0; v < c->n_values; v++) {
        rf_chain_value_plan_t *vp = &p->values[v];
        int64_t eb = c->values[v].dtype == RF_DTYPE_F16 ? 2 : 4;
        vp->row_stride = vp->padded_width + 16 / eb;
        /* the whole chain's kernel gives every value but Y a slot */
        int whole = s0 == 0 && s1 == c->n_stages;
        int slot = whole || (v - 1 >= s0 ? read[v] : rows_read[v]);
        for (int st = s0; st < s1; st++)
            if (p->stages[st].a_stream && c->stages[st].src == v)
                slot = 0; /* streamed through the ring */
        vp->slot_bytes =
            v == last || !slot ? 0 : rf_round_up((int64_t)p->tile_rows * vp->row_stride * eb, 128);
    }
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        if (!rf_chain_stage_is_mm(st))
            continue;
        rf_chain_stage_plan_t *sp = &p->stages[s];
        int64_t dst_pad =
            st->dst == last ? rf_round_up(st->n, 16) : p->values[st->dst].padded_width;
        sp->n_pad = rf_round_up(dst_pad, sp->n_chunk);
    }
}

/* First fit of the slots in stage order: a value takes the lowest 128-aligned offset whose
 * range no value alive at the same time holds. Returns the end of the slots. */
static int64_t place_values(const rf_chain_t *c, rf_chain_plan_t *p) {
    int64_t end = 0;
    int last = c->n_values - 1;
    for (int v = 0; v < c->n_values; v++) {
        rf_chain_value_plan_t *vp = &p->values[v];
        if (v == last || vp->slot_bytes == 0) {
            vp->smem_offset = -1;
            continue;
        }
        int64_t off = 0;
        for (int moved = 1; moved;) {
            moved = 0;
            for (int u = 0; u < v; u++) {
                const rf_chain_value_plan_t *q = &p->values[u];
                if (q->smem_offset < 0 || q->last < vp->first || vp->last < q->first)
                    continue; /* not alive together */
                if (off < q->smem_offset + q->slot_bytes && q->smem_offset < off + vp->slot_bytes) {
                    off = rf_round_up(q->smem_offset + q->slot_bytes, 128);
                    moved = 1;
                }
            }
        }
        vp->smem_offset = off;
        if (off + vp->slot_bytes > end)
            end = off + vp->slot_bytes;
    }
    return end;
}

static int64_t ring_bytes(const rf_chain_t *c, const rf_chain_plan_t *p) {
    int64_t r = 0;
    for (int s = p->first_stage; s < p->end_stage; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        if (!rf_chain_stage_is_mm(st))
            continue;
        int64_t b = (st->op == RF_CHAIN_GATED ? 2 : 1) * (int64_t)p->stages[s].k_chunk *
                    (p->stages[s].n_chunk + RF_SMEM_ROW_PAD) * 2;
        if (p->stages[s].a_stream) /* the input's tile, after W's */
            b += (int64_t)p->tile_rows * (p->stages[s].k_chunk + RF_SMEM_ROW_PAD) * 2;
        r = b > r ? b : r;
    }
    return r;
}

/* Resident weights (chain_plan.h): every stage's w_smem; returns their bytes, or 0 where the
 * kernel is not the whole chain's or the weights exceed RF_CHAIN_RESIDENT_MAX. */
static int64_t place_resident(const rf_chain_t *c, rf_chain_plan_t *p) {
    int64_t off = 0;
    if (p->first_stage != 0 || p->end_stage != c->n_stages)
        return 0;
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        p->stages[s].w_smem = -1;
        if (!rf_chain_stage_is_mm(st))
            continue;
        if (p->stages[s].a_stream)
            return 0;
        p->stages[s].w_smem = off;
        off = rf_round_up(off + (st->op == RF_CHAIN_GATED ? 2 : 1) * p->stages[s].k_pad *
                                    (p->stages[s].n_pad + RF_SMEM_ROW_PAD) * 2,
                          128);
    }
    return off <= RF_CHAIN_RESIDENT_MAX ? off : 0;
}

/* The layout at tile_rows; *fits says whether it fits the target. */
static void layout(const rf_chain_t *c, const rf_target_t *t, int tile_rows, rf_chain_plan_t *p,
                   int *fits) {
    p->tile_rows = tile_rows;
    p->warps = tile_rows == 64 ? 8 : 4;
    plan_values(c, p);
    int64_t slots = place_values(c, p);
    p->weight_smem_offset = rf_round_up(slots, 128);
    int64_t resident = place_resident(c, p);
    if (resident > 0 && p->weight_smem_offset + resident <= t->smem_per_block) {
        p->ring_bytes = resident;
        p->weight_buffers = 0;
        p->smem_bytes = p->weight_smem_offset + resident;
        *fits = 1;
        return;
    }
    for (int s = 0; s < c->n_stages; s++)
        p->stages[s].w_smem = -1;
    p->ring_bytes = ring_bytes(c, p);
    p->weight_buffers = 2;
    p->smem_bytes = p->weight_smem_offset + 2 * p->ring_bytes;
    if (p->smem_bytes > t->smem_per_block) {
        p->weight_buffers = 1;
        p->smem_bytes = p->weight_smem_offset + p->ring_bytes;
    }
    *fits = p->smem_bytes <= t->smem_per_block;
}

/* The refusal when nothing fits: the stage across which the live slots are largest. */
static rf_status_t no_fit(const rf_chain_t *c, const rf_chain_plan_t *p, const rf_target_t *t) {
    int worst = p->first_stage;
    int64_t worst_bytes = -1;
    for (int s = p->first_stage; s < p->end_stage; s++) {
        int64_t b = 0;
        for (int v = 0; v < c->n_values; v++)
            if (p->values[v].first <= s && s <= p->values[v].last)
                b += p->values[v].slot_bytes;
        if (b > worst_bytes) {
            worst_bytes = b;
            worst = s;
        }
    }
    const rf_chain_stage_t *st = &c->stages[worst];
    char live[512] = "";
    size_t used = 0;
    for (int v = 0; v < c->n_values && used < sizeof live; v++)
        if (p->values[v].first <= worst && worst <= p->values[v].last && p->values[v].slot_bytes)
            used += (size_t)snprintf(live + used, sizeof live - used, "%sv%d [%lld] %s",
                                     used ? ", " : "", v, (long long)c->values[v].width,
                                     rf_dtype_name(c->values[v].dtype));
    return RF_ERR(RF_CODE_UNSUPPORTED,
                  "stage %d (%s %lld -> %lld): the values alive across it (%s) need %lld bytes "
                  "of shared memory for a tile of %d rows, and the weight ring %lld more; the %s "
                  "gives a block %d bytes. rowfuse keeps every value of a row tile on chip (the "
                  "weights stream); a narrower hidden width fits",
                  worst, rf_chain_op_name(st->op), (long long)c->values[st->src].width,
                  (long long)c->values[st->dst].width, live, (long long)worst_bytes, p->tile_rows,
                  (long long)p->ring_bytes, t->name, t->smem_per_block);
}

static void place_weights(const rf_chain_t *c, rf_chain_plan_t *p) {
    int64_t wh = 0, wf = 0;
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        rf_chain_stage_plan_t *sp = &p->stages[s];
        int64_t w = c->values[st->dst].width;
        sp->w = sp->wu = sp->b = sp->bu = sp->gamma = sp->beta = -1;
        if (rf_chain_stage_is_mm(st)) {
            sp->w = wh;
            wh = rf_round_up(wh + st->k * st->n, 8);
            if (st->op == RF_CHAIN_GATED) {
                sp->wu = wh;
                wh = rf_round_up(wh + st->k * st->n, 8);
            }
            if (st->b) {
                sp->b = wf;
                wf = rf_round_up(wf + st->n, 8);
            }
            if (st->op == RF_CHAIN_GATED && st->bu) {
                sp->bu = wf;
                wf = rf_round_up(wf + st->n, 8);
            }
        } else if (st->op == RF_CHAIN_NORM) {
            if (st->gamma) {
                sp->gamma = wf;
                wf = rf_round_up(wf + w, 8);
            }
            if (st->beta) {
                sp->beta = wf;
                wf = rf_round_up(wf + w, 8);
            }
        }
    }
    p->wh_elems = wh;
    p->wf_elems = wf;
}

/* Marks (on = 1) or clears the matmuls of the range whose input may stream (comment of
 * rf_chain_plan_range in chain_plan.h); returns how many. */
static int mark_streams(const rf_chain_t *c, rf_chain_plan_t *p, int on) {
    int n = 0;
    for (int s = p->first_stage; s < p->end_stage; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        p->stages[s].a_stream = 0;
        if (!on || !rf_chain_stage_is_mm(st) || st->src - 1 >= p->first_stage)
            continue;
        int others = 0;
        for (int u = p->first_stage; u < p->end_stage; u++) {
            int reads[2 + RF_CHAIN_MAX_EPILOGUE];
            int k = rf_chain_stage_reads(&c->stages[u], reads);
            for (int i = 0; i < k; i++)
                others += reads[i] == st->src && !(u == s && i == 0);
        }
        if (!others) {
            p->stages[s].a_stream = 1;
            n++;
        }
    }
    return n;
}

rf_status_t rf_chain_plan_range(const rf_chain_t *c, int64_t rows, const rf_target_t *t,
                                int tile_rows, int first, int end, int stream_inputs,
                                rf_chain_plan_t *p) {
    memset(p, 0, sizeof *p);
    RF_RETURN_IF_ERROR(rf_chain_validate(c), "planning the chain");
    if (rows < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "planning a chain for %lld rows", (long long)rows);
    if (tile_rows != 0 && tile_rows != 16 && tile_rows != 32 && tile_rows != 64)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "tile rows %d: a chain tile has 16, 32 or 64",
                      tile_rows);
    if (first < 0 || end > c->n_stages || first >= end)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "stages [%d, %d) of a chain of %d", first, end,
                      c->n_stages);
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        if (st->op == RF_CHAIN_MUL)
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "stage %d: a mul stage is not in the plan's stage "
                          "kinds (it must be fused first)",
                          s);
        if (st->op == RF_CHAIN_NORM && (rf_chain_norm_flags(st->norm) & RF_CHAIN_NORM_EPS) &&
            !(st->eps > 0.0))
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "stage %d (norm): epsilon %g; the kernels need a positive epsilon", s,
                          st->eps);
    }
    p->chain = c;
    p->target = *t;
    p->rows = rows;
    p->first_stage = first;
    p->end_stage = end;
    chain_hash(c, p->hash);
    snprintf(p->name, sizeof p->name, "chain_%s", p->hash);
    static const int tiles[3] = {64, 32, 16};
    int chosen = 0, fits = 0;
    for (int i = 0; i < 3 && !chosen; i++) {
        int tr = tiles[i];
        if (tile_rows && tr != tile_rows)
            continue;
        /* auto: the largest tile that still gives every SM a tile, then the one that fits */
        if (!tile_rows && tr > 16 && rows < (int64_t)tr * t->sm_count)
            continue;
        mark_streams(c, p, 0);
        layout(c, t, tr, p, &fits);
        if (!fits && stream_inputs && mark_streams(c, p, 1))
            layout(c, t, tr, p, &fits);
        if (fits) {
            chosen = tr;
        } else if (!tile_rows && tr > 16) {
            continue;
        } else {
            return no_fit(c, p, t);
        }
    }
    if (!chosen)
        return RF_ERR(RF_CODE_INTERNAL, "no tile was tried");
    place_weights(c, p);
    char wb[64];
    if (p->weight_buffers)
        snprintf(wb, sizeof wb, "%d weight buffer%s", p->weight_buffers,
                 p->weight_buffers == 1 ? "" : "s");
    else
        snprintf(wb, sizeof wb, "weights resident (%lld bytes)", (long long)p->ring_bytes);
    snprintf(p->reason, sizeof p->reason,
             "%d rows per tile (%s), %d warps, %s, %lld bytes of shared memory", chosen,
             tile_rows      ? "forced"
             : chosen == 16 ? "the smallest: the most tiles for the SMs or the largest that fits"
                            : "the largest that still gives every SM a tile",
             p->warps, wb, (long long)p->smem_bytes);
    return RF_OK;
}

int rf_chain_plan_warp_rows(const rf_chain_t *c, const rf_target_t *t, int warp_tile_rows,
                            rf_chain_plan_t *p, char *why, size_t why_size) {
    int last = c->n_values - 1;
    const char *rule = NULL;
    int at = -1;
    int64_t widest = 0; /* the widest padded value or matmul output */
    if (p->first_stage != 0 || p->end_stage != c->n_stages || p->weight_buffers != 0)
        rule = "its weights are not resident in the whole chain's kernel";
    for (int s = 0; s < c->n_stages && !rule; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        int64_t w = p->values[s].padded_width > p->stages[s].n_pad ? p->values[s].padded_width
                                                                   : p->stages[s].n_pad;
        widest = w > widest ? w : widest;
        at = s;
        if (st->op != RF_CHAIN_LINEAR || st->src != s)
            rule = "it is not a linear of the previous stage's output";
        for (int e = 0; e < st->n_epi && !rule; e++)
            if (st->epi[e].op != RF_CHAIN_EPI_ACT)
                rule = "its epilogue reads another value";
        if (!rule && s + 1 < c->n_stages &&
            (c->values[s + 1].dtype != RF_DTYPE_F16 ||
             p->stages[s].n_pad != p->stages[s + 1].k_pad))
            rule = "its output is not an fp16 operand of the next linear's whole k extent";
        if (!rule && w > RF_CHAIN_WARP_ROWS_MAX)
            rule = "a width is above the registers' limit";
    }
    if (rule) {
        if (at >= 0)
            snprintf(why, why_size, "stage %d (%s): %s", at, rf_chain_op_name(c->stages[at].op),
                     rule);
        else
            snprintf(why, why_size, "%s", rule);
        return 0;
    }
    enum { WARPS = 4 };
    int wt = warp_tile_rows ? warp_tile_rows : widest <= RF_CHAIN_WARP_ROWS_PAIR_MAX ? 32 : 16;
    if (wt != 16 && wt != 32) {
        snprintf(why, why_size, "warp tiles of %d rows (16 or 32)", wt);
        return 0;
    }
    if (wt == 32 && widest > RF_CHAIN_WARP_ROWS_PAIR_MAX) {
        snprintf(why, why_size, "32-row warp tiles take widths up to %d (this chain: %lld)",
                 RF_CHAIN_WARP_ROWS_PAIR_MAX, (long long)widest);
        return 0;
    }
    int64_t x_slot = 2 * (int64_t)wt * WARPS * p->values[0].row_stride * 2;
    int64_t woff = rf_round_up(x_slot, 128);
    if (woff + p->ring_bytes > t->smem_per_block) {
        snprintf(why, why_size, "X's two tiles and the weights need %lld bytes; the %s gives %d",
                 (long long)(woff + p->ring_bytes), t->name, t->smem_per_block);
        return 0;
    }
    p->warp_rows = 1;
    p->x_buffers = 2;
    p->warp_tile_rows = wt;
    p->warps = WARPS;
    p->tile_rows = wt * WARPS;
    for (int v = 0; v <= last; v++) {
        p->values[v].smem_offset = v == 0 ? 0 : -1;
        p->values[v].slot_bytes = v == 0 ? x_slot : 0;
    }
    p->weight_smem_offset = woff;
    p->smem_bytes = woff + p->ring_bytes;
    snprintf(p->reason, sizeof p->reason,
             "warp rows: each of %d warps its own %d-row tiles%s, the hidden values in its "
             "registers from linear to linear, X in %d buffers per warp, weights resident "
             "(%lld bytes), %lld bytes of shared memory",
             WARPS, wt, warp_tile_rows ? " (forced)" : "", p->x_buffers, (long long)p->ring_bytes,
             (long long)p->smem_bytes);
    return 1;
}

int rf_chain_plan_ring_depth(rf_chain_plan_t *p, const rf_target_t *t, int buffers) {
    if (p->weight_buffers < 1 || p->ring_bytes <= 0)
        return p->weight_buffers;
    if (buffers > RF_CHAIN_MAX_BUFFERS)
        buffers = RF_CHAIN_MAX_BUFFERS;
    while (buffers > p->weight_buffers &&
           p->weight_smem_offset + buffers * p->ring_bytes > t->smem_per_block)
        buffers--;
    if (buffers > p->weight_buffers) {
        p->weight_buffers = buffers;
        p->smem_bytes = p->weight_smem_offset + buffers * p->ring_bytes;
    }
    int whole = p->first_stage == 0 && p->end_stage == p->chain->n_stages;
    for (int s = p->first_stage; whole && s < p->end_stage; s++)
        whole = !p->stages[s].a_stream;
    p->ring_ahead = p->weight_buffers > 2 && whole;
    return p->weight_buffers;
}

rf_status_t rf_chain_plan_make(const rf_chain_t *c, int64_t rows, const rf_target_t *t,
                               int tile_rows, rf_chain_plan_t *p) {
    if (!c || c->n_stages < 1) {
        memset(p, 0, sizeof *p);
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "planning a chain without stages");
    }
    int n = c->n_stages;
    return rf_chain_plan_range(c, rows, t, tile_rows, 0, n, 0, p);
}
