//===- RaggedStepTest.cpp - One compiled call per ragged step -------------===//
//
// RaggedStepModel without the compiler: test/Runtime/Inputs/ragged_entry.c
// stands in for a model compiled to the serving ABI (a toy attention over
// each request's cache, read in place from the pools through its block
// table). The engine's logits are checked bit for bit against the toy model
// computed directly on each whole sequence, and against the same requests
// under fuzzed schedules (chunked prefill, mixed batches, preemption by
// recompute and swap). The roles' checks are tested on hand-built metadata.
//
//===----------------------------------------------------------------------===//
#include "ArtifactTestUtil.h"
#include "lockstep/Harness/Fuzz.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Runtime/Serving/RaggedStepModel.h"

#include "../Runtime/Inputs/ragged_entry.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>

using namespace lockstep::rt;
using namespace lockstep::rt::test;

namespace {

/// The metadata of ragged_entry.c with its serving roles.
ArtifactMeta raggedMeta() {
  ArtifactMeta m;
  m.producer = "unit test";
  m.target = kCpuTarget;
  m.inputs = {{"ids", "i64", {"batch", "seq"}},
              {"pid", "i32", {"batch", "seq"}},
              {"pos", "i64", {"seq"}},
              {"starts", "i64", {"requests + 1"}},
              {"tables", "i32", {"requests", "max_blocks"}},
              {"k_pool", "f32", {"blocks", "block_size", "2", "3"}},
              {"v_pool", "f32", {"blocks", "block_size", "2", "3"}}};
  m.outputs = {{"logits", "f32", {"batch", "seq", "5"}},
               {"k_new", "f32", {"batch", "2", "seq", "3"}},
               {"v_new", "f32", {"batch", "2", "seq", "3"}}};
  m.properties = {{"serving.step", "ragged"},
                  {"serving.token_ids", "0"},
                  {"serving.positions", "1"},
                  {"serving.ragged.positions", "2"},
                  {"serving.ragged.seq_starts", "3"},
                  {"serving.ragged.block_tables", "4"},
                  {"serving.cache_streams", "2"},
                  {"serving.cache.0", "5 1"},
                  {"serving.cache.1", "6 2"},
                  {"serving.logits", "0"}};
  return m;
}

void setProperty(ArtifactMeta &m, const std::string &key, const std::string &value) {
  for (auto &[k, v] : m.properties)
    if (k == key) {
      v = value;
      return;
    }
  m.properties.emplace_back(key, value);
}

void dropProperty(ArtifactMeta &m, const std::string &key) {
  for (size_t i = 0; i < m.properties.size(); ++i)
    if (m.properties[i].first == key)
      m.properties.erase(m.properties.begin() + long(i));
}

struct Loaded {
  TempDir dir;
  LoadedArtifact artifact;
  CpuModule module;
};

/// Writes and loads an artifact of `meta`, with the fixture's code (`so`)
/// when `withCode` (else bytes that are never loaded as code).
void load(const ArtifactMeta &meta, bool withCode, Loaded &l,
          const char *so = LOCKSTEP_TEST_RAGGED_SO) {
  std::vector<uint8_t> code = {0x7f, 'E', 'L', 'F'};
  if (withCode)
    code = readFile(so);
  std::string path = l.dir.path + "/model.lsa", error;
  ArtifactMeta m = meta;
  ASSERT_TRUE(writeArtifact(path, m, {code.data(), code.size()}, {}, error)) << error;
  ASSERT_TRUE(loadArtifact(path, l.artifact, error)) << error;
  if (withCode)
    ASSERT_TRUE(loadCpuModule(l.artifact, l.module, error)) << error;
}

/// The toy model's logits at position p of `ids` (positions 0 .. p), as
/// ragged_entry.c computes them.
std::vector<float> referenceRow(const std::vector<int32_t> &ids, int64_t p) {
  std::vector<float> key(size_t(p + 1) * RAGGED_H * RAGGED_D),
      value(key.size());
  for (int64_t q = 0; q <= p; ++q)
    for (int64_t h = 0; h < RAGGED_H; ++h)
      for (int64_t d = 0; d < RAGGED_D; ++d) {
        size_t i = size_t((q * RAGGED_H + h) * RAGGED_D + d);
        key[i] = ragged_key(ids[size_t(q)], int32_t(q), h, d);
        value[i] = ragged_value(ids[size_t(q)], h, d);
      }
  std::vector<float> row(RAGGED_V);
  for (int64_t j = 0; j < RAGGED_V; ++j) {
    float acc = 0;
    for (int64_t h = 0; h < RAGGED_H; ++h)
      for (int64_t q = 0; q <= p; ++q)
        acc += ragged_dot(&key[size_t((q * RAGGED_H + h) * RAGGED_D)],
                          &key[size_t((p * RAGGED_H + h) * RAGGED_D)]) *
               value[size_t((q * RAGGED_H + h) * RAGGED_D + j % RAGGED_D)];
    row[size_t(j)] = acc + float(j);
  }
  return row;
}

std::vector<Request> someRequests() {
  std::vector<Request> rs;
  for (uint64_t i = 0; i < 6; ++i) {
    Request r;
    r.id = i;
    for (uint64_t t = 0; t < 3 + 7 * i % 23; ++t)
      r.prompt.push_back(int32_t((i * 31 + t * 17) % 5));
    r.maxNewTokens = 4 + int64_t(i % 3);
    rs.push_back(r);
  }
  return rs;
}

} // namespace

