/* The weight-streaming schedule of a chain (compile/chain_stream.h): the FFN shape, the
 * split of the hidden dimension over the SMs, the tiles and shared memory of the
 * chain_stream kernel, its cost line against chain_mma's, the choice, and its
 * kernel_spec.json / plan.json entries. */
#include "compile/chain_stream.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "chain/split.h"
#include "compile/compile_internal.h"

/* ---- the shape ---- */

rf_status_t rf_chain_stream_shape(const rf_chain_t *c, rf_chain_stream_shape_t *o) {
    memset(o, 0, sizeof *o);
    o->norm = -1;
    int s = 0, src = 0;
    if (c->n_stages > 0 && c->stages[0].op == RF_CHAIN_NORM && c->stages[0].src == 0) {
        if (!(rf_chain_norm_flags(c->stages[0].norm) & RF_CHAIN_NORM_STREAM))
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "the streaming schedule computes LayerNorm or RMSNorm before its "
                          "first linear, not %s",
                          rf_chain_norm_name(c->stages[0].norm));
        o->norm = 0;
        src = c->stages[0].dst;
        s = 1;
    }
    if (c->n_stages != s + 2)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "the chain has %d stages; the streaming schedule takes [norm ->] linear "
                      "or gated -> linear",
                      c->n_stages);
    const rf_chain_stage_t *f = &c->stages[s], *g = &c->stages[s + 1];
    if ((f->op != RF_CHAIN_LINEAR && f->op != RF_CHAIN_GATED) || f->src != src)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "stage %d (%s): the streaming schedule's first stage is a linear or gated "
                      "stage of X or of the norm",
                      s, rf_chain_op_name(f->op));
    for (int e = 0; e < f->n_epi; e++)
        if (f->epi[e].op != RF_CHAIN_EPI_ACT)
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "stage %d: a %s in the first linear's epilogue (the streaming "
                          "schedule's hidden takes activations only)",
                          s, rf_chain_epi_name(f->epi[e].op));
    if (g->op != RF_CHAIN_LINEAR || g->src != f->dst)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "stage %d (%s): the streaming schedule's second stage is a linear of the "
                      "hidden",
                      s + 1, rf_chain_op_name(g->op));
    for (int e = 0; e < g->n_epi; e++)
        if (g->epi[e].op == RF_CHAIN_EPI_MUL ||
            (g->epi[e].op == RF_CHAIN_EPI_ADD && g->epi[e].src != 0))
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "stage %d: epilogue %s of value %d (the streaming schedule's reducer "
                          "adds X only)",
                          s + 1, rf_chain_epi_name(g->epi[e].op), g->epi[e].src);
    if (c->values[f->dst].dtype != RF_DTYPE_F16)
        return RF_ERR(RF_CODE_UNSUPPORTED, "the hidden value %d is not fp16", f->dst);
    o->first = s;
    o->second = s + 1;
    o->c = f->k;
    o->h = f->n;
    o->n = g->n;
    o->gated = f->op == RF_CHAIN_GATED;
    return RF_OK;
}

/* ---- the plan ---- */

int64_t rf_chain_stream_scratch_bytes(int blocks, int64_t n, int64_t rows, int tile_rows,
                                      int64_t counters_per_tile) {
    int64_t partial = (int64_t)blocks * rows * n;
    int64_t counters = rf_div_up(rows, tile_rows) * counters_per_tile;
    return 4 * (partial + counters);
}

int64_t rf_chain_stream_counters_per_tile(const rf_chain_stream_plan_t *p) {
    return RF_STREAM_COUNTERS_PER_TILE + (p->timeline ? (int64_t)p->blocks * RF_STREAM_STAMPS : 0);
}

int rf_chain_stream_threads(const rf_chain_stream_plan_t *p) {
    return 32 * (p->warps + (p->tma ? 1 : 0));
}

/* Resident blocks per SM from shared memory, threads and the target's block limit. */
static int blocks_per_sm(const rf_chain_stream_plan_t *p, const rf_target_t *t) {
    int64_t by_smem = t->smem_per_sm / (p->smem_bytes + t->smem_reserved);
    int64_t by_threads = t->threads_per_sm / rf_chain_stream_threads(p);
    int64_t b = by_smem < by_threads ? by_smem : by_threads;
    return (int)(b < t->max_blocks_per_sm ? b : t->max_blocks_per_sm);
}

