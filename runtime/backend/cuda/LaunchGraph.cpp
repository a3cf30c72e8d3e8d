//===- LaunchGraph.cpp - A call's kernels as one CUDA graph ---------------===//
#include "lockstep/Runtime/Backend/Cuda/LaunchGraph.h"

#include <algorithm>
#include <cstring>

using namespace lockstep::rt;

struct LaunchQueue::Graph {
  LaunchBatch batch; // the arguments its nodes hold now
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  std::vector<CUgraphNode> nodes;
  uint64_t lastUse = 0;
};

namespace {

/// The key of a sequence of kernels: FNV-1a over the function handles.
uint64_t keyOf(const LaunchBatch &b) {
  uint64_t h = 1469598103934665603ull;
  for (const QueuedLaunch &l : b.launches) {
    h ^= uint64_t(reinterpret_cast<uintptr_t>(l.function));
    h *= 1099511628211ull;
  }
  return h ^ b.launches.size();
}

bool sameKernels(const LaunchBatch &a, const LaunchBatch &b) {
  if (a.launches.size() != b.launches.size())
    return false;
  for (size_t i = 0; i < a.launches.size(); ++i)
    if (a.launches[i].function != b.launches[i].function)
      return false;
  return true;
}

CudaKernelNodeParams nodeParams(const QueuedLaunch &l, std::vector<void *> &args) {
  return CudaKernelNodeParams{l.function, l.dims[0], l.dims[1], l.dims[2], l.dims[3],
                              l.dims[4], l.dims[5], l.dims[6], args.data(), nullptr,
                              nullptr, nullptr};
}

} // namespace

LaunchQueue::LaunchQueue() = default;
LaunchQueue::~LaunchQueue() = default;

void LaunchBatch::clear() {
  launches.clear();
  paramOffset.clear();
  paramSize.clear();
  bytes.clear();
}

void LaunchBatch::pointers(size_t i, std::vector<void *> &out) {
  const QueuedLaunch &l = launches[i];
  out.resize(l.numParams);
  for (uint32_t p = 0; p < l.numParams; ++p)
    out[p] = bytes.data() + paramOffset[l.firstParam + p];
}

bool LaunchBatch::sameAs(size_t i, const LaunchBatch &other, size_t j) const {
  const QueuedLaunch &a = launches[i], &b = other.launches[j];
  if (std::memcmp(a.dims, b.dims, sizeof a.dims) || a.numParams != b.numParams)
    return false;
  if (a.numParams == 0)
    return true;
  uint32_t lastA = a.firstParam + a.numParams - 1, lastB = b.firstParam + b.numParams - 1;
  size_t lenA = paramOffset[lastA] + paramSize[lastA] - paramOffset[a.firstParam];
  size_t lenB = other.paramOffset[lastB] + other.paramSize[lastB] -
                other.paramOffset[b.firstParam];
  return lenA == lenB && std::memcmp(bytes.data() + paramOffset[a.firstParam],
                                     other.bytes.data() + other.paramOffset[b.firstParam],
                                     lenA) == 0;
}

void LaunchQueue::configure(const CudaDriver &d, bool wanted, const std::string &why,
                            size_t segment) {
  on_ = wanted && d.graphs.available();
  segment_ = on_ ? segment : 0;
  stats_.segment = segment_;
  stats_.disabled = on_ ? std::string()
                    : !wanted ? why
                              : std::string("the CUDA driver has no graph API");
}

void LaunchQueue::off(const CudaDriver &d, const std::string &why) {
  clear(d);
  on_ = false;
  stats_.disabled = why;
}

bool LaunchQueue::sizesOf(const CudaDriver &d, CUfunction f,
                          const std::vector<uint32_t> *&sizes, std::string &error) {
  auto it = sizes_.find(f);
  if (it == sizes_.end()) {
    std::vector<uint32_t> s;
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      if (d.graphs.cuFuncGetParamInfo(f, i, &offset, &size) != 0)
        break; // past the last argument
      if (size == 0 || size > 4096 || s.size() > 4096) {
        error = "cuFuncGetParamInfo: argument " + std::to_string(i) + " has size " +
                std::to_string(size);
        return false;
      }
      s.push_back(uint32_t(size));
    }
    it = sizes_.emplace(f, std::move(s)).first;
  }
  sizes = &it->second;
  return true;
}

bool LaunchQueue::launch(const CudaDriver &d, CUfunction f, const unsigned dims[7],
                         void **params, std::string &error) {
  ++stats_.kernels;
  if (!on_) {
    if (CUresult r = d.cuLaunchKernel(f, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                                      dims[6], d.stream, params, nullptr)) {
      error = d.describe(r, "cuLaunchKernel");
      return false;
    }
    return true;
  }
  const std::vector<uint32_t> *sizes = nullptr;
  if (!sizesOf(d, f, sizes, error))
    return false;
  if (pending_.launches.empty())
    firstQueued_ = std::chrono::steady_clock::now();
  QueuedLaunch l{f, {}, uint32_t(pending_.paramOffset.size()), uint32_t(sizes->size())};
  std::copy(dims, dims + 7, l.dims);
  for (uint32_t s : *sizes) {
    size_t at = pending_.bytes.size();
    pending_.paramOffset.push_back(uint32_t(at));
    pending_.paramSize.push_back(s);
    pending_.bytes.resize(at + s);
    std::memcpy(pending_.bytes.data() + at, *params++, s);
  }
  pending_.launches.push_back(l);
  if (segment_ && pending_.launches.size() >= segment_) {
    ++stats_.segments;
    return flush(d, error);
  }
  return true;
}

