/* The fake CUDA runtime of the fault-injection test (fake_cuda.h): the cudart entry points
 * the rowfuse runtime and the stand-in package call, the glue kernels of glue.h, the
 * injection countdown and the bookkeeping of live objects (the glue kernels are in
 * fake_glue.c). Built into a shared library so
 * the runtime (linked into the test) and the package (dlopened) share one instance. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fake_cuda.h"

#define FAKE_MEM 0
#define FAKE_SMS 132 /* the SM count the test's plan was made for */

typedef struct fake_obj {
    int kind;
    const void *p;
    size_t bytes; /* device buffers */
} fake_obj_t;

static fake_obj_t *objs;
static size_t n_objs, cap_objs;
static long calls, fail_at, last_library_call;
static const char *injected_call, *injected_error;
static int misuse, libraries, divert;
static long eager_kernels;
static char trace[4096];
static size_t trace_len;
static char misuse_what[512];

struct CUgraphNode_st {
    enum cudaGraphNodeType type;
};
struct CUgraph_st {
    struct CUgraphNode_st *nodes;
    size_t n, cap;
};
struct CUstream_st {
    unsigned flags;  /* cudaStreamDefault (blocking) or cudaStreamNonBlocking */
    int capturing;   /* a capture is in progress */
    int invalidated; /* ... and something invalidated it */
    cudaGraph_t graph;
};
struct CUevent_st {
    int recorded;
};
struct CUgraphExec_st {
    size_t nodes;
};
struct CUlib_st {
    int loaded;
};

static enum cudaStreamCaptureMode thread_mode = cudaStreamCaptureModeGlobal;

/* ---- control ---- */

void fake_cuda_reset(long n) {
    calls = 0;
    fail_at = n;
    last_library_call = 0;
    injected_call = injected_error = NULL;
    misuse = 0;
    misuse_what[0] = '\0';
    divert = 0;
    eager_kernels = 0;
    trace[0] = '\0';
    trace_len = 0;
}

void fake_cuda_divert(int n) {
    divert = n;
}
long fake_cuda_eager_kernels(void) {
    return eager_kernels;
}
const char *fake_cuda_trace(void) {
    return trace;
}

long fake_cuda_calls(void) {
    return calls;
}
const char *fake_cuda_injected_call(void) {
    return injected_call;
}
const char *fake_cuda_injected_error(void) {
    return injected_error;
}
int fake_cuda_libraries(void) {
    return libraries;
}
long fake_cuda_last_library_call(void) {
    return last_library_call;
}

int fake_cuda_inject(const char *call, const char *error_name) {
    if (++calls != fail_at)
        return 0;
    injected_call = call;
    injected_error = error_name;
    return 1;
}

void fake_cuda_bad(const char *fmt, ...) {
    va_list ap;
    if (misuse++ == 0) {
        va_start(ap, fmt);
        vsnprintf(misuse_what, sizeof(misuse_what), fmt, ap);
        va_end(ap);
    }
}

int fake_cuda_misuse(char *what, size_t size) {
    snprintf(what, size, "%s", misuse_what);
    return misuse;
}

static const char *const kind_name[FAKE_KINDS] = {
    "device buffer", "stream",          "event",       "graph",         "graph exec",
    "library",       "cuBLASLt handle", "matmul desc", "matrix layout", "preference"};

int fake_cuda_outstanding(char *what, size_t size) {
    int n = 0;
    what[0] = '\0';
    for (size_t i = 0; i < n_objs; i++) {
        if (objs[i].kind == FAKE_LIBRARY)
            continue;
        if (n++ < 4) {
            size_t used = strlen(what);
            snprintf(what + used, size - used, "%s%s %p", used ? ", " : "", kind_name[objs[i].kind],
                     objs[i].p);
        }
    }
    return n;
}

void fake_cuda_forget(void) {
    size_t kept = 0;
    for (size_t i = 0; i < n_objs; i++)
        if (objs[i].kind == FAKE_LIBRARY)
            objs[kept++] = objs[i];
    n_objs = kept;
}

/* ---- bookkeeping ---- */

