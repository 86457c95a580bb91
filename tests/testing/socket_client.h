// Client: a plain connected socket for tests that feed a tcp or unix
// source (tests/integration/socket_test.cc against the real binary,
// tests/source/socket_source_test.cc against the component).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <string_view>

namespace fingerprintd::testing {

// A connected client socket; closed by the destructor.
class Client {
 public:
  static Client Tcp(int port) {
    Client c(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c.connected_ = ::connect(c.fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    return c;
  }
  static Client Unix(const std::string& path) {
    Client c(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    c.connected_ = ::connect(c.fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    return c;
  }
  Client(Client&& other) noexcept : fd_(other.fd_), connected_(other.connected_) { other.fd_ = -1; }
  ~Client() { Close(); }

  bool connected() const { return connected_; }
  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // True once the server closed its end (a read returns 0 or fails).
  bool ClosedByServer() {
    char c;
    ssize_t n = ::recv(fd_, &c, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  explicit Client(int fd) : fd_(fd) {}
  int fd_;
  bool connected_ = false;
};

}  // namespace fingerprintd::testing
