/* Package loading: reads a package directory's plan.json (cJSON), dlopens the kernels'
 * shared library, resolves the kernel_abi.h entry points by name and checks that plan and
 * library agree. Weights (.npy, listed under plan.json "weights") are read on demand. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

#define RF_PKG_MAX_PLAN_BYTES (16u << 20)
#define RF_PKG_MAX_WEIGHTS 8

struct rf_pkg {
    rf_allocator_t allocator;
    char dir[1024];
    char library[1024];
    char schedule[64];
    int64_t channels, hidden, rows, tile_rows;
    int n_weights;
    char weight_names[RF_PKG_MAX_WEIGHTS][16];
    char weight_paths[RF_PKG_MAX_WEIGHTS][1024];
    void *handle;
    rf_pkg_abi_version_fn abi_version;
    rf_pkg_channels_fn lib_channels;
    rf_pkg_hidden_fn lib_hidden;
    rf_pkg_kernel_count_fn kernel_count;
    rf_pkg_init_fn init;
    rf_pkg_launch_fn launch;
    int initialized; /* rf_pkg_init succeeded: the package can launch */
};

static rf_status_t read_file(rf_allocator_t a, const char *path, char **out_text) {
    FILE *f;
    long size;
    char *text = NULL;
    rf_status_t st;
    *out_text = NULL;
    f = fopen(path, "rb");
    if (!f)
        return RF_ERR(errno == ENOENT ? RF_CODE_NOT_FOUND : RF_CODE_IO_ERROR, "%s: %s", path,
                      strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return RF_ERR(RF_CODE_IO_ERROR, "%s: cannot determine size", path);
    }
    if ((unsigned long)size > RF_PKG_MAX_PLAN_BYTES) {
        fclose(f);
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: %ld bytes, more than the %u a plan may have", path,
                      size, RF_PKG_MAX_PLAN_BYTES);
    }
    st = rf_alloc(a, (size_t)size + 1, "plan text", (void **)&text);
    if (st) {
        fclose(f);
        return st;
    }
    if (fread(text, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        rf_free(a, text);
        return RF_ERR(RF_CODE_IO_ERROR, "%s: short read", path);
    }
    fclose(f);
    text[size] = '\0';
    *out_text = text;
    return RF_OK;
}

static rf_status_t get_int(const cJSON *root, const char *path, const char *key, int required,
                           int64_t min, int64_t *out) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    double v;
    if (!item) {
        if (required)
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s: field \"%s\" is missing", path, key);
        *out = 0;
        return RF_OK;
    }
    if (!cJSON_IsNumber(item))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: field \"%s\" must be a number", path, key);
    v = item->valuedouble;
    if (v != (double)(int64_t)v || v < (double)min || v > (double)RF_MAX_DIM)
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: field \"%s\" is %g; expected an integer in %lld..%lld", path, key, v,
                      (long long)min, (long long)RF_MAX_DIM);
    *out = (int64_t)v;
    return RF_OK;
}

static rf_status_t get_str(const cJSON *root, const char *path, const char *key, char *dst,
                           size_t dst_size) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!item)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: field \"%s\" is missing", path, key);
    if (!cJSON_IsString(item) || !item->valuestring || !item->valuestring[0])
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: field \"%s\" must be a non-empty string", path,
                      key);
    if (strlen(item->valuestring) >= dst_size)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: field \"%s\" is longer than %zu bytes", path, key,
                      dst_size - 1);
    snprintf(dst, dst_size, "%s", item->valuestring);
    return RF_OK;
}

/* Joins dir and a relative file name from the plan; rejects absolute paths and "..", so a
 * plan cannot point outside its package. */
static rf_status_t join_in_pkg(const char *dir, const char *plan, const char *key, const char *rel,
                               char *dst, size_t dst_size) {
    if (rel[0] == '/' || strstr(rel, ".."))
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: \"%s\" is \"%s\"; it must be a path inside the package", plan, key, rel);
    if ((size_t)snprintf(dst, dst_size, "%s/%s", dir, rel) >= dst_size)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s: path of \"%s\" too long", plan, key);
    return RF_OK;
}

