//===- ExecTest.cpp - Loading code from memory and running a graph --------===//
//
// Runs test/Runtime/Inputs/test_entry.c, a hand-written stand-in for compiled
// code, through an artifact: the CPU backend, the entry ABI, symbol binding
// and output allocation, without the compiler.
//
//===----------------------------------------------------------------------===//
#include "ArtifactTestUtil.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Runtime/Exec.h"
#include "lockstep/Runtime/MemRef.h"
#include "lockstep/Runtime/SymbolBinding.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace lockstep::rt;
using namespace lockstep::rt::test;

namespace {

NpyArray f32Array(std::vector<int64_t> shape, float start) {
  NpyArray a;
  a.dtype = "f4";
  a.shape = shape;
  std::vector<float> v(size_t(a.numElements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = start + 0.37f * float(i) - 1e-3f * float(i * i);
  a.data = floatBytes(v);
  return a;
}

NpyArray i64Array(std::vector<int64_t> shape) {
  NpyArray a;
  a.dtype = "i8";
  a.shape = shape;
  std::vector<int64_t> v(size_t(a.numElements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = int64_t(i) * 1000003 - 7;
  a.data.resize(v.size() * 8);
  if (!v.empty())
    std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

std::map<std::string, NpyArray> inputsFor(int64_t batch, int64_t past) {
  return {{"x", f32Array({batch, 4}, 1.5f)},
          {"past", f32Array({batch, past, 4}, -3.0f)},
          {"mask", i64Array({batch, past + 1})}};
}

float f32At(const NpyArray &a, size_t i) {
  float v;
  std::memcpy(&v, a.data.data() + 4 * i, 4);
  return v;
}

// The artifact around a fixture module, loaded, with its code.
struct Loaded {
  TempDir dir;
  LoadedArtifact artifact;
  CpuModule module;
};

void load(const char *soPath, Loaded &l) {
  std::string path = writeTestEntryArtifact(l.dir.path, readFile(soPath));
  std::string error;
  ASSERT_TRUE(loadArtifact(path, l.artifact, error)) << error;
  ASSERT_TRUE(loadCpuModule(l.artifact, l.module, error)) << error;
}

// Computes what test_entry.c computes, in the same order of operations.
void expectReference(const std::map<std::string, NpyArray> &in,
                     const NamedArrays &out) {
  const NpyArray &x = in.at("x"), &past = in.at("past"), &mask = in.at("mask");
  int64_t batch = x.shape[0], pastLen = past.shape[1];
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].first, "y");
  EXPECT_EQ(out[0].second.shape, (std::vector<int64_t>{batch, 4}));
  EXPECT_EQ(out[1].second.shape, (std::vector<int64_t>{batch, pastLen + 1, 4}));
  EXPECT_EQ(out[2].second.shape, (std::vector<int64_t>{batch}));
  EXPECT_EQ(out[2].second.dtype, "i8");
  std::vector<float> y(size_t(batch * 4)), present(size_t(batch * (pastLen + 1) * 4));
  std::vector<int64_t> count(static_cast<size_t>(batch), 0);
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      float v = f32At(x, size_t(i * 4 + j));
      v = v + kW[size_t(j)];
      v = v + kB[size_t(j)];
      y[size_t(i * 4 + j)] = v;
      for (int64_t t = 0; t <= pastLen; ++t)
        present[size_t((i * (pastLen + 1) + t) * 4 + j)] =
            t < pastLen ? f32At(past, size_t((i * pastLen + t) * 4 + j)) : v;
    }
    for (int64_t t = 0; t <= pastLen; ++t) {
      int64_t m;
      std::memcpy(&m, mask.data.data() + 8 * (i * (pastLen + 1) + t), 8);
      count[size_t(i)] += m;
    }
  }
  // Bit for bit.
  EXPECT_EQ(out[0].second.data, floatBytes(y));
  EXPECT_EQ(out[1].second.data, floatBytes(present));
  std::vector<uint8_t> countBytes(count.size() * 8);
  if (!count.empty())
    std::memcpy(countBytes.data(), count.data(), countBytes.size());
  EXPECT_EQ(out[2].second.data, countBytes);
}

} // namespace

TEST(MemRef, DescriptorLayout) {
  float data[1];
  MemRefDescriptor d(data, {2, 0, 3});
  const int64_t *w = static_cast<const int64_t *>(d.get());
  void *p0, *p1;
  std::memcpy(&p0, &w[0], 8);
  std::memcpy(&p1, &w[1], 8);
  EXPECT_EQ(p0, data);
  EXPECT_EQ(p1, data);
  EXPECT_EQ(w[2], 0); // offset
  EXPECT_EQ(std::vector<int64_t>(w + 3, w + 6), (std::vector<int64_t>{2, 0, 3}));
  EXPECT_EQ(std::vector<int64_t>(w + 6, w + 9), (std::vector<int64_t>{0, 3, 1}));
  MemRefDescriptor scalar(data, {});
  EXPECT_EQ(static_cast<const int64_t *>(scalar.get())[2], 0);
}

TEST(SymbolBinding, BindsChecksAndEvaluates) {
  ArtifactMeta m = testEntryMeta();
  SymbolValues v;
  std::string error;
  ASSERT_TRUE(bindSymbols(m.inputs, {{2, 4}, {2, 3, 4}, {2, 4}}, v, error)) << error;
  EXPECT_EQ(v, (SymbolValues{{"batch", 2}, {"past", 3}}));
  std::vector<int64_t> shape;
  ASSERT_TRUE(evaluateShape(m.outputs[1], v, shape, error)) << error;
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 4, 4}));
  EXPECT_FALSE(bindSymbols(m.inputs, {{2, 4}, {3, 3, 4}, {2, 4}}, v, error));
  EXPECT_EQ(error, "inconsistent value of 'batch': input 'x' dim 0 is 2, but "
                   "input 'past' dim 0 is 3");
  EXPECT_FALSE(bindSymbols(m.inputs, {{2, 4}, {2, 3, 4}, {2, 5}}, v, error));
  EXPECT_EQ(error, "input 'mask' dim 1 is 5, but the model expects 'past + 1' "
                   "= 4 (past=3)");
  EXPECT_FALSE(bindSymbols(m.inputs, {{2, 5}, {2, 3, 4}, {2, 4}}, v, error));
  EXPECT_EQ(error, "input 'x' dim 1 is 5, but the model expects '4'");
  TensorSpec neg{"z", "f32", {"past - 5"}};
  EXPECT_FALSE(evaluateShape(neg, {{"past", 3}}, shape, error));
  EXPECT_EQ(error, "'z' dim 0 ('past - 5') is -2 with past=3");
}

