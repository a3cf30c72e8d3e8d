//===- ServeHttp.cpp - The OpenAI-compatible HTTP server ------------------===//
#include "ServeHttp.h"
#include "ServeApi.h"

#include "lockstep/Runtime/Serving/Fingerprint.h"
#include "lockstep/Runtime/Serving/Logprobs.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <set>

using namespace lockstep::rt;
using namespace lockstep::run;
using json = nlohmann::ordered_json;

namespace {

std::string dump(const json &j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

ApiError apiError(int status, const std::string &message, const std::string &type,
                  const std::string &code, const std::string &param = "") {
  ApiError e;
  e.status = status;
  e.message = message;
  e.type = type;
  e.code = code;
  e.param = param;
  return e;
}

void sendError(httplib::Response &res, const ApiError &e) {
  res.status = e.status;
  res.set_content(e.json(), "application/json");
}

/// One choice of a completion: one engine request.
struct Choice {
  std::vector<int32_t> prompt;
  uint64_t engineId = 0;
  // Written by the engine thread, under Exchange::m.
  std::vector<int32_t> tokens; ///< The completion (a stop token excluded).
  std::vector<TokenLogprobs> logprobs;
  uint64_t fingerprint = kFingerprintIV; ///< Chain after the last row seen.
  size_t textCut = std::string::npos;    ///< Where a stop string starts.
  bool finished = false;
  FinishReason why = FinishReason::Length;
  RequestStatus status = RequestStatus::Ok;
  std::string error;
  // The handler thread's, when streaming.
  size_t sent = 0;
  std::string textSent;
  bool finalSent = false;
};

/// One HTTP request: its choices and what the engine has produced so far.
struct Exchange {
  std::mutex m;
  std::condition_variable cv;
  CompletionParams params;
  std::vector<Choice> choices;
  std::string id;
  int64_t created = 0;
  bool allFinished() const {
    for (const Choice &c : choices)
      if (!c.finished)
        return false;
    return true;
  }
};

} // namespace

struct CompletionServer::Impl {
  OnlineEngine &engine;
  ServeInfo info;
  const TextCodec *codec;
  httplib::Server svr;
  int64_t started = int64_t(std::time(nullptr));
  std::atomic<uint64_t> nextId{1};
  // Responses still being written (streams until their releaser runs).
  std::mutex openMutex;
  std::condition_variable openCv;
  int64_t open = 0;

  Impl(OnlineEngine &engine, ServeInfo info, const TextCodec *codec)
      : engine(engine), info(std::move(info)), codec(codec) {}

  void opened() {
    std::lock_guard<std::mutex> lock(openMutex);
    ++open;
  }
  void closed() {
    std::lock_guard<std::mutex> lock(openMutex);
    if (--open == 0)
      openCv.notify_all();
  }

