/* A chain package (compile/chain_plan.h): weights.bin, kernel_spec.json with the chain_mma
 * kernel entry, the generator run as a tool, its facts, the grid rule and plan.json with the
 * "chain" object the runtime and the chain loader read.
 *
 * plan.json of a chain: "format" "rowfuse-package", "version", "model", "graph_hash",
 * "block": "chain", "rows", "schedule": "chain", "schedule_reason", "target", "max_grid",
 * "library", "generator", "chain": {"in_width", "out_width", "wh_offset", "wh_elems",
 * "wf_offset", "wf_elems" (byte offsets into weights.bin, 16-byte aligned; element counts),
 * "values": [{"id", "width", "dtype"}], "stages": [the kernel entry's stage objects]}, and
 * "kernels": [the chain_mma kernel entry with "registers", "local_ops", "blocks_per_sm",
 * "grid_balanced"]. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json.h"
#include "base/tool.h"
#include "compile/chain_conv.h"
#include "compile/chain_plan.h"
#include "compile/chain_stream.h"
#include "compile/compile_internal.h"
#include "rowfuse/onnx.h"
#include "rowfuse/tensor.h"
#include "rowfuse/verify.h"

/* ---- weights.bin ---- */

static int put(FILE *f, const void *p, size_t n) {
    return n == 0 || fwrite(p, 1, n, f) == n;
}

/* Writes n fp16 (from fp32) at the current position. */
static int put_f16(FILE *f, const float *x, int64_t n) {
    uint16_t buf[1024];
    for (int64_t i = 0; i < n; i += 1024) {
        int64_t m = n - i < 1024 ? n - i : 1024;
        for (int64_t j = 0; j < m; j++)
            buf[j] = rf_f32_to_f16(x[i + j]);
        if (!put(f, buf, (size_t)m * 2))
            return 0;
    }
    return 1;
}

static int pad_to(FILE *f, int64_t *pos, int64_t target) {
    static const char zeros[64];
    while (*pos < target) {
        int64_t n = target - *pos < 64 ? target - *pos : 64;
        if (!put(f, zeros, (size_t)n))
            return 0;
        *pos += n;
    }
    return 1;
}

rf_status_t rf_chain_weights_write(const rf_chain_plan_t *p, const char *path,
                                   int64_t *out_wh_offset, int64_t *out_wf_offset) {
    const rf_chain_t *c = p->chain;
    FILE *f = fopen(path, "wb");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot open '%s' for writing: %s", path, strerror(errno));
    int ok = 1;
    int64_t pos = 0, wh0 = 0, wf0 = 0;
    /* wh: element offsets as planned, gaps zero */
    for (int s = 0; ok && s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        const rf_chain_stage_plan_t *sp = &p->stages[s];
        if (sp->w >= 0)
            ok = pad_to(f, &pos, wh0 + 2 * sp->w) && put_f16(f, st->w, st->k * st->n);
        if (ok && sp->w >= 0)
            pos += 2 * st->k * st->n;
        if (ok && sp->wu >= 0) {
            ok = pad_to(f, &pos, wh0 + 2 * sp->wu) && put_f16(f, st->wu, st->k * st->n);
            pos += 2 * st->k * st->n;
        }
    }
    wf0 = (wh0 + 2 * p->wh_elems + 15) / 16 * 16;
    ok = ok && pad_to(f, &pos, wf0);
    for (int s = 0; ok && s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        const rf_chain_stage_plan_t *sp = &p->stages[s];
        int64_t w = c->values[st->dst].width;
        const float *arr[4] = {st->b, st->op == RF_CHAIN_GATED ? st->bu : NULL, st->gamma,
                               st->beta};
        int64_t off[4] = {sp->b, sp->bu, sp->gamma, sp->beta};
        int64_t len[4] = {st->n, st->n, w, w};
        for (int i = 0; ok && i < 4; i++) {
            if (off[i] < 0 || !arr[i])
                continue;
            ok = pad_to(f, &pos, wf0 + 4 * off[i]) && put(f, arr[i], (size_t)len[i] * 4);
            pos += 4 * len[i];
        }
    }
    ok = ok && pad_to(f, &pos, wf0 + 4 * p->wf_elems);
    if (fclose(f) != 0 || !ok)
        return RF_ERR(RF_CODE_IO_ERROR, "error writing '%s'", path);
    *out_wh_offset = wh0;
    *out_wf_offset = wf0;
    return RF_OK;
}

/* ---- JSON ---- */

/* Stage s of the plan; `kernel` (a kernel entry, not the chain object) adds where its weights
 * live in the kernel's shared memory when they are resident. */
