//===- ArtifactTest.cpp - Writing, loading and refusing artifacts ---------===//
#include "ArtifactTestUtil.h"

#include <gtest/gtest.h>

using namespace lockstep::rt;
using namespace lockstep::rt::test;

namespace {

const std::vector<uint8_t> kCode = {0x7f, 'E', 'L', 'F', 1, 2, 3, 4, 5};

// Loads `path` expecting a refusal whose message holds `needle`, on one line.
void expectRefused(const std::string &path, const std::string &needle) {
  LoadedArtifact a;
  std::string error;
  EXPECT_FALSE(loadArtifact(path, a, error)) << "accepted; wanted " << needle;
  EXPECT_NE(error.find(needle), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

std::string serialized(const ArtifactMeta &m) { return serializeMeta(m); }

} // namespace

TEST(Artifact, RoundTrip) {
  TempDir tmp;
  const std::string dir = tmp.path;
  // One external weight: bytes 7..23 of a file next to the artifact.
  std::vector<uint8_t> ext(40);
  for (size_t i = 0; i < ext.size(); ++i)
    ext[i] = uint8_t(i * 3);
  writeFile(dir + "/ext.bin", ext);
  ArtifactMeta meta = testEntryMeta();
  WeightSpec e;
  e.name = "e";
  e.dtype = "i16";
  e.shape = {2, 4};
  e.embedded = false;
  e.offset = 7;
  e.length = 16;
  e.path = dir + "/ext.bin";
  e.checksum = checksumBytes(ext.data() + 7, 16);
  meta.weights.push_back(e);
  meta.properties = {{"numerics", "portable"}, {"empty", ""}};
  std::string path = writeTestEntryArtifact(dir, kCode, meta);

  LoadedArtifact a;
  std::string error;
  ASSERT_TRUE(loadArtifact(path, a, error)) << error;
  // The writer filled offset, length and checksum of the embedded weights.
  ArtifactMeta want = meta;
  want.weights[0].offset = 0;
  want.weights[0].checksum = checksumBytes(floatBytes(kW).data(), 16);
  want.weights[1].offset = 64;
  want.weights[1].checksum = checksumBytes(floatBytes(kB).data(), 16);
  EXPECT_EQ(serialized(a.meta()), serialized(want));
  ASSERT_EQ(a.code().size, kCode.size());
  EXPECT_EQ(std::memcmp(a.code().data, kCode.data(), kCode.size()), 0);
  ASSERT_EQ(a.weight(0).size, 16u);
  EXPECT_EQ(std::memcmp(a.weight(0).data, floatBytes(kW).data(), 16), 0);
  EXPECT_EQ(std::memcmp(a.weight(1).data, floatBytes(kB).data(), 16), 0);
  EXPECT_EQ(std::memcmp(a.weight(2).data, ext.data() + 7, 16), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.weight(0).data) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.weight(1).data) % 64, 0u);
  // Nothing but the artifact and the external file: no temporary left.
  std::vector<std::string> files = listDir(dir);
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"ext.bin", "model.lsa"}));
  // A moved artifact keeps its pointers.
  const uint8_t *w0 = a.weight(0).data;
  LoadedArtifact moved = std::move(a);
  EXPECT_EQ(moved.weight(0).data, w0);
  EXPECT_EQ(std::memcmp(moved.weight(0).data, floatBytes(kW).data(), 16), 0);
}

