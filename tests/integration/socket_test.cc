// `fingerprintd run` fed over sockets and stdin, as shippers and pipes feed
// it: the real binary, real clients (this file's own and socat), checked
// through the JSONL incident log and GET /metrics, every wait a poll with a
// deadline. The failure is tests/golden/vllm_tp2_unknown_sf.log (TP=2, both
// workers fail): however it arrives, it is one incident with 2/2 workers.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "testing/http_client.h"
#include "testing/run_harness.h"
#include "testing/socket_client.h"

namespace fingerprintd::testing {
namespace {

using namespace run_harness;  // NOLINT(build/namespaces): test-only helpers

// One `jsonl` record as a shipper writes it.
std::string JsonLine(const nlohmann::json& fields, const std::string& log) {
  nlohmann::json record = fields;
  record["log"] = log + "\n";
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

class SocketTest : public RunFixture {
 protected:
  // `fingerprintd run --config` with `sources_yaml` (the list items), HTTP
  // on a free port and the incident log in the temp dir.
  std::unique_ptr<DaemonProcess> StartConfig(const std::string& sources_yaml) {
    std::ofstream(dir_ / "config.yaml") << "sources:\n"
                                        << sources_yaml << "http: {listen: 127.0.0.1:0}\n"
                                        << "incidents: {path: " << Incidents().string() << "}\n";
    return std::make_unique<DaemonProcess>(
        std::vector<std::string>{"--config", (dir_ / "config.yaml").string()}, dir_ / "daemon.err");
  }
  // The port the nth "listening on tcp:... (127.0.0.1:PORT)" line names
  // (a reload logs another), waiting for it; 0 when it never came.
  int WaitForPort(size_t nth = 1) {
    static const std::regex kListening(R"(listening on tcp:[^\n]*\(127\.0\.0\.1:(\d+)\))");
    int port = 0;
    WaitFor([&] {
      std::string err = Stderr();
      size_t seen = 0;
      for (std::sregex_iterator it(err.begin(), err.end(), kListening), end; it != end; ++it) {
        if (++seen == nth) port = std::stoi((*it)[1]);
      }
      return port != 0;
    });
    return port;
  }
  // The value of one sample of GET /metrics (e.g.
  // `fingerprintd_lines_dropped_total{reason="invalid_json"}`), -1 if absent.
  double Metric(const std::string& sample) {
    uint16_t port = 0;
    WaitFor([&] { return (port = HttpPort()) != 0; });
    std::istringstream in(HttpGet(port, "/metrics").body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(sample + " ", 0) == 0) return std::stod(line.substr(sample.size() + 1));
    }
    return -1;
  }
  bool MetricAtLeast(const std::string& sample, double value) {
    return WaitFor([&] { return Metric(sample) >= value; });
  }

  // Golden lines [from, to) as one JSON record each.
  std::string JsonLines(const nlohmann::json& fields, size_t from = 0, size_t to = SIZE_MAX) {
    std::string out;
    for (size_t i = from; i < std::min(to, lines_.size()); ++i) out += JsonLine(fields, lines_[i]);
    return out;
  }
  void ExpectCleanStop(std::unique_ptr<DaemonProcess>& daemon) {
    EXPECT_EQ(daemon->Kill(SIGTERM), 0) << Stderr();
    daemon.reset();
  }
  // Runs `sh -c command` and returns its exit status.
  static int Shell(const std::string& command) { return std::system(command.c_str()); }
};

TEST_F(SocketTest, ATpTwoFailureAsJsonOverTwoTcpConnectionsIsOneIncidentOfTwoWorkers) {
  auto daemon = StartConfig("  - {type: tcp, listen: '127.0.0.1:0', framing: jsonl}\n");
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  // Rank 1's lines on one connection, everything else on the other, both
  // labelled with the deployment: a shipper per worker.
  std::string rank1, rest;
  const nlohmann::json labels = {{"deployment", "qwen3"}, {"pod", "qwen3-0"}};
  for (const std::string& line : lines_) {
    (line.find("Worker_TP1") != std::string::npos ? rank1 : rest) += JsonLine(labels, line);
  }
  Client a = Client::Tcp(port), b = Client::Tcp(port);
  ASSERT_TRUE(a.connected() && b.connected());
  ASSERT_TRUE(a.Send(rest));
  ASSERT_TRUE(b.Send(rank1));
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  // The status page lists the listener with its two connections and a last line.
  const std::string page = HttpGet(HttpPort(), "/").body;
  EXPECT_THAT(page, ::testing::HasSubstr("<td>tcp</td><td>listening on 127.0.0.1:" +
                                         std::to_string(port) + "; 2 connection(s)"));
  EXPECT_THAT(page, ::testing::HasSubstr(" s ago)"));
  ExpectCleanStop(daemon);  // with both connections still open
  ExpectOneCompleteIncident();
}

TEST_F(SocketTest, OneConnectionCarryingTwoDeploymentsInterleavedGivesTwoIncidents) {
  auto daemon = StartConfig(
      "  - type: tcp\n    listen: '127.0.0.1:0'\n    framing: jsonl\n"
      "    deployment_from: '^(deployment_[ab])-'\n");
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  auto a = GoldenLines("two_deployments_interleaved/deployment_a.log");
  auto b = GoldenLines("two_deployments_interleaved/deployment_b.log");
  std::string interleaved;
  const nlohmann::json pod_a = {{"kubernetes", {{"pod_name", "deployment_a-7d9f8-x2x9k"}}}};
  const nlohmann::json pod_b = {{"kubernetes", {{"pod_name", "deployment_b-5c4d3-k8s7q"}}}};
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i < a.size()) interleaved += JsonLine(pod_a, a[i]);
    if (i < b.size()) interleaved += JsonLine(pod_b, b[i]);
  }
  std::ofstream(dir_ / "interleaved.jsonl") << interleaved;
  ASSERT_EQ(Shell("socat -u FILE:" + (dir_ / "interleaved.jsonl").string() +
                  " TCP:127.0.0.1:" + std::to_string(port)),
            0);
  ASSERT_TRUE(WaitFor([&] {
    std::set<std::string> complete;
    for (const Json& j : IncidentLines()) {
      if (j["workers"]["affected"] == 2) complete.insert(j["deployment"].get<std::string>());
    }
    return complete == std::set<std::string>{"deployment_a", "deployment_b"};
  })) << Stderr();
  ExpectCleanStop(daemon);
  for (const Json& j : IncidentLines()) {
    EXPECT_EQ(j["rule"], "deepgemm-unknown-sf-transformation");
    EXPECT_LE(j["workers"]["affected"].get<int>(), 2) << j.dump();  // never one 4-worker incident
    if (j["workers"]["affected"] == 2) {
      EXPECT_EQ(j["identical"], true) << j.dump();
    }
  }
}

