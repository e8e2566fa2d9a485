/* Tests for rf_verify (src/verify/) on hand-built graphs: every row rule, accepted and
 * rejected. The expected verdicts are worked out by hand from the definition of row
 * ownership (output row i may read only row i of each row-owned value); the Python tests
 * check the same verdicts on real PyTorch modules against PyTorch itself. Also: the op set,
 * the shape re-check, the contract's states, reasons and JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rf_graph_build.h"
#include "rf_test.h"
#include "rowfuse/verify.h"

#define N 16
#define C 12

static rf_status_t infer_verify(rf_contract_t **out) {
    *out = NULL;
    RF_RETURN_IF_ERROR(rf_graph_infer_shapes(gb_graph), "infer");
    return rf_verify(gb_graph, out);
}

/* Verifies the current graph; expects acceptance. Returns the contract (or NULL). */
static rf_contract_t *accept(int line) {
    rf_contract_t *c = NULL;
    rf_status_t st = infer_verify(&c);
    if (st) {
        fprintf(stderr, "line %d: expected acceptance, got %s: %s\n", line,
                rf_code_name(rf_status_code(st)), rf_status_message(st));
        rf_status_free(st);
        rf_test_failed++;
        return NULL;
    }
    rf_test_passed++;
    return c;
}
#define ACCEPT() accept(__LINE__)

static void reject(int line, rf_code_t code, const char *n1, const char *n2, const char *n3) {
    rf_contract_t *c = NULL;
    rf_status_t st = infer_verify(&c);
    const char *m = rf_status_message(st);
    if (getenv("RF_TEST_VERBOSE"))
        printf("line %d: %s\n", line, m);
    if (st && rf_status_code(st) == code && strstr(m, n1) && (!n2 || strstr(m, n2)) &&
        (!n3 || strstr(m, n3))) {
        rf_test_passed++;
    } else {
        rf_test_failed++;
        fprintf(stderr, "line %d: expected %s with '%s' '%s' '%s', got %s: %s\n", line,
                rf_code_name(code), n1, n2 ? n2 : "", n3 ? n3 : "",
                rf_code_name(rf_status_code(st)), m);
    }
    rf_status_free(st);
    rf_contract_destroy(c);
}
#define REJECT(needle) reject(__LINE__, RF_CODE_ROW_VIOLATION, (needle), "row", NULL)
#define REJECT3(n1, n2, n3) reject(__LINE__, RF_CODE_ROW_VIOLATION, (n1), (n2), (n3))

static int x_input(void) {
    return gb_input("x", SH(2, N, C));
}

static void mark_output(int v) {
    CHECK_OK(rf_graph_add_output(gb_graph, v));
}

/* ---- accepted ---- */

