/* Chain packages on the GPU (rowfuse/runtime.h, "chain packages"): reads the chain part of
 * plan.json, dlopens the package's kernel library and resolves rf_pkg_launch_chain
 * (rowfuse/kernel_abi.h), uploads the two weight arrays wh / wf from weights.bin, and
 * captures one launch of the chain kernel, on the plan's grid for the row count, into a
 * CUDA Graph on the caller's stream. A chain_stream kernel (an FFN split over every SM) runs
 * on its plan's fixed grid with a scratch buffer the exec allocates for its rows: fp32
 * partials, then int32 counters zeroed once here (every launch leaves them zero). A chain's
 * conventional schedule has one chain_mma kernel per segment ("segment" in each entry),
 * launched in order on the same stream with the same arguments; the values between them
 * live in the scratch, [rows, aux_row] fp16 (plan.json's chain.aux_row). */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_read.h"
#include "rt_internal.h"

#define RF_CHAIN_PLAN_MAX_BYTES (4l << 20)
/* Most kernels of one chain package (the conventional schedule's segments). */
#define RF_CHAIN_PKG_MAX_KERNELS 64

typedef struct rf_chain_seg_kernel {
    rf_kernel_spec_t spec; /* name, tile_rows, blocks_per_sm */
    int index;             /* in the library's order */
    int slices;            /* blocks per row tile */
} rf_chain_seg_kernel_t;

struct rf_chain_pkg {
    rf_allocator_t allocator;
    char dir[1024];
    char library[1100];
    rf_plan_t grid_plan;     /* only target.sm_count and max_grid: for rf_plan_grid */
    rf_kernel_spec_t kernel; /* name, tile_rows, blocks_per_sm, grid_balanced */
    int kernel_index;        /* in the library's (plan.json's) kernel order */
    int64_t rows;            /* the rows the plan was made for */
    int64_t in_width, out_width;
    int64_t wh_offset, wh_elems, wf_offset, wf_elems; /* bytes / elements in weights.bin */
    void *handle;
    rf_pkg_launch_chain_fn launch;
    int initialized;
    int stream;                /* a chain_stream kernel: fixed grid, scratch */
    int32_t stream_grid;       /* its grid (one block per hidden slice) */
    int64_t partial_per_row;   /* fp32 elements of scratch per row */
    int64_t counters_per_tile; /* int32 counters per row tile */
    int n_segs, seg_count;     /* the conventional schedule: its kernels, in launch order */
    rf_chain_seg_kernel_t segs[RF_CHAIN_PKG_MAX_KERNELS];
    int64_t aux_row; /* fp16 elements of scratch per row between them */
};

struct rf_chain_exec {
    rf_allocator_t allocator;
    rf_chain_pkg_t *pkg; /* borrowed */
    int64_t rows;
    int32_t grid;
    void *x, *wh, *y;
    float *wf;
    void *scratch; /* chain_stream: partials then counters */
    int64_t scratch_bytes, partial_bytes;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    int nodes, kernel_nodes;
};

/* ---- plan.json ---- */

typedef struct chain_reader {
    const char *path;
} chain_reader_t;

static rf_status_t num(const chain_reader_t *r, const cJSON *obj, const char *where,
                       const char *key, int64_t min, int64_t max, int64_t *out) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    double v;
    if (!cJSON_IsNumber(it))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"%s\" is missing or not a number", r->path,
                      where, key);
    v = it->valuedouble;
    if (v != (double)(int64_t)v || v < (double)min || v > (double)max)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"%s\" is %g; expected an integer in %lld..%lld",
                      r->path, where, key, v, (long long)min, (long long)max);
    *out = (int64_t)v;
    return RF_OK;
}

static rf_status_t str(const chain_reader_t *r, const cJSON *obj, const char *where,
                       const char *key, char *dst, size_t size) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(it) || strlen(it->valuestring) >= size)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %s\"%s\" is missing, not a string or too long",
                      r->path, where, key);
    snprintf(dst, size, "%s", it->valuestring);
    return RF_OK;
}

