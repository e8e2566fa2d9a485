/* Variants and CUDA Graphs: a variant enqueues the block on a stream (package schedule
 * or cuBLASLt); an exec is one launch captured into a CUDA Graph on the caller's stream,
 * checked for the expected kernel nodes, instantiated and replayed. */
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

static rf_status_t pkg_launch(rf_variant_t *v, const rf_mlp_args_t *args, void *stream) {
    return rf_pkg_launch_schedule(v->pkg, v->name, args, stream);
}

static void pkg_destroy(rf_variant_t *v) {
    (void)v;
}

static const rf_variant_ops_t pkg_ops = {pkg_launch, pkg_destroy};

rf_status_t rf_variant_create_pkg(rf_allocator_t a, rf_pkg_t *pkg, const char *schedule,
                                  rf_variant_t **out_variant) {
    rf_variant_t *v = NULL;
    int n;
    *out_variant = NULL;
    if (!pkg || !schedule)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_variant_create_pkg: package and schedule "
                                                "are required");
    if (strlen(schedule) >= sizeof(v->name))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "schedule name too long: %s", schedule);
    /* The vendor schedule needs no package kernels: a plan may choose it for shapes where
     * cuBLASLt's GEMMs beat the megakernel (src/compile/schedule.c). */
    if (!strcmp(schedule, rf_schedule_name(RF_SCHEDULE_CUBLASLT)))
        return rf_variant_create_cublaslt(a, rf_pkg_channels(pkg), rf_pkg_hidden(pkg), out_variant);
    n = rf_pkg_kernel_count(pkg, schedule);
    if (n < 1)
        return RF_ERR(RF_CODE_NOT_FOUND, "package %s does not contain schedule \"%s\"",
                      rf_pkg_dir(pkg), schedule);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof(*v), "variant", (void **)&v));
    v->allocator = a;
    v->ops = &pkg_ops;
    snprintf(v->name, sizeof(v->name), "%s", schedule);
    v->channels = rf_pkg_channels(pkg);
    v->hidden = rf_pkg_hidden(pkg);
    v->kernels_min = n;
    v->kernels_exact = 1;
    v->pkg = pkg;
    *out_variant = v;
    return RF_OK;
}

void rf_variant_destroy(rf_variant_t *v) {
    if (!v)
        return;
    v->ops->destroy(v);
    rf_free(v->allocator, v);
}

const char *rf_variant_name(const rf_variant_t *v) {
    return v->name;
}
const char *rf_variant_note(const rf_variant_t *v) {
    return v->note;
}

void rf_variant_expected_kernels(const rf_variant_t *v, int *out_min, int *out_exact) {
    *out_min = v->kernels_min;
    *out_exact = v->kernels_exact;
}

rf_status_t rf_variant_launch(rf_variant_t *v, const rf_mlp_args_t *args, void *stream) {
    if (!args || args->rows < 1 || !args->x || !args->w1 || !args->b1 || !args->w2 || !args->b2 ||
        !args->y || !args->h)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: every buffer must be set and rows >= 1 (rows=%lld)", v->name,
                      args ? (long long)args->rows : 0LL);
    RF_RETURN_IF_ERROR(v->ops->launch(v, args, stream), "while launching %s (%lldx%lldx%lld)",
                       v->name, (long long)args->rows, (long long)v->channels,
                       (long long)v->hidden);
    return RF_OK;
}

/* ---- graphs ---- */

struct rf_exec {
    rf_allocator_t allocator;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    int nodes, kernel_nodes;
};

void rf_exec_destroy(rf_exec_t *e) {
    if (!e)
        return;
    if (e->exec)
        (void)cudaGraphExecDestroy(e->exec);
    if (e->graph)
        (void)cudaGraphDestroy(e->graph);
    rf_free(e->allocator, e);
}