/* Shared memory at tile_rows and `buffers` ring buffers: X (none with x_stream), the hidden
 * slice, the norm's statistics, (TMA: the mbarriers,) the weight ring. A cp.async ring pads
 * every tile row by RF_SMEM_ROW_PAD; a TMA ring holds the tiles unpadded (swizzled), each
 * matrix's tile and each stage 1 KB aligned. With x_stream a W1 stage holds X's chunk
 * [tile_rows x k_chunk1] after the weight tiles, rows x_stride apart. */
static void layout(rf_chain_stream_plan_t *p, int tile_rows, int buffers, int x_stream) {
    const rf_chain_stream_shape_t *s = &p->shape;
    int mats = s->gated ? 2 : 1;
    p->tile_rows = tile_rows;
    p->weight_buffers = buffers;
    p->x_stream = x_stream;
    p->x_stride = (x_stream ? p->k_chunk1 : rf_round_up(s->c, p->k_chunk1)) + RF_SMEM_ROW_PAD;
    p->x_offset = 0;
    int64_t x_bytes = x_stream ? 0 : tile_rows * p->x_stride * 2;
    p->h_stride = p->slice + RF_SMEM_ROW_PAD;
    p->h_offset = rf_round_up(p->x_offset + x_bytes, 128);
    p->stats_offset = rf_round_up(p->h_offset + tile_rows * p->h_stride * 2, 128);
    int64_t stats_end = p->stats_offset + tile_rows * 2 * 4;
    if (p->tma) {
        const int64_t a = RF_STREAM_TMA_ALIGN;
        p->mbar_offset = rf_round_up(stats_end, 8);
        p->weight_smem_offset = rf_round_up(p->mbar_offset + 2 * 8 * buffers, a);
        int64_t r1 = mats * rf_round_up((int64_t)p->k_chunk1 * p->n_chunk1 * 2, a);
        int64_t r2 = rf_round_up((int64_t)p->k_chunk2 * p->n_chunk2 * 2, a);
        p->ring_bytes = r1 > r2 ? r1 : r2;
        p->smem_bytes = p->weight_smem_offset + buffers * p->ring_bytes + a;
        return;
    }
    p->mbar_offset = 0;
    p->weight_smem_offset = rf_round_up(stats_end, 128);
    int64_t r1 = (int64_t)mats * p->k_chunk1 * (p->n_chunk1 + RF_SMEM_ROW_PAD) * 2 +
                 (x_stream ? (int64_t)tile_rows * p->x_stride * 2 : 0);
    int64_t r2 = (int64_t)p->k_chunk2 * (p->n_chunk2 + RF_SMEM_ROW_PAD) * 2;
    p->ring_bytes = rf_round_up(r1 > r2 ? r1 : r2, 128);
    p->smem_bytes = p->weight_smem_offset + buffers * p->ring_bytes;
}

/* Every SM streams its slice at the device's rate; each row tile streams the weights again;
 * the partials are written once and read once. */
static double stream_cost(const rf_chain_stream_plan_t *p) {
    double partial = 2.0 * 4.0 * (double)p->blocks * (double)p->rows * (double)p->shape.n;
    return RF_STREAM_FIXED_US +
           (double)p->row_tiles * (double)p->weight_bytes / (RF_STREAM_HBM_GBS * 1e3) +
           partial / (RF_STREAM_REDUCE_GBS * 1e3);
}

double rf_chain_mma_cost_us(int64_t weight_bytes, int64_t rows, int tile_rows,
                            const rf_target_t *t) {
    int64_t tiles = rf_div_up(rows, tile_rows);
    double alone = (double)weight_bytes / (RF_STREAM_SM_GBS * 1e3);
    double waves = (double)rf_div_up(tiles, t->sm_count);
    double together = (double)weight_bytes * (double)tiles / (RF_STREAM_HBM_GBS * 1e3);
    return RF_STREAM_MMA_FIXED_US + (alone * waves > together ? alone * waves : together);
}