TEST(Artifact, OddNamesRoundTrip) {
  TempDir tmp;
  const std::string dir = tmp.path;
  ArtifactMeta meta;
  meta.producer = "tab\there, backslash \\ and \\t literally";
  meta.target = kCpuTarget;
  const std::vector<std::string> names = {
      "/model/layers.0/Add_output_0", "with space", "tab\tin", "new\nline",
      "cr\rx", "back\\slash", "trailing\\", "ctl\x01\x7f", "utf8 \xc3\xa9\xe2\x82\xac",
      "= and : and ,", "\\x41 not an escape"};
  for (const std::string &n : names) {
    meta.inputs.push_back({n, "f32", {"n"}});
    meta.outputs.push_back({n, "bool", {"n", "2*n + 1"}});
    meta.properties.emplace_back(n, n + "\n" + n);
  }
  meta.inputs.push_back({"scalar", "i8", {}});
  std::string path = dir + "/odd.lsa", error;
  ASSERT_TRUE(writeArtifact(path, meta, {{kCode.data(), kCode.size()}}, {}, error)) << error;
  LoadedArtifact a;
  ASSERT_TRUE(loadArtifact(path, a, error)) << error;
  ASSERT_EQ(a.meta().inputs.size(), meta.inputs.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(a.meta().inputs[i].name, names[i]);
    EXPECT_EQ(a.meta().outputs[i].name, names[i]);
    EXPECT_EQ(a.meta().properties[i].second, names[i] + "\n" + names[i]);
  }
  EXPECT_EQ(a.meta().producer, meta.producer);
  EXPECT_TRUE(a.meta().inputs.back().dims.empty());
  EXPECT_EQ(a.code().size, kCode.size());
}

TEST(Artifact, TokenizerSectionRoundTrips) {
  TempDir tmp;
  const std::string dir = tmp.path;
  ArtifactMeta meta;
  meta.target = kCpuTarget;
  meta.inputs.push_back({"x", "f32", {"n"}});
  const std::string json = "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}";
  ArtifactCode code;
  code.cpu = {kCode.data(), kCode.size()};
  std::string error;
  // Without a tokenizer: six sections, none of them 7.
  ASSERT_TRUE(writeArtifact(dir + "/plain.lsa", meta, code, {}, error)) << error;
  code.tokenizer = {reinterpret_cast<const uint8_t *>(json.data()), json.size()};
  ASSERT_TRUE(writeArtifact(dir + "/tok.lsa", meta, code, {}, error)) << error;
  EXPECT_EQ(readFile(dir + "/plain.lsa")[12], 6);
  EXPECT_EQ(readFile(dir + "/tok.lsa")[12], 7);
  LoadedArtifact plain, tok;
  ASSERT_TRUE(loadArtifact(dir + "/plain.lsa", plain, error)) << error;
  ASSERT_TRUE(loadArtifact(dir + "/tok.lsa", tok, error)) << error;
  EXPECT_TRUE(plain.tokenizerJson().empty());
  EXPECT_EQ(tok.tokenizerJson(), json);
  EXPECT_EQ(tok.code().size, kCode.size());
}

TEST(Artifact, RefusesTruncation) {
  TempDir tmp;
  const std::string dir = tmp.path;
  std::string path = writeTestEntryArtifact(dir, kCode);
  std::vector<uint8_t> bytes = readFile(path);
  expectRefused(dir + "/missing.lsa", "cannot open");
  for (size_t cut : {size_t(5), size_t(12), size_t(63), size_t(64), size_t(100),
                     bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    writeFile(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + cut));
    expectRefused(path, "is truncated");
  }
  writeFile(path, {});
  expectRefused(path, "is empty");
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  writeFile(path, longer);
  expectRefused(path, "has trailing data");
}

TEST(Artifact, RefusesAnyFlippedBit) {
  TempDir tmp;
  const std::string dir = tmp.path;
  std::string good = writeTestEntryArtifact(dir, kCode);
  std::vector<uint8_t> bytes = readFile(good);
  std::string path = dir + "/flipped.lsa";
  // Every byte of the file, one bit each (the bit varies with the position).
  for (size_t i = 0; i < bytes.size(); ++i) {
    SCOPED_TRACE("byte " + std::to_string(i));
    std::vector<uint8_t> b = bytes;
    b[i] ^= uint8_t(1u << (i % 8));
    writeFile(path, b);
    if (i < 8)
      expectRefused(path, "bad magic");
    else if (i < 12)
      expectRefused(path, "artifact format version");
    else if (i >= 16 && i < 24)
      expectRefused(path, b[i] > bytes[i] ? "is truncated" : "trailing data");
    else
      expectRefused(path, "is corrupted: checksum mismatch");
  }
}