/* The kernel library's file name: plan.json "library", else the "library" of the kernel
 * manifest that plan.json names under "kernels" (default kernels.json), which
 * kernels/build.py writes. */
static rf_status_t library_name(rf_pkg_t *pkg, const cJSON *plan, const char *plan_path, char *dst,
                                size_t dst_size) {
    char manifest_rel[256] = "kernels.json", manifest[1400];
    char *text = NULL;
    cJSON *root;
    rf_status_t st;
    if (cJSON_GetObjectItemCaseSensitive(plan, "library"))
        return get_str(plan, plan_path, "library", dst, dst_size);
    if (cJSON_GetObjectItemCaseSensitive(plan, "kernels"))
        RF_RETURN_IF_ERROR_PLAIN(
            get_str(plan, plan_path, "kernels", manifest_rel, sizeof(manifest_rel)));
    RF_RETURN_IF_ERROR_PLAIN(
        join_in_pkg(pkg->dir, plan_path, "kernels", manifest_rel, manifest, sizeof(manifest)));
    st = read_file(pkg->allocator, manifest, &text);
    if (st)
        return rf_status_annotate(st,
                                  "%s names no \"library\", so the kernel manifest is "
                                  "needed",
                                  plan_path);
    root = cJSON_Parse(text);
    rf_free(pkg->allocator, text);
    if (!root)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: not valid JSON", manifest);
    st = get_str(root, manifest, "library", dst, dst_size);
    cJSON_Delete(root);
    return st;
}

static rf_status_t parse_plan(rf_pkg_t *pkg, const char *plan_path, const char *text) {
    cJSON *root = cJSON_Parse(text);
    const cJSON *weights, *w;
    char lib_rel[512];
    rf_status_t st = RF_OK;
    if (!root) {
        const char *where = cJSON_GetErrorPtr();
        long offset = where ? (long)(where - text) : -1;
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: not valid JSON (near byte %ld)", plan_path, offset);
    }
    if (!cJSON_IsObject(root)) {
        st = RF_ERR(RF_CODE_PARSE_ERROR, "%s: the top level must be a JSON object", plan_path);
        goto done;
    }
    if ((st = get_int(root, plan_path, "channels", 1, 1, &pkg->channels)) ||
        (st = get_int(root, plan_path, "hidden", 1, 1, &pkg->hidden)) ||
        (st = get_int(root, plan_path, "rows", 0, 1, &pkg->rows)) ||
        (st = get_int(root, plan_path, "tile_rows", 0, 1, &pkg->tile_rows)) ||
        (st = get_str(root, plan_path, "schedule", pkg->schedule, sizeof(pkg->schedule))) ||
        (st = library_name(pkg, root, plan_path, lib_rel, sizeof(lib_rel))) ||
        (st = join_in_pkg(pkg->dir, plan_path, "library", lib_rel, pkg->library,
                          sizeof(pkg->library))))
        goto done;
    weights = cJSON_GetObjectItemCaseSensitive(root, "weights");
    if (weights && !cJSON_IsObject(weights)) {
        st = RF_ERR(RF_CODE_PARSE_ERROR, "%s: \"weights\" must be an object of name: file",
                    plan_path);
        goto done;
    }
    cJSON_ArrayForEach(w, weights) {
        if (pkg->n_weights >= RF_PKG_MAX_WEIGHTS) {
            st = RF_ERR(RF_CODE_PARSE_ERROR, "%s: more than %d weights", plan_path,
                        RF_PKG_MAX_WEIGHTS);
            goto done;
        }
        if (!cJSON_IsString(w) || !w->string || strlen(w->string) >= 16) {
            st = RF_ERR(RF_CODE_PARSE_ERROR,
                        "%s: weights entry \"%s\" must be a short name mapped to a file name",
                        plan_path, w->string ? w->string : "?");
            goto done;
        }
        snprintf(pkg->weight_names[pkg->n_weights], 16, "%s", w->string);
        st = join_in_pkg(pkg->dir, plan_path, w->string, w->valuestring,
                         pkg->weight_paths[pkg->n_weights], 1024);
        if (st)
            goto done;
        pkg->n_weights++;
    }
done:
    cJSON_Delete(root);
    return st;
}