bool LaunchQueue::launchDirect(const CudaDriver &d, LaunchBatch &batch, std::string &error) {
  std::vector<void *> args;
  for (size_t i = 0; i < batch.launches.size(); ++i) {
    const QueuedLaunch &l = batch.launches[i];
    batch.pointers(i, args);
    if (CUresult r = d.cuLaunchKernel(l.function, l.dims[0], l.dims[1], l.dims[2], l.dims[3],
                                      l.dims[4], l.dims[5], l.dims[6], d.stream, args.data(),
                                      nullptr)) {
      error = d.describe(r, "cuLaunchKernel");
      return false;
    }
  }
  return true;
}

bool LaunchQueue::build(const CudaDriver &d, uint64_t key) {
  const CudaGraphApi &api = d.graphs;
  auto g = std::make_unique<Graph>();
  std::vector<void *> args;
  bool ok = api.cuGraphCreate(&g->graph, 0) == 0;
  for (size_t i = 0; ok && i < pending_.launches.size(); ++i) {
    pending_.pointers(i, args);
    CudaKernelNodeParams p = nodeParams(pending_.launches[i], args);
    CUgraphNode node = nullptr;
    CUgraphNode *after = g->nodes.empty() ? nullptr : &g->nodes.back();
    ok = api.cuGraphAddKernelNode(&node, g->graph, after, after ? 1 : 0, &p) == 0;
    g->nodes.push_back(node);
  }
  ok = ok && api.cuGraphInstantiateWithFlags(&g->exec, g->graph, 0) == 0;
  if (!ok) {
    drop(d, *g);
    off(d, "a CUDA graph could not be made");
    return false;
  }
  if (graphs_.size() >= kMaxGraphs) {
    auto oldest = std::min_element(graphs_.begin(), graphs_.end(), [](auto &a, auto &b) {
      return a.second->lastUse < b.second->lastUse;
    });
    drop(d, *oldest->second);
    graphs_.erase(oldest);
  }
  g->batch = pending_;
  graphs_[key] = std::move(g);
  ++stats_.built;
  return true;
}

bool LaunchQueue::replay(const CudaDriver &d, Graph &g, std::string &error) {
  std::vector<void *> args;
  for (size_t i = 0; i < pending_.launches.size(); ++i) {
    if (pending_.sameAs(i, g.batch, i))
      continue;
    pending_.pointers(i, args);
    CudaKernelNodeParams p = nodeParams(pending_.launches[i], args);
    if (d.graphs.cuGraphExecKernelNodeSetParams(g.exec, g.nodes[i], &p) != 0)
      return false; // the caller launches directly
    ++stats_.updates;
  }
  g.batch = pending_;
  g.lastUse = ++clock_;
  if (CUresult r = d.graphs.cuGraphLaunch(g.exec, d.stream)) {
    error = d.describe(r, "cuGraphLaunch");
    return false;
  }
  ++stats_.replays;
  return true;
}

bool LaunchQueue::flush(const CudaDriver &d, std::string &error) {
  if (pending_.launches.empty())
    return true;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  stats_.queueSeconds += std::chrono::duration<double>(t0 - firstQueued_).count();
  ++stats_.flushes;
  uint64_t key = keyOf(pending_);
  auto it = graphs_.find(key);
  bool ok = true, done = false;
  if (it != graphs_.end() && sameKernels(it->second->batch, pending_)) {
    done = replay(d, *it->second, error);
    if (!done && error.empty())
      off(d, "a CUDA graph's node could not be updated");
    ok = done || error.empty();
  } else if (on_ && ++seen_[key] >= 2 && (it == graphs_.end()) && build(d, key)) {
    done = replay(d, *graphs_[key], error);
    ok = done || error.empty();
  }
  if (ok && !done) {
    ++stats_.direct;
    ok = launchDirect(d, pending_, error);
  }
  pending_.clear();
  stats_.flushSeconds += std::chrono::duration<double>(Clock::now() - t0).count();
  return ok;
}

void LaunchQueue::drop(const CudaDriver &d, Graph &g) {
  if (g.exec)
    d.graphs.cuGraphExecDestroy(g.exec);
  if (g.graph)
    d.graphs.cuGraphDestroy(g.graph);
  g.exec = nullptr;
  g.graph = nullptr;
}

void LaunchQueue::clear(const CudaDriver &d) {
  for (auto &[key, g] : graphs_)
    drop(d, *g);
  graphs_.clear();
}