TEST(CpuBackend, RunsTheEntryThroughAnArtifact) {
  Loaded l;
  load(LOCKSTEP_TEST_ENTRY_SO, l);
  for (auto [batch, past] : {std::pair<int64_t, int64_t>{2, 3}, {1, 0}, {0, 5},
                             {0, 0}, {3, 17}}) {
    SCOPED_TRACE("batch " + std::to_string(batch) + " past " + std::to_string(past));
    auto in = inputsFor(batch, past);
    NamedArrays out;
    std::string error;
    ASSERT_TRUE(runGraph(l.artifact, l.module, in, out, error)) << error;
    expectReference(in, out);
  }
}

TEST(CpuBackend, TwoModulesAtOnceStayApart) {
  // The second load reuses the first one's memfd number, and so its
  // /proc/self/fd name: it must still get its own code.
  for (int round = 0; round < 3; ++round) {
    Loaded a, b;
    load(LOCKSTEP_TEST_ENTRY_SO, a);
    load(LOCKSTEP_TEST_ENTRY_VARIANT_SO, b);
    EXPECT_NE(a.module.entry(), b.module.entry());
    auto in = inputsFor(2, 1);
    NamedArrays outA, outB;
    std::string error;
    ASSERT_TRUE(runGraph(a.artifact, a.module, in, outA, error)) << error;
    ASSERT_TRUE(runGraph(b.artifact, b.module, in, outB, error)) << error;
    expectReference(in, outA);
    EXPECT_EQ(f32At(outB[0].second, 0), 42.0f);
  }
}