TEST_F(SocketTest, AUnixSocketIsCreatedWithTheConfiguredMode) {
  // bind() runs under a umask of ~mode, so the file never has wider rights.
  const std::string path = (dir_ / "private.sock").string();
  auto daemon = StartConfig("  - {type: unix, path: '" + path +
                            "', mode: '0600', framing: lines, labels: {deployment: qwen3}}\n");
  ASSERT_TRUE(WaitFor([&] { return StderrHas("listening on unix:"); })) << Stderr();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  ExpectCleanStop(daemon);
}

TEST_F(SocketTest, TheSameFailureOverAUnixSocketWithLinesFraming) {
  const std::string path = (dir_ / "ingest.sock").string();
  {  // a stale socket file left by a daemon that was killed
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
  }
  auto daemon = StartConfig("  - {type: unix, path: '" + path +
                            "', framing: lines, labels: {deployment: qwen3}}\n");
  ASSERT_TRUE(WaitFor([&] { return StderrHas("listening on unix:"); })) << Stderr();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  std::ofstream(dir_ / "failure.log") << Slice(lines_, 0, lines_.size());
  ASSERT_EQ(Shell("socat -u FILE:" + (dir_ / "failure.log").string() + " UNIX-CONNECT:" + path), 0);
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  ExpectCleanStop(daemon);
  ExpectOneCompleteIncident();
  EXPECT_FALSE(fs::exists(path)) << "the socket file is removed on stop";
}