  void routes();
  void completions(const httplib::Request &req, httplib::Response &res);
  OnlineCallbacks callbacks(const std::shared_ptr<Exchange> &ex, size_t i);
  void cancelAll(const Exchange &ex);
  std::string text(const Choice &c) const;
  json logprobsJson(const Choice &c, size_t from, size_t to, size_t textOffset) const;
  json choiceJson(const Exchange &ex, size_t i) const;
  json chunkHead(const Exchange &ex) const;
  bool streamNext(Exchange &ex, std::string &out, bool &done);
  std::string textDelta(const Exchange &ex, Choice &c, size_t n, bool final) const;
};

CompletionServer::CompletionServer(OnlineEngine &engine, ServeInfo info, const TextCodec *codec)
    : impl(std::make_unique<Impl>(engine, std::move(info), codec)) {
  impl->routes();
}

CompletionServer::~CompletionServer() = default;

bool CompletionServer::bind(const HttpOptions &o, int &port, std::string &error) {
  httplib::Server &svr = impl->svr;
  int threads = o.threads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  svr.set_payload_max_length(o.maxBodyBytes);
  svr.set_keep_alive_timeout(2);
  svr.set_tcp_nodelay(true); // each SSE event goes out at once
  if (o.port == 0) {
    port = svr.bind_to_any_port(o.host);
    if (port <= 0) {
      error = "cannot listen on " + o.host + " (any port)";
      return false;
    }
  } else {
    if (!svr.bind_to_port(o.host, o.port)) {
      error = "cannot listen on " + o.host + ":" + std::to_string(o.port) +
              " (in use, or not an address of this machine)";
      return false;
    }
    port = o.port;
  }
  return true;
}

bool CompletionServer::run() { return impl->svr.listen_after_bind(); }

bool CompletionServer::drainAndStop(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  impl->engine.beginDrain();
  bool ok = impl->engine.waitIdle(timeout);
  if (ok) {
    std::unique_lock<std::mutex> lock(impl->openMutex);
    ok = impl->openCv.wait_until(lock, deadline, [&] { return impl->open == 0; });
  }
  // Past the timeout what is left is cancelled first (a handler waiting for
  // a request would otherwise keep the listener's threads from stopping),
  // and the streams get a second to write their error event.
  if (!ok) {
    impl->engine.shutdown();
    std::unique_lock<std::mutex> lock(impl->openMutex);
    impl->openCv.wait_for(lock, std::chrono::seconds(1), [&] { return impl->open == 0; });
  }
  impl->svr.stop();
  return ok;
}

void CompletionServer::Impl::routes() {
  svr.Post("/v1/completions", [this](const httplib::Request &req, httplib::Response &res) {
    completions(req, res);
  });
  svr.Get("/v1/models", [this](const httplib::Request &, httplib::Response &res) {
    json model = {{"id", info.modelName},
                  {"object", "model"},
                  {"created", started},
                  {"owned_by", "lockstep"},
                  {"max_model_len", engine.config().scheduler.maxContext}};
    res.set_content(dump({{"object", "list"}, {"data", json::array({model})}}),
                    "application/json");
  });
  svr.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
    OnlineStats s = engine.stats();
    json j = {{"status", engine.isDraining() ? "draining" : "ok"},
              {"model", info.modelName},
              {"system_fingerprint", info.systemFingerprint},
              {"in_flight", s.inFlight},
              {"requests_finished", s.finished},
              {"requests_cancelled", s.cancelled},
              {"refused_queue_full", s.refusedFull},
              {"steps", s.steps},
              {"generated_tokens", s.generated},
              {"largest_batch", s.largestBatchSeqs},
              {"preemptions", s.preemptions},
              {"kv_blocks", s.totalBlocks},
              {"free_kv_blocks", s.freeBlocks},
              {"model_failures", s.modelFailures}};
    res.set_content(dump(j), "application/json");
  });
  // Every error httplib answers by itself (404, 413, 400 for a bad request
  // line...) gets an OpenAI-style JSON body; the handlers' own errors
  // already have one.
  svr.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request &req, httplib::Response &res) {
        if (!res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        ApiError e;
        e.status = res.status;
        if (res.status == 404) {
          e.message = "no route " + req.method + " " + req.path +
                      " (POST /v1/completions, GET /v1/models, GET /health)";
          e.code = "not_found";
        } else if (res.status == 413) {
          e.message = "the request body is larger than the server accepts (--max-body-bytes)";
          e.code = "payload_too_large";
        } else {
          e.message = "HTTP status " + std::to_string(res.status) +
                      (res.status == 400 ? ": the request is malformed" : "");
          e.type = res.status >= 500 ? "server_error" : "invalid_request_error";
        }
        res.set_content(e.json(), "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  svr.set_exception_handler([](const httplib::Request &, httplib::Response &res,
                               std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception &e) {
      what = e.what();
    } catch (...) {
    }
    sendError(res, apiError(500, "internal error: " + what, "server_error", "internal_error"));
  });
}