static rf_status_t parse_plan(const char *path, cJSON **out_root) {
    cJSON *root;
    *out_root = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_json_read_file(path, RF_CHAIN_PLAN_MAX_BYTES, &root));
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: not a JSON object", path);
    }
    *out_root = root;
    return RF_OK;
}

int rf_chain_pkg_probe(const char *dir) {
    char path[1100];
    cJSON *root = NULL;
    rf_status_t st;
    int is_chain;
    if (!dir || strlen(dir) >= sizeof(path) - 16)
        return 0;
    snprintf(path, sizeof(path), "%s/plan.json", dir);
    st = parse_plan(path, &root);
    if (st) {
        rf_status_free(st);
        return 0;
    }
    is_chain = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "chain"));
    cJSON_Delete(root);
    return is_chain;
}

/* One kernel of a conventional schedule: kernels[i] with its "segment" object, which must
 * come in launch order (index = the kernels read so far). */
static rf_status_t read_segment(const chain_reader_t *r, const cJSON *k, const cJSON *seg, int i,
                                rf_chain_pkg_t *c) {
    char w[48];
    int64_t tile, bps, index, count, slices;
    rf_status_t st;
    snprintf(w, sizeof w, "kernels[%d].", i);
    if (c->n_segs == RF_CHAIN_PKG_MAX_KERNELS)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: more than %d kernels", r->path,
                      RF_CHAIN_PKG_MAX_KERNELS);
    rf_chain_seg_kernel_t *s = &c->segs[c->n_segs];
    if ((st = str(r, k, w, "name", s->spec.name, sizeof s->spec.name)) ||
        (st = num(r, k, w, "tile_rows", 1, 1024, &tile)) ||
        (st = num(r, k, w, "blocks_per_sm", 1, 1024, &bps)))
        return st;
    snprintf(w, sizeof w, "kernels[%d].segment.", i);
    if ((st = num(r, seg, w, "index", 0, RF_CHAIN_PKG_MAX_KERNELS - 1, &index)) ||
        (st = num(r, seg, w, "count", 1, RF_CHAIN_PKG_MAX_KERNELS, &count)) ||
        (st = num(r, seg, w, "slices", 1, 1 << 20, &slices)))
        return st;
    if (index != c->n_segs)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %sindex is %lld; the kernels come in launch order",
                      r->path, w, (long long)index);
    s->spec.tile_rows = (int)tile;
    s->spec.blocks_per_sm = (int)bps;
    s->spec.grid_balanced = 1;
    s->spec.cluster_h = 1;
    s->index = i;
    s->slices = (int)slices;
    if (c->n_segs == 0)
        c->seg_count = (int)count;
    else if (count != c->seg_count)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %scount is %lld; kernel 0 said %d", r->path, w,
                      (long long)count, c->seg_count);
    c->n_segs++;
    return RF_OK;
}

/* The chain's facts from plan.json: the "chain" object, the chain_mma kernel entry and the
 * grid rule's inputs. */
