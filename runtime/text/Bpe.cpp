//===- Bpe.cpp - The BPE model: vocabulary, merges, byte fallback ---------===//
//
// A piece starts as one symbol per character (with continuing_subword_prefix
// and end_of_word_suffix where set). A character outside the vocabulary
// becomes its <0xNN> byte tokens (byte_fallback) or the unknown token (fused
// with a neighbouring unknown when fuse_unk), or is dropped when there is no
// unknown token. Then the adjacent pair of lowest merge rank is merged,
// leftmost first on ties, until no pair has a merge. With ignore_merges, a
// piece that is itself in the vocabulary is that one token.
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <queue>
#include <unordered_map>

namespace lockstep::text::detail {

struct BpeModel::Data {
  std::unordered_map<std::string, int32_t> vocab;
  std::unordered_map<int32_t, std::string> vocabR;
  /// (left id, right id) -> (rank, merged id).
  std::unordered_map<uint64_t, std::pair<uint32_t, int32_t>> merges;
  std::optional<int32_t> unk;
  std::string prefix, suffix;
  bool fuseUnk = false, byteFallback = false, ignoreMerges = false;
  int32_t byteIds[256];
  bool allBytes = false; // every <0xNN> is in the vocabulary
  int32_t maxId = -1;
};

BpeModel::BpeModel() : d(std::make_unique<Data>()) {}
BpeModel::~BpeModel() = default;

static uint64_t pairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

std::unique_ptr<BpeModel> BpeModel::load(const Json &j, std::string &error) {
  const std::string where = "model BPE";
  std::unique_ptr<BpeModel> m(new BpeModel());
  Data &d = *m->d;
  if (j.contains("dropout") && !j["dropout"].is_null()) {
    error = jsonError(where + ": dropout is not supported (it makes encoding random)");
    return nullptr;
  }
  if (!j.contains("vocab") || !j["vocab"].is_object()) {
    error = jsonError(where + ": 'vocab' must be an object of token -> id");
    return nullptr;
  }
  for (auto it = j["vocab"].begin(); it != j["vocab"].end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() > INT32_MAX) {
      error = jsonError(where + ": the id of '" + it.key() + "' is not an id");
      return nullptr;
    }
    int32_t id = static_cast<int32_t>(it.value().get<int64_t>());
    d.vocab[it.key()] = id;
    d.vocabR[id] = it.key();
    d.maxId = std::max(d.maxId, id);
  }
  auto optString = [&](const char *key, std::string &out) {
    if (!j.contains(key) || j[key].is_null())
      return true;
    if (!j[key].is_string()) {
      error = jsonError(where + ": '" + key + "' must be a string or null");
      return false;
    }
    out = j[key].get<std::string>();
    return true;
  };
  std::string unk;
  bool hasUnk = j.contains("unk_token") && !j["unk_token"].is_null();
  if (!optString("unk_token", unk) || !optString("continuing_subword_prefix", d.prefix) ||
      !optString("end_of_word_suffix", d.suffix) ||
      !getBool(j, "fuse_unk", d.fuseUnk, where, error) ||
      !getBool(j, "byte_fallback", d.byteFallback, where, error) ||
      !getBool(j, "ignore_merges", d.ignoreMerges, where, error))
    return nullptr;
  if (hasUnk) {
    auto it = d.vocab.find(unk);
    if (it == d.vocab.end()) {
      // `tokenizers` fails each encode that needs it; refused up front here.
      error = jsonError(where + ": unk_token '" + unk + "' is not in the vocabulary");
      return nullptr;
    }
    d.unk = it->second;
  }
  d.allBytes = true;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = d.vocab.find(name);
    d.byteIds[b] = it == d.vocab.end() ? -1 : it->second;
    d.allBytes &= it != d.vocab.end();
  }

  if (!j.contains("merges") || !j["merges"].is_array()) {
    error = jsonError(where + ": 'merges' must be an array");
    return nullptr;
  }
  const Json &merges = j["merges"];
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Json &mj = merges[rank];
    std::string a, b;
    if (mj.is_string()) {
      const std::string &s = mj.get_ref<const std::string &>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        error = jsonError(where + ": merge " + std::to_string(rank + 1) + " '" + s +
                          "' is not two tokens separated by one space");
        return nullptr;
      }
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (mj.is_array() && mj.size() == 2 && mj[0].is_string() && mj[1].is_string()) {
      a = mj[0].get<std::string>();
      b = mj[1].get<std::string>();
    } else {
      error = jsonError(where + ": merge " + std::to_string(rank + 1) +
                        " is neither \"a b\" nor [a, b]");
      return nullptr;
    }
    auto ia = d.vocab.find(a), ib = d.vocab.find(b);
    if (ia == d.vocab.end() || ib == d.vocab.end()) {
      error = jsonError(where + ": merge " + std::to_string(rank + 1) + " names '" +
                        (ia == d.vocab.end() ? a : b) + "', which is not in the vocabulary");
      return nullptr;
    }
    // As `tokenizers`: the prefix's length is cut off the right token.
    std::string merged = a + b.substr(std::min(d.prefix.size(), b.size()));
    auto im = d.vocab.find(merged);
    if (im == d.vocab.end()) {
      error = jsonError(where + ": merge " + std::to_string(rank + 1) + " makes '" + merged +
                        "', which is not in the vocabulary");
      return nullptr;
    }
    // A repeated pair keeps its last rank, as a map built from the list does.
    d.merges[pairKey(ia->second, ib->second)] = {static_cast<uint32_t>(rank), im->second};
  }
  return m;
}