TEST(RaggedStep, ReadsItsRoles) {
  Loaded l;
  load(raggedMeta(), false, l);
  std::string error;
  auto m = createServingModel(l.artifact, l.module, error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->stepForm(), "ragged (one call per step)");
  EXPECT_EQ(m->vocab(), 5);
  EXPECT_FALSE(m->maxContext());
  KVCacheConfig c = m->cacheConfig(16, 10, 4);
  EXPECT_EQ(c.layers, 1);
  EXPECT_EQ(c.kvHeads, 1);
  EXPECT_EQ(c.headDim, 6);
  EXPECT_EQ(c.blockSize, 16);
  EXPECT_EQ(c.numBlocks, 10);
  EXPECT_EQ(c.hostBlocks, 4);
  EXPECT_EQ(m->bytesPerToken(), 2 * 6 * 4);

  // Without serving.step = ragged the artifact is read as a per-request
  // decoder graph, which this one is not.
  Loaded g;
  ArtifactMeta meta = raggedMeta();
  setProperty(meta, "serving.step", "per_request");
  load(meta, false, g);
  EXPECT_FALSE(createServingModel(g.artifact, g.module, error));
  EXPECT_EQ(error, "the artifact has no serving roles (compiled by an older lockstep-opt?)");
  EXPECT_FALSE(RaggedStepModel::create(g.artifact, g.module, error));
  EXPECT_EQ(error,
            "the artifact is not in the ragged serving form (serving.step is not 'ragged')");
}