TEST_F(SocketTest, TheSameFailureOverStdinEndsTheDaemonWhenThePipeCloses) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);  // the daemon must not hold the write end
  // The child inherits the pipe as its stdin; this process keeps its own.
  int saved_stdin = ::dup(STDIN_FILENO);
  ::dup2(pipe_fds[0], STDIN_FILENO);
  auto daemon = std::make_unique<DaemonProcess>(
      std::vector<std::string>{"--label", "deployment=qwen3", "--incidents", Incidents().string(),
                               "--http", "127.0.0.1:0", "-"},
      dir_ / "daemon.err");
  ::dup2(saved_stdin, STDIN_FILENO);
  ::close(saved_stdin);
  ::close(pipe_fds[0]);
  std::string text = Slice(lines_, 0, lines_.size());
  ASSERT_EQ(::write(pipe_fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(pipe_fds[1]);  // end of input: the daemon decides, writes and exits 0 by itself
  EXPECT_EQ(daemon->Kill(/*signo=*/0, kDeadline), 0) << Stderr();  // waits for the exit
  ExpectOneCompleteIncident();
}

TEST_F(SocketTest, TwoHundredConcurrentConnectionsEachGiveTheirDeploymentsIncident) {
  auto daemon = StartConfig("  - {type: tcp, listen: '127.0.0.1:0', framing: jsonl}\n");
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  constexpr int kConnections = 200;
  std::vector<Client> clients;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(Client::Tcp(port));
    ASSERT_TRUE(clients.back().connected()) << i;
  }
  // All of them open at once, each sending its deployment's failure in
  // pieces interleaved with the others'.
  std::vector<std::string> payloads;
  for (int i = 0; i < kConnections; ++i) {
    payloads.push_back(JsonLines({{"deployment", "d" + std::to_string(i)}}));
  }
  for (size_t at = 0; at < payloads[0].size(); at += 8192) {
    for (int i = 0; i < kConnections; ++i) {
      ASSERT_TRUE(clients[i].Send(std::string_view(payloads[i]).substr(at, 8192)));
    }
  }
  ASSERT_TRUE(WaitFor([&] {
    std::set<std::string> complete;
    for (const Json& j : IncidentLines()) {
      if (j["workers"]["affected"] == 2) complete.insert(j["deployment"].get<std::string>());
    }
    return complete.size() == kConnections;
  })) << Stderr();
  EXPECT_EQ(Metric("fingerprintd_evictions_total{what=\"connection\"}"), 0);
  ExpectCleanStop(daemon);
}