static void *sym(void *handle, const char *name) {
    void *p;
    (void)dlerror();
    p = dlsym(handle, name);
    return dlerror() ? NULL : p;
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
    if (pkg->lib_channels() != pkg->channels || pkg->lib_hidden() != pkg->hidden)
        return RF_ERR(RF_CODE_MISMATCH,
                      "kernel library %s was built for channels=%d hidden=%d but plan.json says "
                      "channels=%lld hidden=%lld",
                      pkg->library, pkg->lib_channels(), pkg->lib_hidden(),
                      (long long)pkg->channels, (long long)pkg->hidden);
    if (strcmp(pkg->schedule, "cublaslt") != 0 && pkg->kernel_count(pkg->schedule) < 1)
        return RF_ERR(RF_CODE_MISMATCH,
                      "plan.json chose schedule \"%s\" but kernel library %s does not contain it",
                      pkg->schedule, pkg->library);
    return RF_OK;
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

static rf_status_t load(rf_allocator_t a, const char *dir, int with_gpu, rf_pkg_t **out_pkg) {
    rf_pkg_t *pkg = NULL;
    char plan_path[1100];
    char *text = NULL;
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
    st = read_file(a, plan_path, &text);
    if (!st)
        st = parse_plan(pkg, plan_path, text);
    rf_free(a, text);
    if (!st)
        st = open_library(pkg);
    if (!st && with_gpu) {
        int err;
        st = rf_device_require();
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
    return pkg->channels;
}
int64_t rf_pkg_hidden(const rf_pkg_t *pkg) {
    return pkg->hidden;
}
int64_t rf_pkg_rows(const rf_pkg_t *pkg) {
    return pkg->rows;
}
int64_t rf_pkg_tile_rows(const rf_pkg_t *pkg) {
    return pkg->tile_rows;
}
const char *rf_pkg_schedule(const rf_pkg_t *pkg) {
    return pkg->schedule;
}

int rf_pkg_kernel_count(const rf_pkg_t *pkg, const char *schedule) {
    int n;
    if (!pkg || !schedule || !pkg->kernel_count)
        return -1;
    n = pkg->kernel_count(schedule);
    return n >= 1 ? n : -1;
}

rf_status_t rf_pkg_launch_schedule(rf_pkg_t *pkg, const char *schedule, const rf_mlp_args_t *args,
                                   void *stream) {
    int err;
    if (!pkg->initialized)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "package %s was loaded without a GPU (rf_pkg_load_nogpu); it cannot launch",
                      pkg->dir);
    err = pkg->launch(schedule, args, stream);
    if (err != 0) {
        char call[128];
        snprintf(call, sizeof(call), "rf_pkg_launch(\"%s\", rows=%lld)", schedule,
                 (long long)args->rows);
        return rf_cuda_status_raw(err, __FILE__, __LINE__, call);
    }
    return RF_OK;
}

rf_status_t rf_pkg_weight(const rf_pkg_t *pkg, const char *name, rf_tensor_t *out_tensor) {
    memset(out_tensor, 0, sizeof(*out_tensor));
    for (int i = 0; i < pkg->n_weights; i++)
        if (strcmp(pkg->weight_names[i], name) == 0) {
            RF_RETURN_IF_ERROR(rf_npy_read(pkg->allocator, pkg->weight_paths[i], out_tensor),
                               "while reading weight %s of package %s", name, pkg->dir);
            return RF_OK;
        }
    return RF_ERR(RF_CODE_NOT_FOUND, "package %s: plan.json names no weight \"%s\"", pkg->dir,
                  name);
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
    int64_t c = pkg->channels, h = pkg->hidden;
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
