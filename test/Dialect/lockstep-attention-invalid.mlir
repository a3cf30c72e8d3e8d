// RUN: lockstep-opt %s --split-input-file --verify-diagnostics

// The key heads must divide the query heads.
func.func @heads(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x3x4x8xf32> {
  // expected-error @+1 {{query heads (3) must be a static multiple of key heads (2)}}
  %o = lockstep.attention %q, %k, %v : (tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x3x4x8xf32>
  return %o : tensor<1x3x4x8xf32>
}

// -----

func.func @head_size(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{query and key head sizes differ (8 vs 4)}}
  %o = lockstep.attention %q, %k, %v : (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A boolean mask selects between the score and a fill, so it needs one.
func.func @bool_mask_without_fill(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<4x4xi1>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{a boolean mask needs a fill value, and only it}}
  %o = lockstep.attention %q, %k, %v mask %m : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xi1>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

func.func @scale_not_scalar(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %c: tensor<2xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{fill, key_scale and scale must be single elements of the query's element type}}
  %o = lockstep.attention %q, %k, %v scale %c : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<2xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

func.func @rank(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{must be of rank 4}}
  %o = lockstep.attention %q, %k, %v : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// lockstep.paged_attention serves a ragged step: one row of T tokens.
func.func @paged_batch(%q: tensor<2x2x?x8xf32>, %k: tensor<2x2x?x8xf32>, %kp: tensor<?x?x2x8xf32>, %pos: tensor<?xi64>, %st: tensor<?xi64>, %bt: tensor<?x?xi32>) -> tensor<2x2x?x8xf32> {
  // expected-error @+1 {{the batch dim of a ragged step must be 1}}
  %o = lockstep.paged_attention %q, %k, %k, %kp, %kp, %pos, %st, %bt : (tensor<2x2x?x8xf32>, tensor<2x2x?x8xf32>, tensor<2x2x?x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi32>) -> tensor<2x2x?x8xf32>
  return %o : tensor<2x2x?x8xf32>
}

// -----

// The pools hold the key heads and head size of the new rows.
func.func @paged_pool(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %kp: tensor<?x?x4x8xf32>, %pos: tensor<?xi64>, %st: tensor<?xi64>, %bt: tensor<?x?xi32>) -> tensor<1x2x?x8xf32> {
  // expected-error @+1 {{the pools must be [blocks, block size, key heads, head size] of the key and value}}
  %o = lockstep.paged_attention %q, %k, %k, %kp, %kp, %pos, %st, %bt : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// Block tables hold i32 block ids, as the runtime's KV cache does.
func.func @paged_tables(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %kp: tensor<?x?x2x8xf32>, %pos: tensor<?xi64>, %st: tensor<?xi64>, %bt: tensor<?x?xi64>) -> tensor<1x2x?x8xf32> {
  // expected-error @+1 {{block_tables must be i32 [requests, blocks per request]}}
  %o = lockstep.paged_attention %q, %k, %k, %kp, %kp, %pos, %st, %bt : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// A sliding window is a kind of causal mask: it needs causal.
func.func @window_not_causal(%q: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  // expected-error @+1 {{a window needs causal}}
  %o = lockstep.attention %q, %q, %q {window = 4 : i64} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// A window keeps at least the query's own position.
func.func @window_zero(%q: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  // expected-error @+1 {{window must be at least 1 position}}
  %o = lockstep.attention %q, %q, %q {causal, window = 0 : i64} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// Softcapping divides by its cap: it must be positive and finite.
func.func @softcap_negative(%q: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  // expected-error @+1 {{softcap must be positive and finite}}
  %o = lockstep.attention %q, %q, %q {causal, softcap = -5.0 : f64} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// The same checks hold for the ragged step's attention.
func.func @paged_window_zero(%q: tensor<1x2x?x8xf32>, %kp: tensor<?x?x2x8xf32>, %pos: tensor<?xi64>, %st: tensor<?xi64>, %bt: tensor<?x?xi32>) -> tensor<1x2x?x8xf32> {
  // expected-error @+1 {{window must be at least 1 position}}
  %o = lockstep.paged_attention %q, %q, %q, %kp, %kp, %pos, %st, %bt {window = 0 : i64} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}
