//===- RaggedStepModel.cpp - One compiled call per ragged step ------------===//
#include "lockstep/Runtime/Serving/RaggedStepModel.h"
#include "lockstep/Runtime/Serving/StepTimes.h"

#include "lockstep/Artifact/ArtifactMeta.h"
#include "lockstep/Artifact/ServingKeys.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

using namespace lockstep;
using namespace lockstep::rt;
namespace K = lockstep::serving_keys;
using serving::parseIndex;
using serving::property;

namespace {

std::string describe(const TensorSpec &t) {
  std::string s = t.dtype + " [";
  for (size_t i = 0; i < t.dims.size(); ++i)
    s += (i ? ", " : "") + t.dims[i];
  return s + "]";
}

bool isSymbol(const std::string &dim) {
  auto e = parseDim(dim);
  return e && e->asSymbol();
}

std::optional<int64_t> positiveConstant(const std::string &dim) {
  auto e = parseDim(dim);
  if (!e || !e->getConstant() || *e->getConstant() <= 0)
    return std::nullopt;
  return *e->getConstant();
}

/// `values` in `out` as the integer dtype `dtype` ("i64" or "i32").
template <typename T>
TensorView intView(const std::string &dtype, std::vector<int64_t> shape,
                   const std::vector<T> &values, std::vector<int64_t> &i64,
                   std::vector<int32_t> &i32) {
  if (dtype == "i64") {
    i64.assign(values.begin(), values.end());
    return {i64.data(), dtype, std::move(shape)};
  }
  i32.assign(values.begin(), values.end()); // checked to fit by checkBatch
  return {i32.data(), dtype, std::move(shape)};
}

} // namespace