static void write_stage(rf_json_writer_t *w, const rf_chain_plan_t *p, int s, int kernel) {
    const rf_chain_t *c = p->chain;
    const rf_chain_stage_t *st = &c->stages[s];
    const rf_chain_stage_plan_t *sp = &p->stages[s];
    rf_json_object_begin(w);
    rf_json_key_string(w, "op", rf_chain_op_name(st->op));
    switch (st->op) {
    case RF_CHAIN_LINEAR:
    case RF_CHAIN_GATED:
        rf_json_key_int(w, "src", st->src);
        rf_json_key_int(w, "dst", st->dst);
        rf_json_key_int(w, "k", st->k);
        rf_json_key_int(w, "n", st->n);
        rf_json_key_int(w, "k_pad", sp->k_pad);
        rf_json_key_int(w, "n_pad", sp->n_pad);
        if (st->op == RF_CHAIN_LINEAR) {
            rf_json_key_int(w, "w", sp->w);
            rf_json_key_int(w, "b", sp->b);
        } else {
            rf_json_key_int(w, "wg", sp->w);
            rf_json_key_int(w, "wu", sp->wu);
            rf_json_key_int(w, "bg", sp->b);
            rf_json_key_int(w, "bu", sp->bu);
            rf_json_key_string(w, "fn", rf_chain_fn_name(st->fn));
            if (rf_chain_fn_parametric(st->fn))
                rf_json_key_double(w, "alpha", st->alpha);
        }
        rf_json_key_int(w, "n_chunk", sp->n_chunk);
        rf_json_key_int(w, "k_chunk", sp->k_chunk);
        if (sp->a_stream)
            rf_json_key_int(w, "a_stream", 1);
        if (kernel && p->weight_buffers == 0)
            rf_json_key_int(w, "w_smem", sp->w_smem);
        if (st->op == RF_CHAIN_LINEAR) {
            rf_json_key(w, "epilogue");
            rf_json_array_begin(w);
            for (int e = 0; e < st->n_epi; e++) {
                const rf_chain_epi_t *ep = &st->epi[e];
                rf_json_object_begin(w);
                rf_json_key_string(w, "op", rf_chain_epi_name(ep->op));
                if (ep->op != RF_CHAIN_EPI_ACT)
                    rf_json_key_int(w, "src", ep->src);
                else
                    rf_json_key_string(w, "fn", rf_chain_fn_name(ep->fn));
                if (ep->op == RF_CHAIN_EPI_ACT && rf_chain_fn_parametric(ep->fn))
                    rf_json_key_double(w, "alpha", ep->alpha);
                rf_json_object_end(w);
            }
            rf_json_array_end(w);
        }
        break;
    case RF_CHAIN_ACT:
        rf_json_key_int(w, "src", st->src);
        rf_json_key_int(w, "dst", st->dst);
        rf_json_key_string(w, "fn", rf_chain_fn_name(st->fn));
        if (rf_chain_fn_parametric(st->fn))
            rf_json_key_double(w, "alpha", st->alpha);
        break;
    case RF_CHAIN_ADD:
        rf_json_key_int(w, "a", st->src);
        rf_json_key_int(w, "b", st->src2);
        rf_json_key_int(w, "dst", st->dst);
        break;
    case RF_CHAIN_NORM:
        rf_json_key_string(w, "kind", rf_chain_norm_name(st->norm));
        rf_json_key_int(w, "src", st->src);
        rf_json_key_int(w, "dst", st->dst);
        if (rf_chain_norm_flags(st->norm) & RF_CHAIN_NORM_EPS)
            rf_json_key_double(w, "eps", st->eps);
        if (rf_chain_norm_flags(st->norm) & RF_CHAIN_NORM_GAMMA)
            rf_json_key_int(w, "gamma", sp->gamma);
        if (rf_chain_norm_flags(st->norm) & RF_CHAIN_NORM_BETA)
            rf_json_key_int(w, "beta", sp->beta);
        break;
    default:
        break;
    }
    rf_json_object_end(w);
}

/* The values; with_layout adds the kernel's shared-memory layout, cp (a conventional
 * schedule's kernel, else NULL) where each value lives in global memory: "global" x (the
 * caller's X), y (the caller's Y), aux (the scratch, at "aux_col") or none. */
static void write_values_of(rf_json_writer_t *w, const rf_chain_plan_t *p, int with_layout,
                            const rf_chain_conv_plan_t *cp) {
    const rf_chain_t *c = p->chain;
    rf_json_key(w, "values");
    rf_json_array_begin(w);
    for (int v = 0; v < c->n_values; v++) {
        rf_json_object_begin(w);
        rf_json_key_int(w, "id", v);
        rf_json_key_int(w, "width", c->values[v].width);
        rf_json_key_string(w, "dtype", rf_dtype_name(c->values[v].dtype));
        if (with_layout) {
            rf_json_key_int(w, "padded_width", p->values[v].padded_width);
            rf_json_key_int(w, "smem_offset", p->values[v].smem_offset);
            rf_json_key_int(w, "row_stride", p->values[v].row_stride);
        }
        if (cp) {
            int aux = cp->aux_col[v] >= 0;
            rf_json_key_string(w, "global",
                               v == 0                 ? "x"
                               : v == c->n_values - 1 ? "y"
                               : aux                  ? "aux"
                                                      : "none");
            if (aux)
                rf_json_key_int(w, "aux_col", cp->aux_col[v]);
        }
        rf_json_object_end(w);
    }
    rf_json_array_end(w);
}

