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