TEST(RaggedStep, RefusesBadRoles) {
  auto refuse = [](const std::function<void(ArtifactMeta &)> &edit,
                   const std::string &want) {
    ArtifactMeta meta = raggedMeta();
    edit(meta);
    Loaded l;
    load(meta, false, l);
    std::string error;
    EXPECT_FALSE(createServingModel(l.artifact, l.module, error)) << want;
    EXPECT_EQ(error, want);
  };
  using M = ArtifactMeta;
  refuse([](M &m) { setProperty(m, "serving.none", "no logits"); },
         "the model cannot be served: no logits");
  refuse([](M &m) { dropProperty(m, "serving.token_ids"); },
         "the artifact has no serving.token_ids");
  refuse([](M &m) { setProperty(m, "serving.token_ids", "7"); },
         "bad serving.token_ids '7'");
  refuse([](M &m) { m.inputs[0].dtype = "f32"; },
         "'ids' (serving.token_ids) is f32 [batch, seq], not i64 or i32 [batch, seq] "
         "with a symbolic seq");
  refuse([](M &m) { setProperty(m, "serving.positions", "0"); },
         "input 'ids' is both serving.token_ids and serving.positions");
  refuse([](M &m) { m.inputs[1].dims = {"seq", "batch"}; },
         "'pid' (serving.positions) is i32 [seq, batch], not i64 or i32 [batch, seq]");
  refuse([](M &m) { m.inputs[2].dtype = "i32"; },
         "'pos' (serving.ragged.positions) is i32 [seq], not i64 [seq]");
  refuse([](M &m) { dropProperty(m, "serving.ragged.seq_starts"); },
         "the artifact has no serving.ragged.seq_starts");
  refuse([](M &m) { m.inputs[4].dtype = "i64"; },
         "'tables' (serving.ragged.block_tables) is i64 [requests, max_blocks], not i32 "
         "[requests, max_blocks]");
  refuse([](M &m) { m.outputs[0].dims = {"batch", "seq", "blocks"}; },
         "'logits' (serving.logits) is f32 [batch, seq, blocks], not f32 [batch, seq, "
         "vocab] with a constant vocab");
  refuse([](M &m) { setProperty(m, "serving.max_context", "0"); },
         "bad serving.max_context");
  refuse([](M &m) { dropProperty(m, "serving.cache_streams"); },
         "the artifact has no serving.cache_streams");
  refuse([](M &m) { setProperty(m, "serving.cache_streams", "3"); },
         "the artifact has no serving.cache.2");
  refuse([](M &m) { setProperty(m, "serving.cache.1", "6 2 1"); },
         "bad serving.cache.1 '6 2 1' (want 'POOL_INPUT NEW_OUTPUT')");
  refuse([](M &m) { setProperty(m, "serving.cache.1", "6 9"); },
         "bad serving.cache.1 '6 9' (an index out of range)");
  refuse([](M &m) { setProperty(m, "serving.cache.1", "5 2"); },
         "input 'k_pool' is both serving.cache.0 and serving.cache.1");
  refuse([](M &m) { setProperty(m, "serving.cache.1", "6 0"); },
         "output 'logits' is both serving.logits and serving.cache.1");
  refuse([](M &m) { m.inputs[5].dims = {"blocks", "block_size", "blocks", "3"}; },
         "'k_pool' (serving.cache.0) is f32 [blocks, block_size, blocks, 3], not f32 "
         "[blocks, block_size, H, D] with symbolic blocks and block_size and constant H "
         "and D");
  refuse([](M &m) { m.outputs[2].dims = {"batch", "seq", "2", "3"}; },
         "'v_new' (serving.cache.1) is f32 [batch, seq, 2, 3], not f32 [batch, 2, seq, 3]");
  refuse(
      [](M &m) {
        m.inputs[6].dims = {"blocks", "block_size", "3", "3"};
        m.outputs[2].dims = {"batch", "3", "seq", "3"};
      },
      "the cache streams have rows of different sizes");
  refuse([](M &m) { dropProperty(m, "serving.positions"); },
         "input 'pid' has no serving role");
}

namespace {

/// Runs someRequests() through the engine (chunked prefill mixed with
/// decodes) and counts the generated tokens whose logits row differs, in
/// any bit, from the direct computation on the whole sequence.
void countMismatches(const Loaded &l, int64_t &mismatches) {
  std::string error;
  auto model = createServingModel(l.artifact, l.module, error);
  ASSERT_TRUE(model) << error;
  EngineConfig cfg;
  cfg.kv = model->cacheConfig(4, 64, 0);
  cfg.scheduler.tokenBudget = 24;
  cfg.scheduler.maxPrefillChunk = 7; // chunked prefill, mixed with decodes
  auto engine = Engine::create(*model, cfg, error);
  ASSERT_TRUE(engine) << error;
  std::vector<Request> rs = someRequests();
  RunResult res;
  ASSERT_TRUE(engine->run(rs, res, error)) << error;
  EXPECT_GT(res.stats.largestBatchSeqs, 1);
  for (size_t i = 0; i < rs.size(); ++i) {
    const RequestResult &r = res.requests[i];
    ASSERT_EQ(r.status, RequestStatus::Ok) << r.reason;
    ASSERT_EQ(int64_t(r.generated.size()), rs[i].maxNewTokens);
    std::vector<int32_t> seq = rs[i].prompt;
    for (size_t k = 0; k < r.generated.size(); ++k) {
      std::vector<float> want = referenceRow(seq, int64_t(seq.size()) - 1);
      std::vector<float> got(r.logits.begin() + long(k * RAGGED_V),
                             r.logits.begin() + long((k + 1) * RAGGED_V));
      mismatches += floatBytes(got) != floatBytes(want);
      seq.push_back(r.generated[k]);
    }
  }
}

} // namespace

// The toy model through the engine: every generated token's logits row is
// the direct computation on the whole sequence, bit for bit.
TEST(RaggedStep, ServesLikeTheReference) {
  Loaded l;
  load(raggedMeta(), true, l);
  int64_t mismatches = 0;
  countMismatches(l, mismatches);
  EXPECT_EQ(mismatches, 0);
}