static void write_values(rf_json_writer_t *w, const rf_chain_plan_t *p, int with_layout) {
    write_values_of(w, p, with_layout, NULL);
}

static void write_stage_range(rf_json_writer_t *w, const rf_chain_plan_t *p, int first, int end,
                              int kernel) {
    rf_json_key(w, "stages");
    rf_json_array_begin(w);
    for (int s = first; s < end; s++)
        write_stage(w, p, s, kernel);
    rf_json_array_end(w);
}

static void write_stages(rf_json_writer_t *w, const rf_chain_plan_t *p) {
    write_stage_range(w, p, 0, p->chain->n_stages, 0);
}

void rf_chain_json_values(rf_json_writer_t *w, const rf_chain_plan_t *p, int with_layout) {
    write_values(w, p, with_layout);
}
void rf_chain_json_stages(rf_json_writer_t *w, const rf_chain_plan_t *p) {
    write_stages(w, p);
}

/* A chain_mma kernel entry (kernel_spec.json; plan.json adds the facts): the whole chain's, or
 * (cp not NULL) kernel `index` of the conventional schedule, its stage range, where its
 * values live in global memory and its "segment" object. */
static void write_kernel_of(rf_json_writer_t *w, const rf_chain_plan_t *p,
                            const rf_chain_conv_plan_t *cp, int index, int with_facts) {
    const rf_chain_seg_plan_t *seg = cp ? &cp->segs[index] : NULL;
    int gemm = seg && seg->wg_tile_m > 0;
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", p->name);
    rf_json_key_string(w, "mode", gemm ? "chain_wgmma" : "chain_mma");
    rf_json_key_int(w, "in_width", rf_chain_in_width(p->chain));
    rf_json_key_int(w, "out_width", rf_chain_out_width(p->chain));
    rf_json_key_int(w, "tile_rows", p->tile_rows);
    rf_json_key_int(w, "warps", p->warps);
    rf_json_key_int(w, "threads", 32 * p->warps);
    rf_json_key_int(w, "smem_bytes", p->smem_bytes);
    write_values_of(w, p, 1, cp);
    write_stage_range(w, p, p->first_stage, p->end_stage, 1);
    rf_json_key_int(w, "weight_smem_offset", p->weight_smem_offset);
    rf_json_key_int(w, "weight_buffers", p->weight_buffers);
    if (p->ring_ahead)
        rf_json_key_int(w, "ring_ahead", 1);
    if (p->warp_rows) {
        rf_json_key_int(w, "warp_rows", 1);
        rf_json_key_int(w, "x_buffers", p->x_buffers);
        rf_json_key_int(w, "warp_tile_rows", p->warp_tile_rows);
    }
    if (seg && cp->fault[0])
        rf_json_key_string(w, "fault", cp->fault);
    if (seg) {
        rf_json_key(w, "segment");
        rf_json_object_begin(w);
        rf_json_key_int(w, "index", index);
        rf_json_key_int(w, "count", cp->n_segs);
        rf_json_key_int(w, "first_stage", p->first_stage);
        rf_json_key(w, "inputs");
        rf_json_array_begin(w);
        for (int i = 0; i < seg->n_inputs; i++)
            rf_json_int(w, seg->inputs[i]);
        rf_json_array_end(w);
        rf_json_key(w, "direct");
        rf_json_array_begin(w);
        for (int i = 0; i < seg->n_direct; i++)
            rf_json_int(w, seg->direct[i]);
        rf_json_array_end(w);
        rf_json_key(w, "streamed");
        rf_json_array_begin(w);
        for (int i = 0; i < seg->n_streamed; i++)
            rf_json_int(w, seg->streamed[i]);
        rf_json_array_end(w);
        rf_json_key_int(w, "aux_row", cp->aux_row);
        rf_json_key_int(w, "split_stage", seg->split_stage);
        rf_json_key_int(w, "slices", seg->slices);
        rf_json_key_int(w, "slice_chunks", seg->slice_chunks);
        rf_json_object_end(w);
    }
    if (gemm) {
        rf_json_key(w, "wgmma");
        rf_json_object_begin(w);
        rf_json_key_int(w, "tile_m", seg->wg_tile_m);
        rf_json_key_int(w, "tile_n", seg->wg_tile_n);
        rf_json_key_int(w, "k_block", seg->wg_k_block);
        rf_json_key_int(w, "stages", seg->wg_stages);
        rf_json_object_end(w);
    }
    if (with_facts) {
        rf_json_key_int(w, "registers", p->registers);
        rf_json_key_int(w, "local_ops", p->local_ops);
        rf_json_key_int(w, "blocks_per_sm", p->blocks_per_sm);
        rf_json_key_bool(w, "grid_balanced", p->grid_balanced);
    }
    rf_json_object_end(w);
}

