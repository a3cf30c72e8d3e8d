//===- ArtifactTestUtil.h - Helpers of the runtime unit tests --*- C++ -*-===//
#ifndef LOCKSTEP_TEST_ARTIFACTTESTUTIL_H
#define LOCKSTEP_TEST_ARTIFACTTESTUTIL_H

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Artifact/Checksum.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <string>
#include <vector>

namespace lockstep::rt::test {

/// A fresh directory under the test's temporary directory, removed with
/// everything in it when the test ends.
struct TempDir {
  std::string path;
  TempDir() : path(::testing::TempDir() + "/lockstep-test-XXXXXX") {
    if (!mkdtemp(path.data()))
      ADD_FAILURE() << "mkdtemp failed";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

inline std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
        names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

inline std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f),
                              std::istreambuf_iterator<char>());
}

inline void writeFile(const std::string &path, const std::vector<uint8_t> &b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
}

/// Recomputes the checksum of artifact bytes after a deliberate edit, so that
/// a test reaches the checks behind the checksum.
inline void fixChecksum(std::vector<uint8_t> &b) {
  Checksum c;
  c.update(b.data(), 24);
  c.update(b.data() + 32, b.size() - 32);
  uint64_t sum = c.digest();
  for (int i = 0; i < 8; ++i)
    b[24 + i] = uint8_t(sum >> (8 * i));
}

inline std::vector<uint8_t> floatBytes(const std::vector<float> &v) {
  std::vector<uint8_t> b(v.size() * 4);
  if (!v.empty())
    std::memcpy(b.data(), v.data(), b.size());
  return b;
}

/// The graph of test/Runtime/Inputs/test_entry.c: y = (x + w) + b,
/// present = concat(past, y), count = sum(mask). Weights w and b are embedded.
inline ArtifactMeta testEntryMeta() {
  ArtifactMeta m;
  m.producer = "unit test";
  m.target = kCpuTarget;
  m.inputs = {{"x", "f32", {"batch", "4"}},
              {"past", "f32", {"batch", "past", "4"}},
              {"mask", "i64", {"batch", "past + 1"}}};
  WeightSpec w;
  w.name = "w";
  w.dtype = "f32";
  w.shape = {4};
  w.length = 16;
  WeightSpec b = w;
  b.name = "b";
  m.weights = {w, b};
  m.outputs = {{"y", "f32", {"batch", "4"}},
               {"present", "f32", {"batch", "past + 1", "4"}},
               {"count", "i64", {"batch"}}};
  return m;
}

inline const std::vector<float> kW = {0.5f, -1.25f, 3.0e-8f, 1e30f};
inline const std::vector<float> kB = {1.0f, 0.1f, -0.0f, 7.0f};

/// Writes an artifact of testEntryMeta() around `code`; returns its path.
inline std::string writeTestEntryArtifact(const std::string &dir,
                                          const std::vector<uint8_t> &code,
                                          ArtifactMeta meta = testEntryMeta()) {
  std::string path = dir + "/model.lsa", error;
  std::vector<uint8_t> w = floatBytes(kW), b = floatBytes(kB);
  if (!writeArtifact(path, meta, {code.data(), code.size()},
                     {{0, w.data(), w.size()}, {1, b.data(), b.size()}}, error))
    ADD_FAILURE() << error;
  return path;
}

} // namespace lockstep::rt::test

#endif