// With serving.ragged.pool_writes = step the runtime leaves the pools to
// the step: a step that writes them serves like the reference (and a step
// that writes them while the runtime copies too, without the property,
// also does); a step that does not write them, with the property, gets
// wrong logits once a request reads its past, which shows the runtime did
// not copy.
TEST(RaggedStep, StepWrittenPools) {
  ArtifactMeta writes = raggedMeta();
  setProperty(writes, "serving.ragged.pool_writes", "step");
  int64_t mismatches = 0;
  {
    Loaded l;
    load(writes, true, l, LOCKSTEP_TEST_RAGGED_WRITES_SO);
    countMismatches(l, mismatches);
    EXPECT_EQ(mismatches, 0);
  }
  {
    Loaded l;
    load(raggedMeta(), true, l, LOCKSTEP_TEST_RAGGED_WRITES_SO);
    countMismatches(l, mismatches);
    EXPECT_EQ(mismatches, 0);
  }
  {
    Loaded l;
    load(writes, true, l);
    countMismatches(l, mismatches);
    EXPECT_GT(mismatches, 0);
  }
  ArtifactMeta bad = raggedMeta();
  setProperty(bad, "serving.ragged.pool_writes", "runtime");
  Loaded l;
  load(bad, false, l);
  std::string error;
  EXPECT_FALSE(createServingModel(l.artifact, l.module, error));
  EXPECT_EQ(error, "bad serving.ragged.pool_writes 'runtime' (want 'step')");
}

// The step-written pools under fuzzed schedules (preemption by recompute
// and swap, eviction): the logits of each request alone.
TEST(RaggedStep, StepWrittenPoolsUnderFuzzedSchedules) {
  ArtifactMeta writes = raggedMeta();
  setProperty(writes, "serving.ragged.pool_writes", "step");
  Loaded l;
  load(writes, true, l, LOCKSTEP_TEST_RAGGED_WRITES_SO);
  std::string error;
  auto model = createServingModel(l.artifact, l.module, error);
  ASSERT_TRUE(model) << error;
  CacheConfigFn cache = cacheConfigOf(*model);
  std::vector<Request> rs = someRequests();
  ScheduleRun baseline;
  ASSERT_TRUE(runSchedule(*model, cache, baselineSetup(rs, 5), rs, baseline, error))
      << error;
  for (int64_t k = 0; k < 6; ++k) {
    ScheduleSetup setup = drawSchedule(11, k, rs, 5);
    ScheduleRun run;
    ASSERT_TRUE(runSchedule(*model, cache, setup, rs, run, error)) << error;
    Comparison c = compareRuns(baseline, run, setup, rs, 5);
    EXPECT_EQ(c.mismatches, 0) << (c.first ? describeMismatch(*c.first) : "");
  }
}

// Fuzzed schedules (preemption by recompute and swap, eviction, random
// chunks and batches) give the logits of each request alone.
TEST(RaggedStep, FuzzedSchedulesMatchTheBaseline) {
  Loaded l;
  load(raggedMeta(), true, l);
  std::string error;
  auto model = createServingModel(l.artifact, l.module, error);
  ASSERT_TRUE(model) << error;
  CacheConfigFn cache = cacheConfigOf(*model);
  std::vector<Request> rs = someRequests();
  ScheduleRun baseline;
  ASSERT_TRUE(runSchedule(*model, cache, baselineSetup(rs, 5), rs, baseline, error))
      << error;
  int64_t preemptions = 0;
  for (int64_t k = 0; k < 12; ++k) {
    ScheduleSetup setup = drawSchedule(7, k, rs, 5);
    ScheduleRun run;
    ASSERT_TRUE(runSchedule(*model, cache, setup, rs, run, error)) << error;
    preemptions += run.result.stats.preemptRecompute + run.result.stats.preemptSwap;
    Comparison c = compareRuns(baseline, run, setup, rs, 5);
    EXPECT_EQ(c.mismatches, 0) << (c.first ? describeMismatch(*c.first) : "");
    EXPECT_GT(c.tokens, 0);
  }
  EXPECT_GT(preemptions, 0);
}