static void test_residual_mlp_contract(void) {
    gb_new();
    int x = x_input();
    int w1 = gb_weight("fc1.weight", SH(2, 24, C)), b1 = gb_weight("fc1.bias", SH(1, 24));
    int w2 = gb_weight("fc2.weight", SH(2, C, 24)), b2 = gb_weight("fc2.bias", SH(1, C));
    int h = gb_op_a("Gemm", "linear", GB_IN(x, w1, b1), GB_ATTRS(gb_attr_int("transB", 1)));
    int hr = gb_op("Relu", "relu", GB_IN(h));
    int y = gb_op_a("Gemm", "linear_1", GB_IN(hr, w2, b2), GB_ATTRS(gb_attr_int("transB", 1)));
    int s = gb_op("Add", "add", GB_IN(y, x));
    int o = gb_op("Relu", "relu_1", GB_IN(s));
    mark_output(o);
    rf_contract_t *c = ACCEPT();
    if (!c)
        return;
    CHECK(rf_contract_rows(c) == N);
    CHECK(rf_contract_row_state(c, x) == RF_ROW_OWNED);
    CHECK(rf_contract_row_state(c, w1) == RF_ROW_CONST);
    CHECK(rf_contract_row_state(c, hr) == RF_ROW_OWNED);
    CHECK(rf_contract_row_state(c, o) == RF_ROW_OWNED);
    CHECK(strcmp(rf_contract_reason(c, h), "Gemm of row-owned 'x' by constant 'fc1.weight' "
                                           "(transB): contracts over features") == 0);
    CHECK(strcmp(rf_contract_reason(c, hr), "Relu of row-owned 'linear'") == 0);
    CHECK(strstr(rf_contract_reason(c, s), "Add of row-owned 'linear_1' and row-owned 'x'"));
    CHECK(strstr(rf_contract_reason(c, w1), "constant f32 [24, 12]"));

    /* JSON: parse-free checks of the key facts (the Python tests parse it fully). */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        CHECK_OK(rf_contract_write_json(c, f));
        long size = ftell(f);
        rewind(f);
        char *text = calloc(1, (size_t)size + 1);
        CHECK(fread(text, 1, (size_t)size, f) == (size_t)size);
        CHECK(strstr(text, "\"row_dim\": {\n    \"input\": \"x\",\n    \"axis\": 0,\n"
                           "    \"extent\": 16\n  }") != NULL);
        CHECK(strstr(text, "\"name\": \"fc2.weight\",\n      \"dtype\": \"f32\",\n"
                           "      \"shape\": [12, 24],") != NULL);
        CHECK(strstr(text, "\"inputs\": [\"relu\", \"fc2.weight\", \"fc2.bias\"]") != NULL);
        CHECK(strstr(text, "\"op\": \"Gemm\"") != NULL);
        CHECK(strstr(text, "\"reason\": \"Relu of row-owned 'linear'\"") != NULL);
        free(text);
        fclose(f);
    }
    f = tmpfile();
    if (f) {
        CHECK_OK(rf_contract_print(c, f));
        long size = ftell(f);
        rewind(f);
        char *text = calloc(1, (size_t)size + 1);
        CHECK(fread(text, 1, (size_t)size, f) == (size_t)size);
        CHECK(strstr(text, "row dim: dim 0 of 'x', 16 rows") != NULL);
        CHECK(strstr(text, "fc1.weight f32 [24, 12]") != NULL);
        CHECK(strstr(text, "relu_1                   row-owned Relu of row-owned 'add'") != NULL);
        free(text);
        fclose(f);
    }
    rf_contract_destroy(c);
}

