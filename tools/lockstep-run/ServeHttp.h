//===- ServeHttp.h - The OpenAI-compatible HTTP server ----------*- C++ -*-===//
//
// `lockstep-run serve`'s server: cpp-httplib for HTTP, nlohmann::json for
// JSON, and one OnlineEngine that every request joins.
//
//   POST /v1/completions   OpenAI completions (ServeApi.h); stream: true
//                          answers server-sent events, `data: {...}` per
//                          token and `data: [DONE]` at the end
//   GET  /v1/models        the one model
//   GET  /health           {"status": "ok" | "draining", engine counters}
//
// Each choice carries `token_ids` (the completion's ids), `text` (empty
// without a TextCodec) and `lockstep_fingerprint`, the hash chain over every
// logits row the request got (Fingerprint.h), as `lockstep-run generate`
// prints it; the response's `system_fingerprint` names the artifact (its
// checksum) and numerics profile.
//
// Threads. httplib's handler threads parse requests, submit them and wait;
// the engine thread runs steps and pushes each token into the request's own
// queue (under the request's mutex, never a socket), which the handler
// thread drains and writes. A slow client only slows its own handler
// thread; a client that went away fails a write, and its requests are
// cancelled (their KV blocks freed). Errors are JSON:
//   400 bad JSON, a wrong field, a request too long for the model's context
//   404 unknown route (405 is not distinguished), 413 a body over the limit,
//   429 the engine's queue is full, 503 draining, 500 the model failed.
//
// Stopping: `drainAndStop` (SIGINT/SIGTERM) answers new requests 503, waits
// until every request in flight has finished and every response has been
// written, then closes the listener.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_TOOLS_LOCKSTEP_RUN_SERVEHTTP_H
#define LOCKSTEP_TOOLS_LOCKSTEP_RUN_SERVEHTTP_H

#include "ServeText.h"

#include "lockstep/Runtime/Serving/OnlineEngine.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lockstep::run {

struct ServeInfo {
  std::string modelName;         ///< /v1/models' id and each response's model.
  std::string systemFingerprint; ///< Artifact checksum and numerics profile.
  std::vector<int32_t> stopIds;  ///< Ids that end every request (--eos).
};

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8000; ///< 0: any free port.
  size_t maxBodyBytes = 8u << 20;
  int threads = 64; ///< Handler threads: connections served at once.
};

class CompletionServer {
public:
  CompletionServer(rt::OnlineEngine &engine, ServeInfo info, const TextCodec *codec);
  ~CompletionServer();
  CompletionServer(const CompletionServer &) = delete;
  CompletionServer &operator=(const CompletionServer &) = delete;

  /// Binds the listener; `port` gets the port bound (the one asked for, or
  /// a free one for 0). False with `error`.
  bool bind(const HttpOptions &options, int &port, std::string &error);
  /// Serves until drainAndStop; false when the listener failed.
  bool run();
  /// From any thread: refuse new requests (503), wait up to `timeout` for
  /// the requests in flight and their responses, cancel what is left, and
  /// stop the listener. Returns whether everything finished in time.
  bool drainAndStop(std::chrono::milliseconds timeout);

  struct Impl;

private:
  std::unique_ptr<Impl> impl;
};

} // namespace lockstep::run

#endif