static void write_kernel(rf_json_writer_t *w, const rf_chain_plan_t *p, int with_facts) {
    write_kernel_of(w, p, NULL, 0, with_facts);
}

static rf_status_t finish(rf_json_writer_t *w, FILE *f, const char *path) {
    rf_status_t st = rf_json_writer_finish(w);
    if (fclose(f) != 0 && !st)
        st = RF_ERR(RF_CODE_IO_ERROR, "error writing '%s'", path);
    return st;
}

rf_status_t rf_chain_spec_write_entry(const rf_chain_plan_t *p, rf_chain_entry_fn entry,
                                      const void *ctx, const char *path) {
    rf_json_writer_t w;
    FILE *f = fopen(path, "w");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot open '%s' for writing", path);
    rf_json_writer_init_file(&w, f, 2);
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "format", "rowfuse-kernel-spec");
    rf_json_key_int(&w, "version", RF_PLAN_VERSION);
    rf_json_key_int(&w, "smem_row_pad", RF_SMEM_ROW_PAD);
    rf_target_json_write(&w, &p->target);
    rf_json_key_string(&w, "library", "librowfuse_pkg.so");
    rf_json_key(&w, "kernels");
    rf_json_array_begin(&w);
    entry(&w, p, ctx, 0);
    rf_json_array_end(&w);
    rf_json_object_end(&w);
    return finish(&w, f, path);
}

rf_status_t rf_chain_plan_write_entry(const rf_chain_plan_t *p, const char *schedule,
                                      rf_chain_entry_fn entry, const void *ctx, const char *model,
                                      int64_t wh_offset, int64_t wf_offset, const char *path) {
    rf_json_writer_t w;
    FILE *f = fopen(path, "w");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot open '%s' for writing", path);
    rf_json_writer_init_file(&w, f, 2);
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "format", "rowfuse-package");
    rf_json_key_int(&w, "version", RF_PLAN_VERSION);
    rf_json_key_string(&w, "model", model ? model : "");
    rf_json_key_string(&w, "graph_hash", p->hash);
    rf_json_key_string(&w, "block", "chain");
    rf_json_key_int(&w, "rows", p->rows);
    rf_json_key_string(&w, "schedule", schedule);
    rf_json_key_string(&w, "schedule_reason", p->reason);
    rf_target_json_write(&w, &p->target);
    rf_json_key_int(&w, "max_grid", 0);
    rf_json_key_string(&w, "library", "librowfuse_pkg.so");
    rf_json_key_string(&w, "generator", p->generator);
    rf_json_key(&w, "chain");
    rf_json_object_begin(&w);
    rf_json_key_int(&w, "in_width", rf_chain_in_width(p->chain));
    rf_json_key_int(&w, "out_width", rf_chain_out_width(p->chain));
    rf_json_key_int(&w, "wh_offset", wh_offset);
    rf_json_key_int(&w, "wh_elems", p->wh_elems);
    rf_json_key_int(&w, "wf_offset", wf_offset);
    rf_json_key_int(&w, "wf_elems", p->wf_elems);
    if (p->aux_row > 0)
        rf_json_key_int(&w, "aux_row", p->aux_row);
    write_values(&w, p, 0);
    write_stages(&w, p);
    rf_json_object_end(&w);
    rf_json_key(&w, "kernels");
    rf_json_array_begin(&w);
    entry(&w, p, ctx, 1);
    rf_json_array_end(&w);
    rf_json_object_end(&w);
    return finish(&w, f, path);
}

static void mma_entry(rf_json_writer_t *w, const rf_chain_plan_t *p, const void *ctx,
                      int with_facts) {
    (void)ctx;
    write_kernel(w, p, with_facts);
}

rf_status_t rf_chain_spec_write(const rf_chain_plan_t *p, const char *path) {
    return rf_chain_spec_write_entry(p, mma_entry, NULL, path);
}

rf_status_t rf_chain_plan_write(const rf_chain_plan_t *p, const char *model, int64_t wh_offset,
                                int64_t wf_offset, const char *path) {
    return rf_chain_plan_write_entry(p, "chain", mma_entry, NULL, model, wh_offset, wf_offset,
                                     path);
}

/* Every kernel of the conventional schedule, in launch order (ctx: its plan). */
static void conv_entry(rf_json_writer_t *w, const rf_chain_plan_t *p, const void *ctx,
                       int with_facts) {
    const rf_chain_conv_plan_t *cp = ctx;
    (void)p;
    for (int i = 0; i < cp->n_segs; i++)
        write_kernel_of(w, &cp->segs[i].plan, cp, i, with_facts);
}

rf_status_t rf_chain_conv_spec_write(const rf_chain_plan_t *whole, const rf_chain_conv_plan_t *cp,
                                     const char *path) {
    return rf_chain_spec_write_entry(whole, conv_entry, cp, path);
}