static rf_status_t read_chain_plan(const chain_reader_t *r, const cJSON *root, rf_chain_pkg_t *c) {
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(root, "chain");
    const cJSON *target = cJSON_GetObjectItemCaseSensitive(root, "target");
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(root, "kernels");
    char format[32], lib[64];
    int64_t version, max_grid, sm_count;
    int found = 0;
    rf_status_t st;
    if ((st = str(r, root, "", "format", format, sizeof format)) ||
        strcmp(format, "rowfuse-package") != 0) {
        rf_status_free(st);
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s is not a rowfuse package plan (\"format\")",
                      r->path);
    }
    RF_RETURN_IF_ERROR_PLAIN(num(r, root, "", "version", 0, 1 << 20, &version));
    if (version != RF_PLAN_VERSION)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "%s is a version %lld plan; this runtime reads version %d: recompile the "
                      "package with this rowfuse (rowfuse compile)",
                      r->path, (long long)version, RF_PLAN_VERSION);
    if (!cJSON_IsObject(ch))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: no \"chain\" object: not a chain package", r->path);
    if ((st = num(r, ch, "chain.", "in_width", 1, RF_MAX_DIM, &c->in_width)) ||
        (st = num(r, ch, "chain.", "out_width", 1, RF_MAX_DIM, &c->out_width)) ||
        (st = num(r, ch, "chain.", "wh_offset", 0, INT64_MAX / 4, &c->wh_offset)) ||
        (st = num(r, ch, "chain.", "wh_elems", 1, INT64_MAX / 4, &c->wh_elems)) ||
        (st = num(r, ch, "chain.", "wf_offset", 0, INT64_MAX / 4, &c->wf_offset)) ||
        (st = num(r, ch, "chain.", "wf_elems", 0, INT64_MAX / 8, &c->wf_elems)) ||
        (st = num(r, root, "", "rows", 1, RF_MAX_DIM, &c->rows)) ||
        (st = num(r, root, "", "max_grid", 0, 1 << 30, &max_grid)) ||
        (st = str(r, root, "", "library", lib, sizeof lib)) ||
        (st = num(r, target, "target.", "sm_count", 1, 1024, &sm_count)))
        return st;
    if (c->wh_offset % 16 || c->wf_offset % 16)
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: chain.wh_offset %lld / wf_offset %lld must be "
                      "16-byte aligned",
                      r->path, (long long)c->wh_offset, (long long)c->wf_offset);
    if (strchr(lib, '/') || !lib[0])
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: \"library\" must be a file name in the package",
                      r->path);
    c->grid_plan.max_grid = (int)max_grid;
    c->grid_plan.target.sm_count = (int)sm_count;
    snprintf(c->library, sizeof(c->library), "%s/%s", c->dir, lib);
    if (!cJSON_IsArray(ks))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: \"kernels\" is missing or not a list", r->path);
    if (cJSON_GetObjectItemCaseSensitive(ch, "aux_row") &&
        (st = num(r, ch, "chain.", "aux_row", 0, INT32_MAX, &c->aux_row)))
        return st;
    for (int i = 0; i < cJSON_GetArraySize(ks); i++) {
        const cJSON *k = cJSON_GetArrayItem(ks, i);
        const cJSON *seg = cJSON_GetObjectItemCaseSensitive(k, "segment");
        if (!seg)
            continue;
        RF_RETURN_IF_ERROR_PLAIN(read_segment(r, k, seg, i, c));
    }
    if (c->n_segs > 0 && c->n_segs != c->seg_count)
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: %d kernels of the conventional schedule; their "
                      "segment.count says %d",
                      r->path, c->n_segs, c->seg_count);
    if (c->n_segs > 0) {
        c->kernel = c->segs[0].spec;
        c->kernel_index = c->segs[0].index;
        return RF_OK;
    }
    for (int i = 0; i < cJSON_GetArraySize(ks) && !found; i++) {
        const cJSON *k = cJSON_GetArrayItem(ks, i);
        const cJSON *mode = cJSON_GetObjectItemCaseSensitive(k, "mode");
        const cJSON *bal = cJSON_GetObjectItemCaseSensitive(k, "grid_balanced");
        char w[32];
        int64_t tile, bps;
        if (!cJSON_IsString(mode) || (strcmp(mode->valuestring, "chain_mma") != 0 &&
                                      strcmp(mode->valuestring, "chain_stream") != 0))
            continue;
        snprintf(w, sizeof w, "kernels[%d].", i);
        if ((st = str(r, k, w, "name", c->kernel.name, sizeof c->kernel.name)) ||
            (st = num(r, k, w, "tile_rows", 1, 1024, &tile)) ||
            (st = num(r, k, w, "blocks_per_sm", 1, 1024, &bps)))
            return st;
        c->kernel.tile_rows = (int)tile;
        c->kernel.blocks_per_sm = (int)bps;
        c->kernel.grid_balanced = cJSON_IsTrue(bal) || (cJSON_IsNumber(bal) && bal->valueint);
        c->kernel.cluster_h = 1;
        c->kernel_index = i;
        found = 1;
        c->stream = !strcmp(mode->valuestring, "chain_stream");
        if (c->stream) {
            int64_t grid;
            if ((st = num(r, k, w, "grid", 1, 1 << 30, &grid)) ||
                (st = num(r, k, w, "scratch_partial_per_row", 1, INT32_MAX, &c->partial_per_row)) ||
                (st = num(r, k, w, "scratch_counters_per_tile", 1, 1 << 20, &c->counters_per_tile)))
                return st;
            c->stream_grid = (int32_t)grid;
        }
    }
    if (!found)
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: \"kernels\" lists no chain_mma or chain_stream kernel", r->path);
    return RF_OK;
}