// Issue 42: a shipper record whose pod name holds byte 0xFF, on a jsonl
// socket with checkpoints on, ended the daemon at its next checkpoint (the
// state is JSON and was dumped with the strict UTF-8 handler). It lives on,
// reports the failure, and names the source and deployment with the byte
// escaped; the checkpoint is written.
TEST_F(SocketTest, AByteFFInAPodNameWithCheckpointsOnLeavesTheDaemonAliveAndReporting) {
  std::ofstream(dir_ / "config.yaml")
      << "sources:\n  - {type: tcp, listen: '127.0.0.1:0', framing: jsonl}\n"
      << "checkpoint_dir: " << (dir_ / "checkpoints").string() << "\n"
      << "checkpoint_interval: 100ms\n"
      << "http: {listen: 127.0.0.1:0}\n"
      << "incidents: {path: " << Incidents().string() << "}\n";
  auto daemon = std::make_unique<DaemonProcess>(
      std::vector<std::string>{"--config", (dir_ / "config.yaml").string()}, dir_ / "daemon.err");
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  Client c = Client::Tcp(port);
  std::string payload;
  for (const std::string& line : lines_) {
    const std::string log = nlohmann::json(line + "\n").dump();
    payload += "{\"log\":" + log + ",\"namespace\":\"ml\",\"pod\":\"vllm-\xff-0\"," +
               "\"deployment\":\"qwen3-\xff\"}\n";
  }
  ASSERT_TRUE(c.Send(payload));
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  // Checkpoints are taken while the connection is open: the daemon survives them.
  const double saved_before = Metric("fingerprintd_checkpoint_failures_total");
  ASSERT_TRUE(WaitFor([&] {
    return ReadFile(dir_ / "checkpoints" / "checkpoint.json").find(R"(qwen3-\\\\xFF)") !=
           std::string::npos;
  })) << Stderr();
  EXPECT_EQ(saved_before, 0);
  EXPECT_EQ(Metric("fingerprintd_checkpoint_failures_total"), 0);
  EXPECT_EQ(Metric("fingerprintd_internal_errors_total"), 0);
  EXPECT_EQ(IncidentLines().back()["deployment"], "qwen3-\\xFF");
  EXPECT_THAT(IncidentLines().back().dump(), ::testing::HasSubstr(R"(vllm-\\xFF-0)"));
  ExpectCleanStop(daemon);
}

TEST_F(SocketTest, AFloodBeyondTheConnectionLimitIsRefusedAndCountedWhileOpenOnesWork) {
  auto daemon =
      StartConfig("  - {type: tcp, listen: '127.0.0.1:0', framing: jsonl, max_connections: 4}\n");
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  std::vector<Client> open;
  for (int i = 0; i < 4; ++i) open.push_back(Client::Tcp(port));
  ASSERT_TRUE(open[3].Send(JsonLine({{"deployment", "qwen3"}}, lines_[0])));
  ASSERT_TRUE(MetricAtLeast("fingerprintd_lines_total{source=\"tcp:127.0.0.1:0#3\"}", 1));
  std::vector<Client> flood;
  for (int i = 0; i < 300; ++i) flood.push_back(Client::Tcp(port));
  ASSERT_TRUE(MetricAtLeast("fingerprintd_evictions_total{what=\"connection\"}", 300)) << Stderr();
  for (Client& c : flood) EXPECT_TRUE(WaitFor([&] { return c.ClosedByServer(); }));
  // The four open connections were not disturbed: the failure goes through them.
  ASSERT_TRUE(open[0].Send(JsonLines({{"deployment", "qwen3"}}, 1)));
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  ExpectCleanStop(daemon);
  ExpectOneCompleteIncident();
}

TEST_F(SocketTest, ATenMegabyteLineIsTruncatedAndCountedAndTheFailureAfterItMatched) {
  auto daemon = StartConfig(
      "  - {type: tcp, listen: '127.0.0.1:0', framing: lines, labels: {deployment: qwen3}}\n");
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  Client c = Client::Tcp(port);
  ASSERT_TRUE(c.Send(std::string(10 << 20, 'x') + "\n"));
  ASSERT_TRUE(c.Send(Slice(lines_, 0, lines_.size())));
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  EXPECT_EQ(Metric("fingerprintd_lines_dropped_total{reason=\"line_too_long\"}"), 1);
  ExpectCleanStop(daemon);
  ExpectOneCompleteIncident();
}