TEST(RaggedStep, RefusesBadBatches) {
  Loaded l;
  load(raggedMeta(), true, l);
  std::string error;
  auto model = RaggedStepModel::create(l.artifact, l.module, error);
  ASSERT_TRUE(model) << error;
  auto kv = KVCache::create(model->cacheConfig(4, 8, 0), error);
  ASSERT_TRUE(kv) << error;
  // Two requests: 3 new tokens at 0..2, and 1 new token at position 4.
  StepBatch good;
  good.tokens = {1, 2, 3, 4};
  good.positions = {0, 1, 2, 4};
  good.seqStarts = {0, 3, 4};
  good.contextLens = {3, 5};
  good.blockTables = {{0}, {1, 2}};
  good.logitRows = {2, 3};
  good.seqIds = {10, 11};
  std::vector<float> logits(10);
  ASSERT_TRUE(model->step(good, *kv, logits.data(), error)) << error;
  // Request 0's new K rows are at block 0, slots 0..2.
  const float *k = kv->kPool(0);
  EXPECT_EQ(k[1 * 6 + 1 * 3 + 2], ragged_key(2, 1, 1, 2));
  EXPECT_EQ(k[2 * 6], ragged_key(3, 2, 0, 0));
  // Request 1's one row is at block 2 (position 4 of blocks of 4), slot 0.
  EXPECT_EQ(kv->vPool(0)[(2 * 4) * 6 + 5], ragged_value(4, 1, 2));
  EXPECT_EQ(logits[4], referenceRow({1, 2, 3}, 2)[4]);

  auto refuse = [&](const std::function<void(StepBatch &)> &edit, const std::string &want) {
    StepBatch b = good;
    edit(b);
    EXPECT_FALSE(model->step(b, *kv, logits.data(), error)) << want;
    EXPECT_EQ(error, want);
  };
  refuse([](StepBatch &b) { b.positions.pop_back(); },
         "bad step batch: its arrays do not agree in size");
  refuse([](StepBatch &b) { b.seqStarts = {0, 4, 4}; }, "bad step for request 10");
  refuse([](StepBatch &b) { b.positions[1] = 2; }, "bad step for request 10");
  refuse([](StepBatch &b) { b.blockTables[1] = {1}; }, "bad step for request 11");
  refuse([](StepBatch &b) { b.blockTables[0] = {8}; }, "bad step for request 10");
  refuse([](StepBatch &b) { b.logitRows[1] = 2; }, "bad step for request 11");
  auto wrong = KVCache::create(KVCacheConfig{1, 1, 5, 4, 8, 0}, error);
  ASSERT_TRUE(wrong) << error;
  EXPECT_FALSE(model->step(good, *wrong, logits.data(), error));
  EXPECT_EQ(error, "the KV cache does not fit the model (rows of 5 floats, 1 layers; the "
                   "model has rows of 6 and 2 streams)");
}

namespace {

/// A device whose memory is host memory it owns: the ragged step's device
/// path (pools handed over as device tensors, new rows kept and scattered
/// by the device, logits downloaded) runs on the toy model without a GPU.
/// It counts what it does, and can be made to fail its swap copies.
class HostDevice : public DeviceServing {
public:
  int64_t uploads = 0, scatters = 0, swaps = 0, pools = 0;
  bool failCopies = false;
  ~HostDevice() override { endCall(); }
  bool upload(const void *host, uint64_t bytes, void *&device, std::string &e) override {
    if (!allocate(bytes, device, e))
      return false;
    std::memcpy(device, host, bytes);
    ++uploads;
    return true;
  }
  bool weight(size_t, const void *host, uint64_t, void *&device, std::string &) override {
    device = const_cast<void *>(host);
    return true;
  }
  bool allocate(uint64_t bytes, void *&device, std::string &) override {
    device = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    call.push_back(device);
    return true;
  }
  bool download(void *host, const void *device, uint64_t bytes, std::string &) override {
    std::memcpy(host, device, bytes);
    return true;
  }
  bool finish(std::string &) override { return true; }
  void endCall() override {
    for (void *p : call)
      std::free(p);
    call.clear();
  }
  float *allocateZeroed(uint64_t bytes, std::string &) override {
    ++pools;
    return static_cast<float *>(std::calloc(1, bytes));
  }
  void release(float *pool) override { std::free(pool); }
  bool toHost(float *host, const float *pool, uint64_t bytes) override {
    ++swaps;
    if (!failCopies)
      std::memcpy(host, pool, bytes);
    return !failCopies;
  }
  bool fromHost(float *pool, const float *host, uint64_t bytes) override {
    ++swaps;
    std::memcpy(pool, host, bytes);
    return true;
  }
  bool scatterRows(const float *rows, float *pool, const int64_t *slots, int64_t tokens,
                   int64_t heads, int64_t dim, std::string &) override {
    ++scatters;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < tokens; ++t)
        std::memcpy(pool + (slots[t] * heads + h) * dim, rows + (h * tokens + t) * dim,
                    size_t(dim) * sizeof(float));
    return true;
  }

private:
  std::vector<void *> call;
};

} // namespace

