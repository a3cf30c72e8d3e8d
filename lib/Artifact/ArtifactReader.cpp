//===- ArtifactReader.cpp - Loading and verifying an artifact -------------===//
//
// Nothing in the file is trusted: every field is checked before it is used,
// in an order that names the likeliest cause first (not an artifact, a
// different format version, a cut file, then corruption).
//
//===----------------------------------------------------------------------===//
#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Artifact/Checksum.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <new>

using namespace lockstep::rt;

namespace {

uint32_t get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

struct Section {
  uint32_t kind;
  uint64_t offset, size;
};

// Checks magic, version and size: what must hold before the checksum can
// even be computed. `p` maps `size` bytes.
bool checkHeader(const std::string &what, const uint8_t *p, uint64_t size,
                 std::string &error) {
  if (size == 0) {
    error = what + " is empty, not a Lockstep artifact";
    return false;
  }
  size_t prefix = size < 8 ? size_t(size) : 8;
  if (std::memcmp(p, kArtifactMagic, prefix) != 0) {
    error = what + " is not a Lockstep artifact (bad magic)";
    return false;
  }
  if (size < kArtifactHeaderSize) {
    error = what + " is truncated: " + std::to_string(size) +
            " bytes, less than the " + std::to_string(kArtifactHeaderSize) +
            "-byte header";
    return false;
  }
  uint32_t version = get32(p + 8);
  if (version != kArtifactFormatVersion) {
    error = what + ": artifact format version " + std::to_string(version) +
            ", this runtime reads version " + std::to_string(kArtifactFormatVersion) +
            (version < kArtifactFormatVersion
                 ? " (made by an older lockstep-opt: compile the model again)"
                 : " (made by a newer lockstep-opt)");
    return false;
  }
  uint64_t recorded = get64(p + 16);
  if (size != recorded) {
    error = what + (size < recorded ? " is truncated: " : " has trailing data: ") +
            std::to_string(size) + " bytes, but its header records " +
            std::to_string(recorded);
    return false;
  }
  return true;
}

bool readSections(const std::string &what, const uint8_t *p, uint64_t size,
                  std::map<uint32_t, Section> &out, std::string &error) {
  uint32_t count = get32(p + 12);
  if (count == 0 || count > kMaxArtifactSections ||
      kArtifactHeaderSize + count * kArtifactSectionEntrySize > size) {
    error = what + " has a bad section table (" + std::to_string(count) +
            " sections)";
    return false;
  }
  uint64_t tableEnd = kArtifactHeaderSize + count * kArtifactSectionEntrySize;
  std::vector<Section> sorted;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t *e = p + kArtifactHeaderSize + i * kArtifactSectionEntrySize;
    Section s{get32(e), get64(e + 8), get64(e + 16)};
    std::string name = "section " + std::to_string(i);
    if (s.kind < uint32_t(SectionKind::Metadata) ||
        s.kind > uint32_t(SectionKind::CodeV4)) {
      error = what + ": " + name + " has unknown kind " + std::to_string(s.kind);
      return false;
    }
    if (out.count(s.kind)) {
      error = what + ": " + name + " repeats kind " + std::to_string(s.kind);
      return false;
    }
    if (s.offset % kArtifactAlignment || s.offset < tableEnd ||
        s.offset > size || s.size > size - s.offset) {
      error = what + ": " + name + " [" + std::to_string(s.offset) + ", +" +
              std::to_string(s.size) + ") is misaligned or outside the file";
      return false;
    }
    out[s.kind] = s;
    sorted.push_back(s);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const Section &a, const Section &b) { return a.offset < b.offset; });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i - 1].offset + sorted[i - 1].size > sorted[i].offset) {
      error = what + ": sections overlap";
      return false;
    }
  if (!out.count(uint32_t(SectionKind::Metadata))) {
    error = what + " has no metadata section";
    return false;
  }
  return true;
}

// Resolves every weight to its bytes: embedded ones inside the weights
// section, external ones in their files, which are mapped once each and
// checked against the recorded checksum.
bool resolveWeights(const std::string &what, const ArtifactMeta &meta,
                    ByteView weightsSection, std::vector<MappedFile> &files,
                    std::vector<ByteView> &out, std::string &error) {
  std::map<std::string, size_t> fileIndex;
  for (const WeightSpec &w : meta.weights) {
    std::string name = what + ": weight " + quoted(w.name);
    if (w.embedded) {
      if (w.offset % kArtifactAlignment || w.offset > weightsSection.size ||
          w.length > weightsSection.size - w.offset) {
        error = name + " is misaligned or outside the weights section";
        return false;
      }
      out.push_back({weightsSection.data + w.offset, w.length});
      continue;
    }
    auto it = fileIndex.find(w.path);
    if (it == fileIndex.end()) {
      MappedFile f;
      std::string why;
      if (!f.open(w.path, why)) {
        error = name + ": " + why;
        return false;
      }
      it = fileIndex.emplace(w.path, files.size()).first;
      files.push_back(std::move(f));
    }
    const MappedFile &f = files[it->second];
    if (w.offset > f.size() || w.length > f.size() - w.offset) {
      error = name + ": " + quoted(w.path) + " is " + std::to_string(f.size()) +
              " bytes, too short for bytes [" + std::to_string(w.offset) +
              ", " + std::to_string(w.offset + w.length) + ")";
      return false;
    }
    ByteView bytes{f.data() + w.offset, w.length};
    if (checksumBytes(bytes.data, bytes.size) != w.checksum) {
      error = name + ": the bytes of " + quoted(w.path) +
              " have changed since compilation (checksum mismatch)";
      return false;
    }
    out.push_back(bytes);
  }
  return true;
}

