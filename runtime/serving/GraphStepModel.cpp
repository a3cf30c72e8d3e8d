//===- GraphStepModel.cpp - A compiled graph as the engine's step ---------===//
#include "lockstep/Runtime/Serving/GraphStepModel.h"

#include "lockstep/Artifact/ArtifactMeta.h"
#include "lockstep/Artifact/ServingKeys.h"
#include "lockstep/Runtime/Exec.h"

#include <cstring>
#include <map>
#include <sstream>

using namespace lockstep;
using namespace lockstep::rt;
namespace K = lockstep::serving_keys;
using serving::parseIndex;
using serving::property;

namespace {

/// An integer array of `dtype` (an artifact dtype) with `values`.
bool intArray(const std::string &dtype, std::vector<int64_t> shape,
              const std::vector<int64_t> &values, NpyArray &out) {
  out.dtype = dtypeToNpy(dtype);
  out.shape = std::move(shape);
  size_t size = NpyArray::elementSize(out.dtype);
  if (!size)
    return false;
  out.data.resize(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t *p = out.data.data() + i * size;
    if (dtype == "i64" || dtype == "u64") {
      int64_t v = values[i];
      std::memcpy(p, &v, 8);
    } else if (dtype == "i32" || dtype == "u32") {
      int32_t v = (int32_t)values[i];
      std::memcpy(p, &v, 4);
    } else if (dtype == "f32") {
      float v = (float)values[i];
      std::memcpy(p, &v, 4);
    } else if (dtype == "bool" || dtype == "u8" || dtype == "i8") {
      *p = (uint8_t)values[i];
    } else {
      return false;
    }
  }
  return true;
}

} // namespace

std::unique_ptr<GraphStepModel>
GraphStepModel::create(const LoadedArtifact &artifact, const CpuModule &module,
                       std::string &error) {
  const ArtifactMeta &m = artifact.meta();
  if (auto none = property(m, K::kNone)) {
    error = "the model cannot be served: " + *none;
    return nullptr;
  }
  auto get = [&](const char *k) { return property(m, k); };
  std::unique_ptr<GraphStepModel> g(new GraphStepModel(artifact, module));
  auto ids = get(K::kTokenIds), lg = get(K::kLogits),
       nStreams = get(K::kCacheStreams), batch = get(K::kBatch),
       seq = get(K::kSeq), past = get(K::kPast);
  if (!ids || !lg || !nStreams || !batch || !seq || !past ||
      !parseIndex(*ids, m.inputs.size(), g->tokenIds) ||
      !parseIndex(*lg, m.outputs.size(), g->logits)) {
    error = "the artifact has no serving roles (compiled by an older lockstep-opt?)";
    return nullptr;
  }
  size_t idx = 0;
  if (auto p = get(K::kPositions)) {
    if (!parseIndex(*p, m.inputs.size(), idx)) {
      error = "bad serving.positions";
      return nullptr;
    }
    g->positions = idx;
  }
  if (auto p = get(K::kAttentionMask)) {
    if (!parseIndex(*p, m.inputs.size(), idx)) {
      error = "bad serving.attention_mask";
      return nullptr;
    }
    g->mask = idx;
  }
  const TensorSpec &lo = m.outputs[g->logits];
  if (lo.dtype != "f32" || lo.dims.size() != 3 || lo.dims[0] != *batch ||
      lo.dims[1] != *seq) {
    error = "the logits output is not f32 [" + *batch + ", " + *seq + ", vocab]";
    return nullptr;
  }
  auto v = parseDim(lo.dims[2]);
  if (!v || !v->getConstant() || *v->getConstant() <= 0) {
    error = "the vocab (last dim of the logits) is not a constant";
    return nullptr;
  }
  g->vocabSize = *v->getConstant();
  if (!g->readContextLimit(m, error))
    return nullptr;
  size_t n = 0;
  if (!parseIndex(*nStreams, 1u << 20, n) || n == 0) {
    error = "bad serving.cache_streams";
    return nullptr;
  }
  for (size_t s = 0; s < n; ++s) {
    auto c = get((K::cache(s)).c_str());
    std::istringstream in(c ? *c : "");
    std::string a, b, ax;
    Stream st;
    size_t axis = 0;
    if (!(in >> a >> b >> ax) || !parseIndex(a, m.inputs.size(), st.input) ||
        !parseIndex(b, m.outputs.size(), st.output) || !parseIndex(ax, 64, axis)) {
      error = "bad serving.cache." + std::to_string(s);
      return nullptr;
    }
    const TensorSpec &pi = m.inputs[st.input];
    if (pi.dtype != "f32" || axis == 0 || axis >= pi.dims.size() || pi.dims[axis] != *past) {
      error = "cache input " + quoted(pi.name) + " is not f32 with " + *past + " at axis " + ax;
      return nullptr;
    }
    for (size_t d = 1; d < pi.dims.size(); ++d) {
      if (d == axis)
        continue;
      auto e = parseDim(pi.dims[d]);
      if (!e || !e->getConstant()) {
        error = "cache input " + quoted(pi.name) + " has a non-constant dim " + pi.dims[d];
        return nullptr;
      }
      (d < axis ? st.outer : st.inner) *= *e->getConstant();
    }
    int64_t row = st.outer * st.inner;
    if (g->rowElems && g->rowElems != row) {
      error = "the cache streams have rows of different sizes";
      return nullptr;
    }
    g->rowElems = row;
    g->streams.push_back(st);
  }
  g->cacheStreams = int64_t(g->streams.size());
  return g;
}

