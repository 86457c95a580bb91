// HttpServer: the daemon's small read-only HTTP/1.1 server (GET /metrics,
// /incidents, /healthz, /readyz, /), on Boost.Beast in the daemon's own
// io_context.
//
//   http::HttpServer server(io, options, [&](const http::Request& r) { return api.Handle(r); });
//   if (Status s = server.Start(); !s.ok()) ...   // binds; server.local_port() after
//   ...
//   server.Stop();                                // closes the acceptor and every session
//
// Why not prometheus-cpp's pull Exposer (civetweb): it runs its own thread
// pool, which would read the pipeline's state from another thread, and it
// serves only metrics; /incidents, the status page and the probes belong on
// the same port and the same thread as the state they show. Serving on the
// io_context thread means every handler sees a consistent state without a
// lock, and a handler is only ever a few hundred microseconds of the loop.
//
// Bounded and hostile-client proof:
//   * at most max_connections sessions; a connection beyond it makes room by
//     closing the session idle the longest (waiting for a request or
//     lingering after its last answer; counted: evicted_idle), else the one
//     that has been sending its request the longest, once that is more than
//     slow_request_after (a slowloris client trickling a header; counted:
//     evicted_slow), so neither idle keep-alive clients nor slow ones can
//     starve a liveness probe; only when every session is answering or
//     quickly reading a request is the new one closed at once (counted:
//     refused);
//   * out of file descriptors (EMFILE, ENFILE), the listener does not spin:
//     it serves the connection waiting with a descriptor it holds in reserve
//     (a probe is answered), then waits kAcceptBackoff before accepting again
//     (counted: descriptors_exhausted; the daemon's /readyz says so);
//   * a request's header must arrive whole within request_timeout of the
//     first byte being awaited (slow clients, half-open sockets: counted
//     timeouts, closed); a response must be written within write_timeout;
//   * a request is at most max_request_bytes (header) and has no body:
//     larger headers get 431, a body 413, a malformed request 400; all close
//     the connection (counted: bad_requests);
//   * methods other than GET and HEAD get 405 (with Allow); paths the handler
//     does not know get its 404;
//   * keep-alive up to max_requests_per_connection requests.
//
// Threading: everything runs on the io_context's thread; Start and Stop must
// be called from it (or before run()).
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "fingerprintd/status.h"

namespace fingerprintd::http {

struct Request {
  std::string_view method;         // "GET" or "HEAD" (others never reach the handler)
  std::string_view path;           // "/incidents"
  std::string_view query;          // "deployment=x&since=..." (without '?'), still %-encoded
  std::string_view authorization;  // the Authorization header's value ("" when absent)
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::string www_authenticate;  // a 401's challenge (WWW-Authenticate), else ""
};

using Handler = std::function<Response(const Request&)>;

struct ServerOptions {
  std::string listen = "127.0.0.1:9464";  // host:port, [v6]:port; port 0 = any free port
  size_t max_connections = 64;
  std::chrono::milliseconds request_timeout{5000};
  std::chrono::milliseconds slow_request_after{500};  // evictable at the cap from then on
  std::chrono::milliseconds write_timeout{10000};
  size_t max_request_bytes = 8192;
  size_t max_requests_per_connection = 1000;
  // Told each accept that failed for want of descriptors (the daemon counts
  // it in fingerprintd_accept_failures_total{reason="descriptors"}).
  std::function<void()> on_descriptors_exhausted;
};

// Counters of what the server turned away (exported as metrics by the daemon).
struct ServerStats {
  uint64_t requests = 0;      // requests answered by the handler (any status)
  uint64_t refused = 0;       // connections closed at once: max_connections busy
  uint64_t evicted_idle = 0;  // idle connections closed to make room at max_connections
  uint64_t timeouts = 0;      // connections closed: request or write too slow
  uint64_t bad_requests = 0;  // 400/405/413/431 answers
  uint64_t evicted_slow = 0;  // connections sending a request too slowly, closed at the cap
  uint64_t descriptors_exhausted = 0;  // accepts that failed: out of file descriptors
  // Steady time of the last such failure (0: none), for /readyz.
  std::chrono::steady_clock::time_point last_exhausted{};
};

struct ServerState;  // http_server.cc; shared with the sessions

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, ServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting. InvalidArgumentError for an unparsable
  // listen address, InternalError naming the address when it cannot be bound.
  [[nodiscard]] Status Start();
  // Closes the acceptor and every open session; no handler runs after it.
  void Stop();

  uint16_t local_port() const;
  std::string local_address() const;  // "127.0.0.1:9464", for the log line
  const ServerStats& stats() const;
  size_t open_connections() const;
  size_t idle_connections() const;  // open and waiting for a request, or lingering

 private:
  std::shared_ptr<ServerState> state_;
};

}  // namespace fingerprintd::http