rf_status_t rf_chain_conv_plan_write(const rf_chain_plan_t *whole, const rf_chain_conv_plan_t *cp,
                                     const char *model, int64_t wh_offset, int64_t wf_offset,
                                     const char *path) {
    return rf_chain_plan_write_entry(whole, cp->wgmma ? "conventional-wgmma" : "conventional",
                                     conv_entry, cp, model, wh_offset, wf_offset, path);
}

/* ---- the package ---- */

/* The generator's facts (registers, spills) through the MLP reader on a one-kernel plan. */
static rf_status_t read_facts(const char *path, rf_chain_plan_t *p) {
    rf_plan_t *tmp = calloc(1, sizeof *tmp);
    if (!tmp)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "plan");
    tmp->kernel_count = 1;
    snprintf(tmp->kernels[0].name, sizeof tmp->kernels[0].name, "%s", p->name);
    rf_status_t st = rf_kernel_facts_read(path, tmp);
    if (!st) {
        p->registers = tmp->kernels[0].registers;
        p->local_ops = tmp->kernels[0].local_ops;
        snprintf(p->generator, sizeof p->generator, "%s", tmp->generator);
        /* the persistent grid: shared memory, threads and registers; balanced tiles */
        rf_kernel_spec_t k;
        memset(&k, 0, sizeof k);
        k.warps_m = 1;
        k.warps_n = p->warps;
        k.smem_bytes = (int)p->smem_bytes;
        k.registers = p->registers;
        p->blocks_per_sm = rf_kernel_blocks_per_sm(&k, &p->target, 1);
        p->grid_balanced = 1;
        if (p->blocks_per_sm < 1)
            st = RF_ERR(RF_CODE_UNSUPPORTED,
                        "kernel %s: %d registers x %d threads and %lld bytes of shared memory "
                        "leave no block resident on an SM",
                        p->name, p->registers, 32 * p->warps, (long long)p->smem_bytes);
    }
    free(tmp);
    return st;
}

/* The generator on the chain's spec; a generator that does not know a kernel's mode (or is
 * missing) fails with what is missing, never a crash. */
static rf_status_t run_generator(const rf_compile_options_t *o) {
    return rf_status_annotate(rf_compile_run_generator(o),
                              "building the kernels of %s/kernel_spec.json (the "
                              "generator rowfuse.kernels.build with the CuTe DSL)",
                              o->out_dir);
}

/* The options of the checks' tests a chain package takes: the chain_stream kernel's planted
 * faults and checking build (--check-delay with --schedule chain-stream); the other faults
 * and the other kernels' checking builds are refused here rather than ignored. */
static rf_status_t chain_test_options(const rf_compile_options_t *o) {
    if (o->check_delay > 0 && (!o->schedule || strcmp(o->schedule, "chain-stream") != 0))
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "--check-delay: a chain's checking build is the weight-streaming "
                      "kernel's (its last block delays its partial stores); compile it with "
                      "--schedule chain-stream. The residual MLP's schedules have their own "
                      "(rowfuse compile --mlp); chain_mma and the conventional kernels have "
                      "none");
    if (!o->fault)
        return RF_OK;
    const char *name, *what, *schedules;
    char chain_faults[256] = "";
    int found = 0, chain = 0;
    for (int i = 0; rf_compile_fault_info(i, &name, &what, &schedules); i++) {
        int in_chain =
            !strcmp(schedules, "chain-stream") || !strcmp(schedules, "chain-conventional");
        if (in_chain) {
            size_t used = strlen(chain_faults);
            snprintf(chain_faults + used, sizeof chain_faults - used, "%s%s", used ? ", " : "",
                     name);
        }
        if (!strcmp(name, o->fault)) {
            found = 1;
            chain = in_chain;
        }
    }
    if (found && !chain)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "--plant-fault %s is planted in the residual MLP's kernels; a chain "
                      "package takes %s",
                      o->fault, chain_faults);
    if (found)
        return RF_OK;
    return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                  "--plant-fault %s: no such fault (`rowfuse compile --plant-fault list`)",
                  o->fault);
}

/* The generator's facts of every kernel of the conventional schedule, and the whole plan's:
 * the most registers, the fewest blocks per SM. */
static rf_status_t read_conv_facts(const char *path, rf_chain_conv_plan_t *cp, rf_chain_plan_t *p) {
    for (int i = 0; i < cp->n_segs; i++) {
        rf_chain_plan_t *k = &cp->segs[i].plan;
        RF_RETURN_IF_ERROR_PLAIN(read_facts(path, k));
        if (k->registers > p->registers)
            p->registers = k->registers;
        if (i == 0 || k->blocks_per_sm < p->blocks_per_sm)
            p->blocks_per_sm = k->blocks_per_sm;
        snprintf(p->generator, sizeof p->generator, "%s", k->generator);
    }
    return RF_OK;
}

