/* The evaluator's GPU path without a GPU (src/eval/eval_split.c, eval_model.c): finding the
 * residual-MLP block inside a model with a classifier head, the weights in the package's
 * layout, and the split run. The GPU's part is played by the CPU reference of the block
 * (rf_mlp_reference, mixed precision); the head then runs on the interpreter with the
 * block output given, and the result must equal the whole model in mixed precision bit
 * for bit. Also: a model without the block, the chunking with a padded last chunk, and
 * --gpu on a machine without one. */
#include <stdint.h>

#include "eval/eval_internal.h"
#include "rf_graph_build.h"
#include "rf_test.h"
#include "rowfuse/mlp.h"
#include "rowfuse/tensor.h"
#include "rowfuse/verify.h"

enum { M = 4, C = 3, H = 5, K = 2, N = 10 };

/* x [M, C] -> Gemm(W1 [H, C], transB) -> Relu -> Gemm(W2 [C, H], transB) -> Add x -> Relu
 * = y -> Gemm(Wh [K, C], transB) = logits. Returns the value index of y. */
static int build_model(int with_residual) {
    gb_new();
    int x = gb_input("x", SH(2, M, C));
    rf_attr_t tb = gb_attr_int("transB", 1);
    int h = gb_op_a("Gemm", "h", GB_IN(x, gb_weight("w1", SH(2, H, C)), gb_weight("b1", SH(1, H))),
                    &tb, 1);
    int r = gb_op("Relu", "r", GB_IN(h));
    int p = gb_op_a("Gemm", "p", GB_IN(r, gb_weight("w2", SH(2, C, H)), gb_weight("b2", SH(1, C))),
                    &tb, 1);
    int s = with_residual ? gb_op("Add", "s", GB_IN(p, x)) : p;
    int y = gb_op("Relu", "y", GB_IN(s));
    int l = gb_op_a("Gemm", "logits",
                    GB_IN(y, gb_weight("wh", SH(2, K, C)), gb_weight("bh", SH(1, K))), &tb, 1);
    CHECK_OK(rf_graph_add_output(gb_graph, l));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    return y;
}

static void test_block_find(void) {
    rf_allocator_t a = rf_allocator_system();
    int y = build_model(1);
    rf_eval_block_t b;
    CHECK_OK(rf_eval_block_find(a, gb_graph, &b));
    CHECK(b.x == rf_graph_input(gb_graph, 0) && b.y == y);
    CHECK(b.channels == C && b.hidden == H);
    for (int k = 0; k < 6 && b.node_in_block; k++)
        CHECK(b.node_in_block[k] == (k < 5));
    /* gb_weight fills 0.5 + (i % 7) * 0.25; W1 is stored [H, C], the package wants [C, H]. */
    for (int c = 0; b.w1 && c < C; c++)
        for (int hh = 0; hh < H; hh++)
            CHECK(rf_f16_to_f32(b.w1[c * H + hh]) == 0.5f + (float)((hh * C + c) % 7) * 0.25f);
    CHECK(b.b2 && b.b2[2] == 1.0f);
    rf_eval_block_free(a, &b);
    gb_free();

    build_model(0); /* no residual: not the block */
    CHECK_ERR(rf_eval_block_find(a, gb_graph, &b), RF_CODE_UNSUPPORTED, "residual");
    CHECK(b.w1 == NULL && b.node_in_block == NULL);
    gb_free();
}

static void test_split_equals_whole(void) {
    rf_allocator_t a = rf_allocator_system();
    build_model(1);
    rf_contract_t *contract;
    CHECK_OK(rf_verify(gb_graph, &contract));
    static double x[N * C], labels[N];
    static const char *names[C] = {"f0", "f1", "f2"};
    for (int i = 0; i < N * C; i++)
        x[i] = ((i * 37) % 23) / 7.0 - 1.6 + 1e-4 * i; /* no fp16 value: rounding matters */
    rf_eval_table_t t;
    memset(&t, 0, sizeof t);
    t.path = "table";
    t.rows = N;
    t.n_features = C;
    t.feature_names = names;
    t.features = x;
    t.labels = labels;
    rf_eval_model_t m;
    CHECK_OK(rf_eval_model_check(gb_graph, contract, &t, &m));
    CHECK(m.rows == M && m.features == C && m.outputs == K);

    rf_eval_block_t b;
    CHECK_OK(rf_eval_block_find(a, gb_graph, &b));
    uint16_t xh[N * C];
    for (int i = 0; i < N * C; i++)
        xh[i] = rf_f32_to_f16((float)rf_round_f16(x[i]));
    rf_tensor_t yblock; /* the GPU's part, played by the block's CPU reference */
    CHECK_OK(rf_mlp_reference(a, RF_PRECISION_MIXED, N, C, H, xh, b.w1, b.b1, b.w2, b.b2, &yblock));
    double whole[N * K], split[N * K], fp64[N * K];
    int ran[6];
    CHECK_OK(
        rf_eval_model_forward(a, gb_graph, &m, &t, RF_PRECISION_MIXED, -1, NULL, 0, whole, NULL));
    CHECK_OK(rf_eval_model_forward(a, gb_graph, &m, &t, RF_PRECISION_MIXED, b.y, yblock.data, C,
                                   split, ran));
    CHECK(memcmp(whole, split, sizeof whole) == 0);
    CHECK(ran[0] == 0 && ran[4] == 0 && ran[5] == 1);

    /* fp64, chunked by M = 4 with the last chunk padded: each row as computed alone. */
    CHECK_OK(
        rf_eval_model_forward(a, gb_graph, &m, &t, RF_PRECISION_FP64, -1, NULL, 0, fp64, NULL));
    for (int r = 0; r < N; r++) {
        double hid[H], yy[C];
        for (int j = 0; j < H; j++) {
            double s = 0.5 + (j % 7) * 0.25;
            for (int c = 0; c < C; c++)
                s += x[r * C + c] * (0.5 + ((j * C + c) % 7) * 0.25);
            hid[j] = s > 0 ? s : 0;
        }
        for (int c = 0; c < C; c++) {
            double s = 0.5 + (c % 7) * 0.25 + x[r * C + c];
            for (int j = 0; j < H; j++)
                s += hid[j] * (0.5 + ((c * H + j) % 7) * 0.25);
            yy[c] = s > 0 ? s : 0;
        }
        for (int k = 0; k < K; k++) {
            double s = 0.5 + (k % 7) * 0.25;
            for (int c = 0; c < C; c++)
                s += yy[c] * (0.5 + ((k * C + c) % 7) * 0.25);
            CHECK(fabs(fp64[r * K + k] - s) <= 1e-12 * fabs(s));
        }
    }

    rf_eval_gpu_info_t info;
    float yg[N * C];
    rf_status_t st = rf_eval_gpu_block(a, "no-such-package", &b, x, N, yg, &info);
    CHECK(st != RF_OK);
    if (rf_status_code(st) == RF_CODE_NO_DEVICE) /* this machine has no GPU */
        CHECK(strstr(rf_status_message(st), "--cpu-mixed") != NULL);
    rf_status_free(st);
    rf_tensor_free(a, &yblock);
    rf_eval_block_free(a, &b);
    rf_contract_destroy(contract);
    gb_free();
}

int main(void) {
    test_block_find();
    test_split_equals_whole();
    return rf_test_finish();
}