static void track_bytes(int kind, const void *p, size_t bytes) {
    if (n_objs == cap_objs) {
        size_t cap = cap_objs ? 2 * cap_objs : 64;
        fake_obj_t *grown = realloc(objs, cap * sizeof(*objs));
        if (!grown) {
            fprintf(stderr, "fake_cuda: out of host memory for its bookkeeping\n");
            abort();
        }
        objs = grown;
        cap_objs = cap;
    }
    objs[n_objs++] = (fake_obj_t){kind, p, bytes};
}

void fake_cuda_track(int kind, const void *p) {
    track_bytes(kind, p, 0);
}

static long find(int kind, const void *p) {
    for (size_t i = 0; i < n_objs; i++)
        if (objs[i].kind == kind && objs[i].p == p)
            return (long)i;
    return -1;
}

int fake_cuda_live(int kind, const void *p) {
    return p && find(kind, p) >= 0;
}

int fake_cuda_untrack(int kind, const void *p, const char *call) {
    long i = find(kind, p);
    if (i < 0) {
        fake_cuda_bad("%s: %p is not a live %s", call, p, kind_name[kind]);
        return 0;
    }
    objs[i] = objs[--n_objs];
    return 1;
}

void *fake_cuda_new(int kind, size_t size) {
    void *p = calloc(1, size);
    if (p)
        fake_cuda_track(kind, p);
    return p;
}

int fake_cuda_delete(int kind, void *p, const char *call) {
    if (!fake_cuda_untrack(kind, p, call))
        return 0;
    free(p);
    return 1;
}

int fake_cuda_check(int kind, const void *p, const char *call) {
    if (fake_cuda_live(kind, p))
        return 1;
    fake_cuda_bad("%s: %s %p does not exist", call, kind_name[kind], p);
    return 0;
}

int fake_cuda_range(const void *p, size_t bytes, const char *call, const char *what) {
    const char *c = (const char *)p;
    for (size_t i = 0; c && i < n_objs; i++) {
        const char *base = (const char *)objs[i].p;
        if (objs[i].kind == FAKE_MEM && c >= base && c + bytes <= base + objs[i].bytes)
            return 1;
    }
    fake_cuda_bad("%s: %s [%p, +%zu bytes) is not inside a live device buffer", call, what, p,
                  bytes);
    return 0;
}

/* ---- streams and capture ---- */

/* The stream object behind a handle; NULL for the legacy default stream (NULL or
 * cudaStreamLegacy) and the per-thread default stream, which are never captured here. */
static struct CUstream_st *created(cudaStream_t s) {
    return s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread ? NULL : s;
}

static int stream_ok(cudaStream_t s, const char *call) {
    return !created(s) || fake_cuda_check(FAKE_STREAM, s, call);
}

static void add_node(cudaGraph_t g, enum cudaGraphNodeType type) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        struct CUgraphNode_st *grown = realloc(g->nodes, cap * sizeof(*grown));
        if (!grown) {
            fprintf(stderr, "fake_cuda: out of host memory for a graph\n");
            abort();
        }
        g->nodes = grown;
        g->cap = cap;
    }
    g->nodes[g->n++].type = type;
}

/* Work on the legacy default stream waits for every blocking stream: with one of them
 * capturing, CUDA refuses it and invalidates that capture. 1 when that happened. */
static int legacy_implicit(void) {
    int hit = 0;
    for (size_t i = 0; i < n_objs; i++) {
        struct CUstream_st *o = (struct CUstream_st *)objs[i].p;
        if (objs[i].kind == FAKE_STREAM && o->capturing && !(o->flags & cudaStreamNonBlocking)) {
            o->invalidated = 1;
            hit = 1;
        }
    }
    return hit;
}

static void trace_add(const char *call, int captured) {
    int n;
    if (trace_len + 1 >= sizeof(trace))
        return;
    n = snprintf(trace + trace_len, sizeof(trace) - trace_len, "%s%s%s", trace_len ? " " : "", call,
                 captured ? "[graph]" : "");
    trace_len =
        n > 0 && (size_t)n < sizeof(trace) - trace_len ? trace_len + (size_t)n : sizeof(trace) - 1;
}