bool GraphStepModel::step(const StepBatch &batch, KVCache &kv, float *logitsOut,
                          std::string &error) {
  size_t R = batch.contextLens.size();
  for (size_t r = 0; r < R; ++r)
    if (!runRequest(batch, r, kv,
                    batch.logitRows[r] >= 0 ? logitsOut + r * vocabSize : nullptr, error))
      return false;
  return true;
}

bool GraphStepModel::runRequest(const StepBatch &batch, size_t r, KVCache &kv,
                                float *logitsRow, std::string &error) {
  const ArtifactMeta &m = artifact.meta();
  int64_t first = batch.seqStarts[r], n = batch.seqStarts[r + 1] - first;
  int64_t ctx = batch.contextLens[r], past = ctx - n;
  const std::vector<int32_t> &table = batch.blockTables[r];
  int64_t bs = kv.config().blockSize;
  if (n <= 0 || past < 0 || (int64_t)table.size() * bs < ctx) {
    error = "bad step for request " + std::to_string(batch.seqIds[r]);
    return false;
  }
  auto row = [&](float *p, int64_t pos) {
    return p + (int64_t(table[pos / bs]) * bs + pos % bs) * rowElems;
  };

  std::map<std::string, NpyArray> feed;
  std::vector<int64_t> ids(batch.tokens.begin() + first, batch.tokens.begin() + first + n);
  std::vector<int64_t> pos(batch.positions.begin() + first,
                           batch.positions.begin() + first + n);
  auto put = [&](size_t input, std::vector<int64_t> shape,
                 const std::vector<int64_t> &values) {
    NpyArray a;
    if (!intArray(m.inputs[input].dtype, std::move(shape), values, a)) {
      error = "input " + quoted(m.inputs[input].name) + " has an unsupported dtype " +
              m.inputs[input].dtype;
      return false;
    }
    feed[m.inputs[input].name] = std::move(a);
    return true;
  };
  if (!put(tokenIds, {1, n}, ids) || (positions && !put(*positions, {1, n}, pos)) ||
      (mask && !put(*mask, {1, ctx}, std::vector<int64_t>(ctx, 1))))
    return false;
  // The past of every stream, gathered in position order.
  for (size_t s = 0; s < streams.size(); ++s) {
    const Stream &st = streams[s];
    NpyArray a;
    a.dtype = "f4";
    a.shape.push_back(1);
    // The shape: the input's dims with batch 1 and the axis `past`.
    const TensorSpec &spec = m.inputs[st.input];
    for (size_t d = 1; d < spec.dims.size(); ++d) {
      auto e = parseDim(spec.dims[d]);
      a.shape.push_back(e && e->getConstant() ? *e->getConstant() : past);
    }
    a.data.resize(size_t(st.outer * past * st.inner) * 4);
    float *dst = reinterpret_cast<float *>(a.data.data());
    float *src = kv.streamPool(s);
    for (int64_t p = 0; p < past; ++p) {
      const float *rowp = row(src, p);
      for (int64_t o = 0; o < st.outer; ++o)
        std::memcpy(dst + (o * past + p) * st.inner, rowp + o * st.inner,
                    size_t(st.inner) * 4);
    }
    feed[spec.name] = std::move(a);
  }
  NamedArrays outs;
  if (!runGraph(artifact, module, feed, outs, error))
    return false;
  // The new rows of every present, scattered to the request's blocks.
  for (size_t s = 0; s < streams.size(); ++s) {
    const Stream &st = streams[s];
    const NpyArray &a = outs[st.output].second;
    if ((int64_t)a.data.size() != st.outer * ctx * st.inner * 4) {
      error = "output " + quoted(outs[st.output].first) + " is not the past grown by " +
              std::to_string(n) + " rows";
      return false;
    }
    const float *srcp = reinterpret_cast<const float *>(a.data.data());
    float *dstPool = kv.streamPool(s);
    for (int64_t p = past; p < ctx; ++p) {
      float *rowp = row(dstPool, p);
      for (int64_t o = 0; o < st.outer; ++o)
        std::memcpy(rowp + o * st.inner, srcp + (o * ctx + p) * st.inner,
                    size_t(st.inner) * 4);
    }
  }
  if (logitsRow) {
    int64_t at = batch.logitRows[r] - first;
    const NpyArray &l = outs[logits].second;
    if (at < 0 || at >= n || (int64_t)l.data.size() != n * vocabSize * 4) {
      error = "bad logits row for request " + std::to_string(batch.seqIds[r]);
      return false;
    }
    std::memcpy(logitsRow, l.data.data() + size_t(at * vocabSize) * 4,
                size_t(vocabSize) * 4);
  }
  return true;
}
