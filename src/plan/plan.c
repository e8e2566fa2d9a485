/* The tables of the package contract (rowfuse/plan.h): schedule and kernel-mode names, the
 * kernels of each schedule, the known targets, and the persistent-grid rule. Linked into
 * the compiler and the runtime alike, so both speak of the same names and the same grid;
 * the writer (src/compile/plan_write.c) and the reader (src/runtime/plan_read.c) stay on
 * their own sides. */
#include <stdio.h>
#include <string.h>

#include "rowfuse/plan.h"

#define RF_NAME_(e, name, what) name,
static const char *const rf_schedule_names_[RF_SCHEDULE_COUNT] = {RF_SCHEDULE_LIST(RF_NAME_)};
static const char *const rf_mode_names_[RF_KERNEL_MODE_COUNT] = {RF_KERNEL_MODE_LIST(RF_NAME_)};
#undef RF_NAME_

const char *rf_schedule_name(rf_schedule_t s) {
    return (unsigned)s < RF_SCHEDULE_COUNT ? rf_schedule_names_[s] : NULL;
}

rf_status_t rf_schedule_parse(const char *name, rf_schedule_t *out) {
    for (int i = 0; name && i < RF_SCHEDULE_COUNT; i++)
        if (!strcmp(name, rf_schedule_names_[i])) {
            *out = (rf_schedule_t)i;
            return RF_OK;
        }
#define RF_LISTED_(e, name, what) " " name
    return RF_ERR(RF_CODE_INVALID_ARGUMENT, "unknown schedule '%s' (known:%s)",
                  name ? name : "(null)", RF_SCHEDULE_LIST(RF_LISTED_));
#undef RF_LISTED_
}

const char *rf_kernel_mode_name(rf_kernel_mode_t m) {
    return (unsigned)m < RF_KERNEL_MODE_COUNT ? rf_mode_names_[m] : NULL;
}

rf_status_t rf_kernel_mode_parse(const char *name, rf_kernel_mode_t *out) {
    for (int i = 0; name && i < RF_KERNEL_MODE_COUNT; i++)
        if (!strcmp(name, rf_mode_names_[i])) {
            *out = (rf_kernel_mode_t)i;
            return RF_OK;
        }
    return RF_ERR(RF_CODE_INVALID_ARGUMENT, "unknown kernel mode '%s'", name ? name : "(null)");
}

int rf_schedule_kernel_modes(rf_schedule_t s, rf_kernel_mode_t out[2]) {
    switch (s) {
    case RF_SCHEDULE_PERSISTENT_SMEM:
        out[0] = RF_KERNEL_FUSED_SMEM;
        return 1;
    case RF_SCHEDULE_PERSISTENT_GMEM:
        out[0] = RF_KERNEL_FUSED_GMEM;
        return 1;
    case RF_SCHEDULE_CONVENTIONAL:
        out[0] = RF_KERNEL_PROJ1;
        out[1] = RF_KERNEL_PROJ2;
        return 2;
    case RF_SCHEDULE_PERSISTENT_WGMMA:
        out[0] = RF_KERNEL_FUSED_WGMMA;
        return 1;
    default:
        return 0;
    }
}

/* Hopper SXM and PCIe parts: 228 KB of shared memory per SM, of which a block may take
 * 227 KB, 1 KB reserved per resident block, 64K registers, 2048 threads, 32 blocks. */
static const rf_target_t rf_targets_[] = {
    {"h200", "sm_90a", 132, 227 * 1024, 228 * 1024, 1024, 65536, 2048, 32},
    {"h100-sxm", "sm_90a", 132, 227 * 1024, 228 * 1024, 1024, 65536, 2048, 32},
    {"h100-pcie", "sm_90a", 114, 227 * 1024, 228 * 1024, 1024, 65536, 2048, 32},
};

rf_status_t rf_target_lookup(const char *name, rf_target_t *out) {
    for (size_t i = 0; name && i < sizeof rf_targets_ / sizeof rf_targets_[0]; i++)
        if (!strcmp(name, rf_targets_[i].name)) {
            *out = rf_targets_[i];
            return RF_OK;
        }
    return RF_ERR(RF_CODE_NOT_FOUND, "unknown target '%s' (known: h200, h100-sxm, h100-pcie)",
                  name ? name : "(null)");
}

int32_t rf_plan_grid(const rf_plan_t *p, const rf_kernel_spec_t *k, int64_t rows) {
    /* a cluster of cluster_h blocks owns each tile: the grid counts clusters, then blocks */
    int64_t ch = rf_kernel_spec_blocks_per_tile(k);
    int64_t tiles = (rows + k->tile_rows - 1) / k->tile_rows;
    int64_t cap = (int64_t)p->target.sm_count * (k->blocks_per_sm > 0 ? k->blocks_per_sm : 1);
    if (p->max_grid > 0 && cap > p->max_grid)
        cap = p->max_grid;
    cap = cap / ch > 0 ? cap / ch : 1;
    if (tiles < 1)
        tiles = 1;
    if (tiles <= cap)
        return (int32_t)(tiles * ch);
    if (k->grid_balanced) {
        int64_t per_block = (tiles + cap - 1) / cap;
        return (int32_t)((tiles + per_block - 1) / per_block * ch);
    }
    return (int32_t)(cap * ch);
}
