/* Package loading: reads a package directory's plan.json (plan_read.c), dlopens the
 * kernels' shared library, resolves the kernel_abi.h entry points by name and checks that
 * plan, library and device agree. Launches apply the plan: each kernel of a schedule in
 * order, on the grid its recorded rule gives for the row count. Weights are read on demand
 * from weights.bin at the offsets the plan records. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

struct rf_pkg {
    rf_allocator_t allocator;
    char dir[1024];
    char library[1100];
    rf_plan_t plan;
    void *handle;
    rf_pkg_abi_version_fn abi_version;
    rf_pkg_channels_fn lib_channels;
    rf_pkg_hidden_fn lib_hidden;
    rf_pkg_kernel_count_fn kernel_count;
    rf_pkg_kernel_name_fn kernel_name;
    rf_pkg_init_fn init;
    rf_pkg_launch_fn launch;
    int initialized; /* rf_pkg_init succeeded: the package can launch */
};

static void *sym(void *handle, const char *name) {
    void *p;
    (void)dlerror();
    p = dlsym(handle, name);
    return dlerror() ? NULL : p;
}

/* The library must hold exactly the plan's kernels, in the plan's order, for its shape. */
static rf_status_t check_library(rf_pkg_t *pkg) {
    const rf_plan_t *p = &pkg->plan;
    if (pkg->lib_channels() != p->channels || pkg->lib_hidden() != p->hidden)
        return RF_ERR(RF_CODE_MISMATCH,
                      "kernel library %s was built for channels=%d hidden=%d but plan.json says "
                      "channels=%lld hidden=%lld",
                      pkg->library, pkg->lib_channels(), pkg->lib_hidden(), (long long)p->channels,
                      (long long)p->hidden);
    if (pkg->kernel_count() != p->kernel_count)
        return RF_ERR(RF_CODE_MISMATCH, "kernel library %s holds %d kernels, plan.json lists %d",
                      pkg->library, pkg->kernel_count(), p->kernel_count);
    for (int i = 0; i < p->kernel_count; i++) {
        const char *name = pkg->kernel_name(i);
        if (!name || strcmp(name, p->kernels[i].name) != 0)
            return RF_ERR(RF_CODE_MISMATCH,
                          "kernel %d of library %s is \"%s\"; plan.json says \"%s\"", i,
                          pkg->library, name ? name : "(none)", p->kernels[i].name);
    }
    return RF_OK;
}

static rf_status_t open_library(rf_pkg_t *pkg) {
    struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"rf_pkg_abi_version", (void **)&pkg->abi_version},
        {"rf_pkg_channels", (void **)&pkg->lib_channels},
        {"rf_pkg_hidden", (void **)&pkg->lib_hidden},
        {"rf_pkg_kernel_count", (void **)&pkg->kernel_count},
        {"rf_pkg_kernel_name", (void **)&pkg->kernel_name},
        {"rf_pkg_init", (void **)&pkg->init},
        {"rf_pkg_launch", (void **)&pkg->launch},
    };
    int version;
    pkg->handle = dlopen(pkg->library, RTLD_NOW | RTLD_LOCAL);
    if (!pkg->handle) {
        const char *why = dlerror();
        return RF_ERR(RF_CODE_NOT_FOUND, "cannot load kernel library %s: %s", pkg->library,
                      why ? why : "unknown dlopen error");
    }
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        /* dlsym returns void*; converting it to a function pointer is what POSIX
         * promises works, so the bytes are copied rather than cast. */
        void *p = sym(pkg->handle, syms[i].name);
        if (!p)
            return RF_ERR(RF_CODE_NOT_FOUND,
                          "kernel library %s does not export %s (see rowfuse/kernel_abi.h)",
                          pkg->library, syms[i].name);
        memcpy(syms[i].slot, &p, sizeof(p));
    }
    version = pkg->abi_version();
    if (version != RF_KERNEL_ABI_VERSION)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "kernel library %s has ABI version %d; this runtime speaks version %d: "
                      "recompile the package",
                      pkg->library, version, RF_KERNEL_ABI_VERSION);
    return check_library(pkg);
}

void rf_pkg_destroy(rf_pkg_t *pkg) {
    if (!pkg)
        return;
    /* The library is left loaded: CUDA modules it registered may still be referenced by
     * graphs or by the CUDA runtime's exit handlers, and unloading them is not worth the
     * risk. dlclose is only called when no kernel was initialised. */
    if (pkg->handle && !pkg->initialized)
        dlclose(pkg->handle);
    rf_free(pkg->allocator, pkg);
}

/* The grid rule counts the target's SMs: a device with another count gets a clear error
 * rather than a silently different launch. */
