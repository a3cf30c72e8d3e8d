//===- TileShapes.cpp - The contractions' tile shapes by rows -------------===//
#include "lockstep/GPU/TileShapes.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MathExtras.h"

using namespace lockstep;

const std::vector<ShapeChoice> &lockstep::defaultTileShapes() {
  static const std::vector<ShapeChoice> shapes = {
      // One row (a decode step of one request): 64 columns, a thread each,
      // 64 values of k a step of its own column in registers (direct: the
      // weights are not staged).
      {1, {64, 1, 1, 1, 64, 1, true}},
      // Up to 8 rows: 8x64 tiles, each thread 8 rows of one column, 32
      // values of k a step of its column in registers.
      {8, {64, 1, 8, 1, 32, 1, true}},
      // Up to 16 rows: 16x64 tiles, 64 values of k a step, so that a block
      // keeps 16 KiB of the weights in flight.
      {16, {64, 4, 4, 1, 64, 1}},
      // Up to 32 rows: 32x64 register-blocked tiles of 16x8 threads, 4x4
      // outputs each, 32 values of k a step: at 32 rows, 0.014 ms for 2048 x
      // 512 and 0.044 for 2048 x 5632 against 0.026 and 0.059 with the
      // 64x128 tiles (bench/gpu/tiles.py on an H100, 2026-12-05).
      {32, {16, 8, 4, 4, 32, 4}},
      // Up to 256 rows: 64x128 register-blocked tiles of 16x16 threads, 4x8
      // outputs each (a group of 4 rows by two of 4 columns), BK 16: twice
      // the blocks of the 128x128 tiles for the rows that fill fewer of
      // them. BK 8 took 22-37% longer at 32-256 rows (the same sweep). From
      // 17 rows on, the 16x64 tiles read each weight once per 16 rows and
      // fold one column a thread from workgroup memory; at 64 rows (GPU run
      // 12) they took 180 us for 2048 x 5632.
      {256, {16, 16, 4, 8, 16, 4}},
      // Many rows (prefill): 128x128 register-blocked tiles of 16x16
      // threads, 8x8 outputs each, BK 8.
      {0, {16, 16, 8, 8, 8, 4}},
  };
  return shapes;
}

namespace {

bool number(llvm::StringRef s, int64_t &v) { return !s.getAsInteger(10, v) && v > 0; }

bool pair(llvm::StringRef s, int64_t &a, int64_t &b) {
  auto [x, y] = s.split('x');
  return number(x, a) && number(y, b);
}

/// Why entry `e` cannot be built, or empty.
std::string check(const ShapeChoice &e) {
  const TileShape &s = e.shape;
  if (s.threads() > 1024)
    return "more than 1024 threads a block";
  if (!llvm::isPowerOf2_64(s.maxBK) || s.maxBK > 64)
    return "BK must be a power of two from 1 to 64";
  if (s.vec == 4 && (s.tm % 4 || s.tn % 4 || s.maxBK < 8))
    return "v4 needs TM and TN multiples of 4 and BK of at least 8";
  if (s.direct && (s.ty != 1 || s.vec != 1))
    return "direct needs TY = 1 and no v4";
  int64_t stages = s.vec == 4 ? 2 : 1, pad = s.vec == 4 ? 4 : 1;
  int64_t floats = stages * s.maxBK * (s.bm() + pad);
  if (!s.direct)
    floats += stages * s.maxBK * (s.bn() + pad);
  if (floats * 4 > 48 * 1024)
    return "its workgroup tiles take " + std::to_string(floats * 4) +
           " bytes, more than 48 KiB";
  return "";
}

} // namespace

bool lockstep::parseTileShapes(const std::string &text, std::vector<ShapeChoice> &out,
                               std::string &error) {
  out.clear();
  llvm::SmallVector<llvm::StringRef> entries;
  llvm::StringRef(text).split(entries, ';', -1, /*KeepEmpty=*/false);
  auto fail = [&](llvm::StringRef entry, const std::string &why) {
    error = "tile shape '" + entry.str() + "': " + why +
            " (expected ROWS:TXxTY/TMxTN/BK[/v4][/direct], entries separated by ';', the "
            "last ROWS '*')";
    return false;
  };
  for (llvm::StringRef entry : entries) {
    entry = entry.trim();
    auto [rows, rest] = entry.split(':');
    ShapeChoice e{0, {}};
    if (rows != "*" && !number(rows, e.maxRows))
      return fail(entry, "ROWS is not a positive number or '*'");
    llvm::SmallVector<llvm::StringRef> parts;
    rest.split(parts, '/');
    if (parts.size() < 3)
      return fail(entry, "missing threads, outputs or BK");
    TileShape &s = e.shape;
    s.vec = 1;
    if (!pair(parts[0], s.tx, s.ty))
      return fail(entry, "threads are not TXxTY");
    if (!pair(parts[1], s.tm, s.tn))
      return fail(entry, "outputs are not TMxTN");
    if (!number(parts[2], s.maxBK))
      return fail(entry, "BK is not a positive number");
    for (llvm::StringRef flag : llvm::ArrayRef(parts).drop_front(3)) {
      if (flag == "v4")
        s.vec = 4;
      else if (flag == "direct")
        s.direct = true;
      else
        return fail(entry, "unknown flag '" + flag.str() + "'");
    }
    if (std::string why = check(e); !why.empty())
      return fail(entry, why);
    if (!out.empty() && (out.back().maxRows == 0 || (e.maxRows && e.maxRows <= out.back().maxRows)))
      return fail(entry, "row limits must increase, '*' last");
    out.push_back(e);
  }
  if (out.empty() || out.back().maxRows != 0) {
    error = "tile shapes '" + text + "': the last entry's ROWS must be '*' (any rows)";
    return false;
  }
  return true;
}

std::string lockstep::formatTileShapes(const std::vector<ShapeChoice> &shapes) {
  std::string text;
  for (const ShapeChoice &e : shapes) {
    const TileShape &s = e.shape;
    if (!text.empty())
      text += ';';
    text += (e.maxRows ? std::to_string(e.maxRows) : std::string("*")) + ":" +
            std::to_string(s.tx) + "x" + std::to_string(s.ty) + "/" + std::to_string(s.tm) + "x" +
            std::to_string(s.tn) + "/" + std::to_string(s.maxBK) + (s.vec == 4 ? "/v4" : "") +
            (s.direct ? "/direct" : "");
  }
  return text;
}
