// How a client reaches an HTTP peer (the Alertmanager push; `config check`
// validates the same settings): its http:// or https:// URL taken apart, the
// TLS it expects over https, and the credentials it presents.
#pragma once

#include <string>

#include "fingerprintd/status.h"

namespace fingerprintd {

// "https://am:9093/prefix" -> tls, host "am", port "9093", prefix "/prefix".
struct HttpUrl {
  bool tls = false;    // https://
  std::string host;    // an IPv6 address without its brackets
  std::string port;    // "80" (http) or "443" (https) when the URL names none
  std::string prefix;  // "" or "/..." without a trailing '/'

  // "https://am:9093/prefix", as the logs name the peer.
  std::string ToString() const;
};

// Over https://: how the peer is verified and what the client presents.
// Files are read at each connection, so rotated Secrets are taken up.
struct HttpClientTls {
  std::string ca_file;      // PEM CAs the peer's certificate must chain to; "" = the system's
  std::string cert_file;    // a client certificate (PEM, mutual TLS), with key_file
  std::string key_file;     // its private key (PEM)
  std::string server_name;  // checked against the certificate and sent as SNI; "" = the URL's host
};

// The Authorization header: basic auth (username and a password file) or a
// bearer token file, never both; none when all are empty.
struct HttpClientAuth {
  std::string username;
  std::string password_file;
  std::string bearer_token_file;
};

// InvalidArgumentError naming the problem (another scheme, no host, bad port).
StatusOr<HttpUrl> ParseHttpUrl(const std::string& url);

}  // namespace fingerprintd