/* ---- the kernel library ---- */

static void *sym(void *handle, const char *name) {
    void *p;
    (void)dlerror();
    p = dlsym(handle, name);
    return dlerror() ? NULL : p;
}

static rf_status_t open_library(rf_chain_pkg_t *c) {
    rf_pkg_abi_version_fn abi_version;
    rf_pkg_channels_fn lib_in;
    rf_pkg_hidden_fn lib_out;
    rf_pkg_kernel_count_fn kernel_count;
    rf_pkg_kernel_name_fn kernel_name;
    struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"rf_pkg_abi_version", (void **)&abi_version},
        {"rf_pkg_channels", (void **)&lib_in},
        {"rf_pkg_hidden", (void **)&lib_out},
        {"rf_pkg_kernel_count", (void **)&kernel_count},
        {"rf_pkg_kernel_name", (void **)&kernel_name},
        {"rf_pkg_launch_chain", (void **)&c->launch},
    };
    const char *name;
    int version;
    c->handle = dlopen(c->library, RTLD_NOW | RTLD_LOCAL);
    if (!c->handle) {
        const char *why = dlerror();
        return RF_ERR(RF_CODE_NOT_FOUND, "cannot load kernel library %s: %s", c->library,
                      why ? why : "unknown dlopen error");
    }
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        /* dlsym returns void*; the bytes are copied into the function pointer (POSIX) */
        void *p = sym(c->handle, syms[i].name);
        if (!p)
            return RF_ERR(RF_CODE_NOT_FOUND,
                          "kernel library %s does not export %s (see rowfuse/kernel_abi.h)",
                          c->library, syms[i].name);
        memcpy(syms[i].slot, &p, sizeof(p));
    }
    version = abi_version();
    if (version != RF_KERNEL_ABI_VERSION)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "kernel library %s has ABI version %d; this runtime speaks version %d: "
                      "recompile the package",
                      c->library, version, RF_KERNEL_ABI_VERSION);
    if (lib_in() != c->in_width || lib_out() != c->out_width)
        return RF_ERR(RF_CODE_MISMATCH,
                      "kernel library %s was built for a chain %d -> %d but plan.json says "
                      "%lld -> %lld",
                      c->library, lib_in(), lib_out(), (long long)c->in_width,
                      (long long)c->out_width);
    for (int i = 0; i < (c->n_segs ? c->n_segs : 1); i++) {
        int index = c->n_segs ? c->segs[i].index : c->kernel_index;
        const char *want = c->n_segs ? c->segs[i].spec.name : c->kernel.name;
        name = index < kernel_count() ? kernel_name(index) : NULL;
        if (!name || strcmp(name, want) != 0)
            return RF_ERR(RF_CODE_MISMATCH,
                          "kernel %d of library %s is \"%s\"; plan.json says \"%s\"", index,
                          c->library, name ? name : "(none)", want);
    }
    return RF_OK;
}

static rf_status_t init_on_device(rf_chain_pkg_t *c) {
    rf_pkg_init_fn init;
    void *p = sym(c->handle, "rf_pkg_init");
    int dev = 0, sms = 0, err;
    if (!p)
        return RF_ERR(RF_CODE_NOT_FOUND, "kernel library %s does not export rf_pkg_init",
                      c->library);
    memcpy(&init, &p, sizeof(p));
    RF_RETURN_IF_ERROR_PLAIN(rf_device_require());
    RF_CUDA(cudaGetDevice(&dev));
    RF_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (sms != c->grid_plan.target.sm_count)
        return RF_ERR(RF_CODE_MISMATCH,
                      "the package was planned for %d SMs; this device has %d: recompile it "
                      "with rowfuse compile --sms %d",
                      c->grid_plan.target.sm_count, sms, sms);
    if ((err = init()) != 0)
        return rf_cuda_status_raw(err, __FILE__, __LINE__, "rf_pkg_init");
    c->initialized = 1;
    return RF_OK;
}

