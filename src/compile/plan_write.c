/* The writer of plan.json and kernel_spec.json (rowfuse/plan.h). src/compile is the only
 * code that writes either: kernel_spec.json is the generator's whole input, plan.json the
 * runtime's. A kernel is serialised by one function for both files. */
#include <stdio.h>

#include "base/json.h"
#include "compile/compile_internal.h"
#include "rowfuse/tensor.h"

static void write_kernel(rf_json_writer_t *w, const rf_kernel_spec_t *k) {
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", k->name);
    rf_json_key_string(w, "mode", rf_kernel_mode_name(k->mode));
    rf_json_key_int(w, "channels", k->channels);
    rf_json_key_int(w, "hidden", k->hidden);
    rf_json_key_int(w, "tile_rows", k->tile_rows);
    rf_json_key_int(w, "warps_m", k->warps_m);
    rf_json_key_int(w, "warps_n", k->warps_n);
    rf_json_key_int(w, "threads", rf_kernel_spec_threads(k));
    rf_json_key_int(w, "padded_channels", k->padded_channels);
    rf_json_key_int(w, "padded_hidden", k->padded_hidden);
    rf_json_key_int(w, "hidden_chunk", k->hidden_chunk);
    rf_json_key_int(w, "weight_buffers", k->weight_buffers);
    rf_json_key_int(w, "x_stages", k->x_stages);
    rf_json_key_int(w, "cluster_h", k->cluster_h);
    rf_json_key_int(w, "w1_block", k->w1_block);
    rf_json_key_int(w, "w2_block", k->w2_block);
    rf_json_key_int(w, "smem_bytes", k->smem_bytes);
    rf_json_key_bool(w, "x_prefetch", k->x_prefetch);
    rf_json_key_bool(w, "split_w2", k->split_w2);
    rf_json_key_bool(w, "y_vec2", k->y_vec2);
    rf_json_key_bool(w, "ring", k->ring);
    rf_json_key_int(w, "min_blocks", k->min_blocks);
    rf_json_key_string(w, "fault", k->fault);
    rf_json_key_int(w, "check_delay", k->check_delay);
    rf_json_key_int(w, "registers", k->registers);
    rf_json_key_int(w, "local_ops", k->local_ops);
    rf_json_key_int(w, "blocks_per_sm", k->blocks_per_sm);
    rf_json_key_bool(w, "grid_balanced", k->grid_balanced);
    rf_json_object_end(w);
}

void rf_target_json_write(rf_json_writer_t *w, const rf_target_t *t) {
    rf_json_key(w, "target");
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", t->name);
    rf_json_key_string(w, "arch", t->arch);
    rf_json_key_int(w, "sm_count", t->sm_count);
    rf_json_key_int(w, "smem_per_block", t->smem_per_block);
    rf_json_key_int(w, "smem_per_sm", t->smem_per_sm);
    rf_json_key_int(w, "smem_reserved", t->smem_reserved);
    rf_json_key_int(w, "regs_per_sm", t->regs_per_sm);
    rf_json_key_int(w, "threads_per_sm", t->threads_per_sm);
    rf_json_key_int(w, "max_blocks_per_sm", t->max_blocks_per_sm);
    rf_json_object_end(w);
}

static void write_kernels(rf_json_writer_t *w, const rf_plan_t *p) {
    rf_json_key(w, "kernels");
    rf_json_array_begin(w);
    for (int i = 0; i < p->kernel_count; i++)
        write_kernel(w, &p->kernels[i]);
    rf_json_array_end(w);
}

