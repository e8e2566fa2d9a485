# ruff: noqa: E501 (the fixtures are IREE flow-phase lines as printed)
"""rowfuse.iree.model without IREE compiles: the splice evidence read from IREE's flow phase,
the token flips and the derived bound with an upstream input difference. The end-to-end
run (build, link, IREE runtime against PyTorch fp64, the planted fault) is in
tests/mlir/flow.sh."""

import numpy as np
from rowfuse.iree import block as iree_block
from rowfuse.iree import model as iree_model

FLOW_EXTERN = """
    %7 = flow.dispatch @main$async_dispatch_6::@main$async_dispatch_6_matmul_64x64x64_f32(%6, %c) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf16>
    %8 = flow.dispatch @extern_dispatch::@cuda_nvptx_fb::@rf_k[%c64](%c64_i32, %7, %w1, %b1, %w2, %b2) : (i32, tensor<64x64xf16>, tensor<64x128xf16>, tensor<128xf32>, tensor<128x64xf16>, tensor<64xf32>) -> (tensor<8xf16>, tensor<64x64xf32>)
"""
FLOW_STOCK = """
    %7 = flow.dispatch @main$async_dispatch_7::@main$async_dispatch_7_matmul_like(%6, %w1, %b1) : (tensor<64x64xf16>, tensor<64x128xf16>, tensor<128xf32>) -> tensor<64x128xf16>
    %8 = flow.dispatch @main$async_dispatch_8::@main$async_dispatch_8_matmul_like(%7, %w2, %b2, %6) : (tensor<64x128xf16>, tensor<128x64xf16>, tensor<64xf32>, tensor<64x64xf16>) -> tensor<64x64xf32>
"""
FLOW_ONE = """
    %8 = flow.dispatch @main$async_dispatch_7::@main$async_dispatch_7_matmul_like(%7, %w1, %b1, %w2, %b2) : (tensor<64x64xf16>, tensor<64x128xf16>, tensor<128xf32>, tensor<128x64xf16>, tensor<64xf32>) -> tensor<64x64xf32>
"""


def _scheduled(tmp_path, *kernels):
    p = tmp_path / "scheduled.mlir"
    p.write_text("".join(f'  %0 = rowfuse.kernel "{k}" "fused_smem"(%x)\n' for k in kernels))
    return str(p)


def test_splice_extern_names_the_kernel(tmp_path):
    ev = iree_model.splice_evidence(FLOW_EXTERN, _scheduled(tmp_path, "rf_k"), 64, 128)
    assert ev["ok"] and ev["dispatches"] == 2 and len(ev["block_dispatches"]) == 1
    bad = iree_model.splice_evidence(FLOW_EXTERN, _scheduled(tmp_path, "rf_other"), 64, 128)
    assert not bad["ok"]


def test_splice_codegen_one_dispatch_reads_both_weights(tmp_path):
    one = _scheduled(tmp_path, "rf_k")
    assert iree_model.splice_evidence(FLOW_ONE, one, 64, 128)["ok"]
    # IREE's own fusion of the block (two dispatches) is not the persistent schedule
    assert not iree_model.splice_evidence(FLOW_STOCK, one, 64, 128)["ok"]
    stock = iree_model.splice_evidence(FLOW_STOCK, None, 64, 128)
    assert stock["ok"] and len(stock["block_dispatches"]) == 2


def test_token_flips_only_near_fp16_boundaries():
    a = np.array([1.0, -1.0, 1.0 + 2.0**-11, 0.25])  # 1 + 2^-11: halfway between fp16 values
    flips = iree_model.token_flips(a, np.full(4, 1e-6))
    assert flips[0] == 0 and flips[1] == 0 and flips[3] == 0
    assert flips[2] == 2.0**-10  # one fp16 ulp at 1


def test_bound_grows_with_an_input_difference():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (8, 16)).astype(np.float16)
    w1 = rng.uniform(-0.3, 0.3, (16, 32)).astype(np.float16)
    w2 = rng.uniform(-0.3, 0.3, (32, 16)).astype(np.float16)
    b1 = rng.uniform(-0.1, 0.1, 32).astype(np.float32)
    b2 = rng.uniform(-0.1, 0.1, 16).astype(np.float32)
    base = iree_block.derived_bound(x, w1, b1, w2, b2)
    assert np.array_equal(base, iree_block.derived_bound(x, w1, b1, w2, b2, dx=np.zeros(x.shape)))
    dx = np.zeros(x.shape)
    dx[2, 5] = 2.0**-10
    grown = iree_block.derived_bound(x, w1, b1, w2, b2, dx=dx)
    assert np.all(grown >= base) and grown[2, 5] >= base[2, 5] + 2.0**-10
