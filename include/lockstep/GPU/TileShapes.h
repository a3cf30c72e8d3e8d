//===- TileShapes.h - The contractions' tile shapes by rows -----*- C++ -*-===//
//
// lockstep-tile-contractions gives each contraction one launch per entry of
// a table of tile shapes, and host code that takes the first entry whose
// row limit holds the call's rows. The table is the compiler's default
// (defaultTileShapes) or one given as text (lockstep-opt --gpu-tiles, the
// pass's `shapes` option), for tuning on a GPU: a shape changes which thread
// computes an output and how its operands travel, never the order of its
// fold, so every table gives the same bits.
//
// The text: entries separated by ';', each `ROWS:TXxTY/TMxTN/BK[/v4][/direct]`
// with ROWS the entry's row limit (`*` for the last, which takes any rows),
// TX x TY threads, TM x TN outputs a thread, BK the most values of k staged
// a step, `v4` for the register-blocked form (groups of 4 rows and columns,
// vector<4> loads, double-buffered tiles), `direct` for the form that keeps
// the second input in registers (TY = 1, not v4). The default table:
//   1:64x1/1x1/64/direct;8:64x1/8x1/32/direct;16:64x4/4x1/64;
//   32:16x8/4x4/32/v4;256:16x16/4x8/16/v4;*:16x16/8x8/8/v4
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_GPU_TILESHAPES_H
#define LOCKSTEP_GPU_TILESHAPES_H

#include "lockstep/GPU/ContractionKernel.h"

#include <string>
#include <vector>

namespace lockstep {

/// A table entry: the shape for calls of at most `maxRows` rows (0: any).
struct ShapeChoice {
  int64_t maxRows;
  TileShape shape;
};

/// The compiler's table, from the fewest rows up; its last entry takes any.
const std::vector<ShapeChoice> &defaultTileShapes();

/// Parses `text` (see above) into `out`; false with `error` saying which
/// entry is wrong and why. Checks: row limits increasing, the last `*`;
/// at most 1024 threads a block; TM and TN multiples of 4 with v4; direct
/// only with TY = 1 and not v4; BK a power of two from 1 to 64 (from 8 with
/// v4); the workgroup tiles within 48 KiB (the static shared memory limit).
bool parseTileShapes(const std::string &text, std::vector<ShapeChoice> &out, std::string &error);

/// The table as text, in the form parseTileShapes reads.
std::string formatTileShapes(const std::vector<ShapeChoice> &shapes);

} // namespace lockstep

#endif