static rf_status_t check_device(rf_pkg_t *pkg) {
    int dev = 0, sms = 0;
    RF_CUDA(cudaGetDevice(&dev));
    RF_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (sms != pkg->plan.target.sm_count)
        return RF_ERR(RF_CODE_MISMATCH,
                      "the package was planned for %d SMs (%s); this device has %d: recompile it "
                      "with rowfuse compile --sms %d",
                      pkg->plan.target.sm_count, pkg->plan.target.name, sms, sms);
    return RF_OK;
}

static rf_status_t load(rf_allocator_t a, const char *dir, int with_gpu, rf_pkg_t **out_pkg) {
    rf_pkg_t *pkg = NULL;
    char plan_path[1100];
    rf_status_t st;
    *out_pkg = NULL;
    if (!dir || !dir[0])
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "package directory is empty");
    if (strlen(dir) >= sizeof(pkg->dir) - 64)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "package directory name too long: %s", dir);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof(*pkg), "package", (void **)&pkg));
    pkg->allocator = a;
    snprintf(pkg->dir, sizeof(pkg->dir), "%s", dir);
    snprintf(plan_path, sizeof(plan_path), "%s/plan.json", dir);
    st = rf_plan_read(plan_path, &pkg->plan);
    if (!st) {
        snprintf(pkg->library, sizeof(pkg->library), "%s/%s", dir, pkg->plan.library);
        st = open_library(pkg);
    }
    if (!st && with_gpu) {
        int err;
        st = rf_device_require();
        if (!st)
            st = check_device(pkg);
        if (!st && (err = pkg->init()) != 0)
            st = rf_cuda_status_raw(err, __FILE__, __LINE__, "rf_pkg_init");
        pkg->initialized = st == RF_OK;
    }
    if (st) {
        rf_pkg_destroy(pkg);
        return rf_status_annotate(st, "while loading package %s", dir);
    }
    *out_pkg = pkg;
    return RF_OK;
}

rf_status_t rf_pkg_load(rf_allocator_t a, const char *dir, rf_pkg_t **out_pkg) {
    return load(a, dir, 1, out_pkg);
}

rf_status_t rf_pkg_load_nogpu(rf_allocator_t a, const char *dir, rf_pkg_t **out_pkg) {
    return load(a, dir, 0, out_pkg);
}

const char *rf_pkg_dir(const rf_pkg_t *pkg) {
    return pkg->dir;
}
int64_t rf_pkg_channels(const rf_pkg_t *pkg) {
    return pkg->plan.channels;
}
int64_t rf_pkg_hidden(const rf_pkg_t *pkg) {
    return pkg->plan.hidden;
}
int64_t rf_pkg_rows(const rf_pkg_t *pkg) {
    return pkg->plan.rows;
}
int64_t rf_pkg_tile_rows(const rf_pkg_t *pkg) {
    const rf_plan_schedule_t *ps = &pkg->plan.schedules[pkg->plan.schedule];
    return ps->kernel_count ? pkg->plan.kernels[ps->kernel[0]].tile_rows : 0;
}
const char *rf_pkg_schedule(const rf_pkg_t *pkg) {
    return rf_schedule_name(pkg->plan.schedule);
}
const rf_plan_t *rf_pkg_plan(const rf_pkg_t *pkg) {
    return &pkg->plan;
}
const char *rf_pkg_graph_hash(const rf_pkg_t *pkg) {
    return pkg->plan.graph_hash;
}

int rf_pkg_kernel_count(const rf_pkg_t *pkg, const char *schedule) {
    rf_schedule_t s;
    rf_status_t st;
    if (!pkg || (st = rf_schedule_parse(schedule, &s)) != RF_OK) {
        if (pkg)
            rf_status_free(st);
        return -1;
    }
    const rf_plan_schedule_t *ps = &pkg->plan.schedules[s];
    return ps->available && ps->kernel_count > 0 ? ps->kernel_count : -1;
}

rf_status_t rf_pkg_launch_schedule(rf_pkg_t *pkg, const char *schedule, const rf_mlp_args_t *args,
                                   void *stream) {
    rf_schedule_t s;
    if (!pkg->initialized)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "package %s was loaded without a GPU (rf_pkg_load_nogpu); it cannot launch",
                      pkg->dir);
    RF_RETURN_IF_ERROR_PLAIN(rf_schedule_parse(schedule, &s));
    const rf_plan_schedule_t *ps = &pkg->plan.schedules[s];
    for (int i = 0; i < ps->kernel_count; i++) {
        const rf_kernel_spec_t *k = &pkg->plan.kernels[ps->kernel[i]];
        int32_t grid = rf_plan_grid(&pkg->plan, k, args->rows);
        int err = pkg->launch(ps->kernel[i], args, grid, stream);
        if (err != 0) {
            char call[160];
            snprintf(call, sizeof(call), "rf_pkg_launch(%s, rows=%lld, grid=%d)", k->name,
                     (long long)args->rows, (int)grid);
            return rf_cuda_status_raw(err, __FILE__, __LINE__, call);
        }
    }
    return RF_OK;
}