rf_status_t rf_chain_stream_plan_make(const rf_chain_t *c, int64_t rows, const rf_target_t *t,
                                      int flags, rf_chain_stream_plan_t *p) {
    int tma = flags & RF_STREAM_PLAN_TMA, wide = (flags & RF_STREAM_PLAN_WIDE) != 0;
    memset(p, 0, sizeof *p);
    if (rows < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "planning a stream for %lld rows", (long long)rows);
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_stream_shape(c, &p->shape));
    const rf_chain_stream_shape_t *s = &p->shape;
    p->rows = rows;
    p->warps = RF_STREAM_WARPS;
    if (tma && (s->h % 8 || s->n % 8))
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "TMA copies of the weights need 16-byte rows: the hidden width %lld and "
                      "the output width %lld must be multiples of 8",
                      (long long)s->h, (long long)s->n);
    p->tma = tma != 0;
    p->k_chunk1 = (int)(s->c >= 64 ? 64 : rf_round_up(s->c, 16));
    p->n_chunk2 = (int)(s->n >= 64 ? 64 : rf_round_up(s->n, 16));
    p->n_chunks2 = (int)rf_div_up(s->n, p->n_chunk2);
    p->weight_bytes = 2 * ((s->gated ? 2 : 1) * s->c * s->h + s->h * s->n);
    /* The slice: the fewest waves of blocks times the slice (a block's work), a larger
     * slice on a tie (fewer partials); one wave at most, since the reduction waits for every
     * block (all resident at once). */
    static const int64_t slices[] = {16, 32, 48, 64, 96, 128, 192, 256};
    int64_t best = 0, best_score = 0;
    for (size_t i = 0; i < sizeof slices / sizeof slices[0]; i++) {
        int64_t sl = slices[i];
        if (sl > rf_round_up(s->h, 16))
            break;
        if (sl == 96 && !wide)
            continue;
        int64_t blocks = rf_div_up(s->h, sl);
        if (blocks > t->sm_count)
            continue;
        int64_t score = rf_div_up(blocks, t->sm_count) * sl;
        if (!best || score <= best_score) {
            best = sl;
            best_score = score;
        }
    }
    if (!best)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "hidden width %lld: no slice of 16..256 columns splits it over at most "
                      "the %s's %d SMs (the streaming kernel's blocks must all be resident)",
                      (long long)s->h, t->name, t->sm_count);
    p->slice = best;
    p->blocks = (int)rf_div_up(s->h, best);
    /* every block reduces its share of Y's columns (a multiple of 8: whole 16-byte copies
     * of fp32) */
    p->reduce_cols = (int)rf_round_up(rf_div_up(s->n, p->blocks), 8);
    /* a slice of at most 96 is one tile wide (X's chunks then stream once per W1 k tile);
     * wider ones are multiples of 64 */
    p->n_chunk1 = (int)(best <= 96 ? best : 64);
    p->k_chunk2 = (int)(best <= 96 ? best : 64);
    RF_RETURN_IF_ERROR(rf_chain_split_covered(s->h, p->slice, p->blocks),
                       "the streaming schedule's split of stage %d", s->second);
    /* The row tile: the smallest of 16, 32, 64 holding the rows (64 above), then the deepest
     * ring that fits with X resident; else (cp.async ring, X wider than a chunk) with X
     * streamed in chunks beside W1, so that the weights still stream once; a smaller tile
     * when neither fits. The ring's depth is at least RF_STREAM_MIN_BUFFERS where X is
     * streamed (X's chunk makes a stage larger, and a shallow ring leaves the stream short
     * of requests). */
    static const int tiles[] = {16, 32, 64};
    /* the block's weight tiles (W1's, then W2's): a ring deeper than that is never filled */
    int64_t wtiles = (p->slice / p->n_chunk1) * (rf_round_up(s->c, p->k_chunk1) / p->k_chunk1) +
                     (p->slice / p->k_chunk2) * p->n_chunks2;
    int cap = p->tma ? RF_STREAM_TMA_MAX_BUFFERS : RF_STREAM_MAX_BUFFERS;
    int max_buffers = wtiles + 1 < cap ? (int)wtiles + 1 : cap;
    int first = 0;
    while (first < 2 && tiles[first] < rows)
        first++;
    for (int i = first; i >= 0; i--)
        for (int xs = 0; xs <= (p->tma || !wide || s->c <= p->k_chunk1 ? 0 : 1); xs++)
            for (int buffers = max_buffers; buffers >= (xs ? RF_STREAM_MIN_BUFFERS : 2);
                 buffers--) {
                layout(p, tiles[i], buffers, xs);
                if (p->smem_bytes <= t->smem_per_block)
                    goto fits;
            }
    return RF_ERR(RF_CODE_UNSUPPORTED,
                  "the streaming schedule needs %lld bytes of shared memory for X (%lld wide) at "
                  "16 rows, the hidden slice and two weight buffers; the %s gives a block %d",
                  (long long)p->smem_bytes, (long long)s->c, t->name, t->smem_per_block);
fits:
    p->row_tiles = (int)rf_div_up(rows, p->tile_rows);
    p->reduce_rows = 1;
    while (p->reduce_rows < rows && p->reduce_rows < p->tile_rows)
        p->reduce_rows *= 2;
    if (blocks_per_sm(p, t) < 1)
        return RF_ERR(RF_CODE_UNSUPPORTED, "the streaming kernel leaves no block resident");
    p->cost_us = stream_cost(p);
    p->mma_cost_us = rf_chain_mma_cost_us(p->weight_bytes, rows, 16, t);
    return RF_OK;
}