std::unique_ptr<RaggedStepModel>
RaggedStepModel::create(const LoadedArtifact &artifact, const CpuModule &module,
                        std::string &error, DeviceServing *device) {
  const ArtifactMeta &m = artifact.meta();
  if (auto none = property(m, K::kNone)) {
    error = "the model cannot be served: " + *none;
    return nullptr;
  }
  if (property(m, K::kStep) != K::kRagged) {
    error = "the artifact is not in the ragged serving form (serving.step is not 'ragged')";
    return nullptr;
  }
  std::unique_ptr<RaggedStepModel> g(new RaggedStepModel(artifact, module, device));
  std::vector<std::string> inRole(m.inputs.size()), outRole(m.outputs.size());
  // Gives input or output `i` the role `key`; false when it has one.
  auto claim = [&](bool output, size_t i, const std::string &key) {
    std::string &r = (output ? outRole : inRole)[i];
    if (!r.empty()) {
      error = std::string(output ? "output " : "input ") +
              quoted((output ? m.outputs : m.inputs)[i].name) + " is both " + r + " and " +
              key;
      return false;
    }
    r = key;
    return true;
  };
  // Reads the index of property `key` into `out` and gives it the role.
  auto role = [&](const std::string &key, bool output, size_t &out) {
    auto v = property(m, key);
    if (!v) {
      error = "the artifact has no " + key;
      return false;
    }
    if (!parseIndex(*v, output ? m.outputs.size() : m.inputs.size(), out)) {
      error = "bad " + key + " '" + escapeText(*v) + "'";
      return false;
    }
    return claim(output, out, key);
  };
  // Checks the spec of a role; `want` says what it should be.
  auto check = [&](const TensorSpec &t, const std::string &key, bool ok,
                   const std::string &want) {
    if (!ok)
      error = quoted(t.name) + " (" + key + ") is " + describe(t) + ", not " + want;
    return ok;
  };
  auto isInt = [](const TensorSpec &t) { return t.dtype == "i64" || t.dtype == "i32"; };

  if (!role(K::kTokenIds, false, g->tokenIds))
    return nullptr;
  const TensorSpec &ids = m.inputs[g->tokenIds];
  if (!check(ids, K::kTokenIds,
             isInt(ids) && ids.dims.size() == 2 && isSymbol(ids.dims[1]),
             "i64 or i32 [batch, seq] with a symbolic seq"))
    return nullptr;
  const std::string &B = ids.dims[0], &S = ids.dims[1];
  const std::string batchSeq = "[" + B + ", " + S + "]";
  if (property(m, K::kPositions)) {
    size_t p = 0;
    if (!role(K::kPositions, false, p))
      return nullptr;
    const TensorSpec &t = m.inputs[p];
    if (!check(t, K::kPositions, isInt(t) && t.dims == ids.dims,
               "i64 or i32 " + batchSeq))
      return nullptr;
    g->positions = p;
  }
  if (!role(K::kRaggedPositions, false, g->raggedPositions) ||
      !check(m.inputs[g->raggedPositions], K::kRaggedPositions,
             m.inputs[g->raggedPositions].dtype == "i64" &&
                 m.inputs[g->raggedPositions].dims == std::vector<std::string>{S},
             "i64 [" + S + "]") ||
      !role(K::kSeqStarts, false, g->seqStarts) ||
      !check(m.inputs[g->seqStarts], K::kSeqStarts,
             m.inputs[g->seqStarts].dtype == "i64" &&
                 m.inputs[g->seqStarts].dims.size() == 1,
             "i64 [requests + 1]") ||
      !role(K::kBlockTables, false, g->blockTables) ||
      !check(m.inputs[g->blockTables], K::kBlockTables,
             m.inputs[g->blockTables].dtype == "i32" &&
                 m.inputs[g->blockTables].dims.size() == 2,
             "i32 [requests, max_blocks]") ||
      !role(K::kLogits, true, g->logits))
    return nullptr;
  // With logit rows, the logits are computed for those tokens only.
  std::string rowsDim = S;
  if (property(m, K::kLogitRows)) {
    size_t r = 0;
    if (!role(K::kLogitRows, false, r))
      return nullptr;
    const TensorSpec &t = m.inputs[r];
    if (!check(t, K::kLogitRows,
               t.dtype == "i64" && t.dims.size() == 1 && isSymbol(t.dims[0]) && t.dims[0] != S,
               "i64 [rows] with a symbolic rows"))
      return nullptr;
    g->logitRows = r;
    rowsDim = t.dims[0];
  }
  const TensorSpec &lo = m.outputs[g->logits];
  std::optional<int64_t> vocab;
  if (lo.dims.size() == 3)
    vocab = positiveConstant(lo.dims[2]);
  if (!check(lo, K::kLogits,
             lo.dtype == "f32" && vocab && lo.dims[0] == B && lo.dims[1] == rowsDim,
             "f32 [" + B + ", " + rowsDim + ", vocab] with a constant vocab"))
    return nullptr;
  g->vocabSize = *vocab;
  if (!g->readContextLimit(m, error))
    return nullptr;

  size_t n = 0;
  auto nStreams = property(m, K::kCacheStreams);
  if (!nStreams || !parseIndex(*nStreams, 1u << 20, n) || n == 0) {
    error = nStreams ? "bad serving.cache_streams '" + escapeText(*nStreams) + "'"
                     : "the artifact has no serving.cache_streams";
    return nullptr;
  }
  for (size_t s = 0; s < n; ++s) {
    std::string key = K::cache(s);
    auto c = property(m, key);
    std::istringstream in(c ? *c : "");
    std::string a, b, extra;
    Stream st;
    if (!(in >> a >> b) || (in >> extra)) {
      error = c ? "bad " + key + " '" + escapeText(*c) + "' (want 'POOL_INPUT NEW_OUTPUT')"
                : "the artifact has no " + key;
      return nullptr;
    }
    if (!parseIndex(a, m.inputs.size(), st.pool) ||
        !parseIndex(b, m.outputs.size(), st.output)) {
      error = "bad " + key + " '" + escapeText(*c) + "' (an index out of range)";
      return nullptr;
    }
    if (!claim(false, st.pool, key) || !claim(true, st.output, key))
      return nullptr;
    const TensorSpec &pi = m.inputs[st.pool], &po = m.outputs[st.output];
    std::optional<int64_t> H, D;
    if (pi.dims.size() == 4) {
      H = positiveConstant(pi.dims[2]);
      D = positiveConstant(pi.dims[3]);
    }
    if (!check(pi, key, pi.dtype == "f32" && H && D && isSymbol(pi.dims[0]) &&
                            isSymbol(pi.dims[1]),
               "f32 [blocks, block_size, H, D] with symbolic blocks and block_size "
               "and constant H and D"))
      return nullptr;
    if (!check(po, key,
               po.dtype == "f32" &&
                   po.dims == std::vector<std::string>{B, pi.dims[2], S, pi.dims[3]},
               "f32 [" + B + ", " + pi.dims[2] + ", " + S + ", " + pi.dims[3] + "]"))
      return nullptr;
    st.heads = *H;
    st.dim = *D;
    if (g->rowElems && g->rowElems != *H * *D) {
      error = "the cache streams have rows of different sizes";
      return nullptr;
    }
    g->rowElems = *H * *D;
    g->streams.push_back(st);
  }
  for (size_t i = 0; i < m.inputs.size(); ++i)
    if (inRole[i].empty()) {
      error = "input " + quoted(m.inputs[i].name) + " has no serving role";
      return nullptr;
    }
  if (auto w = property(m, K::kPoolWrites)) {
    if (*w != K::kPoolWritesStep) {
      error = std::string("bad ") + K::kPoolWrites + " '" + escapeText(*w) + "' (want '" +
              K::kPoolWritesStep + "')";
      return nullptr;
    }
    g->stepWritesPools = true;
  }
  g->cacheStreams = int64_t(g->streams.size());
  return g;
}

