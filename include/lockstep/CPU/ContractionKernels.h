//===- ContractionKernels.h - A contraction's CPU vector loops --*- C++ -*-===//
//
// Builds the loops that lockstep-cpu-microkernels gives an f32 contraction
// (lockstep/Reductions/Contraction.h) whose body is the contract's
// `math.fma` of its two inputs into the output and whose output columns
// (n) are contiguous: register tiles for many rows, streaming panels for
// few. Every vector lane is one output, folded with that fma over k in
// increasing order from the output's own value; only which outputs are
// computed together, and by which thread, differ between the forms.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_CPU_CONTRACTIONKERNELS_H
#define LOCKSTEP_CPU_CONTRACTIONKERNELS_H

#include "lockstep/Reductions/Contraction.h"

namespace lockstep {

/// How a contraction's second input (the weights) is laid out.
enum class WeightLayout {
  Columns,    ///< W[.., k, n]: n its last index, of unit stride
  Transposed, ///< W[.., n, k]: k its last index, of unit stride
  Other,
};

/// The weights' layout of a matched contraction.
WeightLayout weightLayout(const Contraction &c);

/// Whether a `cols`-column tile of the weights can be packed for the tiles:
/// k static and the packed buffer at most 64 KiB.
bool canPackColumns(const Contraction &c, int64_t cols);

/// A chunked reduction's combine (`out = out + partial`, over the chunk dim,
/// in increasing order; lockstep.chunk_role "combine") run by the
/// transposed strips of its partial instead of as a pass of its own: each
/// output's chunk partial, once folded, is added to the combine's output at
/// once, chunk after chunk in increasing order, so the partials are never
/// stored. The adds are the combine's own, operands in its order.
struct StripCombine {
  mlir::linalg::GenericOp op; ///< the combine
  unsigned chunkDim = 0;      ///< the partial's loop dim of the chunks
  mlir::Value out;            ///< the combine's output
  /// The combine output's indices in the partial's loop dims (the chunk
  /// dim not among them).
  mlir::AffineMap outMap;
  /// The fill of the output just before the combine (forwardableFill),
  /// or null; with it, chunk 0 adds to its value `init` instead of the
  /// stored output.
  mlir::linalg::FillOp fill;
  mlir::Value init;
  bool partialFirst = false; ///< whether the add is `addf(partial, out)`
};

/// The combine that the transposed strips of partial `c` (its fill
/// forwarded, `c.init` set) can run: the op right after it, reading only
/// its output and folding the one dim of it that indexes the weights, with
/// the body `addf` of its input and output (either order), into a buffer
/// that neither input shares. Otherwise nullopt.
std::optional<StripCombine> stripCombine(const Contraction &c);

/// The loops of one contraction, built before it; the caller erases it.
/// With `c.init` set, the tiles and the transposed panels start every
/// output from it instead of loading the output.
class CpuContractionKernels {
public:
  /// `sizes`: each loop dim's extent; `lanes`: f32 lanes of the tiles' and
  /// panels' vectors (8: AVX2; 16: AVX-512), which divides `cols`;
  /// `inputFirst`: whether the fma's first factor is the first input.
  CpuContractionKernels(const Contraction &c, llvm::ArrayRef<mlir::Value> sizes, int64_t rows,
                        int64_t cols, int64_t lanes, bool inputFirst, WeightLayout layout);

  /// Many rows: an scf.parallel over (batch point, group of column tiles of
  /// `cols`); each work item packs its tiles of the weights `[tile, k, cols]`
  /// (when canPackColumns), each weight row's columns of the group read as
  /// one run, and runs its `rows` x `cols` register tiles over them.
  void buildTiles(mlir::OpBuilder &b, mlir::Location loc);

  /// Few rows (decode), Columns weights: an scf.parallel over (batch point,
  /// panel of columns); each work item streams its weight rows once, k
  /// outermost, folding into the outputs in memory a vector at a time (so
  /// from the outputs' stored values: a forwarded init must be stored
  /// first).
  void buildPanels(mlir::OpBuilder &b, mlir::Location loc);

  /// Few rows, Transposed weights: an scf.parallel over (batch point, panel
  /// of columns), the batch dims that index the weights (a partial's chunk
  /// dim) looped inside each strip instead, so that a strip's weight rows
  /// are read in address order; each work item takes strips of 16 columns
  /// (then of one vector), reads the strip's weights in square blocks (8 x 8,
  /// or 16 x 16 with 16 lanes) along their contiguous k, transposes each in
  /// registers once for a tile of `rows` rows, and folds them into each
  /// row's accumulators held over all of k.
  void buildTransposedPanels(mlir::OpBuilder &b, mlir::Location loc);

