// Api: what each path of the daemon's HTTP server answers. Pure request ->
// response over the daemon's state, so it is tested without sockets:
//
//   http::Api api(metrics, store, FINGERPRINTD_VERSION);
//   api.SetReady(false, "starting");
//   HttpServer server(io, options, [&](const Request& r) { return api.Handle(r, WallNow()); });
//   api.SetServerStats(&server.stats());
//
//   GET /metrics     Prometheus text format 0.0.4 (sink::Metrics)
//   GET /incidents   JSON array of open and recent incidents (the JSONL objects);
//                    ?deployment=NAME and ?since=RFC3339|UNIX-SECONDS (last hit
//                    at or after it); a bad parameter is a 400 naming it
//   GET /healthz     200 "ok" while the io loop answers
//   GET /readyz      200 once the rules are loaded and every source is open
//                    and readable (no glob matching nothing, no file or
//                    directory that cannot be read), else 503 naming each
//   GET /            the status page (status_page.h): incidents and sources
//   anything else    404
//
// With a bearer token set (SetBearerToken: `http.auth_token_file`, required
// for a listener beyond loopback), every path but /healthz and /readyz (and
// /metrics unless `http.metrics_auth`) answers 401 with a Bearer challenge
// unless the request carries `Authorization: Bearer <token>`.
//
// Threading: the io_context thread, like the state it reads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/http_server.h"
#include "http/status_page.h"
#include "sink/incident_store.h"
#include "sink/metrics.h"

namespace fingerprintd::http {

class Api {
 public:
  Api(sink::Metrics& metrics, sink::IncidentStore& store, std::string version);

  Response Handle(const Request& request, int64_t now_us);

  void SetReady(bool ready, std::string reason);
  // What the daemon reads, for the status page; the daemon sets it before
  // each request for `/`.
  void SetSources(std::vector<source::SourceStatus> sources) { sources_ = std::move(sources); }
  // The server's own counters, exported with the metrics (may stay null).
  void SetServerStats(const ServerStats* stats) { server_stats_ = stats; }
  // The token requests must present ("" = none asked); `metrics`: /metrics too.
  void SetBearerToken(std::string token, bool metrics) {
    token_ = std::move(token);
    metrics_auth_ = metrics;
  }

 private:
  Response Incidents(std::string_view query);
  // Whether `request` may see `path` (see the header).
  bool Authorized(const Request& request) const;

  sink::Metrics& metrics_;
  sink::IncidentStore& store_;
  std::string version_;
  const ServerStats* server_stats_ = nullptr;
  std::vector<source::SourceStatus> sources_;
  std::string token_;
  bool metrics_auth_ = false;
  bool ready_ = false;
  std::string not_ready_reason_ = "starting";
};

// Decodes %XX and '+' of a query-string component.
std::string PercentDecode(std::string_view text);

}  // namespace fingerprintd::http