void BpeModel::tokenize(const std::string &w, std::vector<int32_t> &out) const {
  if (w.empty())
    return;
  if (d->ignoreMerges) {
    auto it = d->vocab.find(w);
    if (it != d->vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  // The initial symbols.
  std::vector<int32_t> ids;
  std::optional<int32_t> pendingUnk;
  std::string s;
  for (size_t i = 0; i < w.size();) {
    size_t n = utf8CharLen(w, i);
    bool first = i == 0, last = i + n >= w.size();
    s.clear();
    if (!first)
      s += d->prefix;
    s.append(w, i, n);
    if (last)
      s += d->suffix;
    i += n;
    auto it = d->vocab.find(s);
    if (it != d->vocab.end()) {
      if (pendingUnk) {
        ids.push_back(*pendingUnk);
        pendingUnk.reset();
      }
      ids.push_back(it->second);
      continue;
    }
    if (d->byteFallback) {
      bool all = true;
      for (unsigned char c : s)
        all &= d->byteIds[c] >= 0;
      if (all) {
        // Like `tokenizers`, a pending unknown is not flushed here: it is
        // added after these bytes.
        for (unsigned char c : s)
          ids.push_back(d->byteIds[c]);
        continue;
      }
    }
    if (d->unk) {
      if (pendingUnk && !d->fuseUnk)
        ids.push_back(*pendingUnk);
      pendingUnk = *d->unk;
    }
  }
  if (pendingUnk)
    ids.push_back(*pendingUnk);

  // Merges, lowest rank first, leftmost on ties.
  struct Sym {
    int32_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Sym> syms(ids.size());
  for (size_t k = 0; k < ids.size(); ++k)
    syms[k] = {ids[k], static_cast<int>(k) - 1,
               k + 1 < ids.size() ? static_cast<int>(k + 1) : -1, true};
  struct Cand {
    uint32_t rank;
    int pos;
    int32_t newId;
    bool operator<(const Cand &o) const { // max-heap: smallest rank, then pos, on top
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Cand> queue;
  auto lookup = [&](int32_t a, int32_t b) -> const std::pair<uint32_t, int32_t> * {
    auto it = d->merges.find(pairKey(a, b));
    return it == d->merges.end() ? nullptr : &it->second;
  };
  for (size_t k = 0; k + 1 < syms.size(); ++k)
    if (auto *m = lookup(syms[k].id, syms[k + 1].id))
      queue.push({m->first, static_cast<int>(k), m->second});
  while (!queue.empty()) {
    Cand top = queue.top();
    queue.pop();
    Sym &cur = syms[top.pos];
    if (!cur.alive || cur.next < 0)
      continue;
    Sym &right = syms[cur.next];
    auto *m = lookup(cur.id, right.id);
    if (!m || m->second != top.newId)
      continue; // stale
    cur.id = top.newId;
    right.alive = false;
    cur.next = right.next;
    if (right.next >= 0)
      syms[right.next].prev = top.pos;
    if (cur.prev >= 0)
      if (auto *pm = lookup(syms[cur.prev].id, cur.id))
        queue.push({pm->first, cur.prev, pm->second});
    if (cur.next >= 0)
      if (auto *nm = lookup(cur.id, syms[cur.next].id))
        queue.push({nm->first, top.pos, nm->second});
  }
  for (const Sym &sy : syms)
    if (sy.alive)
      out.push_back(sy.id);
}

std::optional<int32_t> BpeModel::tokenId(std::string_view token) const {
  auto it = d->vocab.find(std::string(token));
  if (it == d->vocab.end())
    return std::nullopt;
  return it->second;
}

const std::string *BpeModel::idToken(int32_t id) const {
  auto it = d->vocabR.find(id);
  return it == d->vocabR.end() ? nullptr : &it->second;
}

size_t BpeModel::size() const { return d->vocab.size(); }
int32_t BpeModel::maxId() const { return d->maxId; }

} // namespace lockstep::text::detail