OnlineCallbacks CompletionServer::Impl::callbacks(const std::shared_ptr<Exchange> &ex,
                                                  size_t i) {
  std::set<int32_t> stopIds(ex->params.stopIds.begin(), ex->params.stopIds.end());
  stopIds.insert(info.stopIds.begin(), info.stopIds.end());
  std::optional<int64_t> top = ex->params.logprobs;
  const TextCodec *c = codec;
  OnlineCallbacks cb;
  // Engine thread: only the request's own lock, never a socket.
  cb.onToken = [ex, i, stopIds, top, c](const TokenEvent &e) {
    bool stop = stopIds.count(e.token) != 0;
    TokenLogprobs lp;
    if (!stop && top)
      lp = tokenLogprobs(e.logits, e.vocab, e.token, *top);
    std::lock_guard<std::mutex> lock(ex->m);
    Choice &ch = ex->choices[i];
    ch.fingerprint = e.fingerprint;
    if (!stop) {
      ch.tokens.push_back(e.token);
      if (top)
        ch.logprobs.push_back(std::move(lp));
      if (c && !ex->params.stopTexts.empty()) {
        std::string t = c->decode(ch.tokens);
        for (const std::string &s : ex->params.stopTexts)
          if (size_t at = t.find(s); at != std::string::npos) {
            ch.textCut = std::min(ch.textCut, at);
            stop = true;
          }
      }
    }
    ex->cv.notify_all();
    return !stop;
  };
  cb.onFinish = [ex, i](const RequestResult &r, FinishReason why) {
    std::lock_guard<std::mutex> lock(ex->m);
    Choice &ch = ex->choices[i];
    ch.finished = true;
    ch.why = why;
    ch.status = r.status;
    ch.error = r.reason;
    ex->cv.notify_all();
  };
  return cb;
}

void CompletionServer::Impl::cancelAll(const Exchange &ex) {
  for (const Choice &c : ex.choices)
    if (c.engineId)
      engine.cancel(c.engineId);
}

std::string CompletionServer::Impl::text(const Choice &c) const {
  if (!codec)
    return "";
  std::string t = codec->decode(c.tokens);
  return c.textCut < t.size() ? t.substr(0, c.textCut) : t;
}