static void test_accepted_blocks(void) {
    /* MatMul + Add (Linear without Gemm), GELU decomposed through Erf, SiLU. */
    gb_new();
    int x = x_input();
    int h = gb_op("MatMul", "mm", GB_IN(x, gb_weight("w", SH(2, C, 24))));
    h = gb_op("Add", "bias", GB_IN(h, gb_weight("b", SH(1, 24))));
    int half = gb_op("Mul", "half", GB_IN(h, gb_weight("c05", SCALAR)));
    int e = gb_op("Erf", "erf", GB_IN(gb_op("Div", "div", GB_IN(h, gb_weight("sqrt2", SCALAR)))));
    int g = gb_op("Mul", "gelu",
                  GB_IN(half, gb_op("Add", "one_plus", GB_IN(e, gb_weight("one", SCALAR)))));
    int s = gb_op("Mul", "silu", GB_IN(g, gb_op("Sigmoid", "sig", GB_IN(g))));
    int t = gb_op("Tanh", "tanh",
                  GB_IN(gb_op("Sqrt", "sqrt",
                              GB_IN(gb_op("Pow", "pow", GB_IN(s, gb_weight("two", SCALAR)))))));
    int cst = gb_op_a("Cast", "cast", GB_IN(t), GB_ATTRS(gb_attr_int("to", 1)));
    int o = gb_op("MatMul", "proj",
                  GB_IN(gb_op("Identity", "id", GB_IN(cst)), gb_weight("w2", SH(2, 24, C))));
    mark_output(o);
    rf_contract_t *c = ACCEPT();
    rf_contract_destroy(c);

    /* LayerNorm over features (3 outputs), softmax over features, x + mean over features,
     * ReduceSum/ReduceMax over features without keepdims. */
    gb_new();
    x = x_input();
    int outs[3] = {gb_tmp("ln"), gb_tmp("ln_mean"), gb_tmp("ln_inv")};
    gb_node_n("LayerNormalization", "norm",
              GB_IN(x, gb_weight("g", SH(1, C)), gb_weight("beta", SH(1, C))), outs, 3,
              GB_ATTRS(gb_attr_int("axis", -1)));
    int sm = gb_op_a("Softmax", "sm", GB_IN(outs[0]), GB_ATTRS(gb_attr_int("axis", -1)));
    int mean = gb_op("ReduceMean", "mean", GB_IN(sm, GB_INTS("ax1", 1)));
    int y = gb_op("Add", "y", GB_IN(sm, mean));
    int rs = gb_op_a("ReduceSum", "rs", GB_IN(y, GB_INTS("ax1b", -1)),
                     GB_ATTRS(gb_attr_int("keepdims", 0)));
    int rm = gb_op_a("ReduceMax", "rm", GB_IN(y), GB_ATTRS(GB_ATTR_INTS("axes", 1)));
    int z = gb_op("Mul", "z", GB_IN(y, rm));
    mark_output(z);
    mark_output(rs); /* [N]: one value per row */
    mark_output(outs[1]);
    c = ACCEPT();
    if (c) {
        CHECK(strstr(rf_contract_reason(c, mean), "over axis 1: features only") != NULL);
        CHECK(rf_contract_row_state(c, outs[2]) == RF_ROW_OWNED);
    }
    rf_contract_destroy(c);

    /* Layout ops that keep rows on axis 0. */
    gb_new();
    x = x_input();
    int r = gb_op("Reshape", "r", GB_IN(x, GB_INTS("s1", 0, 3, -1))); /* [N,3,4] */
    int tr = gb_op_a("Transpose", "tr", GB_IN(r), GB_ATTRS(GB_ATTR_INTS("perm", 0, 2, 1)));
    int fl = gb_op("Flatten", "fl", GB_IN(tr));                     /* [N,12] */
    int un = gb_op("Unsqueeze", "un", GB_IN(fl, GB_INTS("ua", 1))); /* [N,1,12] */
    int sq = gb_op("Squeeze", "sq", GB_IN(un, GB_INTS("sa", 1)));   /* [N,12] */
    int sl = gb_op("Slice", "sl",
                   GB_IN(sq, GB_INTS("st", 2), GB_INTS("en", 8), GB_INTS("sax", 1))); /* [N,6] */
    int all = gb_op("Slice", "all",
                    GB_IN(sl, GB_INTS("st0", 0), GB_INTS("en0", INT64_MAX), GB_INTS("ax0", 0)));
    int cc = gb_op_a("Concat", "cc", GB_IN(all, gb_weight("pos", SH(2, N, 2)), sl),
                     GB_ATTRS(gb_attr_int("axis", 1))); /* [N,14] */
    int ga = gb_op_a("Gather", "ga", GB_IN(cc, GB_INTS("idx", 0, 13, 5)),
                     GB_ATTRS(gb_attr_int("axis", 1))); /* [N,3] */
    int col =
        gb_op("Slice", "col", GB_IN(ga, GB_INTS("s2", 0), GB_INTS("e2", 1), GB_INTS("a2", 1)));
    int ex = gb_op("Expand", "ex", GB_IN(col, GB_INTS("es", N, 5))); /* [N,5] */
    int fl2 = gb_op_a("Flatten", "fl2", GB_IN(ex), GB_ATTRS(gb_attr_int("axis", 1)));
    mark_output(fl2);
    c = ACCEPT();
    if (c)
        CHECK(strstr(rf_contract_reason(c, r), "Reshape of row-owned 'x' [16, 12] -> [16, 3, 4]") !=
              NULL);
    rf_contract_destroy(c);

    /* Batched MatMul with rows as the batch axis; a row-owned lookup of a constant table;
     * a second input with one row per row; weights computed from constants only. */
    gb_new();
    x = gb_input("x", SH(3, N, 3, 4));
    int x2 = gb_input("x2", SH(3, N, 4, 5));
    int ids = gb_input_t("ids", RF_DTYPE_I64, SH(1, N));
    int wt = gb_op_a("Transpose", "wt", GB_IN(gb_weight("w", SH(2, 5, 4))),
                     GB_ATTRS(GB_ATTR_INTS("perm", 1, 0)));
    int m1 = gb_op("MatMul", "m1", GB_IN(x, wt));                                   /* [N,3,5] */
    int m2 = gb_op("MatMul", "m2", GB_IN(x, x2));                                   /* [N,3,5] */
    int emb = gb_op("Gather", "emb", GB_IN(gb_weight("table", SH(2, 10, 5)), ids)); /* [N,5] */
    int emb3 = gb_op("Unsqueeze", "emb3", GB_IN(emb, GB_INTS("u1", 1)));            /* [N,1,5] */
    int sum = gb_op("Add", "sum", GB_IN(gb_op("Add", "m12", GB_IN(m1, m2)), emb3));
    mark_output(sum);
    c = ACCEPT();
    if (c) {
        CHECK(rf_contract_row_state(c, wt) == RF_ROW_CONST);
        CHECK(strcmp(rf_contract_reason(c, wt), "Transpose of constants only") == 0);
        CHECK(strstr(rf_contract_reason(c, m2), "row axis is a batch axis") != NULL);
        CHECK(strstr(rf_contract_reason(c, emb), "row-owned indices 'ids'") != NULL);
    }
    rf_contract_destroy(c);

    /* One row: broadcasting a [1, C] constant is fine. */
    gb_new();
    x = gb_input("x", SH(2, 1, C));
    mark_output(gb_op("Add", "a", GB_IN(x, gb_weight("b", SH(2, 1, C)))));
    c = ACCEPT();
    CHECK(c && rf_contract_rows(c) == 1);
    rf_contract_destroy(c);
}