// The device path of the ragged step (what --device cuda runs) gives the
// host path's logits bit for bit under fuzzed schedules, with the pools in
// the device's memory, the new rows written by its scatter and swaps copied
// by it.
TEST(RaggedStep, DevicePathMatchesTheHostPath) {
  Loaded l;
  load(raggedMeta(), true, l);
  std::string error;
  auto host = createServingModel(l.artifact, l.module, error);
  ASSERT_TRUE(host) << error;
  HostDevice device;
  auto onDevice = createServingModel(l.artifact, l.module, error, &device);
  ASSERT_TRUE(onDevice) << error;
  EXPECT_EQ(onDevice->poolMemory(), &device);
  CacheConfigFn cache = cacheConfigOf(*host);
  std::vector<Request> rs = someRequests();
  ScheduleRun baseline;
  ASSERT_TRUE(runSchedule(*host, cache, baselineSetup(rs, 5), rs, baseline, error)) << error;
  for (int64_t k = 0; k < 12; ++k) {
    ScheduleSetup setup = drawSchedule(7, k, rs, 5);
    ScheduleRun run;
    ASSERT_TRUE(runSchedule(*onDevice, cache, setup, rs, run, error)) << error;
    Comparison c = compareRuns(baseline, run, setup, rs, 5);
    EXPECT_EQ(c.mismatches, 0) << (c.first ? describeMismatch(*c.first) : "");
    EXPECT_GT(c.tokens, 0);
  }
  EXPECT_GT(device.pools, 0);
  EXPECT_GT(device.scatters, 0);
  EXPECT_GT(device.uploads, 0);
  EXPECT_GT(device.swaps, 0);
}

// With serving.ragged.pool_writes = step the device path launches no
// scatter: the step's own writes fill the pools, and fuzzed schedules on
// the device give the host's baseline.
TEST(RaggedStep, DevicePathLeavesStepWrittenPoolsAlone) {
  ArtifactMeta writes = raggedMeta();
  setProperty(writes, "serving.ragged.pool_writes", "step");
  Loaded l;
  load(writes, true, l, LOCKSTEP_TEST_RAGGED_WRITES_SO);
  std::string error;
  auto host = createServingModel(l.artifact, l.module, error);
  ASSERT_TRUE(host) << error;
  HostDevice device;
  auto onDevice = createServingModel(l.artifact, l.module, error, &device);
  ASSERT_TRUE(onDevice) << error;
  CacheConfigFn cache = cacheConfigOf(*host);
  std::vector<Request> rs = someRequests();
  ScheduleRun baseline;
  ASSERT_TRUE(runSchedule(*host, cache, baselineSetup(rs, 5), rs, baseline, error)) << error;
  for (int64_t k = 0; k < 6; ++k) {
    ScheduleSetup setup = drawSchedule(13, k, rs, 5);
    ScheduleRun run;
    ASSERT_TRUE(runSchedule(*onDevice, cache, setup, rs, run, error)) << error;
    Comparison c = compareRuns(baseline, run, setup, rs, 5);
    EXPECT_EQ(c.mismatches, 0) << (c.first ? describeMismatch(*c.first) : "");
  }
  EXPECT_GT(device.pools, 0);
  EXPECT_EQ(device.scatters, 0);
}

// A swap whose copy out of device memory fails changes nothing.
TEST(RaggedStep, FailedSwapCopyChangesNothing) {
  HostDevice device;
  std::string error;
  auto kv = KVCache::create(KVCacheConfig{1, 2, 3, 4, 8, 8}, error, &device);
  ASSERT_TRUE(kv) << error;
  ASSERT_TRUE(kv->reserve(1, 6));
  std::vector<int32_t> table = kv->blockTable(1);
  device.failCopies = true;
  EXPECT_FALSE(kv->swapOut(1));
  EXPECT_FALSE(kv->isSwappedOut(1));
  EXPECT_EQ(kv->blockTable(1), table);
  EXPECT_EQ(kv->freeHostBlocks(), 8);
  device.failCopies = false;
  EXPECT_TRUE(kv->swapOut(1));
  EXPECT_EQ(kv->freeBlocks(), 8);
  EXPECT_TRUE(kv->swapIn(1));
}