bool RaggedStepModel::checkBatch(const StepBatch &b, const KVCache &kv,
                                 std::string &error) const {
  const KVCacheConfig &c = kv.config();
  if (kv.rowStride() != rowElems || 2 * c.layers < int64_t(streams.size())) {
    error = "the KV cache does not fit the model (rows of " +
            std::to_string(kv.rowStride()) + " floats, " + std::to_string(c.layers) +
            " layers; the model has rows of " + std::to_string(rowElems) + " and " +
            std::to_string(streams.size()) + " streams)";
    return false;
  }
  size_t R = b.contextLens.size(), T = b.tokens.size();
  if (b.seqStarts.size() != R + 1 || b.blockTables.size() != R ||
      b.logitRows.size() != R || b.positions.size() != T || b.seqStarts[0] != 0 ||
      b.seqStarts[R] != int64_t(T)) {
    error = "bad step batch: its arrays do not agree in size";
    return false;
  }
  bool narrow = (positions && artifact.meta().inputs[*positions].dtype == "i32");
  for (size_t r = 0; r < R; ++r) {
    int64_t first = b.seqStarts[r], n = b.seqStarts[r + 1] - first;
    int64_t ctx = b.contextLens[r];
    const std::vector<int32_t> &table = b.blockTables[r];
    bool ok = n > 0 && first + n <= int64_t(T) && ctx >= n &&
              int64_t(table.size()) >= kv.blocksFor(ctx) &&
              (b.logitRows[r] < 0 || (b.logitRows[r] >= first && b.logitRows[r] < first + n)) &&
              (!narrow || ctx <= std::numeric_limits<int32_t>::max());
    for (int64_t i = 0; ok && i < n; ++i)
      ok = b.positions[size_t(first + i)] == ctx - n + i;
    for (size_t i = 0; ok && i < table.size(); ++i)
      ok = table[i] >= 0 && table[i] < c.numBlocks;
    if (!ok) {
      error = "bad step for request " +
              std::to_string(r < b.seqIds.size() ? b.seqIds[r] : uint64_t(r));
      return false;
    }
  }
  return true;
}

bool RaggedStepModel::step(const StepBatch &batch, KVCache &kv, float *logitsOut,
                           std::string &error) {
  std::vector<const float *> rows;
  std::vector<float> unused; // stepRows copies nothing
  if (!stepRows(batch, kv, unused, rows, error))
    return false;
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r])
      std::memcpy(logitsOut + r * size_t(vocabSize), rows[r],
                  size_t(vocabSize) * sizeof(float));
  return true;
}