static void write_schedules(rf_json_writer_t *w, const rf_plan_t *p) {
    rf_json_key(w, "schedules");
    rf_json_object_begin(w);
    for (int s = 0; s < RF_SCHEDULE_COUNT; s++) {
        const rf_plan_schedule_t *ps = &p->schedules[s];
        rf_json_key(w, rf_schedule_name((rf_schedule_t)s));
        rf_json_object_begin(w);
        rf_json_key_bool(w, "available", ps->available);
        rf_json_key(w, "kernels");
        rf_json_array_begin_flat(w);
        for (int i = 0; i < ps->kernel_count; i++)
            rf_json_int(w, ps->kernel[i]);
        rf_json_array_end(w);
        if (!ps->available)
            rf_json_key_string(w, "rejected", ps->rejected);
        rf_json_object_end(w);
    }
    rf_json_object_end(w);
}

static void write_weights(rf_json_writer_t *w, const rf_plan_t *p) {
    rf_json_key(w, "weights");
    rf_json_object_begin(w);
    rf_json_key_string(w, "file", "weights.bin");
    for (int i = 0; i < RF_PLAN_WEIGHTS; i++) {
        const rf_plan_weight_t *pw = &p->weights[i];
        rf_json_key(w, pw->name);
        rf_json_object_begin(w);
        rf_json_key_string(w, "dtype", rf_dtype_name((rf_dtype_t)pw->dtype));
        rf_json_key(w, "shape");
        rf_json_array_begin_flat(w);
        for (int d = 0; d < pw->rank; d++)
            rf_json_int(w, pw->dims[d]);
        rf_json_array_end(w);
        rf_json_key_int(w, "offset", pw->offset);
        rf_json_key_int(w, "bytes", pw->bytes);
        rf_json_object_end(w);
    }
    rf_json_object_end(w);
}

static rf_status_t finish(rf_json_writer_t *w, FILE *f, const char *path) {
    rf_status_t st = rf_json_writer_finish(w);
    if (fclose(f) != 0 && !st)
        st = RF_ERR(RF_CODE_IO_ERROR, "error writing '%s'", path);
    return st;
}

rf_status_t rf_plan_write(const rf_plan_t *p, const char *path) {
    rf_json_writer_t w;
    FILE *f = fopen(path, "w");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot open '%s' for writing", path);
    rf_json_writer_init_file(&w, f, 2);
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "format", "rowfuse-package");
    rf_json_key_int(&w, "version", p->version);
    rf_json_key_string(&w, "model", p->model);
    rf_json_key_string(&w, "graph_hash", p->graph_hash);
    rf_json_key_string(&w, "block", "residual-mlp");
    rf_json_key_int(&w, "rows", p->rows);
    rf_json_key_int(&w, "channels", p->channels);
    rf_json_key_int(&w, "hidden", p->hidden);
    rf_json_key_string(&w, "schedule", rf_schedule_name(p->schedule));
    rf_json_key_string(&w, "schedule_reason", p->reason);
    rf_target_json_write(&w, &p->target);
    rf_json_key_int(&w, "max_grid", p->max_grid);
    rf_json_key_string(&w, "library", p->library);
    rf_json_key_string(&w, "generator", p->generator);
    write_schedules(&w, p);
    write_kernels(&w, p);
    write_weights(&w, p);
    rf_json_object_end(&w);
    return finish(&w, f, path);
}

rf_status_t rf_kernel_spec_write(const rf_plan_t *p, const char *path) {
    rf_json_writer_t w;
    FILE *f = fopen(path, "w");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot open '%s' for writing", path);
    rf_json_writer_init_file(&w, f, 2);
    rf_json_object_begin(&w);
    rf_json_key_string(&w, "format", "rowfuse-kernel-spec");
    rf_json_key_int(&w, "version", p->version);
    rf_json_key_int(&w, "channels", p->channels);
    rf_json_key_int(&w, "hidden", p->hidden);
    rf_json_key_int(&w, "smem_row_pad", RF_SMEM_ROW_PAD);
    rf_target_json_write(&w, &p->target);
    rf_json_key_string(&w, "library", p->library);
    write_kernels(&w, p);
    rf_json_object_end(&w);
    return finish(&w, f, path);
}