TEST(Artifact, RefusesWrongMagicAndVersion) {
  TempDir tmp;
  const std::string dir = tmp.path;
  std::string path = dir + "/notes.lsa";
  std::string text = "these are not the bytes you are looking for";
  writeFile(path, std::vector<uint8_t>(text.begin(), text.end()));
  expectRefused(path, "is not a Lockstep artifact (bad magic)");

  path = writeTestEntryArtifact(dir, kCode);
  std::vector<uint8_t> b = readFile(path);
  b[8] = 5; // a future format, checksum and all
  fixChecksum(b);
  writeFile(path, b);
  expectRefused(path, "artifact format version 5, this runtime reads version 4 (made by a "
                      "newer lockstep-opt)");
  // Format 1 embedded a CUDA artifact's PTX in its code; format 2 kept the
  // CUDA host code in section 2; format 3 had no x86-64-v4 code section.
  for (uint8_t old : {1, 2, 3}) {
    b[8] = old;
    fixChecksum(b);
    writeFile(path, b);
    expectRefused(path, "artifact format version " + std::to_string(old) +
                            ", this runtime reads version 4 (made by an older "
                            "lockstep-opt: compile the model again)");
  }
}

TEST(Artifact, LaunchPlanRoundTripsAndRefusesDamage) {
  std::vector<KernelLaunch> in(2);
  in[0] = {"main_kernel", "main_kernel", {KernelLaunch::kDynamic, 1, 1}, {256, 1, 1}, 0,
           "/layers.0/MatMul_(MatMul)"};
  in[1] = {"main_kernel_0", "k", {4, 2, 1}, {32, 8, 1}, KernelLaunch::kDynamic, "-"};
  std::string text = serializeLaunchPlan(in);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "launch main_kernel main_kernel grid ? 1 1 block 256 1 1 smem 0 node "
            "/layers.0/MatMul_(MatMul)");
  std::vector<KernelLaunch> out;
  std::string error;
  auto parse = [&](const std::string &t) {
    return parseLaunchPlan(reinterpret_cast<const uint8_t *>(t.data()), t.size(), out, error);
  };
  ASSERT_TRUE(parse(text)) << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].grid[0], KernelLaunch::kDynamic);
  EXPECT_EQ(out[0].block[0], 256);
  EXPECT_EQ(out[1].grid[1], 2);
  EXPECT_EQ(out[1].sharedBytes, KernelLaunch::kDynamic);
  EXPECT_EQ(out[1].function, "k");
  EXPECT_EQ(out[1].node, "-");
  for (std::string bad : {"launch a b grid 1 1 block 1 1 1 smem 0 node -",
                          "launch a b grid 0 1 1 block 1 1 1 smem 0 node -",
                          "launch a b grid -3 1 1 block 1 1 1 smem 0 node -",
                          "launch a b grid 1 1 1 block x 1 1 smem 0 node -",
                          "run a b grid 1 1 1 block 1 1 1 smem 0 node -"}) {
    EXPECT_FALSE(parse(text + bad + "\n")) << bad;
    EXPECT_NE(error.find("line 3"), std::string::npos) << error;
  }
}