int fake_cuda_enqueue(void *stream, int node_type, const char *call, const char *error_name,
                      int *captured) {
    cudaStream_t s = (cudaStream_t)stream;
    struct CUstream_st *c = created(s);
    *captured = 0;
    if (!stream_ok(s, call))
        return FAKE_REFUSED;
    if (fake_cuda_inject(call, error_name)) {
        if (c && c->capturing)
            c->invalidated = 1;
        return FAKE_INJECTED;
    }
    if (s != cudaStreamPerThread && !c && legacy_implicit())
        return FAKE_IMPLICIT;
    if (c && c->capturing) {
        if (c->invalidated)
            return FAKE_REFUSED;
        if (node_type == cudaGraphNodeTypeKernel && divert > 0) {
            divert--; /* as if the launcher had used another stream */
            eager_kernels++;
            trace_add(call, 0);
            return FAKE_GO;
        }
        add_node(c->graph, (enum cudaGraphNodeType)node_type);
        *captured = 1;
    } else if (node_type == cudaGraphNodeTypeKernel) {
        eager_kernels++;
    }
    trace_add(call, *captured);
    return FAKE_GO;
}

#define INJECT(call, err)                                                                          \
    do {                                                                                           \
        if (fake_cuda_inject(call, #err))                                                          \
            return err;                                                                            \
    } while (0)

/* An enqueue as a cudaError_t; *captured as fake_cuda_enqueue's. */
static cudaError_t enqueue(cudaStream_t s, enum cudaGraphNodeType type, const char *call,
                           cudaError_t err, const char *err_name, int *captured) {
    switch (fake_cuda_enqueue(s, type, call, err_name, captured)) {
    case FAKE_GO:
        return cudaSuccess;
    case FAKE_INJECTED:
        return err;
    case FAKE_IMPLICIT:
        return cudaErrorStreamCaptureImplicit;
    default:
        return created(s) && s->invalidated ? cudaErrorStreamCaptureInvalidated
                                            : cudaErrorInvalidResourceHandle;
    }
}
#define ENQUEUE(s, type, call, err, captured) enqueue((s), (type), (call), err, #err, (captured))

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
    INJECT("cudaStreamCreateWithFlags", cudaErrorMemoryAllocation);
    *s = fake_cuda_new(FAKE_STREAM, sizeof(**s));
    if (!*s)
        return cudaErrorMemoryAllocation;
    (*s)->flags = flags;
    return cudaSuccess;
}

static void graph_free(cudaGraph_t g) {
    if (g)
        free(g->nodes);
    free(g);
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!fake_cuda_untrack(FAKE_STREAM, s, "cudaStreamDestroy"))
        return cudaErrorInvalidResourceHandle;
    if (s->capturing) {
        fake_cuda_bad("cudaStreamDestroy: stream %p is still capturing", (void *)s);
        graph_free(s->graph);
    }
    free(s);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (!stream_ok(s, "cudaStreamSynchronize"))
        return cudaErrorInvalidResourceHandle;
    INJECT("cudaStreamSynchronize", cudaErrorIllegalAddress);
    if (created(s) && s->capturing) { /* not allowed while capturing; invalidates it */
        s->invalidated = 1;
        return cudaErrorStreamCaptureUnsupported;
    }
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
    (void)mode;
    if (!created(s) || !stream_ok(s, "cudaStreamBeginCapture"))
        return cudaErrorInvalidResourceHandle;
    INJECT("cudaStreamBeginCapture", cudaErrorStreamCaptureUnsupported);
    if (s->capturing)
        return cudaErrorIllegalState;
    s->graph = calloc(1, sizeof(*s->graph));
    if (!s->graph)
        return cudaErrorMemoryAllocation;
    s->capturing = 1;
    s->invalidated = 0;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph) {
    cudaGraph_t g;
    int failed;
    if (!created(s) || !stream_ok(s, "cudaStreamEndCapture"))
        return cudaErrorInvalidResourceHandle;
    if (!s->capturing)
        return cudaErrorIllegalState;
    /* The capture ends whatever happens; an invalidated one yields no graph. */
    failed = fake_cuda_inject("cudaStreamEndCapture", "cudaErrorStreamCaptureInvalidated");
    g = s->graph;
    s->graph = NULL;
    s->capturing = 0;
    *graph = NULL;
    if (failed || s->invalidated) {
        s->invalidated = 0;
        graph_free(g);
        return cudaErrorStreamCaptureInvalidated;
    }
    fake_cuda_track(FAKE_GRAPH, g);
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status) {
    if (!stream_ok(s, "cudaStreamIsCapturing"))
        return cudaErrorInvalidResourceHandle;
    INJECT("cudaStreamIsCapturing", cudaErrorStreamCaptureImplicit);
    *status = !created(s) || !s->capturing ? cudaStreamCaptureStatusNone
              : s->invalidated             ? cudaStreamCaptureStatusInvalidated
                                           : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
    enum cudaStreamCaptureMode old = thread_mode;
    INJECT("cudaThreadExchangeStreamCaptureMode", cudaErrorInvalidValue);
    thread_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

/* ---- graphs ---- */

cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *n) {
    if (!fake_cuda_check(FAKE_GRAPH, g, "cudaGraphGetNodes"))
        return cudaErrorInvalidValue;
    INJECT("cudaGraphGetNodes", cudaErrorInvalidValue);
    if (nodes) {
        if (*n == 0)
            return cudaErrorInvalidValue;
        for (size_t i = 0; i < *n && i < g->n; i++)
            nodes[i] = &g->nodes[i];
    }
    *n = g->n;
    return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *type) {
    INJECT("cudaGraphNodeGetType", cudaErrorInvalidValue);
    *type = node->type;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    if (!fake_cuda_untrack(FAKE_GRAPH, g, "cudaGraphDestroy"))
        return cudaErrorInvalidValue;
    graph_free(g);
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags) {
    (void)flags;
    if (!fake_cuda_check(FAKE_GRAPH, g, "cudaGraphInstantiate"))
        return cudaErrorInvalidValue;
    INJECT("cudaGraphInstantiate", cudaErrorMemoryAllocation);
    *exec = fake_cuda_new(FAKE_EXEC, sizeof(**exec));
    if (!*exec)
        return cudaErrorMemoryAllocation;
    (*exec)->nodes = g->n;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
    return fake_cuda_delete(FAKE_EXEC, e, "cudaGraphExecDestroy") ? cudaSuccess
                                                                  : cudaErrorInvalidValue;
}