/* ---- the choice ---- */

rf_status_t rf_chain_stream_choose(const rf_chain_t *c, const rf_compile_options_t *o, int64_t rows,
                                   const rf_target_t *t, rf_status_t mma, rf_chain_plan_t *p,
                                   rf_chain_stream_plan_t *s, int *out_chosen) {
    const char *sched = o->schedule ? o->schedule : "auto";
    int forced = !strcmp(sched, "chain-stream");
    const char *spelling = rf_fault_spelling(o->fault, "chain-stream");
    *out_chosen = 0;
    if (spelling && !strcmp(sched, "chain")) {
        rf_status_free(mma);
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "--plant-fault %s is planted in the chain_stream kernel; --schedule chain "
                      "has none",
                      o->fault);
    }
    if (!strcmp(sched, "chain"))
        return mma;
    /* the TMA ring where asked for, or where the planted fault is in it; auto: where the
     * weights outgrow the L2 (RF_STREAM_TMA_MIN_BYTES), TMA can stride over them, and the
     * ring's tile holds as many rows as cp.async's (whose X may stream beside W1) */
    int tma = o->stream_tma == 1 || (spelling && !strcmp(spelling, "stream_ring_no_wait"));
    int wide = o->stream_wide == 1 ? RF_STREAM_PLAN_WIDE : 0;
    rf_status_t st =
        rf_chain_stream_plan_make(c, rows, t, (tma ? RF_STREAM_PLAN_TMA : 0) | wide, s);
    if (!st && !tma && o->stream_tma < 0 && s->weight_bytes > RF_STREAM_TMA_MIN_BYTES) {
        rf_chain_stream_plan_t ring;
        rf_status_t no = rf_chain_stream_plan_make(c, rows, t, RF_STREAM_PLAN_TMA | wide, &ring);
        if (no)
            rf_status_free(no); /* cp.async's plan stands */
        else if (ring.row_tiles <= s->row_tiles)
            *s = ring; /* (not where X streamed beside W1 saves a pass over the weights) */
    }
    if (!st && s->tma && o->stream_x_first == 1)
        s->x_lead = 2; /* (auto: off until a GPU run has checked it) */
    if (st && (forced || spelling)) {
        rf_status_free(mma);
        return rf_status_annotate(st, "--schedule chain-stream");
    }
    if (st) {
        rf_status_free(st);
        return mma; /* chain_mma's plan, or its refusal */
    }
    int wins = s->cost_us < s->mma_cost_us;
    int decode = rows <= RF_STREAM_MAX_ROWS;
    if (!mma && !forced && !spelling && !(decode && wins))
        return RF_OK;
    const char *why = forced || spelling ? "forced"
                      : mma              ? "chain_mma does not fit"
                                         : "few rows and large weights";
    if (mma) {
        /* the hash and weight offsets, planned as for chain_mma with no shared-memory limit */
        rf_target_t unbounded = *t;
        unbounded.smem_per_block = INT32_MAX;
        rf_status_free(mma);
        RF_RETURN_IF_ERROR(rf_chain_plan_make(c, rows, &unbounded, 16, p),
                           "placing the weights of the streaming schedule");
        p->target = *t;
    }
    *out_chosen = 1;
    if (spelling)
        snprintf(s->fault, sizeof s->fault, "%s", spelling);
    s->check_delay = o->check_delay;
    s->timeline = o->timeline;
    snprintf(p->name, sizeof p->name, "stream_%s", p->hash);
    p->tile_rows = s->tile_rows;
    p->warps = rf_chain_stream_threads(s) / 32; /* the grid rule counts every thread */
    p->smem_bytes = s->smem_bytes;
    p->weight_buffers = s->weight_buffers;
    snprintf(p->reason, sizeof p->reason,
             "%s: %d blocks of %lld hidden columns stream %lld weight bytes over every SM "
             "(cost line %.1f us against chain_mma's %.1f us), %d rows per tile, %d weight "
             "buffers (%s), %lld bytes of shared memory",
             why, s->blocks, (long long)s->slice, (long long)s->weight_bytes, s->cost_us,
             s->mma_cost_us, s->tile_rows, s->weight_buffers,
             s->tma ? "TMA from a producer warp" : "cp.async", (long long)s->smem_bytes);
    return RF_OK;
}

/* ---- JSON ---- */