/* ---- rejected: one graph per rule ---- */

static void test_reductions_over_rows(void) {
    gb_new();
    int x = x_input();
    int m = gb_op("ReduceMean", "mean", GB_IN(x, GB_INTS("ax", 0)));
    mark_output(gb_op("Sub", "sub", GB_IN(x, m)));
    REJECT3("node 0 'mean' (ReduceMean over axis 0, [16, 12] -> [1, 12]): output row depends on "
            "every input row; row-owned graphs may reduce only over features",
            "row", NULL);

    gb_new();
    x = x_input();
    m = gb_op_a("ReduceSum", "sum", GB_IN(x, GB_INTS("ax", -2)),
                GB_ATTRS(gb_attr_int("keepdims", 0)));
    mark_output(gb_op("Add", "add", GB_IN(x, m)));
    REJECT3("(ReduceSum over axis 0", "every input row", NULL);

    gb_new();
    x = x_input();
    m = gb_op_a("ReduceMax", "max", GB_IN(x), GB_ATTRS(GB_ATTR_INTS("axes", 0, 1)));
    mark_output(gb_op("Sub", "sub", GB_IN(x, m)));
    REJECT3("(ReduceMax over axes [0, 1]", "row", NULL);

    gb_new(); /* no axes: reduce everything */
    x = x_input();
    m = gb_op("ReduceMean", "all", GB_IN(x));
    mark_output(gb_op("Sub", "sub", GB_IN(x, m)));
    REJECT3("(ReduceMean over axes [0, 1]", "row", NULL);

    gb_new();
    x = x_input();
    mark_output(gb_op_a("Softmax", "sm", GB_IN(x), GB_ATTRS(gb_attr_int("axis", 0))));
    REJECT3("(Softmax over axis 0", "every output row depends on every input row", NULL);

    gb_new();
    x = x_input();
    mark_output(gb_op_a("LayerNormalization", "ln", GB_IN(x, gb_weight("g", SH(2, N, C))),
                        GB_ATTRS(gb_attr_int("axis", 0))));
    REJECT3("(LayerNormalization over axes 0..1", "row", NULL);

    gb_new(); /* a row-owned scale */
    x = gb_input("x", SH(3, N, N, C));
    int sc = gb_op("Relu", "sc", GB_IN(gb_input("s", SH(2, N, C))));
    mark_output(
        gb_op_a("LayerNormalization", "ln", GB_IN(x, sc), GB_ATTRS(gb_attr_int("axis", 1))));
    REJECT3("the scale 'sc' is row-owned", "row", NULL);

    gb_new();
    x = x_input();
    mark_output(gb_op("CumSum", "cs", GB_IN(x, GB_SCALAR("a0", 0))));
    REJECT3("(CumSum over axis 0", "sums input rows 0..i", NULL);

    gb_new(); /* over features it is row-owned, but unsupported */
    x = x_input();
    mark_output(gb_op("CumSum", "cs", GB_IN(x, GB_SCALAR("a1", 1))));
    reject(__LINE__, RF_CODE_UNSUPPORTED, "(CumSum): CumSum over features", NULL, NULL);
}

