// daemon/sd_notify: the datagrams systemd reads from $NOTIFY_SOCKET, received
// here on a socket of the test's own (a path and an abstract name).
#include "sd_notify.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>

#include "testing/scratch_path.h"

namespace fingerprintd::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// A bound datagram socket standing in for systemd's notify socket.
class NotifySocket {
 public:
  // `name`: a path, or "@name" for the abstract namespace.
  explicit NotifySocket(const std::string& name) : name_(name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, name.data(), name.size());
    if (name[0] == '@') address.sun_path[0] = '\0';
    socklen_t length = offsetof(sockaddr_un, sun_path) + name.size() + (name[0] == '@' ? 0 : 1);
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) == 0;
  }
  ~NotifySocket() {
    ::close(fd_);
    if (name_[0] != '@') std::filesystem::remove(name_);
  }
  bool bound() const { return bound_; }
  // The next datagram, or "" after 5 s without one.
  std::string Receive() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return "";
    char buffer[4096];
    ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    return n > 0 ? std::string(buffer, n) : "";
  }

 private:
  std::string name_;
  int fd_ = -1;
  bool bound_ = false;
};

std::string SocketPath() { return (testing::ScratchPath("notify")).string(); }

TEST(SdNotifyTest, ReadyReachesThePathInNotifySocket) {
  NotifySocket systemd(SocketPath());
  ASSERT_TRUE(systemd.bound());
  ::setenv("NOTIFY_SOCKET", SocketPath().c_str(), 1);
  Status s = SdNotify("READY=1");
  ::unsetenv("NOTIFY_SOCKET");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(systemd.Receive(), "READY=1");
}

TEST(SdNotifyTest, AnAbstractSocketNameStartsWithAnAt) {
  const std::string name = "@fingerprintd-notify-test-" + std::to_string(::getpid());
  NotifySocket systemd(name);
  ASSERT_TRUE(systemd.bound());
  ASSERT_TRUE(SdNotifyTo(name, "STOPPING=1").ok());
  EXPECT_EQ(systemd.Receive(), "STOPPING=1");
}

TEST(SdNotifyTest, ReloadingCarriesTheMonotonicClock) {
  NotifySocket systemd(SocketPath());
  ASSERT_TRUE(SdNotifyTo(SocketPath(), "RELOADING=1").ok());
  EXPECT_THAT(systemd.Receive(), MatchesRegex("RELOADING=1\nMONOTONIC_USEC=[0-9]+"));
}

TEST(SdNotifyTest, WithoutNotifySocketNothingIsSentAndNothingFails) {
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_TRUE(SdNotify("READY=1").ok());
  ::setenv("NOTIFY_SOCKET", "", 1);
  EXPECT_TRUE(SdNotify("READY=1").ok());
  ::unsetenv("NOTIFY_SOCKET");
}

TEST(SdNotifyTest, AMissingSocketIsAnErrorNamingIt) {
  Status s = SdNotifyTo(SocketPath() + "-nobody", "READY=1");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("-nobody"));
  EXPECT_FALSE(SdNotifyTo(std::string(200, 'x'), "READY=1").ok());
}

}  // namespace
}  // namespace fingerprintd::daemon
