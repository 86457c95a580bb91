// HttpPost: one POST to an http:// or https:// peer under one deadline over
// resolve, connect, TLS handshake, write and read. It is the Alertmanager
// push's transport (sink/alertmanager.h keeps the queue, the retries and what
// is sent); one connection per POST, closed after the reply.
//
//   auto tls = MakeClientTlsContext(options.tls, "alertmanager.tls_config");  // https only
//   auto auth = AuthorizationValue(options.auth, "alertmanager");  // "" | "Basic .." | "Bearer .."
//   auto post = std::make_shared<HttpPost>(io, url, *tls, server_name, std::move(request),
//       [](boost::system::error_code ec, unsigned status, std::string reply) { ... });
//   post->Run(timeout_us);
//
// Over https the peer's certificate must chain to the CA file (the system's
// CAs when none is given) and name the server (the URL's host, or
// tls.server_name), which is also sent as SNI; TLS 1.2 at least. A failed
// handshake is an error whose message says so ("TLS handshake: certificate
// verify failed ..."), never a silent plain-text fallback.
//
// The context and the credentials are built from their files for each POST
// (one a resend interval at most), so a rotated Secret or certificate is
// taken up without a restart; an error names the key and the file, never the
// secret.
//
// Threading: the io_context's one thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/http_url.h"
#include "fingerprintd/status.h"

namespace fingerprintd::sink {

// The client TLS context for `tls`. Errors start with `key` (the config key
// of the section: "alertmanager.tls_config") and name the file and the reason.
StatusOr<std::shared_ptr<boost::asio::ssl::context>> MakeClientTlsContext(const HttpClientTls& tls,
                                                                          std::string_view key);

// The Authorization header's value for `auth`, its files read now: "Basic
// <base64 user:password>", "Bearer <token>", or "" when none is configured.
// Errors name `key`'s subkey and the file (common/secret_file.h).
StatusOr<std::string> AuthorizationValue(const HttpClientAuth& auth, std::string_view key);

class HttpPost : public std::enable_shared_from_this<HttpPost> {
 public:
  // status and reply are meaningful only when !ec; an error's message says
  // at which step it failed when that is not plain ("TLS handshake: ...").
  using Done = std::function<void(boost::system::error_code ec, const std::string& step,
                                  unsigned status, const std::string& reply)>;

  // `tls` is required for an https url and ignored for http; `server_name`
  // "" means the url's host. Replies beyond max_reply_bytes are an error.
  HttpPost(boost::asio::io_context& io, HttpUrl url, std::shared_ptr<boost::asio::ssl::context> tls,
           std::string server_name,
           boost::beast::http::request<boost::beast::http::string_body> request,
           size_t max_reply_bytes, Done done);
  ~HttpPost();

  // Starts the POST; `done` runs once, on the io_context, unless aborted.
  void Run(int64_t timeout_us);
  // Cancels everything; `done` is not called.
  void Abort();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  void Connected();
  void Write();
  void Finish(boost::system::error_code ec, std::string_view step);
};

}  // namespace fingerprintd::sink