static void test_contractions_over_rows(void) {
    gb_new(); /* X @ X^T written as MatMul(x, Transpose(x)): the Transpose moves rows */
    int x = x_input();
    int xt = gb_op("Transpose", "t", GB_IN(x));
    mark_output(gb_op("MatMul", "mm", GB_IN(gb_op("MatMul", "att", GB_IN(x, xt)), x)));
    REJECT3(
        "node 0 't' (Transpose perm [1, 0], [16, 12] -> [12, 16]): moves the row axis to axis 1",
        "row", NULL);

    gb_new(); /* constant @ X contracts over rows */
    x = x_input();
    mark_output(gb_op("MatMul", "mix", GB_IN(gb_weight("a", SH(2, N, N)), x)));
    REJECT3("(MatMul over rows", "contracts over the row axis of the right operand 'x'", NULL);

    gb_new(); /* a vector of rows */
    x = gb_input("x", SH(1, N));
    mark_output(gb_op("MatMul", "dot", GB_IN(x, gb_weight("w", SH(2, N, 3)))));
    REJECT3("(MatMul over rows", "only axis, the row axis", NULL);

    gb_new(); /* batch broadcast moves the row axis */
    x = x_input();
    mark_output(gb_op("MatMul", "bb", GB_IN(x, gb_weight("w", SH(3, 2, C, 3)))));
    REJECT3("(MatMul batch broadcast", "lands on output axis 1", NULL);

    gb_new(); /* Gemm X @ X^T via transB */
    x = x_input();
    mark_output(gb_op_a("Gemm", "xxt", GB_IN(x, x), GB_ATTRS(gb_attr_int("transB", 1))));
    REJECT3("(Gemm transB", "X @ X^T", "row");

    gb_new();
    x = x_input();
    mark_output(gb_op_a("Gemm", "ta", GB_IN(x, gb_weight("w", SH(2, N, 4))),
                        GB_ATTRS(gb_attr_int("transA", 1))));
    REJECT3("(Gemm transA", "every input row", NULL);

    gb_new();
    x = x_input();
    mark_output(gb_op("Gemm", "gb", GB_IN(gb_weight("a", SH(2, N, N)), x)));
    REJECT3("(Gemm, ", "row axis of the right operand 'x'", NULL);

    gb_new(); /* a row-owned bias laid along the columns */
    x = gb_input("x", SH(1, N));
    mark_output(
        gb_op("Gemm", "gc", GB_IN(gb_weight("a", SH(2, N, C)), gb_weight("b", SH(2, C, N)), x)));
    REJECT3("(Gemm broadcast", "bias row-owned 'x' [16] is broadcast to [16, 16]", "row axis");
}