TEST(Artifact, EachTargetHasItsCode) {
  TempDir tmp;
  const std::string dir = tmp.path;
  std::string kernels = serializeKernels({{"main_kernel", "// ptx\n"}});
  std::string plan = serializeLaunchPlan(
      {{"main_kernel", "main_kernel", {1, 1, 1}, {1, 1, 1}, 0, "-"}});
  std::vector<uint8_t> host = {7, 7, 7, 7};
  auto bytes = [](const std::string &s) {
    return ByteView{reinterpret_cast<const uint8_t *>(s.data()), s.size()};
  };
  ArtifactCode both{{kCode.data(), kCode.size()}, {host.data(), host.size()}, bytes(kernels),
                    bytes(plan)};
  auto write = [&](const std::string &target, const ArtifactCode &code) {
    ArtifactMeta meta = testEntryMeta();
    meta.target = target;
    std::vector<uint8_t> w = floatBytes(kW), b = floatBytes(kB);
    std::string path = dir + "/model.lsa", error;
    EXPECT_TRUE(writeArtifact(path, meta, code,
                              {{0, w.data(), w.size()}, {1, b.data(), b.size()}}, error))
        << error;
    return path;
  };
  std::string path = write(std::string(kCpuTarget) + "," + kCudaTarget, both), error;
  LoadedArtifact a;
  ASSERT_TRUE(loadArtifact(path, a, error)) << error;
  EXPECT_TRUE(hasTarget(a.meta(), kCpuTarget));
  EXPECT_TRUE(hasTarget(a.meta(), kCudaTarget));
  EXPECT_EQ(a.code().size, kCode.size());
  EXPECT_EQ(a.cudaCode().size, host.size());
  EXPECT_EQ(a.kernels().size(), 1u);
  EXPECT_EQ(a.launchPlan().size(), 1u);
  // Code without its target, or a target without its code, is refused.
  ArtifactCode cpuOnly{{kCode.data(), kCode.size()}}, noPlan = both;
  noPlan.launchPlan = {};
  expectRefused(write(kCpuTarget, both), "has CUDA host code but does not name target");
  expectRefused(write(kCudaTarget, cpuOnly), "has CPU code but does not name target");
  expectRefused(write(std::string(kCpuTarget) + "," + kCudaTarget, noPlan),
                "has no launch plan for its target 'x86_64-cuda'");
  expectRefused(write("x86_64-tpu", cpuOnly), "names the unknown target 'x86_64-tpu'");
  ArtifactMeta meta = testEntryMeta();
  meta.target = std::string(kCpuTarget) + "," + kCpuTarget;
  std::vector<uint8_t> w = floatBytes(kW), b = floatBytes(kB);
  EXPECT_FALSE(writeArtifact(dir + "/x.lsa", meta, cpuOnly,
                             {{0, w.data(), w.size()}, {1, b.data(), b.size()}}, error));
  EXPECT_NE(error.find("repeat 'x86_64-cpu'"), std::string::npos) << error;
}

TEST(Artifact, KernelsSectionRoundTripsAndRefusesDamage) {
  std::vector<KernelText> in = {{"main_kernel", "// ptx one\n"}, {"main_kernel_0", ""}};
  std::string bytes = serializeKernels(in);
  std::vector<KernelText> out;
  std::string error;
  ASSERT_TRUE(parseKernels(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), out,
                           error))
      << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "main_kernel");
  EXPECT_EQ(out[0].ptx, "// ptx one\n");
  EXPECT_EQ(out[1].ptx, "");
  // Every truncation is refused, never read past.
  for (size_t n = 1; n < bytes.size(); ++n)
    EXPECT_FALSE(parseKernels(reinterpret_cast<const uint8_t *>(bytes.data()), n, out, error))
        << n;
  std::string bad = bytes;
  bad[bad.size() - 1] = 'x'; // the last PTX not NUL-terminated
  EXPECT_FALSE(parseKernels(reinterpret_cast<const uint8_t *>(bad.data()), bad.size(), out,
                            error));
  EXPECT_NE(error.find("not NUL-terminated"), std::string::npos) << error;
}

TEST(Artifact, RefusesBadSectionTables) {
  TempDir tmp;
  const std::string dir = tmp.path;
  std::string path = writeTestEntryArtifact(dir, kCode);
  const std::vector<uint8_t> good = readFile(path);
  auto edit = [&](size_t at, uint64_t value, int width, const char *needle) {
    std::vector<uint8_t> b = good;
    for (int i = 0; i < width; ++i)
      b[at + i] = uint8_t(value >> (8 * i));
    fixChecksum(b);
    writeFile(path, b);
    expectRefused(path, needle);
  };
  edit(12, 0, 4, "bad section table (0 sections)");
  edit(12, 1000, 4, "bad section table");
  edit(64, 9, 4, "unknown kind 9");            // first entry's kind
  edit(64 + 24, 1, 4, "repeats kind 1");       // second entry says metadata
  edit(64 + 8, 1, 8, "misaligned");            // metadata offset
  edit(64 + 8, 0, 8, "misaligned or outside"); // inside the header
  edit(64 + 16, 1u << 30, 8, "outside the file");
  edit(64 + 24 + 8, 256, 8, "sections overlap"); // code onto metadata
}

