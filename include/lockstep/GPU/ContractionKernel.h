//===- ContractionKernel.h - A contraction's tiled GPU launch ---*- C++ -*-===//
//
// Builds the gpu.launch that lockstep-tile-contractions gives a contraction
// (lockstep/Reductions/Contraction.h) for one tile shape: a block owns a
// BM x BN tile of (m, n) for one point of the batch dims, stages BK values
// of k of both inputs in workgroup memory a step, and each thread folds its
// TM x TN outputs over them with the generic's body, k increasing, from the
// output's own value. Only which thread computes an output, and how its
// operands travel, depend on the shape: never the order of its fold.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_GPU_CONTRACTIONKERNEL_H
#define LOCKSTEP_GPU_CONTRACTIONKERNEL_H

#include "lockstep/Reductions/Contraction.h"

namespace lockstep {

/// A tile shape: TX x TY threads; each owns TM rows and TN columns of a
/// BM x BN tile, in groups of `vec` adjacent rows (columns), the groups of
/// one thread TY·vec (TX·vec) apart: rows ty·vec + i%vec + (i/vec)·TY·vec.
/// BK values of k are staged a step (the largest power of two up to
/// `maxBK` that divides k's length).
///
/// vec = 1: the plain tiles. Workgroup tiles padded by one element (few
/// bank conflicts for scalar accesses), one buffer, scalar loads.
///
/// vec = 4: the register-blocked tiles. Workgroup tiles padded by 4 (rows
/// stay 16-byte aligned) and double-buffered (one barrier a step); each
/// thread reads its groups from them as vector<4>s; an operand or output
/// whose groups are contiguous and aligned in memory (see
/// contiguousGroups) travels as vector<4>s, others element by element; the
/// loop over a step's k is unrolled by 2.
///
/// direct (vec = 1, TY = 1 only): the second input is not staged. Each
/// thread loads its own TN columns of it for the step's BK values of k
/// straight into registers (the next step's while it folds this one) and
/// folds from them, the loop over the step's k unrolled whole; only the
/// first input's tile goes through workgroup memory. A thread of the plain
/// tiles with TY = 1 stages exactly the values it folds, so the staging
/// bought nothing but a store, a barrier's wait and a load a value. Only
/// where the second input's n is its fast dim: with k fastest (W[n, k]),
/// the shape is built staged.
struct TileShape {
  int64_t tx, ty, tm, tn, maxBK, vec;
  bool direct = false;
  int64_t bm() const { return ty * tm; }
  int64_t bn() const { return tx * tn; }
  int64_t threads() const { return tx * ty; }
};

/// Whether the points of loop dim `dim` read through `map` from `memref`,
/// in groups of `width` from a multiple of `width`, are `width` adjacent
/// elements aligned to `width` elements (and 4·width bytes): the elements
/// are 32 bits wide; `dim` is the map's last index; the memref's last dim
/// has unit stride and a static size that `width` divides; its other
/// strides and its offset are multiples of `width` (an identity layout's
/// are, given its last size). The base pointer is taken to be 16-byte
/// aligned, as every buffer of the runtime is (kMinTensorAlignment).
bool contiguousGroups(mlir::Value memref, mlir::AffineMap map, unsigned dim, int64_t width);

/// The launch of `c` with `shape`, built at `b`: blocks (ceil(N/BN),
/// ceil(M/BM), gridZ) with the batch dims on z, last fastest; `sizes` are
/// the loop dims' extents.
void buildContractionLaunch(mlir::OpBuilder &b, mlir::Location loc, const Contraction &c,
                            llvm::ArrayRef<mlir::Value> sizes, const TileShape &shape,
                            mlir::Value gridZ);

/// One launch for `group`: contractions that read the same first input
/// through the same map, every dim but n and k read by it (so the same
/// rows, batch points and k), with second inputs of one element type and
/// layout kind (n or k fastest), each with its loop extents in `sizes`.
/// Blocks (sum of ceil(N_i/BN), ceil(M/BM), gridZ): block x runs over the
/// first member's column tiles, then the next one's; each block computes
/// its member's tile exactly as that member's own launch would. A step's
/// projections that share their input (q, k and v; gate and up) then fill
/// the device together in one launch.
void buildContractionGroupLaunch(mlir::OpBuilder &b, mlir::Location loc,
                                 llvm::ArrayRef<Contraction> group,
                                 llvm::ArrayRef<llvm::SmallVector<mlir::Value>> sizes,
                                 const TileShape &shape, mlir::Value gridZ);

} // namespace lockstep

#endif