void rf_chain_pkg_destroy(rf_chain_pkg_t *c) {
    if (!c)
        return;
    /* as for MLP packages: a library whose kernels were initialised stays loaded */
    if (c->handle && !c->initialized)
        dlclose(c->handle);
    rf_free(c->allocator, c);
}

rf_status_t rf_chain_pkg_load(rf_allocator_t a, const char *dir, rf_chain_pkg_t **out_pkg) {
    rf_chain_pkg_t *c = NULL;
    chain_reader_t r;
    char path[1100];
    cJSON *root = NULL;
    rf_status_t st;
    *out_pkg = NULL;
    if (!dir || !dir[0])
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "package directory is empty");
    if (strlen(dir) >= sizeof(c->dir) - 64)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "package directory name too long: %s", dir);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof(*c), "chain package", (void **)&c));
    c->allocator = a;
    snprintf(c->dir, sizeof(c->dir), "%s", dir);
    snprintf(path, sizeof(path), "%s/plan.json", dir);
    r.path = path;
    st = parse_plan(path, &root);
    if (!st)
        st = read_chain_plan(&r, root, c);
    cJSON_Delete(root);
    if (!st)
        st = open_library(c);
    if (!st)
        st = init_on_device(c);
    if (st) {
        rf_chain_pkg_destroy(c);
        return rf_status_annotate(st, "while loading chain package %s", dir);
    }
    *out_pkg = c;
    return RF_OK;
}

const char *rf_chain_pkg_dir(const rf_chain_pkg_t *c) {
    return c->dir;
}
const char *rf_chain_pkg_kernel_name(const rf_chain_pkg_t *c) {
    return c->kernel.name;
}
int64_t rf_chain_pkg_rows(const rf_chain_pkg_t *c) {
    return c->rows;
}
int64_t rf_chain_pkg_in_width(const rf_chain_pkg_t *c) {
    return c->in_width;
}
int64_t rf_chain_pkg_out_width(const rf_chain_pkg_t *c) {
    return c->out_width;
}
/* A conventional schedule's kernel: its row tiles x slices work items under the plan's grid
 * rule (rf_plan_grid, balanced), each item counted as a one-row tile. */
static int32_t seg_grid(const rf_chain_pkg_t *c, const rf_chain_seg_kernel_t *k, int64_t rows) {
    rf_kernel_spec_t item = k->spec;
    item.tile_rows = 1;
    return rf_plan_grid(&c->grid_plan, &item,
                        (rows + k->spec.tile_rows - 1) / k->spec.tile_rows * k->slices);
}

int32_t rf_chain_pkg_grid(const rf_chain_pkg_t *c, int64_t rows) {
    if (c->n_segs)
        return seg_grid(c, &c->segs[0], rows);
    return c->stream ? c->stream_grid : rf_plan_grid(&c->grid_plan, &c->kernel, rows);
}

/* Scratch bytes of a chain_stream launch or a conventional schedule at `rows` (0 for
 * chain_mma). */
static int64_t scratch_bytes(const rf_chain_pkg_t *c, int64_t rows) {
    if (c->n_segs) {
        int64_t b = 2 * rows * c->aux_row;
        return b < 16 ? 16 : b;
    }
    if (!c->stream)
        return 0;
    int64_t tiles = (rows + c->kernel.tile_rows - 1) / c->kernel.tile_rows;
    return 4 * (rows * c->partial_per_row + tiles * c->counters_per_tile);
}

