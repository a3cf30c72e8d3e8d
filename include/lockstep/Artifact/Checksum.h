//===- Checksum.h - The 64-bit checksum of artifacts -----------*- C++ -*-===//
//
// XXH64 (seed 0), written here so that the runtime needs no library for it.
// One function is used everywhere a checksum appears: the whole artifact file,
// each embedded weight, and the byte range of each external weight. The
// compiler must use these functions too, so that what it records is what the
// runtime verifies. XXH64 was picked over FNV-1a because it hashes 32 bytes per
// step: verifying a multi-gigabyte artifact costs a fraction of reading it.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_ARTIFACT_CHECKSUM_H
#define LOCKSTEP_ARTIFACT_CHECKSUM_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace lockstep::rt {

/// Streaming checksum: update() any number of times with consecutive pieces,
/// then digest(). The result does not depend on how the input was split.
class Checksum {
public:
  Checksum();
  void update(const void *data, size_t size);
  uint64_t digest() const;

private:
  uint64_t v[4];
  uint64_t total = 0;
  uint8_t buf[32];
  size_t bufLen = 0;
};

/// The checksum of one contiguous byte range.
uint64_t checksumBytes(const void *data, size_t size);

/// The checksum of bytes [offset, offset + length) of the file at `path`
/// (read through a read-only mapping). On failure returns false and sets
/// `error` (missing file, or a file shorter than offset + length).
bool checksumFileRange(const std::string &path, uint64_t offset,
                       uint64_t length, uint64_t &out, std::string &error);

} // namespace lockstep::rt

#endif
