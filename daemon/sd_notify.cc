// sd_notify(3), the datagram form: what libsystemd's sd_notify does for a
// plain state string (no file descriptors, no credentials).
#include "sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace fingerprintd::daemon {

Status SdNotify(std::string_view state) {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (socket == nullptr || socket[0] == '\0') return OkStatus();
  return SdNotifyTo(socket, state);
}

Status SdNotifyTo(const std::string& socket, std::string_view state) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket.empty() || socket.size() > sizeof(address.sun_path) ||
      (socket.size() == sizeof(address.sun_path) && socket[0] != '@')) {
    return InvalidArgumentError("NOTIFY_SOCKET '" + socket + "': not a socket path");
  }
  std::memcpy(address.sun_path, socket.data(), socket.size());
  if (address.sun_path[0] == '@') address.sun_path[0] = '\0';  // abstract namespace
  // A path is NUL-terminated inside sun_path; an abstract name is exactly its bytes.
  const socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket.size() +
                                                  (socket[0] == '@' ? 0 : 1));

  std::string message(state);
  if (state == "RELOADING=1") {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    message += "\nMONOTONIC_USEC=" +
               std::to_string(static_cast<int64_t>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1000);
  }
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return InternalError(std::string("sd_notify: socket: ") + std::strerror(errno));
  const ssize_t sent = ::sendto(fd, message.data(), message.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&address), length);
  const int error = errno;
  ::close(fd);
  if (sent != static_cast<ssize_t>(message.size())) {
    return InternalError("sd_notify to " + socket + ": " + std::strerror(error));
  }
  return OkStatus();
}

}  // namespace fingerprintd::daemon
