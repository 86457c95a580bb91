// A blocking HTTP/1.0 GET for tests that talk to a running daemon's HTTP
// port (the daemon's answers, as a user's curl would see them).
#pragma once

#include <boost/asio.hpp>
#include <cstdint>
#include <string>

namespace fingerprintd::testing {

struct HttpReply {
  int status = 0;  // 0: no answer (refused, closed)
  std::string headers;
  std::string body;
};

// `headers`: more header lines, each ending in "\r\n" (e.g. an Authorization).
inline HttpReply HttpGet(uint16_t port, const std::string& target,
                         const std::string& method = "GET", const std::string& headers = "") {
  namespace asio = boost::asio;
  HttpReply reply;
  try {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    std::string request =
        method + " " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" + headers + "\r\n";
    asio::write(socket, asio::buffer(request));
    std::string raw;
    boost::system::error_code ec;
    asio::read(socket, asio::dynamic_buffer(raw), ec);  // until the server closes
    size_t end = raw.find("\r\n\r\n");
    if (raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) return reply;
    reply.status = std::stoi(raw.substr(9, 3));
    reply.headers = raw.substr(0, end);
    reply.body = raw.substr(end + 4);
  } catch (const std::exception&) {
    reply.status = 0;
  }
  return reply;
}

}  // namespace fingerprintd::testing