/* The kernels a package is written for: chain_mma's (both NULL), the chain_stream kernel's
 * (sp) or the conventional schedule's (cp). */
typedef struct pkg_kernels {
    const rf_chain_stream_plan_t *sp;
    rf_chain_conv_plan_t *cp;
} pkg_kernels_t;

/* The package's files in order: weights.bin, kernel_spec.json, the generator's kernels and
 * facts, plan.json. */
static rf_status_t write_package(const rf_compile_options_t *o, rf_chain_plan_t *p,
                                 pkg_kernels_t k) {
    char path[4096];
    int64_t wh_off = 0, wf_off = 0;
    RF_RETURN_IF_ERROR_PLAIN(rf_compile_mkdir_p(o->out_dir));
    snprintf(path, sizeof path, "%s/weights.bin", o->out_dir);
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_weights_write(p, path, &wh_off, &wf_off));
    snprintf(path, sizeof path, "%s/kernel_spec.json", o->out_dir);
    RF_RETURN_IF_ERROR_PLAIN(k.cp   ? rf_chain_conv_spec_write(p, k.cp, path)
                             : k.sp ? rf_chain_stream_spec_write(p, k.sp, path)
                                    : rf_chain_spec_write(p, path));
    RF_RETURN_IF_ERROR_PLAIN(run_generator(o));
    snprintf(path, sizeof path, "%s/kernels.json", o->out_dir);
    RF_RETURN_IF_ERROR_PLAIN(k.cp ? read_conv_facts(path, k.cp, p) : read_facts(path, p));
    snprintf(path, sizeof path, "%s/plan.json", o->out_dir);
    return k.cp   ? rf_chain_conv_plan_write(p, k.cp, o->model, wh_off, wf_off, path)
           : k.sp ? rf_chain_stream_plan_write(p, k.sp, o->model, wh_off, wf_off, path)
                  : rf_chain_plan_write(p, o->model, wh_off, wf_off, path);
}

/* The conventional schedule's package (compile/chain_conv.h); p receives the whole plan. */
static rf_status_t compile_conv(const rf_chain_t *c, const rf_compile_options_t *o, int64_t rows,
                                const rf_target_t *t, int wgmma, const char *why,
                                rf_chain_plan_t *p) {
    rf_chain_conv_plan_t cp;
    if (o->fault && strcmp(o->fault, "conv-no-store") != 0)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "--plant-fault %s: the conventional schedule of a chain takes conv-no-store "
                      "(the chain_stream kernel's faults are for --schedule chain-stream)",
                      o->fault);
    if (wgmma && strcmp(t->arch, "sm_90a") != 0)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "--schedule conventional-wgmma: its GEMMs are Hopper kernels (wgmma, "
                      "TMA); target %s is %s",
                      t->name, t->arch);
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_conv_plan_make(c, rows, t, o->tile_rows, wgmma, p, &cp));
    if (o->fault) /* tests of the checks only: every kernel entry carries it */
        snprintf(cp.fault, sizeof cp.fault, "conv_no_store");
    if (why) {
        size_t n = strlen(p->reason);
        snprintf(p->reason + n, sizeof p->reason - n, " (%s)", why);
    }
    rf_status_t st = write_package(o, p, (pkg_kernels_t){NULL, &cp});
    rf_chain_conv_plan_free(&cp);
    return st;
}