static void write_entry(rf_json_writer_t *w, const rf_chain_plan_t *p,
                        const rf_chain_stream_plan_t *s, int with_facts) {
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", p->name);
    rf_json_key_string(w, "mode", "chain_stream");
    rf_json_key_int(w, "in_width", rf_chain_in_width(p->chain));
    rf_json_key_int(w, "out_width", rf_chain_out_width(p->chain));
    rf_json_key_int(w, "rows", s->rows);
    rf_json_key_int(w, "tile_rows", s->tile_rows);
    rf_json_key_int(w, "warps", s->warps);
    rf_json_key_int(w, "threads", rf_chain_stream_threads(s));
    rf_json_key_int(w, "smem_bytes", s->smem_bytes);
    rf_json_key_int(w, "blocks", s->blocks);
    rf_json_key_int(w, "slice", s->slice);
    rf_json_key_int(w, "norm", s->shape.norm);
    rf_json_key_int(w, "first", s->shape.first);
    rf_json_key_int(w, "second", s->shape.second);
    rf_json_key_int(w, "k_chunk1", s->k_chunk1);
    rf_json_key_int(w, "n_chunk1", s->n_chunk1);
    rf_json_key_int(w, "k_chunk2", s->k_chunk2);
    rf_json_key_int(w, "n_chunk2", s->n_chunk2);
    rf_json_key_int(w, "n_chunks2", s->n_chunks2);
    rf_json_key_int(w, "weight_buffers", s->weight_buffers);
    rf_json_key_int(w, "x_offset", s->x_offset);
    rf_json_key_int(w, "x_stride", s->x_stride);
    rf_json_key_int(w, "h_offset", s->h_offset);
    rf_json_key_int(w, "h_stride", s->h_stride);
    rf_json_key_int(w, "stats_offset", s->stats_offset);
    rf_json_key_int(w, "weight_smem_offset", s->weight_smem_offset);
    rf_json_key_int(w, "ring_bytes", s->ring_bytes);
    rf_json_key_int(w, "reduce_cols", s->reduce_cols);
    rf_json_key_int(w, "reduce_rows", s->reduce_rows);
    rf_json_key_string(w, "weight_layout", "row_major");
    rf_json_key_string(w, "weight_copy", s->tma ? "tma" : "cp_async");
    if (s->x_stream)
        rf_json_key_bool(w, "x_stream", 1);
    if (s->x_lead)
        rf_json_key_int(w, "x_lead", s->x_lead);
    if (s->tma)
        rf_json_key_int(w, "mbar_offset", s->mbar_offset);
    rf_chain_json_values(w, p, 0);
    rf_chain_json_stages(w, p);
    if (s->fault[0])
        rf_json_key_string(w, "fault", s->fault);
    if (s->check_delay > 0)
        rf_json_key_int(w, "check_delay", s->check_delay);
    if (s->timeline) {
        rf_json_key_bool(w, "timeline", 1);
        rf_json_key_int(w, "stamps", RF_STREAM_STAMPS);
    }
    if (with_facts) {
        rf_json_key_int(w, "grid", s->blocks);
        rf_json_key_int(w, "scratch_partial_per_row", (int64_t)s->blocks * s->shape.n);
        rf_json_key_int(w, "scratch_counters_per_tile", rf_chain_stream_counters_per_tile(s));
        rf_json_key_int(w, "weight_bytes", s->weight_bytes);
        rf_json_key_double(w, "cost_us", s->cost_us);
        rf_json_key_double(w, "chain_mma_cost_us", s->mma_cost_us);
        rf_json_key_int(w, "registers", p->registers);
        rf_json_key_int(w, "local_ops", p->local_ops);
        rf_json_key_int(w, "blocks_per_sm", p->blocks_per_sm);
        rf_json_key_bool(w, "grid_balanced", 0);
    }
    rf_json_object_end(w);
}

static void stream_entry(rf_json_writer_t *w, const rf_chain_plan_t *p, const void *ctx,
                         int with_facts) {
    write_entry(w, p, (const rf_chain_stream_plan_t *)ctx, with_facts);
}

rf_status_t rf_chain_stream_spec_write(const rf_chain_plan_t *p, const rf_chain_stream_plan_t *s,
                                       const char *path) {
    return rf_chain_spec_write_entry(p, stream_entry, s, path);
}

rf_status_t rf_chain_stream_plan_write(const rf_chain_plan_t *p, const rf_chain_stream_plan_t *s,
                                       const char *model, int64_t wh_offset, int64_t wf_offset,
                                       const char *path) {
    return rf_chain_plan_write_entry(p, "chain_stream", stream_entry, s, model, wh_offset,
                                     wf_offset, path);
}
