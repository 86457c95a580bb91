// Test helper for `fingerprintd run` as a user runs it: the real binary in a
// temp dir, its stderr in a file, its incidents in a JSONL file, every wait a
// poll with a deadline (never a bare sleep). The child dies with the test
// process (PR_SET_PDEATHSIG) and is killed by the destructor, so a failing
// or crashing test leaves no daemon behind.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/http_client.h"
#include "testing/replay_harness.h"
#include "testing/sanitizers.h"
#include "testing/scratch_path.h"

namespace fingerprintd::testing {

namespace run_harness {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// How long a wait for the daemon may take before the test calls it hung.
inline constexpr auto kDeadline = std::chrono::seconds(15) * kSanitizerSlowdown;

// Polls `done` every 20 ms until it holds or the deadline passes.
inline bool WaitFor(const std::function<bool()>& done,
                    std::chrono::milliseconds deadline = kDeadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

inline std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline std::vector<std::string> GoldenLines(const std::string& name) {
  std::ifstream in(Golden(name));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Lines [from, to) of `lines`, each with its '\n'.
inline std::string Slice(const std::vector<std::string>& lines, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

// The audit (`run --audit`, sink/audit_log.h) as digest -> times recorded.
inline std::map<std::string, int> AuditedDigests(const fs::path& audit) {
  std::map<std::string, int> out;
  std::istringstream in(ReadFile(audit));
  for (std::string line; std::getline(in, line);) ++out[line.substr(0, 16)];
  return out;
}

// A line's digest as the audit writes it.
inline std::string DigestOf(const std::string& line) {
  const auto* bytes = reinterpret_cast<const Bytef*>(line.data());
  uint64_t d = crc32(0L, bytes, static_cast<uInt>(line.size())) << 32 |
               adler32(1L, bytes, static_cast<uInt>(line.size()));
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(d));
  return hex;
}

// The value of the first sample of `family` (its name up to '{' or ' ') in a
// /metrics body; -1 when absent.
inline double MetricValue(const std::string& body, const std::string& family) {
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family, 0) == 0 && line.size() > family.size() &&
        (line[family.size()] == '{' || line[family.size()] == ' ')) {
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return -1;
}

// The port of the last "http: listening on 127.0.0.1:PORT" line in a
// daemon's stderr (a restarted daemon logs its own), 0 if there is none.
inline uint16_t HttpPortIn(const std::string& stderr_text) {
  static const std::regex kListening(R"(http: listening on 127\.0\.0\.1:(\d+))");
  uint16_t port = 0;
  for (std::sregex_iterator it(stderr_text.begin(), stderr_text.end(), kListening), end; it != end;
       ++it) {
    port = static_cast<uint16_t>(std::stoi((*it)[1].str()));
  }
  return port;
}

// A running `fingerprintd run ARGS...`; stderr is appended to a file.
class DaemonProcess {
 public:
  // `in_child` (optional) runs in the child before the exec (privileges.h).
  DaemonProcess(const std::vector<std::string>& args, const fs::path& stderr_path,
                const std::function<void()>& in_child = {}) {
    pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the test died before prctl
      if (in_child) in_child();
      int fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 2);
      std::vector<std::string> argv_strings = {FINGERPRINTD_BINARY, "run"};
      argv_strings.insert(argv_strings.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : argv_strings) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~DaemonProcess() {
    if (pid_ > 0) Kill(SIGKILL);
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signo) const { ::kill(pid_, signo); }
  // Sends `signo` and waits (bounded) for the exit; returns the exit code, or
  // -1 if it did not exit in time or died of a signal.
  int Kill(int signo, std::chrono::milliseconds deadline = std::chrono::seconds(5)) {
    ::kill(pid_, signo);
    return WaitForExit(deadline);
  }
  // Waits (bounded) for an exit already asked for; the same result as Kill.
  // A second SIGTERM while the daemon shuts down may find its handler gone
  // and end it by the signal: a test that saw it stopping waits instead.
  int WaitForExit(std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    int status = 0;
    bool exited = WaitFor([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, deadline);
    if (!exited) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
    return exited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
};

// What the daemon's "stopped: N lines, B bytes, R rotation(s), T
// truncation(s), D dropped" summary says (the last one in its stderr).
struct StopSummary {
  uint64_t lines = 0, bytes = 0, rotations = 0, truncations = 0, dropped = 0;
};
inline std::optional<StopSummary> ParseStopSummary(const std::string& stderr_text) {
  static const std::regex kSummary(
      R"(stopped: (\d+) lines, (\d+) bytes, (\d+) rotation\(s\), (\d+) truncation\(s\), (\d+) dropped)");
  std::optional<StopSummary> out;
  for (std::sregex_iterator it(stderr_text.begin(), stderr_text.end(), kSummary), end; it != end;
       ++it) {
    const std::smatch& m = *it;
    out = StopSummary{std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]), std::stoull(m[4]),
                      std::stoull(m[5])};
  }
  return out;
}

// A temp dir with `logs/` for the tailed files, the daemon's stderr and its
// incident log; kept when the test failed, for a look.
class RunFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ScratchPath("run");
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "logs");
    lines_ = GoldenLines("vllm_tp2_unknown_sf.log");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // `fingerprintd run` over `glob` (default logs/*.log) with deployment
  // qwen3, a checkpoint dir, the incident log and HTTP on a free port;
  // `extra` goes first.
  std::unique_ptr<DaemonProcess> Start(const std::string& start_at = "beginning",
                                       std::vector<std::string> extra = {}, std::string glob = "") {
    std::vector<std::string> args = std::move(extra);
    for (const std::string& a :
         {std::string("--http"), std::string("127.0.0.1:0"), std::string("--label"),
          std::string("deployment=qwen3"), std::string("--checkpoint-dir"),
          (dir_ / "checkpoints").string(), std::string("--incidents"), Incidents().string(),
          std::string("--start-at"), start_at}) {
      args.push_back(a);
    }
    args.push_back(glob.empty() ? (dir_ / "logs" / "*.log").string() : glob);
    return std::make_unique<DaemonProcess>(args, dir_ / "daemon.err");
  }
  fs::path Incidents() const { return dir_ / "incidents.jsonl"; }
  // `run --config` over config.yaml: the file source over logs/*.log from
  // the beginning (deployment qwen3), the checkpoint dir, HTTP on a free port
  // and the incident log, then `extra` (YAML lines); `args` go first.
  std::unique_ptr<DaemonProcess> StartWithConfig(const std::string& extra,
                                                 std::vector<std::string> args = {}) {
    std::ofstream(dir_ / "config.yaml")
        << "sources:\n  - type: file\n    paths: ['" << (dir_ / "logs" / "*.log").string()
        << "']\n    start_at: beginning\n    labels: {deployment: qwen3}\n"
        << "checkpoint_dir: " << (dir_ / "checkpoints").string() << "\n"
        << "http: {listen: '127.0.0.1:0'}\n"
        << "incidents: {path: " << Incidents().string() << "}\n"
        << extra;
    args.push_back("--config");
    args.push_back((dir_ / "config.yaml").string());
    return std::make_unique<DaemonProcess>(args, dir_ / "daemon.err");
  }
  // The port of the daemon's "http: listening on 127.0.0.1:PORT" line (the
  // last one: a restarted daemon logs its own), 0 before it is logged.
  uint16_t HttpPort() const { return HttpPortIn(Stderr()); }
  std::string Stderr() const { return ReadFile(dir_ / "daemon.err"); }
  // GET `target` from the daemon's HTTP port.
  HttpReply Get(const std::string& target) const { return HttpGet(HttpPort(), target); }
  // The value of the series `series` of /metrics (name and labels as it
  // prints them); -1 when absent.
  double Sample(const std::string& series) const {
    const std::string body = Get("/metrics").body;
    const size_t at = body.find("\n" + series + " ");
    if (at == std::string::npos) return -1;
    return std::stod(body.substr(at + series.size() + 2));
  }
  bool StderrHas(const std::string& text) const { return Stderr().find(text) != std::string::npos; }
  size_t StderrCount(const std::string& text) const {
    std::string err = Stderr();
    size_t n = 0;
    for (size_t at = err.find(text); at != std::string::npos; at = err.find(text, at + 1)) ++n;
    return n;
  }
  void AppendTo(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::app | std::ios::binary) << text;
  }
  void Append(const std::string& name, const std::string& text) {
    AppendTo(dir_ / "logs" / name, text);
  }
  // The complete lines of the incident log: a reader may catch the daemon
  // in the middle of write()ing a line, so one without its '\n' is not yet one.
  std::vector<Json> IncidentLines() const {
    std::string text = ReadFile(Incidents());
    text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    std::vector<Json> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
    return out;
  }
  bool HasCompleteIncident() const {
    for (const Json& j : IncidentLines()) {
      if (j["workers"]["affected"] == 2 && j["workers"]["expected"] == 2) return true;
    }
    return false;
  }
  // The incident a replay of `paths` (default: the whole golden file) gives
  // for deployment qwen3.
  std::string ReplayIncidentId(std::vector<std::string> paths = {}) const {
    if (paths.empty()) paths = {Golden("vllm_tp2_unknown_sf.log")};
    auto result = ReplayPaths(paths, "", {{"deployment", "qwen3"}});
    return result.incidents.empty() ? "" : result.incidents.front().incident_id;
  }
  // One incident id, each (id, revision) once, the last revision 2/2 (and
  // identical, unless `identical` is false), the id the same as a replay's.
  void ExpectOneCompleteIncident(std::vector<std::string> replay_paths = {},
                                 bool identical = true) {
    std::vector<Json> lines = IncidentLines();
    ASSERT_FALSE(lines.empty()) << Stderr();
    std::set<std::string> ids;
    std::set<std::pair<std::string, int>> revisions;
    for (const Json& j : lines) {
      ids.insert(j["incident_id"].get<std::string>());
      EXPECT_TRUE(revisions.emplace(j["incident_id"], j["revision"].get<int>()).second)
          << "revision written twice: " << j.dump();
      EXPECT_EQ(j["rule"], "deepgemm-unknown-sf-transformation");
    }
    EXPECT_EQ(ids.size(), 1u) << ReadFile(Incidents());
    EXPECT_EQ(lines.back()["workers"]["affected"], 2) << ReadFile(Incidents());
    if (identical) {
      EXPECT_EQ(lines.back()["identical"], true) << ReadFile(Incidents());
    }
    EXPECT_EQ(*ids.begin(), ReplayIncidentId(std::move(replay_paths)));
  }
  // Stops the daemon with SIGTERM (exit 0) and returns its summary.
  StopSummary Stop(std::unique_ptr<DaemonProcess>& daemon) {
    EXPECT_EQ(daemon->Kill(SIGTERM), 0) << Stderr();
    daemon.reset();
    auto summary = ParseStopSummary(Stderr());
    EXPECT_TRUE(summary.has_value()) << Stderr();
    return summary.value_or(StopSummary{});
  }

  fs::path dir_;
  std::vector<std::string> lines_;
};

}  // namespace run_harness

}  // namespace fingerprintd::testing