cudaError_t cudaGraphUpload(cudaGraphExec_t e, cudaStream_t s) {
    int captured;
    if (!fake_cuda_check(FAKE_EXEC, e, "cudaGraphUpload"))
        return cudaErrorInvalidValue;
    return ENQUEUE(s, cudaGraphNodeTypeGraph, "cudaGraphUpload", cudaErrorMemoryAllocation,
                   &captured);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
    int captured;
    if (!fake_cuda_check(FAKE_EXEC, e, "cudaGraphLaunch"))
        return cudaErrorInvalidValue;
    return ENQUEUE(s, cudaGraphNodeTypeGraph, "cudaGraphLaunch", cudaErrorLaunchFailure, &captured);
}

/* ---- events ---- */

cudaError_t cudaEventCreate(cudaEvent_t *ev) {
    INJECT("cudaEventCreate", cudaErrorMemoryAllocation);
    *ev = fake_cuda_new(FAKE_EVENT, sizeof(**ev));
    return *ev ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventDestroy(cudaEvent_t ev) {
    return fake_cuda_delete(FAKE_EVENT, ev, "cudaEventDestroy") ? cudaSuccess
                                                                : cudaErrorInvalidResourceHandle;
}

static int event_ok(cudaEvent_t ev, const char *call) {
    return fake_cuda_check(FAKE_EVENT, ev, call);
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s) {
    if (!event_ok(ev, "cudaEventRecord") || !stream_ok(s, "cudaEventRecord"))
        return cudaErrorInvalidResourceHandle;
    INJECT("cudaEventRecord", cudaErrorLaunchFailure);
    if (!created(s) || !s->capturing)
        ev->recorded = 1;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev) {
    if (!event_ok(ev, "cudaEventSynchronize"))
        return cudaErrorInvalidResourceHandle;
    INJECT("cudaEventSynchronize", cudaErrorIllegalAddress);
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    if (!event_ok(start, "cudaEventElapsedTime") || !event_ok(end, "cudaEventElapsedTime"))
        return cudaErrorInvalidResourceHandle;
    INJECT("cudaEventElapsedTime", cudaErrorNotReady);
    if (!start->recorded || !end->recorded) {
        fake_cuda_bad("cudaEventElapsedTime: an event was never recorded");
        return cudaErrorInvalidResourceHandle;
    }
    *ms = 0.01f;
    return cudaSuccess;
}

/* ---- device memory: host memory, so the sanitizer checks every byte the runtime moves ---- */

/* Buffers from FAKE_MAPPED bytes up (cuBLASLt's 32 MiB workspace) are mapped pages: the
 * sanitizer would otherwise poison and unpoison their shadow in every one of the test's
 * thousands of runs. The fake still checks every access against their exact size. */
#define FAKE_MAPPED ((size_t)1 << 20)

cudaError_t cudaMalloc(void **p, size_t bytes) {
    void *mem = NULL;
    INJECT("cudaMalloc", cudaErrorMemoryAllocation);
    if (bytes >= FAKE_MAPPED) {
        mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
            return cudaErrorMemoryAllocation;
    } else if (posix_memalign(&mem, 256, bytes ? bytes : 1) != 0) {
        return cudaErrorMemoryAllocation;
    }
    track_bytes(FAKE_MEM, mem, bytes);
    *p = mem;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    if (!p) { /* cudaFree(0): the usual way to create the context, which can fail */
        INJECT("cudaFree", cudaErrorDevicesUnavailable);
        return cudaSuccess;
    }
    long i = find(FAKE_MEM, p);
    size_t bytes = i >= 0 ? objs[i].bytes : 0;
    if (!fake_cuda_untrack(FAKE_MEM, p, "cudaFree"))
        return cudaErrorInvalidValue;
    if (bytes >= FAKE_MAPPED)
        munmap(p, bytes);
    else
        free(p);
    return cudaSuccess;
}

static int copy_ok(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                   const char *call) {
    int to_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    int from_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (!to_dev && !from_dev) {
        fake_cuda_bad("%s: copy kind %d is not modelled", call, (int)kind);
        return 0;
    }
    if ((!to_dev && !dst) || (!from_dev && !src)) {
        fake_cuda_bad("%s: NULL host pointer", call);
        return 0;
    }
    return (!to_dev || fake_cuda_range(dst, n, call, "destination")) &&
           (!from_dev || fake_cuda_range(src, n, call, "source"));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
    if (!copy_ok(dst, src, n, kind, "cudaMemcpy"))
        return cudaErrorInvalidValue;
    INJECT("cudaMemcpy", cudaErrorIllegalAddress);
    memcpy(dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s) {
    int captured;
    cudaError_t err;
    if (!copy_ok(dst, src, n, kind, "cudaMemcpyAsync"))
        return cudaErrorInvalidValue;
    err = ENQUEUE(s, cudaGraphNodeTypeMemcpy, "cudaMemcpyAsync", cudaErrorLaunchFailure, &captured);
    if (!err && !captured)
        memcpy(dst, src, n);
    return err;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s) {
    int captured;
    cudaError_t err;
    if (!fake_cuda_range(p, n, "cudaMemsetAsync", "buffer"))
        return cudaErrorInvalidValue;
    err = ENQUEUE(s, cudaGraphNodeTypeMemset, "cudaMemsetAsync", cudaErrorLaunchFailure, &captured);
    if (!err && !captured)
        memset(p, value, n);
    return err;
}

cudaError_t cudaDeviceSynchronize(void) {
    INJECT("cudaDeviceSynchronize", cudaErrorIllegalAddress);
    return cudaSuccess;
}

/* ---- the device: one, with the SM count the test's plan assumes ---- */

cudaError_t cudaGetDeviceCount(int *n) {
    INJECT("cudaGetDeviceCount", cudaErrorInsufficientDriver);
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    INJECT("cudaSetDevice", cudaErrorDevicesUnavailable);
    return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaGetDevice(int *device) {
    INJECT("cudaGetDevice", cudaErrorInitializationError);
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    INJECT("cudaGetDeviceProperties", cudaErrorInvalidDevice);
    if (device != 0)
        return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof(*prop));
    snprintf(prop->name, sizeof(prop->name), "fake GPU (test_runtime_faults)");
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = FAKE_SMS;
    prop->totalGlobalMem = (size_t)1 << 30;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
    INJECT("cudaDeviceGetAttribute", cudaErrorInvalidDevice);
    if (device != 0)
        return cudaErrorInvalidDevice;
    *value = attr == cudaDevAttrMultiProcessorCount ? FAKE_SMS : 1000000;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v) {
    INJECT("cudaDriverGetVersion", cudaErrorInsufficientDriver);
    *v = 13000;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v) {
    INJECT("cudaRuntimeGetVersion", cudaErrorInitializationError);
    *v = 13000;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    return cudaSuccess; /* injected errors are returned, never left sticky */
}

const char *cudaGetErrorName(cudaError_t err) {
    switch (err) {
#define NAME(e)                                                                                    \
    case e:                                                                                        \
        return #e;
        NAME(cudaSuccess)
        NAME(cudaErrorInvalidValue)
        NAME(cudaErrorMemoryAllocation)
        NAME(cudaErrorInitializationError)
        NAME(cudaErrorInsufficientDriver)
        NAME(cudaErrorInvalidDevice)
        NAME(cudaErrorDevicesUnavailable)
        NAME(cudaErrorInvalidKernelImage)
        NAME(cudaErrorInvalidResourceHandle)
        NAME(cudaErrorIllegalState)
        NAME(cudaErrorNotReady)
        NAME(cudaErrorIllegalAddress)
        NAME(cudaErrorLaunchOutOfResources)
        NAME(cudaErrorLaunchFailure)
        NAME(cudaErrorStreamCaptureUnsupported)
        NAME(cudaErrorStreamCaptureInvalidated)
        NAME(cudaErrorStreamCaptureImplicit)
#undef NAME
    default:
        return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t err) {
    return err == cudaSuccess ? "no error" : "injected by the fake CUDA runtime";
}

/* ---- kernel libraries and launches (what a package's exported kernels call) ---- */

cudaError_t cudaLibraryLoadData(cudaLibrary_t *lib, const void *code, enum cudaJitOption *jit,
                                void **jit_values, unsigned int n_jit, enum cudaLibraryOption *opts,
                                void **opt_values, unsigned int n_opts) {
    (void)code, (void)jit, (void)jit_values, (void)n_jit, (void)opts, (void)opt_values,
        (void)n_opts;
    last_library_call = calls + 1;
    INJECT("cudaLibraryLoadData", cudaErrorInvalidKernelImage);
    *lib = fake_cuda_new(FAKE_LIBRARY, sizeof(**lib));
    if (!*lib)
        return cudaErrorMemoryAllocation;
    (*lib)->loaded = 1;
    libraries++;
    return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                             cudaStream_t s) {
    int captured;
    (void)args, (void)smem;
    if (!fake_cuda_live(FAKE_LIBRARY, func)) {
        fake_cuda_bad("cudaLaunchKernel: function %p was never loaded", func);
        return cudaErrorInvalidResourceHandle;
    }
    if (grid.x < 1 || block.x < 1) {
        fake_cuda_bad("cudaLaunchKernel: empty grid or block");
        return cudaErrorInvalidValue;
    }
    return ENQUEUE(s, cudaGraphNodeTypeKernel, "cudaLaunchKernel", cudaErrorLaunchOutOfResources,
                   &captured);
}