/* One kernel of the library on `grid` blocks; a CUDA error names the kernel and the rows. */
static rf_status_t launch_kernel(const rf_chain_pkg_t *c, int index, const char *name,
                                 const rf_chain_args_t *args, int32_t grid, void *stream) {
    int err = c->launch(index, args, grid, stream);
    if (err != 0) {
        char call[160];
        snprintf(call, sizeof(call), "rf_pkg_launch_chain(%s, rows=%lld, grid=%d)", name,
                 (long long)args->rows, (int)grid);
        return rf_cuda_status_raw(err, __FILE__, __LINE__, call);
    }
    return RF_OK;
}

rf_status_t rf_chain_pkg_launch(const rf_chain_pkg_t *c, const rf_chain_args_t *args,
                                void *stream) {
    int64_t widest;
    if (!c || !c->initialized || !args)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "rf_chain_pkg_launch: a loaded chain package and its arguments are required");
    widest = c->in_width > c->out_width ? c->in_width : c->out_width;
    if (args->rows < 1 || args->rows > INT32_MAX / widest)
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "%s: %lld rows; expected >= 1 with rows * max(C, N_out) <= 2^31 - 1",
                      c->kernel.name, (long long)args->rows);
    if (c->n_segs && args->rows > INT32_MAX / (c->aux_row > 8 ? c->aux_row : 8))
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "%s: %lld rows; the conventional schedule's scratch holds rows * %lld fp16 "
                      "elements, at most 2^31 - 1",
                      c->kernel.name, (long long)args->rows, (long long)c->aux_row);
    int64_t need = scratch_bytes(c, args->rows);
    if (need && (!args->scratch || args->scratch_bytes < need))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s needs %lld bytes of scratch at %lld rows (args.scratch), got %lld: %s",
                      c->kernel.name, (long long)need, (long long)args->rows,
                      (long long)args->scratch_bytes,
                      c->n_segs ? "the values between the conventional schedule's kernels"
                                : "a chain_stream kernel's partials and counters (zeroed before "
                                  "the first launch); a package compiled with --schedule chain "
                                  "needs none");
    for (int i = 0; i < c->n_segs; i++)
        RF_RETURN_IF_ERROR_PLAIN(launch_kernel(c, c->segs[i].index, c->segs[i].spec.name, args,
                                               seg_grid(c, &c->segs[i], args->rows), stream));
    if (c->n_segs)
        return RF_OK;
    return launch_kernel(c, c->kernel_index, c->kernel.name, args, rf_chain_pkg_grid(c, args->rows),
                         stream);
}

/* ---- device buffers and the graph ---- */

static rf_status_t dev_alloc(void **ptr, int64_t count, size_t elem, const char *what) {
    size_t bytes = (size_t)(count > 0 ? count : 1) * elem;
    cudaError_t err;
    if (count < 0 || count > INT64_MAX / 16)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "%s: %lld elements", what, (long long)count);
    err = cudaMalloc(ptr, bytes);
    if (err != cudaSuccess) {
        char call[96];
        snprintf(call, sizeof(call), "cudaMalloc(%s, %zu bytes)", what, bytes);
        *ptr = NULL;
        return rf_cuda_status(err, __FILE__, __LINE__, call);
    }
    return RF_OK;
}

/* Reads `bytes` at `offset` of the package's weights.bin and copies them to `dst`. */
static rf_status_t upload_weights(const rf_chain_pkg_t *c, void *dst, int64_t offset, size_t bytes,
                                  const char *what) {
    char path[1100];
    void *host = NULL;
    FILE *f;
    rf_status_t st = RF_OK;
    cudaError_t err;
    if (bytes == 0)
        return RF_OK;
    snprintf(path, sizeof(path), "%s/weights.bin", c->dir);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(c->allocator, bytes, what, &host));
    f = fopen(path, "rb");
    if (!f)
        st = RF_ERR(RF_CODE_NOT_FOUND, "%s: %s", path, strerror(errno));
    else if (fseek(f, (long)offset, SEEK_SET) != 0 || fread(host, 1, bytes, f) != bytes)
        st = RF_ERR(RF_CODE_IO_ERROR, "%s: %s (%zu bytes at offset %lld) is cut short", path, what,
                    bytes, (long long)offset);
    if (f)
        fclose(f);
    if (!st && (err = cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice)) != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaMemcpy(weights, host to device)");
    rf_free(c->allocator, host);
    return st;
}

