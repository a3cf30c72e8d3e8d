//===- ArtifactWriter.cpp - Writing an artifact ---------------------------===//
//
// The layout is computed first (every size is known once the metadata is
// serialized), then the file is streamed once, hashing what is written, and
// the checksum is patched into the header at the end.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Artifact/Checksum.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <unistd.h>

using namespace lockstep::rt;

namespace {

uint64_t alignUp(uint64_t x) {
  return (x + kArtifactAlignment - 1) / kArtifactAlignment * kArtifactAlignment;
}

void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = uint8_t(v >> (8 * i));
}
void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = uint8_t(v >> (8 * i));
}

// Writes to a file descriptor, hashing every byte after the header, and
// remembers the first error.
class Sink {
public:
  Sink(int fd, Checksum &hash) : fd(fd), hash(hash) {}

  bool write(const void *data, uint64_t size, bool hashIt = true) {
    if (hashIt)
      hash.update(data, size);
    const uint8_t *p = static_cast<const uint8_t *>(data);
    while (size) {
      // Linux writes at most about 2 GiB per call.
      ssize_t n = ::write(fd, p, size < (1u << 30) ? size : (1u << 30));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        err = n < 0 ? errno : EIO;
        return false;
      }
      p += n;
      size -= uint64_t(n);
      written += uint64_t(n);
    }
    return true;
  }

  // Zero bytes up to `offset`.
  bool padTo(uint64_t offset) {
    static const uint8_t zeros[kArtifactAlignment] = {};
    while (written < offset)
      if (!write(zeros, std::min<uint64_t>(offset - written, sizeof zeros)))
        return false;
    return true;
  }

  int err = 0;
  uint64_t written = 0;

private:
  int fd;
  Checksum &hash;
};

// Checks the embedded blobs against the specs and fills offset, length and
// checksum of each embedded spec. Returns the weights section's size.
bool placeEmbeddedWeights(ArtifactMeta &meta,
                          const std::vector<EmbeddedWeight> &embedded,
                          std::vector<const EmbeddedWeight *> &order,
                          uint64_t &sectionSize, std::string &error) {
  std::vector<const EmbeddedWeight *> byIndex(meta.weights.size(), nullptr);
  for (const EmbeddedWeight &e : embedded) {
    if (e.index >= meta.weights.size() || !meta.weights[e.index].embedded) {
      error = "embedded weight index " + std::to_string(e.index) +
              " is not an embedded weight of the metadata";
      return false;
    }
    if (byIndex[e.index]) {
      error = "weight " + quoted(meta.weights[e.index].name) +
              " is given twice";
      return false;
    }
    if (!e.data && e.size) {
      error = "weight " + quoted(meta.weights[e.index].name) + " has no data";
      return false;
    }
    byIndex[e.index] = &e;
  }
  sectionSize = 0;
  order.clear();
  for (size_t i = 0; i < meta.weights.size(); ++i) {
    WeightSpec &w = meta.weights[i];
    if (!w.embedded)
      continue;
    if (!byIndex[i]) {
      error = "embedded weight " + quoted(w.name) + " has no data given";
      return false;
    }
    w.offset = alignUp(sectionSize);
    w.length = byIndex[i]->size;
    w.checksum = checksumBytes(byIndex[i]->data, byIndex[i]->size);
    sectionSize = w.offset + w.length;
    order.push_back(byIndex[i]);
  }
  return true;
}

std::string tempPathFor(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp-" + std::to_string(getpid()) + "-" +
         std::to_string(counter++);
}