static void test_layout_over_rows(void) {
    gb_new();
    int x = x_input();
    mark_output(gb_op("Reshape", "fold", GB_IN(x, GB_INTS("s", N / 2, 2 * C))));
    REJECT3("node 0 'fold' (Reshape, [16, 12] -> [8, 24]): changes dim 0 from 16 rows to 8, "
            "folding rows into channels",
            "row", NULL);

    gb_new();
    x = x_input();
    mark_output(gb_op("Reshape", "split", GB_IN(x, GB_INTS("s", 2 * N, -1))));
    REJECT3("(Reshape,", "splitting rows", NULL);

    gb_new();
    x = x_input();
    mark_output(gb_op_a("Flatten", "flat", GB_IN(x), GB_ATTRS(gb_attr_int("axis", 0))));
    REJECT3("(Flatten,", "folding rows into channels", NULL);

    gb_new();
    x = gb_input("x", SH(3, N, 2, C));
    mark_output(gb_op_a("Transpose", "t", GB_IN(x), GB_ATTRS(GB_ATTR_INTS("perm", 1, 0, 2))));
    REJECT3("(Transpose perm [1, 0, 2]", "moves the row axis to axis 1", NULL);

    gb_new();
    x = gb_input("x", SH(2, 1, C));
    mark_output(gb_op("Squeeze", "sq", GB_IN(x, GB_INTS("a", 0))));
    REJECT3("(Squeeze axis 0", "removes the row axis", NULL);

    gb_new();
    x = x_input();
    mark_output(gb_op("Unsqueeze", "un", GB_IN(x, GB_INTS("a", 0))));
    REJECT3("(Unsqueeze axis 0", "before the row axis", NULL);

    gb_new();
    x = x_input();
    mark_output(gb_op("Expand", "ex", GB_IN(x, GB_INTS("s", 2, N, C))));
    REJECT3("(Expand broadcast", "moves its row axis to output axis 1", NULL);

    gb_new(); /* one row broadcast to four */
    x = gb_input("x", SH(2, 1, C));
    mark_output(gb_op("Expand", "ex", GB_IN(x, GB_INTS("s", 4, C))));
    REJECT3("(Expand broadcast", "has 1 row(s) but is broadcast to 4", NULL);

    gb_new(); /* roll: two slices and a concat along rows; the first slice is the culprit */
    x = x_input();
    int a =
        gb_op("Slice", "head", GB_IN(x, GB_INTS("s0", 0), GB_INTS("e0", N - 1), GB_INTS("a0", 0)));
    int b =
        gb_op("Slice", "tail", GB_IN(x, GB_INTS("s1", N - 1), GB_INTS("e1", N), GB_INTS("a1", 0)));
    mark_output(gb_op_a("Concat", "roll", GB_IN(b, a), GB_ATTRS(gb_attr_int("axis", 0))));
    REJECT3("node 0 'head' (Slice along axis 0, [16, 12] -> [15, 12]): selects 15 of the 16 rows",
            "row", NULL);

    gb_new(); /* Concat along rows alone */
    x = x_input();
    mark_output(gb_op_a("Concat", "stack", GB_IN(x, x), GB_ATTRS(gb_attr_int("axis", 0))));
    REJECT3("(Concat along axis 0", "stacks the rows of 'x', 'x'", NULL);

    gb_new(); /* flip */
    x = x_input();
    mark_output(gb_op(
        "Slice", "flip",
        GB_IN(x, GB_INTS("s", -1), GB_INTS("e", INT64_MIN), GB_INTS("a", 0), GB_INTS("st", -1))));
    REJECT3("(Slice along axis 0", "reverses the order of the rows (a flip)", NULL);

    gb_new(); /* row 0 broadcast to all rows */
    x = x_input();
    int r0 =
        gb_op_a("Gather", "select", GB_IN(x, GB_SCALAR("i", 0)), GB_ATTRS(gb_attr_int("axis", 0)));
    mark_output(gb_op("Add", "add", GB_IN(x, r0)));
    REJECT3("(Gather along axis 0", "selects rows of 'x' by index", NULL);

    gb_new(); /* data-dependent indices into row-owned data */
    x = x_input();
    int ids = gb_input_t("ids", RF_DTYPE_I64, SH(1, N));
    mark_output(gb_op_a("Gather", "g", GB_IN(x, ids), GB_ATTRS(gb_attr_int("axis", 1))));
    REJECT3("(Gather along axis 1", "indices must be constants", NULL);

    gb_new(); /* row-owned indices along a feature axis of a constant */
    x = x_input();
    ids = gb_input_t("ids", RF_DTYPE_I64, SH(1, N));
    mark_output(gb_op_a("Gather", "g", GB_IN(gb_weight("t", SH(2, 3, 40)), ids),
                        GB_ATTRS(gb_attr_int("axis", 1))));
    REJECT3("(Gather along axis 1", "lands on output axis 1", NULL);
}