static rf_status_t compile_chain(const rf_chain_t *c, const rf_compile_options_t *o,
                                 rf_chain_plan_t *p) {
    rf_target_t t;
    if (!o->out_dir || !o->out_dir[0])
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "no output directory (-o)");
    RF_RETURN_IF_ERROR_PLAIN(chain_test_options(o));
    int automatic = !o->schedule || !strcmp(o->schedule, "auto");
    int conv = o->schedule &&
               (!strcmp(o->schedule, "conventional") || !strcmp(o->schedule, "conventional-wgmma"));
    if (!automatic && !conv && strcmp(o->schedule, "chain") != 0 &&
        strcmp(o->schedule, "chain-stream") != 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "--schedule %s: the model is a chain, whose schedules are chain (its "
                      "chain_mma kernel), chain-stream (the weight-streaming kernel of an FFN "
                      "at few rows), conventional (one kernel per linear) and "
                      "conventional-wgmma (the same with Hopper GEMMs); the other MLP "
                      "schedules apply to the residual MLP",
                      o->schedule);
    RF_RETURN_IF_ERROR_PLAIN(rf_target_lookup(o->target ? o->target : "h200", &t));
    if (o->sm_count > 0)
        t.sm_count = o->sm_count;
    int64_t rows = o->rows > 0 ? o->rows : (c->rows > 0 ? c->rows : 1);
    if (conv)
        return compile_conv(c, o, rows, &t, !strcmp(o->schedule, "conventional-wgmma"), NULL, p);
    if (o->fault && !strcmp(o->fault, "conv-no-store"))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "--plant-fault conv-no-store is planted in the conventional schedule's "
                      "kernels: it needs --schedule conventional");
    rf_status_t mma = rf_chain_plan_make(c, rows, &t, o->tile_rows, p);
    /* auto, beyond the decode rows (the streaming kernel would stream every weight again for
     * each row tile): the conventional schedule where one block cannot hold a row tile's
     * values, or on Hopper its GEMMs where chain_mma streams its weights per row tile and
     * their cost line is the lower */
    int hopper = !strcmp(t.arch, "sm_90a");
    if (automatic && !o->fault && rows > RF_STREAM_MAX_ROWS) {
        if (mma && rf_status_code(mma) == RF_CODE_UNSUPPORTED) {
            rf_status_free(mma);
            return compile_conv(c, o, rows, &t, hopper,
                                "auto: chain_mma does not fit at this row count", p);
        }
        if (!mma && hopper && p->weight_buffers > 0) {
            double mma_us = rf_chain_mma_cost_us(2 * p->wh_elems, rows, p->tile_rows, &t);
            double gemm_us = rf_chain_wgmma_cost_us(c, rows);
            if (gemm_us < mma_us) {
                char why[96];
                snprintf(why, sizeof why, "auto: cost lines %.0f us as GEMMs, %.0f us as chain_mma",
                         gemm_us, mma_us);
                return compile_conv(c, o, rows, &t, 1, why, p);
            }
        }
    }
    /* the weight-streaming schedule (compile/chain_stream.h) where it applies and wins, or
     * where chain_mma does not fit */
    rf_chain_stream_plan_t sp;
    int stream = 0;
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_stream_choose(c, o, rows, &t, mma, p, &sp, &stream));
    /* the warp-rows layout of the whole chain's kernel (chain_plan.h): on request where it
     * applies, else the reason says why not (--tile-rows 16 or 32 sets its warp tiles); auto
     * where it applies and every SM gets a warp tile (rows >= warp_tile_rows x SMs): below
     * that the rows are too few warps' work and the block's warps splitting the columns
     * win (measured on the tiny MLP and the MLP head, notes/kernels.md 2026-12-07 night) */
    if (!stream && !mma && o->warp_rows != 0) {
        char why[160];
        rf_chain_plan_t *q = malloc(sizeof *q);
        if (!q)
            return RF_ERR(RF_CODE_OUT_OF_MEMORY, "planning the warp-rows layout");
        *q = *p;
        int warp = rf_chain_plan_warp_rows(c, &t, o->tile_rows, q, why, sizeof why);
        if (warp && o->warp_rows == -1 && rows < (int64_t)q->warp_tile_rows * t.sm_count) {
            warp = 0;
            snprintf(why, sizeof why, "auto: %lld rows give fewer %d-row warp tiles than SMs",
                     (long long)rows, q->warp_tile_rows);
        }
        if (warp) {
            *p = *q;
        } else {
            size_t n = strlen(p->reason);
            snprintf(p->reason + n, sizeof p->reason - n, "; not in warp rows: %s", why);
        }
        free(q);
    }
    /* the weight ring where the weights stream: as asked (--weight-buffers), or auto
     * RF_CHAIN_AUTO_BUFFERS deep, running ahead across the stages, where every row tile has
     * a block of its own (the deeper ring's shared memory then costs no block a second
     * tile; measured on the small chains at 1,000 rows, notes/kernels.md 2026-12-08) */
    int64_t row_tiles = p->tile_rows > 0 ? rf_div_up(rows, p->tile_rows) : 0;
    int depth = o->weight_buffers > 0                                   ? o->weight_buffers
                : !o->fault && row_tiles > 0 && row_tiles <= t.sm_count ? RF_CHAIN_AUTO_BUFFERS
                                                                        : 0;
    if (!stream && !mma && depth > 0 && p->weight_buffers > 0) {
        int now = rf_chain_plan_ring_depth(p, &t, depth);
        size_t n = strlen(p->reason);
        snprintf(p->reason + n, sizeof p->reason - n,
                 "; then %d weight buffers (%s %d)%s: %lld bytes of shared memory", now,
                 o->weight_buffers > 0 ? "--weight-buffers" : "auto: a block per row tile,", depth,
                 p->ring_ahead ? ", the ring ahead across the stages" : "",
                 (long long)p->smem_bytes);
    }
    if (o->timeline && !stream)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "--timeline stamps the weight-streaming kernel's phases; this chain's "
                      "plan at %lld rows is %s (force it with --schedule chain-stream)",
                      (long long)rows, p->name);
    return write_package(o, p, (pkg_kernels_t){stream ? &sp : NULL, NULL});
}

int rf_compile_is_chain_schedule(const char *schedule) {
    return schedule && (!strcmp(schedule, "chain") || !strcmp(schedule, "chain-stream") ||
                        !strcmp(schedule, "conventional-wgmma"));
}