static rf_status_t count_nodes(rf_exec_t *e) {
    size_t n = 0;
    cudaGraphNode_t nodes[256];
    RF_CUDA(cudaGraphGetNodes(e->graph, NULL, &n));
    e->nodes = (int)n;
    e->kernel_nodes = 0;
    if (n == 0) /* an empty graph; asking for 0 nodes into an array is cudaErrorInvalidValue */
        return RF_OK;
    if (n > 256)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "captured graph holds %zu nodes; at most 256 are "
                      "expected for one block",
                      n);
    RF_CUDA(cudaGraphGetNodes(e->graph, nodes, &n));
    e->kernel_nodes = 0;
    for (size_t i = 0; i < n; i++) {
        enum cudaGraphNodeType type;
        RF_CUDA(cudaGraphNodeGetType(nodes[i], &type));
        if (type == cudaGraphNodeTypeKernel)
            e->kernel_nodes++;
    }
    return RF_OK;
}

/* The captured graph must hold the schedule's kernels. Fewer (none, typically) means a
 * kernel was enqueued on a stream other than the capturing one: it ran once, eagerly,
 * during the capture, and a replay would compute nothing. */
static rf_status_t check_kernel_nodes(const rf_variant_t *v, const rf_exec_t *e) {
    int min = v->kernels_min, exact = v->kernels_exact, found = e->kernel_nodes;
    if (found < min)
        return RF_ERR(RF_CODE_INTERNAL,
                      "%s: kernel nodes in the captured graph: expected %s%d, found %d: a kernel "
                      "was launched outside the capturing stream (on another stream, the legacy "
                      "default stream or the per-thread default stream), so it ran once during "
                      "the capture and is not in the graph",
                      v->name, exact ? "" : "at least ", min, found);
    if (exact && found != min)
        return RF_ERR(RF_CODE_INTERNAL,
                      "%s: kernel nodes in the captured graph: expected %d, found %d: the launch "
                      "enqueued kernels the plan does not list",
                      v->name, min, found);
    return RF_OK;
}

rf_status_t rf_exec_capture(rf_allocator_t a, rf_variant_t *v, const rf_mlp_args_t *args,
                            void *stream, rf_exec_t **out_exec) {
    rf_exec_t *e = NULL;
    cudaStream_t s = (cudaStream_t)stream;
    cudaError_t err;
    rf_status_t st;
    *out_exec = NULL;
    if (!stream)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: capture needs a stream the caller created; the legacy default "
                      "stream (NULL) cannot be captured",
                      v->name);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof(*e), "graph exec", (void **)&e));
    e->allocator = a;
    err = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (err != cudaSuccess) {
        rf_exec_destroy(e);
        return rf_status_annotate(rf_cuda_status(err, __FILE__, __LINE__, "cudaStreamBeginCapture"),
                                  "while capturing %s", v->name);
    }
    st = rf_variant_launch(v, args, stream);
    /* Always end the capture, even after a failed launch, so the stream is usable. */
    err = cudaStreamEndCapture(s, &e->graph);
    if (!st && err != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaStreamEndCapture");
    if (!st && !e->graph)
        st = RF_ERR(RF_CODE_INTERNAL, "cudaStreamEndCapture returned no graph");
    if (!st)
        st = count_nodes(e);
    if (!st)
        st = check_kernel_nodes(v, e);
    if (!st) {
        err = cudaGraphInstantiate(&e->exec, e->graph, 0);
        if (err != cudaSuccess)
            st = rf_cuda_status(err, __FILE__, __LINE__, "cudaGraphInstantiate");
    }
    if (!st) {
        /* Upload once now so the first timed replay does not pay for it. */
        err = cudaGraphUpload(e->exec, s);
        if (err != cudaSuccess)
            st = rf_cuda_status(err, __FILE__, __LINE__, "cudaGraphUpload");
    }
    if (st) {
        rf_exec_destroy(e);
        return rf_status_annotate(st, "while capturing %s (%lldx%lldx%lld) into a CUDA Graph",
                                  v->name, (long long)(args ? args->rows : 0),
                                  (long long)v->channels, (long long)v->hidden);
    }
    *out_exec = e;
    return RF_OK;
}

rf_status_t rf_exec_replay(rf_exec_t *e, void *stream) {
    RF_CUDA(cudaGraphLaunch(e->exec, (cudaStream_t)stream));
    return RF_OK;
}

int rf_exec_kernel_nodes(const rf_exec_t *e) {
    return e->kernel_nodes;
}
int rf_exec_nodes(const rf_exec_t *e) {
    return e->nodes;
}