TEST(Artifact, NeverCrashesOnEditedHeaderOrMetadata) {
  // Edits with a fixed-up checksum reach the parsers behind it. Any result is
  // fine but a crash; a refusal must be one line.
  TempDir tmp;
  const std::string dir = tmp.path;
  std::string path = writeTestEntryArtifact(dir, kCode);
  const std::vector<uint8_t> good = readFile(path);
  size_t metaEnd = 192 + 400; // header, table and about all of the metadata
  for (size_t i = 12; i < std::min(metaEnd, good.size()); ++i) {
    if (i >= 24 && i < 32)
      continue;
    for (uint8_t v : {0x00, 0x09, 0x0a, 0x5c, 0x7f, 0xff}) {
      std::vector<uint8_t> b = good;
      b[i] = v;
      fixChecksum(b);
      writeFile(path, b);
      LoadedArtifact a;
      std::string error;
      if (!loadArtifact(path, a, error)) {
        EXPECT_EQ(error.find('\n'), std::string::npos) << error;
      }
    }
  }
}

TEST(Artifact, ExternalWeights) {
  TempDir tmp;
  const std::string dir = tmp.path;
  std::vector<uint8_t> ext(64, 0xab);
  std::string extPath = dir + "/weights.bin";
  writeFile(extPath, ext);
  ArtifactMeta meta = testEntryMeta();
  meta.weights[1].embedded = false;
  meta.weights[1].path = extPath;
  meta.weights[1].offset = 32;
  std::string path = dir + "/model.lsa", error;
  ASSERT_TRUE(checksumFileRange(extPath, 32, 16, meta.weights[1].checksum,
                                error))
      << error;
  std::vector<uint8_t> w = floatBytes(kW);
  ASSERT_TRUE(writeArtifact(path, meta, {kCode.data(), kCode.size()},
                            {{0, w.data(), w.size()}}, error))
      << error;
  LoadedArtifact a;
  ASSERT_TRUE(loadArtifact(path, a, error)) << error;
  EXPECT_EQ(a.weight(1).data[0], 0xab);

  std::vector<uint8_t> changed = ext;
  changed[40] ^= 1; // inside the referenced range [32, 48)
  writeFile(extPath, changed);
  expectRefused(path, "have changed since compilation");
  changed = ext;
  changed[0] ^= 1; // outside it: still fine
  writeFile(extPath, changed);
  ASSERT_TRUE(loadArtifact(path, a, error)) << error;
  writeFile(extPath, std::vector<uint8_t>(ext.begin(), ext.begin() + 47));
  expectRefused(path, "too short for bytes [32, 48)");
  std::remove(extPath.c_str());
  expectRefused(path, "weight 'b': cannot open '" + extPath + "'");
}

TEST(Artifact, WriterRefusesBadInput) {
  TempDir tmp;
  const std::string dir = tmp.path;
  std::string path = dir + "/model.lsa";
  std::vector<uint8_t> w = floatBytes(kW), b = floatBytes(kB);
  auto refuse = [&](ArtifactMeta meta, std::vector<EmbeddedWeight> blobs,
                    const std::string &needle) {
    std::string error;
    EXPECT_FALSE(writeArtifact(path, meta, {kCode.data(), kCode.size()}, blobs,
                               error))
        << needle;
    EXPECT_NE(error.find(needle), std::string::npos) << error;
    EXPECT_TRUE(listDir(dir).empty()) << "left a file behind";
  };
  std::vector<EmbeddedWeight> both = {{0, w.data(), 16}, {1, b.data(), 16}};
  ArtifactMeta m = testEntryMeta();
  refuse(m, {{0, w.data(), 16}}, "embedded weight 'b' has no data given");
  refuse(m, {{0, w.data(), 16}, {0, w.data(), 16}}, "is given twice");
  refuse(m, {{5, w.data(), 16}}, "index 5 is not an embedded weight");
  refuse(m, {{0, w.data(), 12}, {1, b.data(), 16}},
         "has length 12, but its f32 shape needs 16 bytes");
  m.inputs[0].dtype = "f128";
  refuse(m, both, "input 'x' has unknown dtype 'f128'");
  m = testEntryMeta();
  m.inputs[1].dims[1] = "past +";
  refuse(m, both, "input 'past' dim 1: 'past +' is not a dim expression");
  m.inputs[1].dims[1] = "(past)"; // parses, but is not what str() prints
  refuse(m, both, "input 'past' dim 1: '(past)' is not a dim expression");
  m = testEntryMeta();
  m.outputs[0].dims[0] = "beam * batch";
  refuse(m, both, "uses symbol 'beam', which is no input dim alone");
  m = testEntryMeta();
  m.outputs.push_back(m.outputs[0]);
  refuse(m, both, "duplicate output 'y'");
  m = testEntryMeta();
  m.weights[1].embedded = false;
  m.weights[1].path = "relative/w.bin";
  refuse(m, {{0, w.data(), 16}}, "is not absolute");
  m = testEntryMeta();
  m.target = "";
  refuse(m, both, "names no target");

  // An unwritable destination: an error, and nothing left behind.
  std::string error;
  m = testEntryMeta();
  EXPECT_FALSE(writeArtifact(dir + "/no/such/dir/model.lsa", m,
                             {kCode.data(), kCode.size()}, both, error));
  EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
  EXPECT_TRUE(listDir(dir).empty());
}

