// RUN: lockstep-opt %s --lockstep-expand-math --verify-diagnostics

// A math op on a dynamically shaped tensor has no splat constants to expand
// into; it must be inside a linalg body.
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{expand math ops on dynamically shaped tensors inside a linalg body}}
  %0 = math.exp %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}
