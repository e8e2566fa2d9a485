// Every verifier rejection of the rowfuse dialect, each in its own split.
// RUN: rowfuse-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect

// ---- the row contract: uses that would mix rows ----

func.func @weight_is_row_owned(%x: tensor<8x8xf16> {rowfuse.row}, %a: tensor<8x8xf16>) -> tensor<8x8xf32> {
  // Y = A X contracts over X's rows: row i of Y reads every row of X.
  // expected-error @+1 {{weight (operand #1) depends on the rows: contracting over it sums over rows}}
  %0 = rowfuse.linear %a, %x : tensor<8x8xf16>, tensor<8x8xf16> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @weight_computed_from_rows(%x: tensor<8x8xf16> {rowfuse.row}, %r: tensor<8x8xf32> {rowfuse.row}) -> tensor<8x8xf32> {
  %1 = rowfuse.relu %r : tensor<8x8xf32>
  %2 = rowfuse.round_f16 %1 : tensor<8x8xf32> -> tensor<8x8xf16>
  // expected-error @+1 {{weight (operand #1) depends on the rows}}
  %3 = rowfuse.linear %x, %2 : tensor<8x8xf16>, tensor<8x8xf16> -> tensor<8x8xf32>
  return %3 : tensor<8x8xf32>
}

// -----

func.func @bias_is_row_owned(%x: tensor<8x8xf32> {rowfuse.row}, %v: tensor<8xf32> {rowfuse.row}) -> tensor<8x8xf32> {
  // expected-error @+1 {{bias (operand #1) depends on the rows: column n of every row would read row n}}
  %0 = rowfuse.bias %x, %v : tensor<8x8xf32>, tensor<8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @weight_of_unknown_provenance(%x: tensor<8x8xf16> {rowfuse.row}, %w: tensor<8x8xf16>) -> tensor<8x8xf32> {
  // A block argument of anything but the function has no known row state, so it cannot
  // pass as a weight.
  "test.region"(%w) ({
  ^bb0(%v: tensor<8x8xf16>):
    // expected-error @+1 {{weight (operand #1) depends on the rows}}
    %0 = rowfuse.linear %x, %v : tensor<8x8xf16>, tensor<8x8xf16> -> tensor<8x8xf32>
    "test.yield"() : () -> ()
  }) : (tensor<8x8xf16>) -> ()
  %1 = rowfuse.linear %x, %w : tensor<8x8xf16>, tensor<8x8xf16> -> tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// ---- the row contract: shapes and types ----

// -----

func.func @linear_features(%x: tensor<8x8xf16> {rowfuse.row}, %w: tensor<16x4xf16>) -> tensor<8x4xf32> {
  // expected-error @+1 {{contracts 8 input features with a weight of 16 rows}}
  %0 = rowfuse.linear %x, %w : tensor<8x8xf16>, tensor<16x4xf16> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @linear_result(%x: tensor<8x8xf16> {rowfuse.row}, %w: tensor<8x4xf16>) -> tensor<8x8xf32> {
  // expected-error @+1 {{result must be 8x4, not 'tensor<8x8xf32>'}}
  %0 = rowfuse.linear %x, %w : tensor<8x8xf16>, tensor<8x4xf16> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @linear_f32_input(%x: tensor<8x8xf32> {rowfuse.row}, %w: tensor<8x4xf16>) -> tensor<8x4xf32> {
  // expected-error @+1 {{operand #0 must be 2D tensor of 16-bit float values}}
  %0 = "rowfuse.linear"(%x, %w) : (tensor<8x8xf32>, tensor<8x4xf16>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @bias_length(%x: tensor<8x8xf32> {rowfuse.row}, %b: tensor<4xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{bias of 4 elements for 8 columns}}
  %0 = rowfuse.bias %x, %b : tensor<8x8xf32>, tensor<4xf32>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @residual_shape(%a: tensor<8x8xf32> {rowfuse.row}, %x: tensor<8x4xf16> {rowfuse.row}) -> tensor<8x8xf32> {
  // expected-error @+1 {{input and residual shapes differ: 'tensor<8x8xf32>' vs 'tensor<8x4xf16>'}}
  %0 = rowfuse.residual_add %a, %x : tensor<8x8xf32>, tensor<8x4xf16>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @round_shape(%a: tensor<8x8xf32> {rowfuse.row}) -> tensor<8x4xf16> {
  // expected-error @+1 {{input and result shapes differ}}
  %0 = rowfuse.round_f16 %a : tensor<8x8xf32> -> tensor<8x4xf16>
  return %0 : tensor<8x4xf16>
}

// ---- rowfuse.kernel ----

// -----

func.func @unknown_family(%x: tensor<49x48xf16>) -> tensor<49x48xf32> {
  // expected-error @+1 {{unknown kernel family 'fused_regs' (known: fused_smem, fused_gmem, proj1, proj2, fused_wgmma)}}
  %0 = rowfuse.kernel "k" "fused_regs"(%x) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @operand_count(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>) -> tensor<49x48xf32> {
  // expected-error @+1 {{fused_smem takes 5 operands, not 2}}
  %0 = rowfuse.kernel "k" "fused_smem"(%x, %w1) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @gmem_without_buffer(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{fused_gmem needs buffer(h): H goes through global memory}}
  %0 = rowfuse.kernel "k" "fused_gmem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @smem_with_buffer(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  %h = rowfuse.buffer "h" : tensor<49x96xf16>
  // expected-error @+1 {{fused_smem takes no buffer}}
  %0 = rowfuse.kernel "k" "fused_smem"(%x, %w1, %b1, %w2, %b2) buffer(%h : tensor<49x96xf16>) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @smem_h_not_on_chip(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{fused_smem keeps h on chip: on_chip must list "h"}}
  %0 = rowfuse.kernel "k" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @gmem_h_on_chip(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  %h = rowfuse.buffer "h" : tensor<49x96xf16>
  // expected-error @+1 {{fused_gmem routes h through global memory: on_chip must not list "h"}}
  %0 = rowfuse.kernel "k" "fused_gmem"(%x, %w1, %b1, %w2, %b2) buffer(%h : tensor<49x96xf16>) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @buffer_not_from_buffer_op(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %h: tensor<49x96xf16>) -> tensor<49x96xf16> {
  // expected-error @+1 {{buffer(h) must come from rowfuse.buffer}}
  %0 = rowfuse.kernel "k" "proj1"(%x, %w1, %b1) buffer(%h : tensor<49x96xf16>) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>) -> tensor<49x96xf16>
  return %0 : tensor<49x96xf16>
}

// -----

func.func @buffer_rows(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>) -> tensor<48x96xf16> {
  %h = rowfuse.buffer "h" : tensor<48x96xf16>
  // expected-error @+1 {{buffer(h) must be fp16 with 49 rows, not 'tensor<48x96xf16>'}}
  %0 = rowfuse.kernel "k" "proj1"(%x, %w1, %b1) buffer(%h : tensor<48x96xf16>) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>) -> tensor<48x96xf16>
  return %0 : tensor<48x96xf16>
}

// -----

func.func @proj1_result(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>) -> tensor<49x48xf32> {
  %h = rowfuse.buffer "h" : tensor<49x96xf16>
  // expected-error @+1 {{proj1 returns the buffer it writes ('tensor<49x96xf16>'), not 'tensor<49x48xf32>'}}
  %0 = rowfuse.kernel "k" "proj1"(%x, %w1, %b1) buffer(%h : tensor<49x96xf16>) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @proj2_reads_h_not_from_proj1(%x: tensor<49x48xf16>, %h: tensor<49x96xf16>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{proj2 reads h (operand #1) from a proj1 kernel, through global memory}}
  %0 = rowfuse.kernel "k" "proj2"(%x, %h, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = [], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<49x96xf16>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @result_shape(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x96xf32> {
  // expected-error @+1 {{result must be the fp32 49x48 output, not 'tensor<49x96xf32>'}}
  %0 = rowfuse.kernel "k" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x96xf32>
  return %0 : tensor<49x96xf32>
}

// -----

func.func @dynamic_rows(%x: tensor<?x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<?x48xf32> {
  // expected-error @+1 {{x (operand #0) must be a static fp16 matrix, not 'tensor<?x48xf16>'}}
  %0 = rowfuse.kernel "k" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<?x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<?x48xf32>
  return %0 : tensor<?x48xf32>
}

// -----

func.func @tile_rows(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{tile_rows must be 16, 32 or 64, not 24}}
  %0 = rowfuse.kernel "k" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 2 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 24 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @threads(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{threads must be whole warps, not 100}}
  %0 = rowfuse.kernel "k" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 4 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 100 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @grid_exceeds_tiles(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{grid 5 is not a multiple of 1 blocks per tile up to the 4 tiles of 49 rows}}
  %0 = rowfuse.kernel "k" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 5 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @pair_grid_odd(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{grid 3 is not a multiple of 2 blocks per tile up to the 1 tiles of 49 rows}}
  %0 = rowfuse.kernel "k" "fused_wgmma"(%x, %w1, %b1, %w2, %b2) {cluster_blocks = 2 : i64, grid = 3 : i64, grid_rule = "", hidden_chunk = 48 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 128 : i64, tile_rows = 64 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @pair_not_wgmma(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{cluster_blocks 2 (only fused_wgmma runs a block pair per tile, 2)}}
  %0 = rowfuse.kernel "k" "fused_smem"(%x, %w1, %b1, %w2, %b2) {cluster_blocks = 2 : i64, grid = 2 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}

// -----

func.func @zero_grid(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  // expected-error @+1 {{attribute 'grid' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %0 = rowfuse.kernel "k" "fused_smem"(%x, %w1, %b1, %w2, %b2) {grid = 0 : i64, grid_rule = "", hidden_chunk = 96 : i64, on_chip = ["h"], smem_bytes = 1 : i64, threads = 96 : i64, tile_rows = 16 : i64} : (tensor<49x48xf16>, tensor<48x96xf16>, tensor<96xf32>, tensor<96x48xf16>, tensor<48xf32>) -> tensor<49x48xf32>
  return %0 : tensor<49x48xf32>
}
