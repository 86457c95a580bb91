// deploy/systemd as systemd would take it: `systemd-analyze verify` accepts
// the fingerprintd unit and the example vLLM unit, the example config passes
// `fingerprintd config check` and agrees with the unit's directories, and the
// daemon speaks the Type=notify protocol the unit relies on (READY=1 when it
// runs, RELOADING=1 then READY=1 around `systemctl reload`, STOPPING=1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <yaml-cpp/yaml.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "deploy/shell.h"
#include "testing/cli_runner.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string UnitDir() { return SourceDir() + "/deploy/systemd"; }

// `Key=value` lines of a unit file (later repeats append, space-separated).
std::map<std::string, std::string> UnitKeys(const std::string& text) {
  std::map<std::string, std::string> keys;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string& value = keys[line.substr(0, eq)];
    value += (value.empty() ? "" : " ") + line.substr(eq + 1);
  }
  return keys;
}

class SystemdUnitTest : public CliTest {};

TEST_F(SystemdUnitTest, SystemdAnalyzeVerifyAcceptsBothUnits) {
  if (Shell("command -v systemd-analyze").exit_code != 0) {
    GTEST_SKIP()
        << "systemd-analyze is not installed (package systemd): the units are not verified";
  }
  // The unit names the installed binary; verify checks that ExecStart exists,
  // so the copy names the one just built.
  std::string unit = run_harness::ReadFile(UnitDir() + "/fingerprintd.service");
  for (size_t at; (at = unit.find("/usr/bin/fingerprintd")) != std::string::npos;) {
    unit.replace(at, std::strlen("/usr/bin/fingerprintd"), FINGERPRINTD_BINARY);
  }
  std::ofstream(dir_ / "fingerprintd.service") << unit;
  fs::copy_file(UnitDir() + "/vllm.service", dir_ / "vllm.service");
  CommandResult verify = Shell("cd " + Quoted(dir_) +
                               " && systemd-analyze verify ./fingerprintd.service ./vllm.service");
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
  // Warnings (unknown keys, bad values) exit 0 too: none may name our units.
  EXPECT_EQ(verify.out.find("fingerprintd.service"), std::string::npos) << verify.out;
  EXPECT_EQ(verify.out.find("vllm.service"), std::string::npos) << verify.out;
}

TEST_F(SystemdUnitTest, TheExampleConfigPassesAndLivesInTheUnitsDirectories) {
  const std::string config_path = UnitDir() + "/fingerprintd.yaml";
  CommandResult check = Fingerprintd("config check " + Quoted(config_path));
  EXPECT_EQ(check.exit_code, 0) << check.out;

  auto unit = UnitKeys(run_harness::ReadFile(UnitDir() + "/fingerprintd.service"));
  EXPECT_EQ(unit["Type"], "notify");
  EXPECT_EQ(unit["DynamicUser"], "yes");
  EXPECT_EQ(unit["ProtectSystem"], "strict");
  EXPECT_EQ(unit["ExecReload"], "/bin/kill -HUP $MAINPID");
  EXPECT_EQ(unit["ExecStart"],
            "/usr/bin/fingerprintd run --config /etc/fingerprintd/fingerprintd.yaml");
  YAML::Node config = YAML::LoadFile(config_path);
  // ProtectSystem=strict: the daemon writes only where the unit lets it.
  EXPECT_EQ(config["checkpoint_dir"].as<std::string>(), "/var/lib/" + unit["StateDirectory"]);
  EXPECT_THAT(config["incidents"]["path"].as<std::string>(),
              StartsWith("/var/log/" + unit["LogsDirectory"] + "/"));
  // It reads what vllm.service writes.
  const std::string glob = config["sources"][0]["paths"][0].as<std::string>();
  EXPECT_THAT(glob, StartsWith(unit["ReadOnlyPaths"].substr(1) + "/"));  // "-/var/log/vllm"
  auto vllm = UnitKeys(run_harness::ReadFile(UnitDir() + "/vllm.service"));
  EXPECT_THAT(vllm["ExecStart"], HasSubstr(">>/var/log/" + vllm["LogsDirectory"] + "/vllm.log"));
  EXPECT_THAT(glob, StartsWith("/var/log/" + vllm["LogsDirectory"] + "/"));
}

// systemd's end of $NOTIFY_SOCKET: a datagram socket in the test's dir.
class NotifyReceiver {
 public:
  explicit NotifyReceiver(const fs::path& path) : path_(path.string()) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof(address.sun_path) - 1);
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~NotifyReceiver() { ::close(fd_); }
  bool bound() const { return bound_; }
  const std::string& path() const { return path_; }
  // The next datagram's first line ("READY=1"), or "" after 15 s without one.
  std::string Next() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 15000) != 1) return "";
    char buffer[4096];
    ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    std::string message = n > 0 ? std::string(buffer, n) : "";
    return message.substr(0, message.find('\n'));
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

TEST_F(SystemdUnitTest, TheDaemonNotifiesReadyReloadingAndStopping) {
  NotifyReceiver systemd(dir_ / "notify");
  ASSERT_TRUE(systemd.bound());
  fs::create_directories(dir_ / "logs");
  ::setenv("NOTIFY_SOCKET", systemd.path().c_str(), 1);
  run_harness::DaemonProcess daemon(
      {"--label", "deployment=qwen3", "--incidents", (dir_ / "incidents.jsonl").string(),
       (dir_ / "logs" / "*.log").string()},
      dir_ / "daemon.err");
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_EQ(systemd.Next(), "READY=1") << run_harness::ReadFile(dir_ / "daemon.err");
  daemon.Signal(SIGHUP);  // systemctl reload
  EXPECT_EQ(systemd.Next(), "RELOADING=1");
  EXPECT_EQ(systemd.Next(), "READY=1");
  daemon.Signal(SIGTERM);
  EXPECT_EQ(systemd.Next(), "STOPPING=1");
  EXPECT_EQ(daemon.WaitForExit(), 0) << run_harness::ReadFile(dir_ / "daemon.err");
}

}  // namespace
}  // namespace fingerprintd::testing