rf_status_t rf_pkg_weight(const rf_pkg_t *pkg, const char *name, rf_tensor_t *out_tensor) {
    const rf_plan_weight_t *pw = NULL;
    char path[1100];
    memset(out_tensor, 0, sizeof(*out_tensor));
    for (int i = 0; i < RF_PLAN_WEIGHTS; i++)
        if (!strcmp(pkg->plan.weights[i].name, name))
            pw = &pkg->plan.weights[i];
    if (!pw)
        return RF_ERR(RF_CODE_NOT_FOUND, "package %s: plan.json names no weight \"%s\"", pkg->dir,
                      name);
    rf_shape_t shape = {pw->rank, {pw->dims[0], pw->dims[1]}};
    RF_RETURN_IF_ERROR_PLAIN(
        rf_tensor_alloc(pkg->allocator, (rf_dtype_t)pw->dtype, &shape, out_tensor));
    rf_status_t st = RF_OK;
    if (out_tensor->nbytes != (size_t)pw->bytes)
        st = RF_ERR(RF_CODE_PARSE_ERROR, "package %s: weight %s is %lld bytes; its shape needs %zu",
                    pkg->dir, name, (long long)pw->bytes, out_tensor->nbytes);
    snprintf(path, sizeof(path), "%s/weights.bin", pkg->dir);
    FILE *f = st ? NULL : fopen(path, "rb");
    if (!st && !f)
        st = RF_ERR(RF_CODE_NOT_FOUND, "%s: %s", path, strerror(errno));
    if (f) {
        if (fseek(f, (long)pw->offset, SEEK_SET) != 0 ||
            fread(out_tensor->data, 1, out_tensor->nbytes, f) != out_tensor->nbytes)
            st = RF_ERR(RF_CODE_IO_ERROR, "%s: weight %s at offset %lld is cut short", path, name,
                        (long long)pw->offset);
        fclose(f);
    }
    if (st)
        rf_tensor_free(pkg->allocator, out_tensor);
    return st;
}

static rf_status_t expect(const rf_tensor_t *t, const char *name, rf_dtype_t dtype, int rank,
                          int64_t d0, int64_t d1) {
    if (t->dtype != dtype || t->shape.rank != rank || t->shape.dims[0] != d0 ||
        (rank == 2 && t->shape.dims[1] != d1)) {
        char have[64];
        rf_shape_format(&t->shape, have, sizeof(have));
        return RF_ERR(RF_CODE_SHAPE_ERROR, "weight %s is %s %s; expected %s [%lld%s%lld]", name,
                      rf_dtype_name(t->dtype), have, rf_dtype_name(dtype), (long long)d0,
                      rank == 2 ? ", " : "", rank == 2 ? (long long)d1 : 0LL);
    }
    return RF_OK;
}

rf_status_t rf_pkg_upload_weights(const rf_pkg_t *pkg, rf_mlp_buffers_t *buffers) {
    rf_tensor_t t[4];
    const char *names[4] = {"w1", "b1", "w2", "b2"};
    rf_status_t st = RF_OK;
    int n = 0;
    int64_t c = pkg->plan.channels, h = pkg->plan.hidden;
    if (buffers->channels != c || buffers->hidden != h)
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "buffers are for channels=%lld hidden=%lld, package %s is for %lld, %lld",
                      (long long)buffers->channels, (long long)buffers->hidden, pkg->dir,
                      (long long)c, (long long)h);
    memset(t, 0, sizeof(t));
    for (n = 0; n < 4 && !st; n++)
        st = rf_pkg_weight(pkg, names[n], &t[n]);
    if (!st && !(st = expect(&t[0], "w1", RF_DTYPE_F16, 2, c, h)) &&
        !(st = expect(&t[1], "b1", RF_DTYPE_F32, 1, h, 0)) &&
        !(st = expect(&t[2], "w2", RF_DTYPE_F16, 2, h, c)) &&
        !(st = expect(&t[3], "b2", RF_DTYPE_F32, 1, c, 0)))
        st = rf_mlp_buffers_upload(buffers, NULL, t[0].data, t[1].data, t[2].data, t[3].data);
    for (int i = 0; i < 4; i++)
        rf_tensor_free(pkg->allocator, &t[i]);
    return st ? rf_status_annotate(st, "while uploading the weights of %s", pkg->dir) : RF_OK;
}

rf_status_t rf_pkg_upload_weights_to(const rf_pkg_t *pkg, void *w1, void *b1, void *w2, void *b2) {
    rf_mlp_buffers_t b;
    if (!w1 || !b1 || !w2 || !b2)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_pkg_upload_weights_to: every weight pointer "
                                                "must be set");
    memset(&b, 0, sizeof(b));
    b.channels = pkg->plan.channels;
    b.hidden = pkg->plan.hidden;
    b.args.w1 = w1;
    b.args.b1 = b1;
    b.args.w2 = w2;
    b.args.b2 = b2;
    return rf_pkg_upload_weights(pkg, &b);
}