TEST_F(SocketTest, InvalidJsonLinesAreCountedAndSkippedAndTheNextValidLineMatched) {
  auto daemon = StartConfig("  - {type: tcp, listen: '127.0.0.1:0', framing: jsonl}\n");
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  const nlohmann::json labels = {{"deployment", "qwen3"}};
  std::string payload;
  int garbage = 0;
  for (size_t i = 0; i < lines_.size(); ++i) {
    if (i % 20 == 0 || lines_[i].find("RuntimeError") != std::string::npos) {
      payload += "{\"log\": \"cut in the midd\n";  // just before each exception line too
      ++garbage;
    }
    payload += JsonLine(labels, lines_[i]);
  }
  Client c = Client::Tcp(port);
  ASSERT_TRUE(c.Send(payload));
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  EXPECT_EQ(Metric("fingerprintd_lines_dropped_total{reason=\"invalid_json\"}"), garbage);
  ExpectCleanStop(daemon);
  ExpectOneCompleteIncident();
}

TEST_F(SocketTest, AClientKilledMidLineIsCountedAndDisturbsNoOtherConnection) {
  auto daemon = StartConfig("  - {type: tcp, listen: '127.0.0.1:0', framing: jsonl}\n");
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  const nlohmann::json labels = {{"deployment", "qwen3"}};
  Client steady = Client::Tcp(port);
  ASSERT_TRUE(steady.Send(JsonLines(labels, 0, 100)));
  pid_t child = ::fork();
  if (child == 0) {  // a shipper that dies in the middle of a record
    Client c = Client::Tcp(port);
    c.Send(JsonLine({{"deployment", "other"}}, lines_[0]) +
           "{\"deployment\":\"other\",\"log\":\"par");
    ::raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(MetricAtLeast("fingerprintd_lines_dropped_total{reason=\"cut_at_disconnect\"}", 1))
      << Stderr();
  ASSERT_TRUE(steady.Send(JsonLines(labels, 100)));
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  ExpectCleanStop(daemon);
  ExpectOneCompleteIncident();
}

TEST_F(SocketTest, AConnectionSilentForTheIdleTimeoutIsClosedAndCounted) {
  auto daemon = StartConfig(
      "  - {type: tcp, listen: '127.0.0.1:0', idle_timeout: 1s, labels: {deployment: qwen3}}\n");
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  Client quiet = Client::Tcp(port);
  ASSERT_TRUE(quiet.Send(lines_[0] + "\n"));
  ASSERT_TRUE(WaitFor([&] { return quiet.ClosedByServer(); })) << Stderr();
  EXPECT_EQ(Metric("fingerprintd_evictions_total{what=\"idle_connection\"}"), 1);
  Client next = Client::Tcp(port);  // the source still accepts
  ASSERT_TRUE(next.Send(Slice(lines_, 0, lines_.size())));
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  ExpectCleanStop(daemon);
}

TEST_F(SocketTest, AReloadClosesConnectionsAndTheShipperReconnectsToTheSameFailure) {
  auto daemon = StartConfig("  - {type: tcp, listen: '127.0.0.1:0', framing: jsonl}\n");
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  const nlohmann::json labels = {{"deployment", "qwen3"}};
  Client before = Client::Tcp(port);
  ASSERT_TRUE(before.Send(JsonLines(labels, 0, 100)));
  ASSERT_TRUE(MetricAtLeast("fingerprintd_lines_total{source=\"tcp:127.0.0.1:0#0\"}", 100));
  daemon->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return before.ClosedByServer(); })) << Stderr();
  int again = WaitForPort(2);  // port 0: the reload binds anew
  ASSERT_GT(again, 0) << Stderr();
  Client after = Client::Tcp(again);  // what a shipper does: reconnect, send on
  ASSERT_TRUE(after.Send(JsonLines(labels)));
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  ExpectCleanStop(daemon);
}

// deploy/shippers/: neither Vector nor Fluent Bit is a Debian package, so
// each one's exact output shape (from its documentation) goes through the
// socket, with the fingerprintd config those files document.
constexpr const char* kShipperSource =
    "  - type: tcp\n    listen: '127.0.0.1:0'\n    framing: jsonl\n"
    "    deployment_from: '^(.+)-[0-9a-f]{8,10}-[0-9a-z]{5}$'\n";