/* chain_stream: the scratch for the exec's rows, zeroed (the counters must start at 0). */
static rf_status_t alloc_scratch(rf_chain_exec_t *e) {
    e->scratch_bytes = scratch_bytes(e->pkg, e->rows);
    e->partial_bytes = e->pkg->stream   ? 4 * e->rows * e->pkg->partial_per_row
                       : e->pkg->n_segs ? e->scratch_bytes
                                        : 0;
    if (!e->scratch_bytes)
        return RF_OK;
    RF_RETURN_IF_ERROR_PLAIN(dev_alloc(&e->scratch, e->scratch_bytes, 1, "chain_stream scratch"));
    RF_CUDA(cudaMemset(e->scratch, 0, (size_t)e->scratch_bytes));
    return RF_OK;
}

static rf_status_t count_nodes(rf_chain_exec_t *e) {
    size_t n = 0;
    cudaGraphNode_t nodes[RF_CHAIN_PKG_MAX_KERNELS + 16];
    RF_CUDA(cudaGraphGetNodes(e->graph, NULL, &n));
    e->nodes = (int)n;
    e->kernel_nodes = 0;
    if (n == 0)
        return RF_OK;
    if (n > sizeof nodes / sizeof nodes[0])
        return RF_ERR(RF_CODE_UNSUPPORTED, "captured chain graph holds %zu nodes; expected %d", n,
                      e->pkg->n_segs ? e->pkg->n_segs : 1);
    RF_CUDA(cudaGraphGetNodes(e->graph, nodes, &n));
    for (size_t i = 0; i < n; i++) {
        enum cudaGraphNodeType type;
        RF_CUDA(cudaGraphNodeGetType(nodes[i], &type));
        if (type == cudaGraphNodeTypeKernel)
            e->kernel_nodes++;
    }
    return RF_OK;
}

rf_status_t rf_chain_launch(rf_chain_exec_t *e, void *stream) {
    rf_chain_args_t args = {e->x,    e->wh,      e->wf,           (float *)e->y,
                            e->rows, e->scratch, e->scratch_bytes};
    if (!e->pkg->initialized)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "chain package %s is not initialised", e->pkg->dir);
    if (e->pkg->n_segs)
        return rf_chain_pkg_launch(e->pkg, &args, stream);
    return launch_kernel(e->pkg, e->pkg->kernel_index, e->pkg->kernel.name, &args, e->grid, stream);
}

