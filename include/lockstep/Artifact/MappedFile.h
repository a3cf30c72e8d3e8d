//===- MappedFile.h - A read-only memory mapping of a file -----*- C++ -*-===//
//
// Artifacts and external weight files are mapped rather than read, so that a
// multi-gigabyte weight is paged in on demand and shared between processes.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_ARTIFACT_MAPPEDFILE_H
#define LOCKSTEP_ARTIFACT_MAPPEDFILE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace lockstep::rt {

class MappedFile {
public:
  MappedFile() = default;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  MappedFile(MappedFile &&o) noexcept;
  MappedFile &operator=(MappedFile &&o) noexcept;
  ~MappedFile();

  /// Maps the whole regular file at `path` read-only. An empty file maps to
  /// data() == nullptr, size() == 0. On failure returns false and sets
  /// `error` to one line naming the file and the reason.
  bool open(const std::string &path, std::string &error);
  void reset();

  const uint8_t *data() const { return base; }
  uint64_t size() const { return length; }

private:
  const uint8_t *base = nullptr;
  uint64_t length = 0;
};

} // namespace lockstep::rt

#endif
