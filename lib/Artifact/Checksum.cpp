//===- Checksum.cpp - XXH64 -----------------------------------------------===//
//
// The XXH64 algorithm (Yann Collet), seed 0, little-endian reads. Unit tests
// pin the reference test vectors.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Artifact/Checksum.h"

#include "lockstep/Artifact/MappedFile.h"

#include <cstring>

using namespace lockstep::rt;

namespace {

constexpr uint64_t P1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t P2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t P3 = 0x165667B19E3779F9ULL;
constexpr uint64_t P4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t P5 = 0x27D4EB2F165667C5ULL;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian loads through memcpy: unaligned input is fine.
inline uint64_t read64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint32_t read32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline uint64_t xxRound(uint64_t acc, uint64_t input) {
  acc += input * P2;
  acc = rotl(acc, 31);
  return acc * P1;
}

inline uint64_t mergeRound(uint64_t acc, uint64_t val) {
  acc ^= xxRound(0, val);
  return acc * P1 + P4;
}

// Consumes whole 32-byte stripes of `p`; returns how many bytes it consumed.
inline size_t stripes(uint64_t v[4], const uint8_t *p, size_t size) {
  size_t done = 0;
  for (; done + 32 <= size; done += 32) {
    v[0] = xxRound(v[0], read64(p + done));
    v[1] = xxRound(v[1], read64(p + done + 8));
    v[2] = xxRound(v[2], read64(p + done + 16));
    v[3] = xxRound(v[3], read64(p + done + 24));
  }
  return done;
}

} // namespace

Checksum::Checksum() {
  v[0] = P1 + P2;
  v[1] = P2;
  v[2] = 0;
  v[3] = 0 - P1;
}

void Checksum::update(const void *data, size_t size) {
  if (!size) // `data` may be null then
    return;
  const uint8_t *p = static_cast<const uint8_t *>(data);
  total += size;
  if (bufLen) { // complete the pending stripe first
    size_t take = std::min(size, 32 - bufLen);
    std::memcpy(buf + bufLen, p, take);
    bufLen += take;
    p += take;
    size -= take;
    if (bufLen < 32)
      return;
    stripes(v, buf, 32);
    bufLen = 0;
  }
  size_t done = stripes(v, p, size);
  std::memcpy(buf, p + done, size - done);
  bufLen = size - done;
}

uint64_t Checksum::digest() const {
  uint64_t h;
  if (total >= 32) {
    h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
    for (int i = 0; i < 4; ++i)
      h = mergeRound(h, v[i]);
  } else {
    h = v[2] + P5; // v[2] is the seed
  }
  h += total;
  const uint8_t *p = buf;
  size_t n = bufLen;
  for (; n >= 8; p += 8, n -= 8)
    h = rotl(h ^ xxRound(0, read64(p)), 27) * P1 + P4;
  if (n >= 4) {
    h = rotl(h ^ (uint64_t(read32(p)) * P1), 23) * P2 + P3;
    p += 4;
    n -= 4;
  }
  for (; n; ++p, --n)
    h = rotl(h ^ (*p * P5), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

uint64_t lockstep::rt::checksumBytes(const void *data, size_t size) {
  Checksum c;
  c.update(data, size);
  return c.digest();
}

bool lockstep::rt::checksumFileRange(const std::string &path, uint64_t offset,
                                     uint64_t length, uint64_t &out,
                                     std::string &error) {
  MappedFile file;
  if (!file.open(path, error))
    return false;
  if (offset > file.size() || length > file.size() - offset) {
    error = "'" + path + "' is " + std::to_string(file.size()) +
            " bytes, too short for bytes [" + std::to_string(offset) + ", " +
            std::to_string(offset + length) + ")";
    return false;
  }
  out = checksumBytes(file.data() + offset, length);
  return true;
}