// One Vector kubernetes_logs event, as the socket sink writes it with
// encoding.codec json and newline_delimited framing.
std::string VectorEvent(const std::string& line) {
  nlohmann::json event = {
      {"file",
       "/var/log/pods/inference_qwen3-7d9f8c6b5d-x2x9k_0f3e6a2c-91b4-4d8e-a7f5-3c2b1d0e9f84/vllm/"
       "0.log"},
      {"kubernetes",
       {{"container_id", "containerd://4f1d"},
        {"container_image", "vllm/vllm-openai:v0.11.2"},
        {"container_name", "vllm"},
        {"namespace_labels", {{"kubernetes.io/metadata.name", "inference"}}},
        {"node_labels", {{"kubernetes.io/hostname", "gpu-node-1"}}},
        {"pod_ip", "10.42.0.17"},
        {"pod_ips", {"10.42.0.17"}},
        {"pod_labels", {{"app", "qwen3"}, {"pod-template-hash", "7d9f8c6b5d"}}},
        {"pod_name", "qwen3-7d9f8c6b5d-x2x9k"},
        {"pod_namespace", "inference"},
        {"pod_node_name", "gpu-node-1"},
        {"pod_owner", "ReplicaSet/qwen3-7d9f8c6b5d"},
        {"pod_uid", "0f3e6a2c-91b4-4d8e-a7f5-3c2b1d0e9f84"}}},
      {"message", line},
      {"source_type", "kubernetes_logs"},
      {"stream", "stderr"},
      {"timestamp", "2026-03-04T10:15:19.702331Z"}};
  return event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// One Fluent Bit record after the tail input (cri parser, Path_Key file) and
// the kubernetes filter, as the tcp output writes it with Format json_lines.
std::string FluentBitRecord(const std::string& line) {
  nlohmann::json record = {
      {"date", "2026-03-04T10:15:19.702331Z"},
      {"time", "2026-03-04T10:15:19.702331042Z"},
      {"stream", "stderr"},
      {"logtag", "F"},
      {"log", line},
      {"file", "/var/log/containers/qwen3-7d9f8c6b5d-x2x9k_inference_vllm-4f1d.log"},
      {"kubernetes",
       {{"pod_name", "qwen3-7d9f8c6b5d-x2x9k"},
        {"namespace_name", "inference"},
        {"pod_id", "0f3e6a2c-91b4-4d8e-a7f5-3c2b1d0e9f84"},
        {"labels", {{"app", "qwen3"}, {"pod-template-hash", "7d9f8c6b5d"}}},
        {"host", "gpu-node-1"},
        {"container_name", "vllm"},
        {"docker_id", "4f1d"},
        {"container_hash", "vllm/vllm-openai@sha256:5e1f"},
        {"container_image", "vllm/vllm-openai:v0.11.2"}}}};
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

class ShipperShapeTest : public SocketTest,
                         public ::testing::WithParamInterface<std::string (*)(const std::string&)> {
};

TEST_P(ShipperShapeTest, AShippersEventsOfATpTwoFailureGiveOneIncidentOfItsDeployment) {
  auto daemon = StartConfig(kShipperSource);
  int port = WaitForPort();
  ASSERT_GT(port, 0) << Stderr();
  std::string payload;
  for (const std::string& line : lines_) payload += GetParam()(line);
  Client c = Client::Tcp(port);
  ASSERT_TRUE(c.Send(payload));
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  ExpectCleanStop(daemon);
  ExpectOneCompleteIncident();  // deployment qwen3, from the pod name
  EXPECT_EQ(IncidentLines().back()["deployment"], "qwen3");
}

INSTANTIATE_TEST_SUITE_P(VectorAndFluentBit, ShipperShapeTest,
                         ::testing::Values(&VectorEvent, &FluentBitRecord), [](const auto& info) {
                           return info.index == 0 ? std::string("Vector")
                                                  : std::string("FluentBit");
                         });

}  // namespace
}  // namespace fingerprintd::testing