TEST(CpuBackend, RefusesBadCode) {
  std::string error;
  CpuModule m;
  EXPECT_FALSE(loadCpuModule(ByteView{}, m, error));
  EXPECT_EQ(error, "the artifact has no code");
  std::vector<uint8_t> junk(256, 0x42);
  EXPECT_FALSE(loadCpuModule(ByteView{junk.data(), junk.size()}, m, error));
  EXPECT_NE(error.find("cannot load the artifact's code: "), std::string::npos)
      << error;
  EXPECT_NE(error.find("ELF"), std::string::npos) << error; // dlerror's words
  std::vector<uint8_t> none = readFile(LOCKSTEP_TEST_ENTRY_NONE_SO);
  EXPECT_FALSE(loadCpuModule(ByteView{none.data(), none.size()}, m, error));
  EXPECT_NE(error.find("has no 'lockstep_entry'"), std::string::npos) << error;
  EXPECT_FALSE(m);

  TempDir tmp;
  const std::string dir = tmp.path;
  ArtifactMeta meta = testEntryMeta();
  meta.target = "nvptx-sm90";
  std::string path = writeTestEntryArtifact(dir, none, meta);
  LoadedArtifact a;
  // A target this runtime does not know is refused when the artifact loads
  // (a CUDA artifact on the CPU: test/Runtime/cuda-host.test).
  EXPECT_FALSE(loadArtifact(path, a, error));
  EXPECT_NE(error.find("names the unknown target 'nvptx-sm90'"), std::string::npos) << error;
}

