//===- Npy.h - Reading and writing .npy files -------------------*- C++ -*-===//
//
// NumPy's .npy format (versions 1 to 3), C order, little-endian numeric
// dtypes. Used by lockstep-run for inputs, outputs and logits.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_NPY_H
#define LOCKSTEP_RUNTIME_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::rt {

struct NpyArray {
  std::string dtype; // numpy descr without byte order: f4, f8, f2, i8, i4, u1, b1...
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; // raw little-endian bytes, C order

  int64_t numElements() const;
  /// Bytes per element of `dtype`, or 0 when unsupported.
  static size_t elementSize(const std::string &dtype);
};

/// Reads a .npy file. On failure returns false and sets `error`.
bool readNpy(const std::string &path, NpyArray &out, std::string &error);
/// Parses .npy bytes.
bool parseNpy(const std::vector<uint8_t> &bytes, NpyArray &out,
              std::string &error);
/// Writes a .npy file (version 1.0). On failure returns false and sets `error`.
bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error);
/// Serializes to .npy bytes.
std::vector<uint8_t> serializeNpy(const NpyArray &array);

} // namespace lockstep::rt

#endif