static void test_broadcast_and_io(void) {
    gb_new(); /* a row-owned operand whose row axis does not line up with output axis 0 */
    int x = x_input();
    mark_output(gb_op("Add", "add", GB_IN(x, gb_weight("c", SH(3, 2, N, C)))));
    REJECT3("node 0 'add' (Add broadcast, [16, 12], [2, 16, 12] -> [2, 16, 12])",
            "moves its row axis to output axis 1", NULL);

    gb_new(); /* one row broadcast to many */
    x = gb_input("x", SH(2, 1, C));
    mark_output(gb_op("Mul", "mul", GB_IN(x, gb_weight("c", SH(2, 4, C)))));
    REJECT3("(Mul broadcast", "every output row would read the same input row", NULL);

    gb_new(); /* an output that does not depend on rows */
    x = x_input();
    mark_output(gb_op("Relu", "r", GB_IN(x)));
    mark_output(gb_op("Relu", "w_relu", GB_IN(gb_weight("w", SH(2, N, C)))));
    REJECT3("graph output 'w_relu' [16, 12] does not depend on the input rows", "row", NULL);

    gb_new(); /* a second input with another row count */
    x = x_input();
    int y = gb_input("y", SH(2, N + 1, C));
    mark_output(gb_op("Relu", "r", GB_IN(x)));
    mark_output(y);
    REJECT3("graph input 'y' [17, 12] does not have 16 rows on axis 0", "row", NULL);

    gb_new();
    x = gb_input("x", SCALAR);
    mark_output(gb_op("Relu", "r", GB_IN(x)));
    REJECT3("graph input 'x' is a scalar", "row dim", NULL);
}

static void test_op_set_and_shapes(void) {
    gb_new();
    int x = x_input();
    int w = gb_op("Swish", "sw", GB_IN(x));
    mark_output(gb_op("Relu", "r", GB_IN(w)));
    reject(__LINE__, RF_CODE_UNSUPPORTED, "node 0 'sw' (Swish): op 'Swish' is not supported",
           "rowfuse supports MatMul", NULL);

    gb_new();
    x = x_input();
    int o = gb_tmp("o");
    CHECK_OK(rf_graph_add_node(gb_graph, "fused", "FusedGemm", "com.microsoft", GB_IN(x), &o, 1,
                               NULL, 0, NULL));
    mark_output(o);
    reject(__LINE__, RF_CODE_UNSUPPORTED, "op 'com.microsoft:FusedGemm' is not supported", NULL,
           NULL);

    gb_new();
    x = x_input();
    rf_attr_t ap;
    memset(&ap, 0, sizeof ap);
    ap.name = "approximate";
    ap.type = RF_ATTR_STRING;
    ap.s = "fast";
    mark_output(gb_op_a("Gelu", "g", GB_IN(x), &ap, 1));
    reject(__LINE__, RF_CODE_UNSUPPORTED, "approximate='fast' is not supported", NULL, NULL);

    /* rf_verify without shape inference: a clear shape error, not a crash. */
    gb_new();
    x = x_input();
    mark_output(gb_op("Relu", "r", GB_IN(x)));
    rf_contract_t *c = NULL;
    CHECK_ERR(rf_verify(gb_graph, &c), RF_CODE_SHAPE_ERROR,
              "node 0 'r' (Relu): output 'r' has no static shape (was rf_graph_infer_shapes run?)");
    CHECK(c == NULL);

    /* A shape changed after inference is caught by the re-check. */
    gb_new();
    x = x_input();
    int r = gb_op("Relu", "r", GB_IN(x));
    mark_output(r);
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    rf_shape_t wrong = SH(2, N, C + 1);
    rf_graph_set_value_type(gb_graph, r, RF_DTYPE_F32, &wrong);
    CHECK_ERR(rf_verify(gb_graph, &c), RF_CODE_SHAPE_ERROR,
              "output 'r' is f32 [16, 13] but the op gives f32 [16, 12]");

    gb_new();
    x = x_input();
    CHECK_ERR(rf_verify(gb_graph, &c), RF_CODE_INVALID_ARGUMENT, "no outputs");
}

int main(void) {
    test_residual_mlp_contract();
    test_accepted_blocks();
    test_reductions_over_rows();
    test_contractions_over_rows();
    test_layout_over_rows();
    test_broadcast_and_io();
    test_op_set_and_shapes();
    gb_free();
    return rf_test_finish();
}