/// The sections of code an artifact holds, by target.
struct CodeParts {
  ByteView cpu, cpuV4, cuda, tokenizer;
  std::vector<KernelText> kernels;
  std::vector<KernelLaunch> plan;
};

/// Each target the metadata names is known and has its code; no code is
/// there without its target.
bool checkTargets(const std::string &what, const ArtifactMeta &meta, const CodeParts &code,
                  std::string &error) {
  std::vector<std::string> targets = targetsOf(meta);
  for (const std::string &t : targets)
    if (t != kCpuTarget && t != kCudaTarget) {
      error = what + " names the unknown target " + quoted(t);
      return false;
    }
  auto named = [&](const char *t) { return hasTarget(meta, t); };
  if (code.cpuV4.size && !code.cpu.size) {
    error = what + " has x86-64-v4 CPU code but no base CPU code";
    return false;
  }
  struct {
    const char *target;
    bool present;
    const char *section;
  } parts[] = {{kCpuTarget, code.cpu.size > 0, "CPU code"},
               {kCudaTarget, code.cuda.size > 0, "CUDA host code"},
               {kCudaTarget, !code.kernels.empty(), "kernels"},
               {kCudaTarget, !code.plan.empty(), "launch plan"}};
  for (const auto &part : parts)
    if (named(part.target) != part.present) {
      error = what + (part.present ? " has " : " has no ") + part.section +
              (part.present ? " but does not name target " : " for its target ") +
              quoted(part.target);
      return false;
    }
  return true;
}

bool loadArtifactImpl(const std::string &path, MappedFile &file,
                      ArtifactMeta &meta, CodeParts &code,
                      std::vector<MappedFile> &externals,
                      std::vector<ByteView> &weights, std::string &error) {
  const std::string what = quoted(path);
  if (!file.open(path, error))
    return false;
  const uint8_t *p = file.data();
  uint64_t size = file.size();
  if (!checkHeader(what, p, size, error))
    return false;
  Checksum hash;
  hash.update(p, 24);
  hash.update(p + 32, size - 32);
  uint64_t recorded = get64(p + 24), actual = hash.digest();
  if (recorded != actual) {
    error = what + " is corrupted: checksum mismatch";
    return false;
  }
  std::map<uint32_t, Section> sections;
  if (!readSections(what, p, size, sections, error))
    return false;
  const Section &m = sections[uint32_t(SectionKind::Metadata)];
  std::string text(reinterpret_cast<const char *>(p + m.offset), m.size);
  if (!parseMeta(text, meta, error)) {
    error = what + ": " + error;
    return false;
  }
  ByteView weightsSection;
  auto bytes = [&](SectionKind kind) {
    auto it = sections.find(uint32_t(kind));
    return it == sections.end() ? ByteView{} : ByteView{p + it->second.offset, it->second.size};
  };
  ByteView kernels = bytes(SectionKind::Kernels), plan = bytes(SectionKind::LaunchPlan);
  if (!parseKernels(kernels.data, kernels.size, code.kernels, error)) {
    error = what + ": the kernels section is malformed: " + error;
    return false;
  }
  if (!parseLaunchPlan(plan.data, plan.size, code.plan, error)) {
    error = what + ": the launch plan is malformed: " + error;
    return false;
  }
  code.cpu = bytes(SectionKind::Code);
  code.cpuV4 = bytes(SectionKind::CodeV4);
  code.cuda = bytes(SectionKind::CudaCode);
  code.tokenizer = bytes(SectionKind::Tokenizer);
  if (!checkTargets(what, meta, code, error))
    return false;
  if (auto it = sections.find(uint32_t(SectionKind::Weights)); it != sections.end())
    weightsSection = {p + it->second.offset, it->second.size};
  return resolveWeights(what, meta, weightsSection, externals, weights, error);
}

} // namespace

bool lockstep::rt::loadArtifact(const std::string &path, LoadedArtifact &out,
                                std::string &error) {
  // Load into locals and move into `out` only on success, so that a failed
  // load leaves `out` as it was.
  MappedFile file;
  ArtifactMeta meta;
  CodeParts code;
  std::vector<MappedFile> externals;
  std::vector<ByteView> weights;
  try {
    if (!loadArtifactImpl(path, file, meta, code, externals, weights, error))
      return false;
    out.kernels_ = std::move(code.kernels);
    out.launchPlan_ = std::move(code.plan);
    out.cudaCode_ = code.cuda;
    out.path_ = path;
    out.file_ = std::move(file);
    out.externalFiles_ = std::move(externals);
    out.meta_ = std::move(meta);
    out.code_ = code.cpu;
    out.codeV4_ = code.cpuV4;
    out.tokenizer_ = code.tokenizer;
    out.weights_ = std::move(weights);
    return true;
  } catch (const std::bad_alloc &) {
    error = quoted(path) + ": out of memory while loading";
    return false;
  }
}