static rf_status_t capture(rf_chain_exec_t *e, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    rf_status_t st;
    cudaError_t err = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (err != cudaSuccess)
        return rf_cuda_status(err, __FILE__, __LINE__, "cudaStreamBeginCapture");
    st = rf_chain_launch(e, stream);
    /* the capture always ends, even after a failed launch, so the stream stays usable */
    err = cudaStreamEndCapture(s, &e->graph);
    if (!st && err != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaStreamEndCapture");
    if (!st && !e->graph)
        st = RF_ERR(RF_CODE_INTERNAL, "cudaStreamEndCapture returned no graph");
    if (!st)
        st = count_nodes(e);
    int want = e->pkg->n_segs ? e->pkg->n_segs : 1;
    if (!st && e->kernel_nodes != want)
        st = RF_ERR(RF_CODE_INTERNAL,
                    "the captured graph holds %d kernel nodes; expected %d (the chain's kernels "
                    "must enqueue on the capturing stream)",
                    e->kernel_nodes, want);
    if (!st && (err = cudaGraphInstantiate(&e->exec, e->graph, 0)) != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaGraphInstantiate");
    if (!st && (err = cudaGraphUpload(e->exec, s)) != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaGraphUpload");
    return st;
}

void rf_chain_exec_destroy(rf_chain_exec_t *e) {
    if (!e)
        return;
    if (e->exec)
        (void)cudaGraphExecDestroy(e->exec);
    if (e->graph)
        (void)cudaGraphDestroy(e->graph);
    (void)cudaFree(e->x);
    (void)cudaFree(e->wh);
    (void)cudaFree(e->wf);
    (void)cudaFree(e->y);
    (void)cudaFree(e->scratch);
    rf_free(e->allocator, e);
}

rf_status_t rf_chain_exec_create(rf_allocator_t a, rf_chain_pkg_t *c, int64_t rows, void *stream,
                                 rf_chain_exec_t **out_exec) {
    rf_chain_exec_t *e = NULL;
    rf_status_t st;
    *out_exec = NULL;
    if (!c || !c->initialized)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_chain_exec_create: a loaded chain package "
                                                "is required");
    if (!stream)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: capture needs a stream the caller created; the legacy default "
                      "stream (NULL) cannot be captured",
                      c->kernel.name);
    if (rows < 1 || rows > RF_MAX_DIM ||
        rows * (c->in_width > c->out_width ? c->in_width : c->out_width) > INT32_MAX)
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "%s: %lld rows; expected 1..%lld with rows * max(C, N_out) <= 2^31 - 1",
                      c->kernel.name, (long long)rows, (long long)RF_MAX_DIM);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof(*e), "chain exec", (void **)&e));
    e->allocator = a;
    e->pkg = c;
    e->rows = rows;
    e->grid = rf_chain_pkg_grid(c, rows);
    if (!(st = dev_alloc(&e->x, rows * c->in_width, 2, "X")) &&
        !(st = dev_alloc(&e->y, rows * c->out_width, 4, "Y")) &&
        !(st = dev_alloc(&e->wh, c->wh_elems, 2, "wh")) &&
        !(st = dev_alloc((void **)&e->wf, c->wf_elems, 4, "wf")) &&
        !(st = upload_weights(c, e->wh, c->wh_offset, (size_t)c->wh_elems * 2, "wh")) &&
        !(st = upload_weights(c, e->wf, c->wf_offset, (size_t)c->wf_elems * 4, "wf")) &&
        !(st = alloc_scratch(e)))
        st = capture(e, stream);
    if (st) {
        rf_chain_exec_destroy(e);
        return rf_status_annotate(st, "while preparing %s at %lld rows", c->kernel.name,
                                  (long long)rows);
    }
    *out_exec = e;
    return RF_OK;
}

rf_status_t rf_chain_exec_upload_x(rf_chain_exec_t *e, const uint16_t *x) {
    RF_CUDA(cudaMemcpy(e->x, x, (size_t)(e->rows * e->pkg->in_width) * 2, cudaMemcpyHostToDevice));
    return RF_OK;
}

rf_status_t rf_chain_exec_fill_y(rf_chain_exec_t *e, unsigned char byte, void *stream) {
    RF_CUDA(cudaMemsetAsync(e->y, byte, (size_t)(e->rows * e->pkg->out_width) * 4,
                            (cudaStream_t)stream));
    /* chain_stream: the partials too (a reducer that reads one before it is written then
     * reads the fill, not the previous launch's equal value); never the counters */
    if (e->partial_bytes)
        RF_CUDA(cudaMemsetAsync(e->scratch, byte, (size_t)e->partial_bytes, (cudaStream_t)stream));
    return rf_device_poison_smem(stream);
}

rf_status_t rf_chain_run(rf_chain_exec_t *e, void *stream) {
    RF_CUDA(cudaGraphLaunch(e->exec, (cudaStream_t)stream));
    return RF_OK;
}

rf_status_t rf_chain_exec_download_y(rf_chain_exec_t *e, void *stream, float *out_y) {
    RF_CUDA(cudaStreamSynchronize((cudaStream_t)stream));
    RF_CUDA(
        cudaMemcpy(out_y, e->y, (size_t)(e->rows * e->pkg->out_width) * 4, cudaMemcpyDeviceToHost));
    return RF_OK;
}

int32_t rf_chain_exec_grid(const rf_chain_exec_t *e) {
    return e->grid;
}
int rf_chain_exec_kernel_nodes(const rf_chain_exec_t *e) {
    return e->kernel_nodes;
}