json CompletionServer::Impl::logprobsJson(const Choice &c, size_t from, size_t to,
                                          size_t textOffset) const {
  json tokens = json::array(), lps = json::array(), tops = json::array(),
       offsets = json::array();
  auto name = [&](int32_t id) {
    return codec ? codec->decode({id}) : "token_id:" + std::to_string(id);
  };
  for (size_t k = from; k < to && k < c.logprobs.size(); ++k) {
    const TokenLogprobs &lp = c.logprobs[k];
    std::string n = name(lp.token);
    tokens.push_back(n);
    lps.push_back(lp.logprob); // NaN is written as null
    json top = json::object();
    for (const auto &[id, v] : lp.top)
      top[name(id)] = v;
    tops.push_back(top);
    offsets.push_back(textOffset);
    textOffset += codec ? n.size() : 0;
  }
  return {{"tokens", tokens},
          {"token_logprobs", lps},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

static const char *finishName(FinishReason why) {
  return why == FinishReason::Length ? "length" : "stop";
}

json CompletionServer::Impl::choiceJson(const Exchange &ex, size_t i) const {
  const Choice &c = ex.choices[i];
  return {{"index", i},
          {"text", text(c)},
          {"token_ids", c.tokens},
          {"logprobs", ex.params.logprobs ? logprobsJson(c, 0, c.tokens.size(), 0) : json()},
          {"finish_reason", finishName(c.why)},
          {"lockstep_fingerprint", Fingerprint::toHex(c.fingerprint)}};
}

json CompletionServer::Impl::chunkHead(const Exchange &ex) const {
  return {{"id", ex.id},
          {"object", "text_completion"},
          {"created", ex.created},
          {"model", info.modelName},
          {"system_fingerprint", info.systemFingerprint}};
}

namespace {

ApiError finishError(const Choice &c) {
  if (c.status == RequestStatus::Cancelled)
    return apiError(503, "the request was cancelled: " + c.error, "server_error", "cancelled");
  if (c.status == RequestStatus::Rejected)
    return apiError(400, c.error, "invalid_request_error", "invalid_value");
  return apiError(500, "the model failed: " + c.error, "server_error", "model_failed");
}

} // namespace

// The text of the first `n` tokens that is safe to send and not sent yet,
// and marks it sent. Until the choice is final, a trailing U+FFFD (a
// character whose bytes are not all there yet) and a trailing prefix of a
// stop string are held back; text that a later decode rewrites is never
// sent twice (nothing more is sent until the text extends what was sent).
std::string CompletionServer::Impl::textDelta(const Exchange &ex, Choice &c, size_t n,
                                              bool final) const {
  if (!codec)
    return "";
  std::string t = codec->decode(
      std::vector<int32_t>(c.tokens.begin(), c.tokens.begin() + std::ptrdiff_t(n)));
  if (c.textCut < t.size())
    t.resize(c.textCut);
  size_t keep = t.size();
  if (!final) {
    static const std::string kReplacement = "\xEF\xBF\xBD";
    while (keep >= 3 && t.compare(keep - 3, 3, kReplacement) == 0)
      keep -= 3;
    size_t hold = 0;
    for (const std::string &s : ex.params.stopTexts)
      for (size_t len = std::min(s.size() - 1, keep); len > hold; --len)
        if (t.compare(keep - len, len, s, 0, len) == 0) {
          hold = len;
          break;
        }
    keep -= hold;
  }
  if (keep <= c.textSent.size() || t.compare(0, c.textSent.size(), c.textSent) != 0)
    return "";
  std::string delta = t.substr(c.textSent.size(), keep - c.textSent.size());
  c.textSent += delta;
  return delta;
}

// Appends to `out` the events of `ex` not sent yet (under ex.m); `done`
// when the stream is complete ([DONE] written). Returns whether anything
// was added.
bool CompletionServer::Impl::streamNext(Exchange &ex, std::string &out, bool &done) {
  size_t before = out.size();
  auto event = [&](const json &j) { out += "data: " + dump(j) + "\n\n"; };
  bool allFinal = true;
  for (size_t i = 0; i < ex.choices.size(); ++i) {
    Choice &c = ex.choices[i];
    // A choice's last tokens may be cut by a stop string: text is only
    // known for sure once it finished.
    for (; c.sent < c.tokens.size(); ++c.sent) {
      std::string delta = textDelta(ex, c, c.sent + 1, /*final=*/false);
      json ch = {{"index", i},
                 {"text", delta},
                 {"token_ids", {c.tokens[c.sent]}},
                 {"logprobs", ex.params.logprobs
                                  ? logprobsJson(c, c.sent, c.sent + 1,
                                                 c.textSent.size() - delta.size())
                                  : json()},
                 {"finish_reason", nullptr}};
      json j = chunkHead(ex);
      j["choices"] = json::array({ch});
      event(j);
    }
    if (c.finished && !c.finalSent) {
      c.finalSent = true;
      if (c.status != RequestStatus::Ok) {
        json err = json::parse(finishError(c).json());
        event(err);
      } else {
        json ch = {{"index", i},
                   {"text", textDelta(ex, c, c.tokens.size(), /*final=*/true)},
                   {"token_ids", json::array()},
                   {"logprobs", nullptr},
                   {"finish_reason", finishName(c.why)},
                   {"lockstep_fingerprint", Fingerprint::toHex(c.fingerprint)}};
        json j = chunkHead(ex);
        j["choices"] = json::array({ch});
        event(j);
      }
    }
    allFinal = allFinal && c.finalSent;
  }
  if (allFinal && !done) {
    if (ex.params.includeUsage) {
      int64_t p = 0, g = 0;
      for (const Choice &c : ex.choices)
        p += int64_t(c.prompt.size()), g += int64_t(c.tokens.size());
      json j = chunkHead(ex);
      j["choices"] = json::array();
      j["usage"] = {{"prompt_tokens", p}, {"completion_tokens", g}, {"total_tokens", p + g}};
      event(j);
    }
    out += "data: [DONE]\n\n";
    done = true;
  }
  return out.size() > before;
}

void CompletionServer::Impl::completions(const httplib::Request &req,
                                         httplib::Response &res) {
  auto ex = std::make_shared<Exchange>();
  ApiError err;
  if (!parseCompletion(req.body, codec, ex->params, err))
    return sendError(res, err);
  if (engine.isDraining())
    return sendError(res, apiError(503, "the server is shutting down", "server_error",
                                   "draining"));
  const CompletionParams &p = ex->params;
  const SchedulerConfig &sc = engine.config().scheduler;
  for (size_t i = 0; i < p.prompts.size(); ++i) {
    int64_t n = int64_t(p.prompts[i].size());
    if (p.maxTokens > sc.maxContext - n)
      return sendError(
          res, apiError(400,
                        "this model's maximum context is " + std::to_string(sc.maxContext) +
                            " tokens" +
                            (sc.maxContextSource.empty() ? "" : " (" + sc.maxContextSource + ")") +
                            "; the request asks for " + std::to_string(n) + " prompt tokens + " +
                            std::to_string(p.maxTokens) + " max_tokens" +
                            (p.prompts.size() > 1 ? " (prompt " + std::to_string(i) + ")" : ""),
                        "invalid_request_error", "context_length_exceeded", "max_tokens"));
  }
  ex->id = "cmpl-" + std::to_string(nextId++);
  ex->created = int64_t(std::time(nullptr));
  ex->choices.resize(p.prompts.size());
  for (size_t i = 0; i < p.prompts.size(); ++i)
    ex->choices[i].prompt = p.prompts[i];
  // The callbacks touch other fields of the choices than engineId, under
  // ex->m; engineId is this thread's.
  {
    for (size_t i = 0; i < p.prompts.size(); ++i) {
      Request r;
      r.prompt = p.prompts[i];
      r.maxNewTokens = p.maxTokens;
      r.sampling.temperature = float(p.temperature);
      r.sampling.topP = float(p.topP);
      r.sampling.topK = int(p.topK);
      r.sampling.seed = p.seed + i;
      std::string reason;
      uint64_t id = 0;
      SubmitStatus s = engine.submit(r, callbacks(ex, i), id, reason);
      if (s == SubmitStatus::Accepted) {
        ex->choices[i].engineId = id;
        continue;
      }
      cancelAll(*ex);
      std::string which = p.prompts.size() > 1 ? "prompt " + std::to_string(i) + ": " : "";
      if (s == SubmitStatus::Invalid)
        return sendError(res, apiError(400, which + reason, "invalid_request_error",
                                       "invalid_value", "prompt"));
      if (s == SubmitStatus::QueueFull)
        return sendError(res, apiError(429, reason + "; retry later", "rate_limit_error",
                                       "queue_full"));
      return sendError(res, apiError(503, reason, "server_error", "draining"));
    }
  }

  if (!p.stream) {
    std::unique_lock<std::mutex> lock(ex->m);
    ex->cv.wait(lock, [&] { return ex->allFinished(); });
    for (const Choice &c : ex->choices)
      if (c.status != RequestStatus::Ok)
        return sendError(res, finishError(c));
    json j = chunkHead(*ex);
    j["choices"] = json::array();
    int64_t pt = 0, gt = 0;
    for (size_t i = 0; i < ex->choices.size(); ++i) {
      j["choices"].push_back(choiceJson(*ex, i));
      pt += int64_t(ex->choices[i].prompt.size());
      gt += int64_t(ex->choices[i].tokens.size());
    }
    j["usage"] = {{"prompt_tokens", pt}, {"completion_tokens", gt}, {"total_tokens", pt + gt}};
    res.set_content(dump(j), "application/json");
    return;
  }

  // Streaming: httplib calls the provider on this thread after the handler
  // returns, again and again until it says done. It waits for tokens (a
  // second at most, then writes an SSE comment, so that a client that went
  // away is noticed while its request waits), and a failed write cancels
  // the requests.
  opened();
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, ex](size_t, httplib::DataSink &sink) {
        std::string out;
        bool done = false;
        {
          std::unique_lock<std::mutex> lock(ex->m);
          auto news = [&] {
            for (const Choice &c : ex->choices)
              if (c.sent < c.tokens.size() || (c.finished && !c.finalSent))
                return true;
            return false;
          };
          ex->cv.wait_for(lock, std::chrono::seconds(1), news);
          streamNext(*ex, out, done);
        }
        if (out.empty())
          out = ": waiting\n\n";
        if (!sink.write(out.data(), out.size())) {
          cancelAll(*ex);
          return false;
        }
        if (done)
          sink.done();
        return true;
      },
      [this, ex](bool success) {
        if (!success)
          cancelAll(*ex);
        closed();
      });
}