bool writeArtifactImpl(const std::string &path, ArtifactMeta &meta,
                       const ArtifactCode &code,
                       const std::vector<EmbeddedWeight> &embedded, std::string &error) {
  std::vector<const EmbeddedWeight *> order;
  uint64_t weightsSize;
  if (!placeEmbeddedWeights(meta, embedded, order, weightsSize, error) ||
      !validateMeta(meta, error))
    return false;
  for (ByteView b : {code.cpu, code.cuda, code.kernels, code.launchPlan, code.tokenizer,
                     code.cpuV4})
    if (!b.data && b.size) {
      error = "a code section has no data";
      return false;
    }
  const std::string text = serializeMeta(meta);

  // Layout: header, table, then metadata, code, weights, kernels, CUDA host
  // code, launch plan and (when given) the tokenizer and the x86-64-v4 code,
  // each aligned.
  struct Section {
    SectionKind kind;
    uint64_t offset, size;
    ByteView bytes; // all but the metadata and weights
  } sections[8] = {
      {SectionKind::Metadata, 0, text.size(), {}},
      {SectionKind::Code, 0, code.cpu.size, code.cpu},
      {SectionKind::Weights, 0, weightsSize, {}},
      {SectionKind::Kernels, 0, code.kernels.size, code.kernels},
      {SectionKind::CudaCode, 0, code.cuda.size, code.cuda},
      {SectionKind::LaunchPlan, 0, code.launchPlan.size, code.launchPlan}};
  int kSections = 6;
  if (code.tokenizer.size)
    sections[kSections++] = {SectionKind::Tokenizer, 0, code.tokenizer.size, code.tokenizer};
  if (code.cpuV4.size)
    sections[kSections++] = {SectionKind::CodeV4, 0, code.cpuV4.size, code.cpuV4};
  uint64_t end = kArtifactHeaderSize + kSections * kArtifactSectionEntrySize;
  for (int i = 0; i < kSections; ++i) {
    Section &s = sections[i];
    s.offset = alignUp(end);
    end = s.offset + s.size;
  }
  std::vector<uint8_t> head(kArtifactHeaderSize + kSections * kArtifactSectionEntrySize, 0);
  std::memcpy(head.data(), kArtifactMagic, 8);
  put32(&head[8], kArtifactFormatVersion);
  put32(&head[12], kSections);
  put64(&head[16], end);
  for (int i = 0; i < kSections; ++i) {
    uint8_t *e = &head[kArtifactHeaderSize + i * kArtifactSectionEntrySize];
    put32(e, uint32_t(sections[i].kind));
    put64(e + 8, sections[i].offset);
    put64(e + 16, sections[i].size);
  }

  const std::string tmp = tempPathFor(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  Checksum hash;
  Sink sink(fd, hash);
  hash.update(head.data(), 24); // the checksum field itself is not hashed
  hash.update(head.data() + 32, head.size() - 32);
  bool ok = sink.write(head.data(), head.size(), /*hashIt=*/false) &&
            sink.padTo(sections[0].offset) &&
            sink.write(text.data(), text.size()) &&
            sink.padTo(sections[1].offset) &&
            sink.write(code.cpu.data, code.cpu.size);
  for (size_t i = 0, w = 0; ok && i < meta.weights.size(); ++i)
    if (meta.weights[i].embedded) {
      ok = sink.padTo(sections[2].offset + meta.weights[i].offset) &&
           sink.write(order[w]->data, order[w]->size);
      ++w;
    }
  for (int i = 3; i < kSections; ++i)
    ok = ok && sink.padTo(sections[i].offset) &&
         sink.write(sections[i].bytes.data, sections[i].bytes.size);
  ok = ok && sink.padTo(end);
  // Each step runs only when all before it succeeded; the first failure's
  // errno is kept.
  auto step = [&](bool succeeded) {
    if (ok && !succeeded) {
      sink.err = errno ? errno : EIO;
      ok = false;
    }
  };
  uint8_t sum[8];
  put64(sum, hash.digest());
  if (ok)
    step(pwrite(fd, sum, 8, 24) == 8);
  if (ok) // durable before it replaces an older artifact
    step(fsync(fd) == 0);
  step(close(fd) == 0);
  if (ok)
    step(rename(tmp.c_str(), path.c_str()) == 0);
  if (!ok) {
    unlink(tmp.c_str());
    error = "cannot write '" + path + "': " + std::strerror(sink.err);
    return false;
  }
  return true;
}

} // namespace

bool lockstep::rt::writeArtifact(const std::string &path, ArtifactMeta &meta,
                                 const ArtifactCode &code,
                                 const std::vector<EmbeddedWeight> &embedded,
                                 std::string &error) {
  try {
    return writeArtifactImpl(path, meta, code, embedded, error);
  } catch (const std::bad_alloc &) {
    error = "cannot write '" + path + "': out of memory";
    return false;
  }
}