/* fp32 copies of fp16 weights, in the chain's arena. */
static rf_status_t chain_floats_f16(rf_chain_t *c, const uint16_t *h, int64_t n, float **out) {
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_alloc_floats(c, (size_t)n, out));
    for (int64_t i = 0; i < n; i++)
        (*out)[i] = rf_f16_to_f32(h[i]);
    return RF_OK;
}

rf_status_t rf_chain_from_mlp(const rf_mlp_weights_t *w, rf_chain_t **out_chain) {
    int64_t C = w->channels, H = w->hidden;
    rf_chain_t *c = NULL;
    rf_chain_stage_t *s1 = NULL, *s2 = NULL;
    float *wk = NULL, *bias = NULL;
    *out_chain = NULL;
    rf_status_t st = rf_chain_create(rf_allocator_system(), C, &c);
    if (!st)
        st = rf_chain_add_stage(c, RF_CHAIN_LINEAR, H, &s1);
    if (!st)
        st = chain_floats_f16(c, w->w1, C * H, &wk);
    if (!st)
        st = rf_chain_copy_floats(c, w->b1, (size_t)H, &bias);
    if (!st) {
        s1->src = 0;
        s1->k = C;
        s1->n = H;
        s1->w = wk;
        s1->b = bias;
        s1->epi[s1->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ACT, RF_CHAIN_FN_RELU, -1, 0.0f};
        st = rf_chain_add_stage(c, RF_CHAIN_LINEAR, C, &s2);
    }
    if (!st)
        st = chain_floats_f16(c, w->w2, H * C, &wk);
    if (!st)
        st = rf_chain_copy_floats(c, w->b2, (size_t)C, &bias);
    if (!st) {
        s2->src = s1->dst;
        s2->k = H;
        s2->n = C;
        s2->w = wk;
        s2->b = bias;
        s2->epi[s2->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ADD, RF_CHAIN_FN_IDENTITY, 0, 0.0f};
        s2->epi[s2->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ACT, RF_CHAIN_FN_RELU, -1, 0.0f};
        rf_chain_assign_dtypes(c);
        st = rf_chain_validate(c);
    }
    if (st)
        rf_chain_destroy(c);
    else
        *out_chain = c;
    return st;
}

rf_status_t rf_compile_chain_mlp(const rf_mlp_weights_t *w, const rf_compile_options_t *o,
                                 rf_chain_plan_t *out_plan) {
    rf_chain_t *c = NULL;
    rf_chain_plan_t *p = NULL;
    rf_status_t st = rf_chain_from_mlp(w, &c);
    if (!st && !(p = calloc(1, sizeof *p)))
        st = RF_ERR(RF_CODE_OUT_OF_MEMORY, "chain plan");
    if (!st)
        st = compile_chain(c, o, p);
    if (!st && out_plan) {
        *out_plan = *p;
        out_plan->chain = NULL;
    }
    free(p);
    rf_chain_destroy(c);
    return st ? rf_status_annotate(st, "while compiling the residual MLP as a chain into %s",
                                   o->out_dir ? o->out_dir : "")
              : RF_OK;
}

rf_status_t rf_compile_chain_model(const char *model, const rf_compile_options_t *o,
                                   int *out_handled, rf_chain_plan_t *out_plan) {
    rf_allocator_t a = rf_allocator_system();
    rf_graph_t *g = NULL;
    rf_contract_t *ct = NULL;
    rf_chain_t *c = NULL;
    rf_mlp_block_t block;
    rf_chain_plan_t *p = NULL;
    *out_handled = 0;
    rf_status_t st = rf_onnx_import_file(a, model, &g);
    if (!st)
        st = rf_status_annotate(rf_graph_infer_shapes(g), "%s", model);
    if (!st)
        st = rf_status_annotate(rf_verify(g, &ct), "%s", model);
    if (!st) {
        rf_status_t mlp = rf_mlp_match(g, &block);
        /* the residual MLP keeps its own schedules unless a chain schedule is asked for */
        if (mlp == RF_OK && !rf_compile_is_chain_schedule(o->schedule)) {
            rf_contract_destroy(ct);
            rf_graph_destroy(g);
            return RF_OK;
        }
        rf_status_free(mlp);
        *out_handled = 1;
        st = rf_status_annotate(rf_chain_match(a, g, ct, &c), "%s", model);
    }
    if (!st) {
        p = calloc(1, sizeof *p);
        st = p ? compile_chain(c, o, p) : RF_ERR(RF_CODE_OUT_OF_MEMORY, "chain plan");
    }
    if (!st && out_plan) {
        *out_plan = *p;
        out_plan->chain = NULL;
    }
    *out_handled = 1;
    free(p);
    rf_chain_destroy(c);
    rf_contract_destroy(ct);
    rf_graph_destroy(g);
    return st ? rf_status_annotate(st, "while compiling the chain package %s",
                                   o->out_dir ? o->out_dir : "")
              : RF_OK;
}
