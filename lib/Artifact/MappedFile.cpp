//===- MappedFile.cpp - A read-only memory mapping of a file --------------===//
#include "lockstep/Artifact/MappedFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

using namespace lockstep::rt;

MappedFile::MappedFile(MappedFile &&o) noexcept
    : base(std::exchange(o.base, nullptr)), length(std::exchange(o.length, 0)) {}

MappedFile &MappedFile::operator=(MappedFile &&o) noexcept {
  if (this != &o) {
    reset();
    base = std::exchange(o.base, nullptr);
    length = std::exchange(o.length, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (base)
    munmap(const_cast<uint8_t *>(base), length);
  base = nullptr;
  length = 0;
}

bool MappedFile::open(const std::string &path, std::string &error) {
  reset();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    error = "cannot stat '" + path + "': " + std::strerror(errno);
    close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = "'" + path + "' is not a regular file";
    close(fd);
    return false;
  }
  if (st.st_size > 0) {
    void *p = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      error = "cannot map '" + path + "': " + std::strerror(errno);
      close(fd);
      return false;
    }
    base = static_cast<const uint8_t *>(p);
    length = uint64_t(st.st_size);
  }
  close(fd); // the mapping keeps the file alive
  return true;
}