bool RaggedStepModel::stepRows(const StepBatch &batch, KVCache &kv, std::vector<float> &,
                               std::vector<const float *> &rows, std::string &error) {
  const ArtifactMeta &m = artifact.meta();
  size_t R = batch.contextLens.size();
  rows.assign(R, nullptr);
  if (R == 0)
    return true;
  if (!checkBatch(batch, kv, error))
    return false;
  StepTimer inputsTime(StepPart::Inputs);
  int64_t T = int64_t(batch.tokens.size()), bs = kv.config().blockSize;
  size_t maxBlocks = 1;
  for (const auto &t : batch.blockTables)
    maxBlocks = std::max(maxBlocks, t.size());
  tables.assign(R * maxBlocks, 0);
  for (size_t r = 0; r < R; ++r)
    std::copy(batch.blockTables[r].begin(), batch.blockTables[r].end(),
              tables.begin() + r * maxBlocks);

  std::vector<TensorView> in(m.inputs.size());
  in[tokenIds] = intView(m.inputs[tokenIds].dtype, {1, T}, batch.tokens, ids64, ids32);
  if (positions)
    in[*positions] =
        intView(m.inputs[*positions].dtype, {1, T}, batch.positions, pos64, pos32);
  in[raggedPositions] = {batch.positions.data(), "i64", {T}};
  in[seqStarts] = {batch.seqStarts.data(), "i64", {int64_t(R) + 1}};
  in[blockTables] = {tables.data(), "i32", {int64_t(R), int64_t(maxBlocks)}};
  if (logitRows) {
    rowTokens.clear();
    for (size_t r = 0; r < R; ++r)
      if (batch.logitRows[r] >= 0)
        rowTokens.push_back(batch.logitRows[r]);
    in[*logitRows] = {rowTokens.data(), "i64", {int64_t(rowTokens.size())}};
  }
  for (size_t s = 0; s < streams.size(); ++s)
    in[streams[s].pool] = {kv.streamPool(s), "f32",
                           {kv.config().numBlocks, bs, streams[s].heads, streams[s].dim},
                           device != nullptr};
  // On a device the call's memory (its new rows among it) lives until the
  // rows are in the pools.
  KeptOutputs kept;
  struct EndCall {
    DeviceServing *d;
    ~EndCall() {
      if (d)
        d->endCall();
    }
  } endCall{device};
  if (device) {
    kept.keep.assign(m.outputs.size(), false);
    kept.pinned = true; // `outputs` is kept from step to step
    for (const Stream &st : streams)
      kept.keep[st.output] = true;
  }
  inputsTime.stop();
  StepTimer callTime(StepPart::Call);
  if (!runGraphViews(artifact, module, in, outputs, error, device, device ? &kept : nullptr))
    return false;
  callTime.stop();
  StepTimer kvTime(StepPart::KVRows);
  if (!writeRows(batch, kv, kept, error))
    return false;
  kvTime.stop();
  StepTimer rowsTime(StepPart::LogitRows);

  // Row k of the logits: token rowTokens[k] (every token without logit rows).
  int64_t n = logitRows ? int64_t(rowTokens.size()) : T;
  const OutputBuffer &l = outputs[logits];
  if (l.shape() != std::vector<int64_t>{1, n, vocabSize}) {
    error = "output " + quoted(m.outputs[logits].name) + " is not [1, " +
            std::to_string(n) + ", " + std::to_string(vocabSize) + "]";
    return false;
  }
  for (size_t r = 0, k = 0; r < R; ++r)
    if (batch.logitRows[r] >= 0) {
      int64_t row = logitRows ? int64_t(k++) : batch.logitRows[r];
      rows[r] = l.as<float>() + row * vocabSize;
    }
  return true;
}

bool RaggedStepModel::writeRows(const StepBatch &batch, KVCache &kv, const KeptOutputs &kept,
                                std::string &error) {
  const ArtifactMeta &m = artifact.meta();
  size_t R = batch.contextLens.size();
  int64_t T = int64_t(batch.tokens.size());
  for (const Stream &st : streams) {
    const OutputBuffer &o = outputs[st.output];
    if (o.shape() != std::vector<int64_t>{1, st.heads, T, st.dim}) {
      error = "output " + quoted(m.outputs[st.output].name) + " is not [1, " +
              std::to_string(st.heads) + ", " + std::to_string(T) + ", " +
              std::to_string(st.dim) + "]";
      return false;
    }
  }
  if (stepWritesPools) // the rows are in the pools already
    return true;
  // Each token's row in the pools: (its request's block table, its position).
  slots.resize(size_t(T));
  for (size_t r = 0; r < R; ++r)
    for (int64_t t = batch.seqStarts[r]; t < batch.seqStarts[r + 1]; ++t)
      slots[size_t(t)] =
          kv.rowOffset(batch.blockTables[r], batch.positions[size_t(t)]) / kv.rowStride();
  void *deviceSlots = nullptr;
  if (device && !device->upload(slots.data(), uint64_t(T) * sizeof(int64_t), deviceSlots, error))
    return false;
  for (size_t s = 0; s < streams.size(); ++s) {
    const Stream &st = streams[s];
    const OutputBuffer &o = outputs[st.output];
    if (device) {
      if (!device->scatterRows(static_cast<const float *>(kept.at[st.output]), kv.streamPool(s),
                               static_cast<const int64_t *>(deviceSlots), T, st.heads,
                               st.dim, error))
        return false;
      continue;
    }
    const float *src = o.as<float>();
    float *dst = kv.streamPool(s);
    for (int64_t t = 0; t < T; ++t) {
      float *row = dst + slots[size_t(t)] * kv.rowStride();
      for (int64_t h = 0; h < st.heads; ++h)
        std::memcpy(row + h * st.dim, src + (h * T + t) * st.dim,
                    size_t(st.dim) * sizeof(float));
    }
  }
  return !device || device->finish(error);
}