TEST(Artifact, RewriteReplacesAtomically) {
  TempDir tmp;
  const std::string dir = tmp.path;
  std::string path = writeTestEntryArtifact(dir, kCode);
  std::vector<uint8_t> other = {1, 2, 3};
  writeTestEntryArtifact(dir, other);
  LoadedArtifact a;
  std::string error;
  ASSERT_TRUE(loadArtifact(path, a, error)) << error;
  EXPECT_EQ(a.code().size, 3u);
  EXPECT_EQ(listDir(dir).size(), 1u);
}

TEST(Metadata, ParseErrorsNameTheLine) {
  auto refuse = [](const std::string &text, const std::string &needle) {
    ArtifactMeta m;
    std::string error;
    EXPECT_FALSE(parseMeta(text, m, error)) << text;
    EXPECT_NE(error.find(needle), std::string::npos) << error;
  };
  std::string head = "producer\tp\ntarget\tx86_64-cpu\n";
  refuse(head, "no 'end' line");
  refuse(head + "end", "line 3 has no newline");
  refuse(head + "end\nend\n", "line 4: text after 'end'");
  refuse(head + "inpt\tx\tf32\nend\n", "line 3: unknown record 'inpt'");
  refuse(head + "input\tx\\q\tf32\nend\n", "line 3: bad escape");
  refuse(head + "input\tx\\x4\tf32\nend\n", "line 3: bad escape");
  refuse(head + "input\tx\nend\n", "line 3: 'input' needs a name and a dtype");
  refuse(head + "weight\tw\tf32\tembedded\t0\t4\t00\t\t1\nend\n",
         "line 3: malformed weight offset, length or checksum");
  refuse(head + "weight\tw\tf32\tembedded\t0\t99999999999999999999999\t"
                "0000000000000000\t\t1\nend\n",
         "malformed weight offset");
  refuse(head + "weight\tw\tf32\tmaybe\t0\t4\t0000000000000000\t\t1\nend\n",
         "neither embedded nor external");
  refuse(head + "weight\tw\tf32\tembedded\t0\t4\t0000000000000000\t\t-1\nend\n",
         "malformed weight dim '-1'");
  refuse(head + "target\ty\nend\n", "repeated 'target'");
  refuse("target\tx86_64-cpu\nend\n", "no 'producer' line");
  refuse(head + "property\tk\nend\n", "'property' needs a key and a value");
  // Deep nesting would recurse in the parser; it is refused before.
  refuse(head + "input\tx\tf32\t" + std::string(100000, '(') + "a" +
             std::string(100000, ')') + "\nend\n",
         "is not a dim expression");
  refuse(head + "input\tx\tf32\t" + std::string(2000, 'a') + "\nend\n",
         "is not a dim expression");
  ArtifactMeta m;
  std::string error;
  EXPECT_TRUE(parseMeta(head + "end\n", m, error)) << error;
}

TEST(Metadata, SerializeParseIsIdentity) {
  ArtifactMeta m = testEntryMeta();
  m.weights[0].checksum = 0xfedcba9876543210ULL;
  m.weights[1].offset = 64;
  std::string text = serializeMeta(m);
  ArtifactMeta back;
  std::string error;
  ASSERT_TRUE(parseMeta(text, back, error)) << error;
  EXPECT_EQ(serializeMeta(back), text);
  EXPECT_EQ(back.weights[0].checksum, 0xfedcba9876543210ULL);
}