// An artifact for another device: its cpu_level names instructions this CPU
// may lack (or a level this runtime does not know). It is refused before its
// code is loaded, with one line, instead of dying of SIGILL later.
TEST(CpuBackend, RefusesWrongCpuLevel) {
  TempDir tmp;
  const std::string dir = tmp.path;
  std::vector<uint8_t> code = readFile(LOCKSTEP_TEST_ENTRY_SO);
  auto loadWith = [&](const std::string &level, std::string &error) {
    ArtifactMeta meta = testEntryMeta();
    meta.properties = {{"cpu_level", level}};
    std::string path = writeTestEntryArtifact(dir, code, meta);
    LoadedArtifact a;
    EXPECT_TRUE(loadArtifact(path, a, error)) << error;
    CpuModule m;
    bool ok = loadCpuModule(a, m, error);
    EXPECT_EQ(ok, bool(m));
    return ok;
  };
  std::string error;
  EXPECT_FALSE(loadWith("x86-64-v9", error));
  EXPECT_NE(error.find("is compiled for the unknown CPU level 'x86-64-v9'"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_FALSE(loadWith("", error));
  EXPECT_NE(error.find("unknown CPU level ''"), std::string::npos) << error;
  EXPECT_TRUE(loadWith("x86-64", error)) << error;
  // AVX-512 (x86-64-v4) is there or not depending on the machine: the loader
  // must agree with the CPU.
  bool v4 = __builtin_cpu_supports("x86-64-v4");
  EXPECT_EQ(loadWith("x86-64-v4", error), v4) << error;
  if (!v4)
    EXPECT_NE(error.find("is compiled for 'x86-64-v4', which this CPU does not "
                         "support"),
              std::string::npos)
        << error;
  ASSERT_TRUE(cpuSupportsLevel("x86-64-v2").has_value());
  EXPECT_FALSE(cpuSupportsLevel("arm64").has_value());
}

// An artifact with a second CPU code (section 8, x86-64-v4): here the
// variant entry, which writes 42, so that the output tells which code ran.
// LOCKSTEP_CPU_LEVEL picks it (auto: where the CPU has AVX-512); asking for
// code that the artifact lacks or the CPU cannot run is refused in one line.
TEST(CpuBackend, PicksTheV4CodeByLevel) {
  TempDir tmp;
  const std::string dir = tmp.path;
  std::vector<uint8_t> base = readFile(LOCKSTEP_TEST_ENTRY_SO);
  std::vector<uint8_t> v4 = readFile(LOCKSTEP_TEST_ENTRY_VARIANT_SO);
  ArtifactMeta meta = testEntryMeta();
  std::vector<uint8_t> w = floatBytes(kW), b = floatBytes(kB);
  ArtifactCode code;
  code.cpu = {base.data(), base.size()};
  code.cpuV4 = {v4.data(), v4.size()};
  std::string path = dir + "/levels.lsa", error;
  ASSERT_TRUE(writeArtifact(path, meta, code, {{0, w.data(), w.size()}, {1, b.data(), b.size()}},
                            error))
      << error;
  EXPECT_EQ(readFile(path)[12], 7) << "six sections and section 8";
  LoadedArtifact a;
  ASSERT_TRUE(loadArtifact(path, a, error)) << error;
  ASSERT_EQ(a.codeV4().size, v4.size());
  const bool cpuHasV4 = __builtin_cpu_supports("x86-64-v4");
  // Runs the artifact under LOCKSTEP_CPU_LEVEL=`level` (null: unset); the
  // loaded level, or "refused: ERROR".
  auto runAt = [&](const char *level) -> std::string {
    if (level)
      setenv("LOCKSTEP_CPU_LEVEL", level, 1);
    else
      unsetenv("LOCKSTEP_CPU_LEVEL");
    CpuModule m;
    std::string err;
    bool ok = loadCpuModule(a, m, err);
    unsetenv("LOCKSTEP_CPU_LEVEL");
    if (!ok)
      return "refused: " + err;
    auto in = inputsFor(2, 1);
    NamedArrays out;
    EXPECT_TRUE(runGraph(a, m, in, out, err)) << err;
    bool variant = f32At(out[0].second, 0) == 42.0f;
    EXPECT_EQ(variant, std::string(m.level()) == kLevelV4) << m.level();
    return m.level();
  };
  EXPECT_EQ(runAt("base"), "base");
  EXPECT_EQ(runAt(nullptr), cpuHasV4 ? kLevelV4 : "base");
  EXPECT_EQ(runAt("auto"), cpuHasV4 ? kLevelV4 : "base");
  std::string forced = runAt("x86-64-v4");
  if (cpuHasV4)
    EXPECT_EQ(forced, kLevelV4);
  else
    EXPECT_NE(forced.find("which this CPU does not run"), std::string::npos) << forced;
  std::string bad = runAt("avx9000");
  EXPECT_NE(bad.find("LOCKSTEP_CPU_LEVEL is 'avx9000': give auto, base or x86-64-v4"),
            std::string::npos)
      << bad;

  // Without section 8, asking for it is refused; base code alone is fine.
  std::string plain = writeTestEntryArtifact(dir, base);
  LoadedArtifact p;
  ASSERT_TRUE(loadArtifact(plain, p, error)) << error;
  EXPECT_EQ(p.codeV4().size, 0u);
  setenv("LOCKSTEP_CPU_LEVEL", "x86-64-v4", 1);
  CpuModule m;
  EXPECT_FALSE(loadCpuModule(p, m, error));
  unsetenv("LOCKSTEP_CPU_LEVEL");
  EXPECT_NE(error.find("which the artifact does not have"), std::string::npos) << error;
  EXPECT_TRUE(loadCpuModule(p, m, error)) << error;
  EXPECT_STREQ(m.level(), "base");
}

TEST(Exec, RefusesBadInputs) {
  Loaded l;
  load(LOCKSTEP_TEST_ENTRY_SO, l);
  auto refuse = [&](std::map<std::string, NpyArray> in, const std::string &want) {
    NamedArrays out;
    std::string error;
    EXPECT_FALSE(runGraph(l.artifact, l.module, in, out, error)) << want;
    EXPECT_EQ(error, want);
  };
  auto in = inputsFor(2, 3);
  in.erase("mask");
  refuse(in, "missing input 'mask' (i64 [batch, past + 1])");
  in = inputsFor(2, 3);
  in["extra"] = in["x"];
  refuse(in, "unknown input 'extra' (the model's inputs: 'x', 'past', 'mask')");
  in = inputsFor(2, 3);
  in["mask"].dtype = "i4";
  in["mask"].data.resize(in["mask"].data.size() / 2);
  refuse(in, "input 'mask' has .npy dtype 'i4', but the model expects i64 "
             "(.npy 'i8')");
  in = inputsFor(2, 3);
  in["x"].shape = {2, 2, 2};
  refuse(in, "input 'x' has rank 3 [2, 2, 2], but the model expects rank 2 "
             "[batch, 4]");
  in = inputsFor(2, 3);
  in["past"] = f32Array({3, 3, 4}, 0);
  refuse(in, "inconsistent value of 'batch': input 'x' dim 0 is 2, but input "
             "'past' dim 0 is 3");
  in = inputsFor(2, 3);
  in["mask"] = i64Array({2, 3});
  refuse(in, "input 'mask' dim 1 is 3, but the model expects 'past + 1' = 4 "
             "(past=3)");
}

// The views form: no copy of the inputs, the same outputs as runGraph, and
// output buffers reused from call to call.
TEST(Exec, RunsOnViews) {
  Loaded l;
  load(LOCKSTEP_TEST_ENTRY_SO, l);
  std::vector<OutputBuffer> outs;
  const void *firstY = nullptr;
  for (auto [batch, past] : {std::pair<int64_t, int64_t>{3, 17}, {2, 3}, {0, 0}}) {
    SCOPED_TRACE("batch " + std::to_string(batch) + " past " + std::to_string(past));
    auto in = inputsFor(batch, past);
    // Aligned copies: .npy data need not be.
    std::vector<std::vector<int64_t>> storage;
    std::vector<TensorView> views;
    for (const TensorSpec &t : l.artifact.meta().inputs) {
      const NpyArray &a = in.at(t.name);
      storage.emplace_back((a.data.size() + 7) / 8);
      if (!a.data.empty())
        std::memcpy(storage.back().data(), a.data.data(), a.data.size());
      views.push_back({storage.back().data(), t.dtype, a.shape});
    }
    std::string error;
    ASSERT_TRUE(runGraphViews(l.artifact, l.module, views, outs, error)) << error;
    NamedArrays named;
    for (size_t i = 0; i < outs.size(); ++i) {
      NpyArray a;
      a.dtype = dtypeToNpy(l.artifact.meta().outputs[i].dtype);
      a.shape = outs[i].shape();
      a.data.assign(outs[i].as<uint8_t>(), outs[i].as<uint8_t>() + outs[i].bytes());
      named.emplace_back(l.artifact.meta().outputs[i].name, std::move(a));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(outs[i].data()) % 64, 0u);
    }
    expectReference(in, named);
    // The largest call comes first: the later ones reuse its buffers.
    if (!firstY)
      firstY = outs[0].data();
    EXPECT_EQ(outs[0].data(), firstY);
  }
}

TEST(Exec, RefusesBadViews) {
  Loaded l;
  load(LOCKSTEP_TEST_ENTRY_SO, l);
  alignas(64) static float buf[64] = {};
  alignas(64) static int64_t ibuf[64] = {};
  auto good = [&]() {
    return std::vector<TensorView>{{buf, "f32", {2, 4}},
                                   {buf, "f32", {2, 3, 4}},
                                   {ibuf, "i64", {2, 4}}};
  };
  auto refuse = [&](std::vector<TensorView> in, const std::string &want) {
    std::vector<OutputBuffer> out;
    std::string error;
    EXPECT_FALSE(runGraphViews(l.artifact, l.module, in, out, error)) << want;
    EXPECT_EQ(error, want);
  };
  {
    std::vector<OutputBuffer> out;
    std::string error;
    EXPECT_TRUE(runGraphViews(l.artifact, l.module, good(), out, error)) << error;
  }
  auto in = good();
  in.pop_back();
  refuse(in, "expected 3 inputs, got 2");
  in = good();
  in[2].dtype = "i32";
  refuse(in, "input 'mask' is i32, but the model expects i64");
  in = good();
  in[0].shape = {2, 2, 2};
  refuse(in, "input 'x' has rank 3 [2, 2, 2], but the model expects rank 2 [batch, 4]");
  in = good();
  in[1].data = reinterpret_cast<const char *>(buf) + 4;
  refuse(in, "input 'past' is not 16-byte aligned");
  in = good();
  in[1].data = nullptr;
  refuse(in, "input 'past' has no data");
  in = good();
  in[1].shape = {2, -1, 4};
  refuse(in, "input 'past' has a negative dim [2, -1, 4]");
  in = good();
  in[2].shape = {2, 3};
  refuse(in, "input 'mask' dim 1 is 3, but the model expects 'past + 1' = 4 (past=3)");
  // An empty tensor may have no data.
  in = good();
  in[1] = {nullptr, "f32", {2, 0, 4}};
  in[2].shape = {2, 1};
  std::vector<OutputBuffer> out;
  std::string error;
  EXPECT_TRUE(runGraphViews(l.artifact, l.module, in, out, error)) << error;
}
