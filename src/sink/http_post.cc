// HttpPost: see http_post.h. The stream is a plain tcp_stream for http:// or
// an ssl_stream over one for https://; every step is written once, over
// whichever it is.
#include "sink/http_post.h"

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>

#include "common/secret_file.h"

namespace fingerprintd::sink {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;

namespace {

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n =
        (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(n >> shift) & 63];
  }
  if (const size_t left = bytes.size() - i; left > 0) {
    uint32_t n = uint8_t(bytes[i]) << 16;
    if (left == 2) n |= uint8_t(bytes[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += left == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// "cannot be read: No such file or directory" before OpenSSL's vaguer reason.
Status CheckReadable(std::string_view key, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (in.is_open()) return OkStatus();
  return NotFoundError(std::string(key) + ": " + path +
                       ": cannot be read: " + std::strerror(errno));
}

// A literal IPv4 or IPv6 address: verified against the certificate's IP
// entries and never sent as SNI (RFC 6066 forbids it).
bool IsIpAddress(const std::string& host) {
  beast::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

}  // namespace

StatusOr<std::shared_ptr<ssl::context>> MakeClientTlsContext(const HttpClientTls& tls,
                                                             std::string_view key) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  context->set_verify_mode(ssl::verify_peer);
  beast::error_code ec;
  const std::string k(key);
  if (tls.ca_file.empty()) {
    context->set_default_verify_paths(ec);
    if (ec) return InternalError(k + ": the system's CA certificates: " + ec.message());
  } else {
    if (Status s = CheckReadable(k + ".ca_file", tls.ca_file); !s.ok()) return s;
    context->load_verify_file(tls.ca_file, ec);
    if (ec) {
      return InvalidArgumentError(k + ".ca_file: " + tls.ca_file +
                                  ": not PEM certificates: " + ec.message());
    }
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return InvalidArgumentError(k + ": cert_file and key_file go together (mutual TLS)");
  }
  if (!tls.cert_file.empty()) {
    if (Status s = CheckReadable(k + ".cert_file", tls.cert_file); !s.ok()) return s;
    if (Status s = CheckReadable(k + ".key_file", tls.key_file); !s.ok()) return s;
    context->use_certificate_chain_file(tls.cert_file, ec);
    if (ec) {
      return InvalidArgumentError(k + ".cert_file: " + tls.cert_file +
                                  ": not a PEM certificate: " + ec.message());
    }
    context->use_private_key_file(tls.key_file, ssl::context::pem, ec);
    if (ec) {
      return InvalidArgumentError(k + ".key_file: " + tls.key_file +
                                  ": not a PEM private key: " + ec.message());
    }
    if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
      return InvalidArgumentError(k + ".key_file: " + tls.key_file + ": not the key of cert_file " +
                                  tls.cert_file);
    }
  }
  return context;
}

StatusOr<std::string> AuthorizationValue(const HttpClientAuth& auth, std::string_view key) {
  const std::string k(key);
  if (!auth.bearer_token_file.empty()) {
    auto token =
        ReadSecretFile(k + ".bearer_token_file", auth.bearer_token_file, SecretShape::kToken);
    if (!token.ok()) return token.status();
    return "Bearer " + *token;
  }
  if (auth.username.empty() && auth.password_file.empty()) return std::string();
  auto password =
      ReadSecretFile(k + ".basic_auth.password_file", auth.password_file, SecretShape::kPassword);
  if (!password.ok()) return password.status();
  return "Basic " + Base64(auth.username + ":" + *password);
}

struct HttpPost::Impl {
  Impl(asio::io_context& io, HttpUrl u, std::shared_ptr<ssl::context> t, std::string name,
       http::request<http::string_body> r, Done d)
      : url(std::move(u)),
        tls(std::move(t)),
        server_name(name.empty() ? url.host : std::move(name)),
        resolver(io),
        plain(io),
        deadline(io),
        request(std::move(r)),
        done(std::move(d)) {
    if (url.tls && tls) secure.emplace(io, *tls);
  }

  // The stream the HTTP exchange runs over.
  template <class F>
  void WithStream(F f) {
    if (secure) {
      f(*secure);
    } else {
      f(plain);
    }
  }
  beast::tcp_stream& Lowest() { return secure ? beast::get_lowest_layer(*secure) : plain; }

  HttpUrl url;
  std::shared_ptr<ssl::context> tls;  // holds the context the stream refers to
  std::string server_name;
  tcp::resolver resolver;
  beast::tcp_stream plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  asio::steady_timer deadline;
  http::request<http::string_body> request;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  Done done;
  bool finished = false;
};

HttpPost::HttpPost(asio::io_context& io, HttpUrl url, std::shared_ptr<ssl::context> tls,
                   std::string server_name, http::request<http::string_body> request,
                   size_t max_reply_bytes, Done done)
    : impl_(std::make_unique<Impl>(io, std::move(url), std::move(tls), std::move(server_name),
                                   std::move(request), std::move(done))) {
  impl_->parser.body_limit(max_reply_bytes);
}

HttpPost::~HttpPost() = default;

void HttpPost::Run(int64_t timeout_us) {
  auto self = shared_from_this();
  if (impl_->url.tls && !impl_->secure) {
    // A caller's bug, reported as a failed POST rather than sent in clear.
    return Finish(asio::error::invalid_argument, "TLS: no client context for an https url");
  }
  impl_->deadline.expires_after(std::chrono::microseconds(timeout_us));
  impl_->deadline.async_wait([self](beast::error_code ec) {
    if (!ec) self->Finish(asio::error::timed_out, "");
  });
  impl_->resolver.async_resolve(impl_->url.host, impl_->url.port,
                                [self](beast::error_code ec, tcp::resolver::results_type results) {
                                  if (ec) return self->Finish(ec, "");
                                  self->impl_->Lowest().async_connect(
                                      results, [self](beast::error_code ec, const auto&) {
                                        if (ec) return self->Finish(ec, "");
                                        self->Connected();
                                      });
                                });
}

void HttpPost::Connected() {
  if (!impl_->secure) return Write();
  auto self = shared_from_this();
  SSL* handle = impl_->secure->native_handle();
  const std::string& name = impl_->server_name;
  if (!IsIpAddress(name)) SSL_set_tlsext_host_name(handle, name.c_str());
  impl_->secure->set_verify_callback(ssl::host_name_verification(name));
  impl_->secure->async_handshake(ssl::stream_base::client, [self](beast::error_code ec) {
    if (ec) return self->Finish(ec, "TLS handshake");
    self->Write();
  });
}

void HttpPost::Write() {
  auto self = shared_from_this();
  impl_->WithStream([&](auto& stream) {
    http::async_write(stream, impl_->request, [self, &stream](beast::error_code ec, size_t) {
      if (ec) return self->Finish(ec, "");
      http::async_read(stream, self->impl_->buffer, self->impl_->parser,
                       [self](beast::error_code ec, size_t) { self->Finish(ec, ""); });
    });
  });
}

void HttpPost::Abort() {
  impl_->done = nullptr;
  Finish(asio::error::operation_aborted, "");
}

void HttpPost::Finish(beast::error_code ec, std::string_view step) {
  if (impl_->finished) return;
  impl_->finished = true;
  impl_->deadline.cancel();
  impl_->resolver.cancel();
  // One connection per POST: no TLS close_notify exchange, the socket is shut.
  beast::error_code ignored;
  impl_->Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
  impl_->Lowest().close();
  if (!impl_->done) return;
  Done done = std::move(impl_->done);
  impl_->done = nullptr;
  if (ec) return done(ec, std::string(step), 0, "");
  done(ec, "", impl_->parser.get().result_int(), impl_->parser.get().body());
}

}  // namespace fingerprintd::sink