  /// Has the transposed panels built next run `sc` too (or not, with null):
  /// they then add each chunk's outputs to its output instead of storing
  /// them. The tiles and panels do not take one.
  void runCombine(const StripCombine *sc) { combine = sc; }

private:
  struct PanelItem {
    mlir::OpBuilder b;
    llvm::SmallVector<mlir::Value> dims;
    mlir::Value n0, nEnd;
  };
  /// The tiles of buildTiles, weights read in place (`direct`) or from a
  /// packed copy (`packs`) or neither.
  void tiles(mlir::OpBuilder &b, mlir::Location loc, bool direct, bool packs);
  /// A work item per (batch point, panel of columns); the batch dims in
  /// `inner` are left unset, for the item to loop over.
  PanelItem panelItem(mlir::OpBuilder &b, mlir::Location loc,
                      llvm::ArrayRef<unsigned> inner = {});
  /// The first `width` values of outputs at `outIdx`: loaded, or the
  /// contraction's forwarded init broadcast.
  mlir::Value startOf(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange outIdx,
                      int64_t width);
  mlir::Value fma(mlir::OpBuilder &b, mlir::Location loc, mlir::Value xs, mlir::Value y,
                  mlir::Value acc);
  mlir::Value packGroup(mlir::OpBuilder &b, mlir::Location loc,
                        llvm::SmallVector<mlir::Value> dims, mlir::Value n0, mlir::Value tiles,
                        mlir::Value group);
  void packTransposed(mlir::OpBuilder &b, mlir::Location loc, llvm::SmallVector<mlir::Value> dims,
                      mlir::Value n0, mlir::Value pack, mlir::Value tile);
  /// `chunkDim` (-1: none): a chunk dim looped in the tile whose weight
  /// rows run on from one chunk's to the next, which the prefetch follows.
  void vectorTile(mlir::OpBuilder &b, mlir::Location loc, llvm::SmallVector<mlir::Value> dims,
                  llvm::ArrayRef<mlir::Value> rowIdx, mlir::Value n0, mlir::Value pack,
                  mlir::Value tile, int64_t chunkDim);
  void scalarTile(mlir::OpBuilder &b, mlir::Location loc, llvm::SmallVector<mlir::Value> dims,
                  mlir::Value m0, mlir::Value mEnd, mlir::Value n0, mlir::Value nEnd);
  void transposedStrip(mlir::OpBuilder &b, mlir::Location loc, llvm::SmallVector<mlir::Value> dims,
                       mlir::Value n0, int64_t groups);
  void stripRows(mlir::OpBuilder &b, mlir::Location loc, llvm::SmallVector<mlir::Value> dims,
                 llvm::ArrayRef<mlir::Value> rowIdx, mlir::Value n0, int64_t groups);
  /// Stores the fold `v` (a value or a vector) of the outputs at `dims`:
  /// into the output, or added to the combine's.
  void storeOut(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                llvm::ArrayRef<mlir::Value> dims);
  llvm::SmallVector<mlir::Value> weightBlock(mlir::OpBuilder &b, mlir::Location loc,
                                             llvm::SmallVector<mlir::Value> dims, mlir::Value n,
                                             mlir::Value k);

  const Contraction &c;
  llvm::ArrayRef<mlir::Value> sizes;
  int64_t rows, cols, lanes;
  int64_t tl = 8;          ///< lanes of the transposed weights' blocks and strips
  int64_t stripGroups = 2; ///< vectors of `tl` columns a transposed strip holds
  bool inputFirst;
  WeightLayout layout;
  mlir::Value a, b, out; // b: the weights
  mlir::AffineMap aMap, bMap, outMap;
  const StripCombine *combine = nullptr;
};

/// The transpose of 8 vector<8xT> rows (result i holds every row's lane
/// i), in 24 two-source shuffles, the unpack / shuffle / 128-bit permute
/// sequence x86's AVX2 code generator turns into one instruction each;
/// shuffles only, so every element keeps its bits. Shared with
/// lockstep-cpu-gather-kernels (key rows read along the reduction dim).
llvm::SmallVector<mlir::Value> transpose8x8(mlir::OpBuilder &b, mlir::Location loc,
                                            llvm::ArrayRef<mlir::Value> rows);

/// The transpose of n vector<nxT> rows for n a power of two (result i
/// holds every row's lane i): log2(n) stages of n two-source shuffles, each
/// stage swapping one bit of the row index with the same bit of the lane
/// index (AVX-512 lowers each to one permute). Shuffles only, so every
/// element keeps its bits. Used for 16 lanes (transpose8x8 keeps the 8-lane
/// form, its masks chosen for AVX2's instructions): the transposed weights'
/// blocks, and lockstep-cpu-paged-attention's decode keys (key rows read
/// along d, as vectors of keys).
llvm::SmallVector<mlir::Value> transposeSquare(mlir::OpBuilder &b, mlir::Location loc,
                                               llvm::ArrayRef<mlir::Value> rows);

} // namespace lockstep

#endif
