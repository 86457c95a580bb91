// `fingerprintd run` with `release_read_bytes: true` on a file written through
// `tee -a`, as the sidecar manifest runs it (deploy/k8s/sidecar): the file's
// allocated blocks (st_blocks, not its size) stay under max_retained_bytes
// while it is written, every line is read once (the daemon's own counters,
// and across a SIGKILL its audit of committed lines), and the failure written
// last is reported.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "testing/http_client.h"
#include "testing/run_harness.h"
#include "testing/sanitizers.h"

namespace fingerprintd::testing {
namespace {

using namespace run_harness;  // NOLINT(build/namespaces): test-only helpers
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMiB = 1 << 20;
constexpr const char* kTargetRule = "deepgemm-unknown-sf-transformation";

uint64_t AllocatedBytes(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

// A healthy vLLM serving for hours before it fails: request, access and
// stats lines of an API server, each unique (its request number), dated from
// 00:00 to 09:30 on the day of the example failure (which starts 09:30:44).
class ServingLines {
 public:
  explicit ServingLines(uint64_t total_lines) : total_(total_lines) {}
  // Appends line `i` with its '\n'.
  void Append(uint64_t i, std::string* out) const {
    const uint64_t second = std::min<uint64_t>(i * 34'200 / total_, 34'199);
    char stamp[16];
    std::snprintf(stamp, sizeof(stamp), "03-12 %02d:%02d:%02d", static_cast<int>(second / 3600),
                  static_cast<int>(second / 60 % 60), static_cast<int>(second % 60));
    char line[400];
    int n;
    switch (i % 4) {
      case 0:
        n = std::snprintf(line, sizeof(line),
                          "(APIServer pid=7) INFO %s [logger.py:49] Received request "
                          "chatcmpl-%llu: params: SamplingParams(n=1, temperature=0.7, top_p=0.95, "
                          "max_tokens=512), prompt_token_ids: None, lora_request: None.\n",
                          stamp, static_cast<unsigned long long>(i));
        break;
      case 1:
        n = std::snprintf(line, sizeof(line),
                          "(APIServer pid=7) INFO %s [async_llm.py:270] Added request "
                          "chatcmpl-%llu.\n",
                          stamp, static_cast<unsigned long long>(i - 1));
        break;
      case 2:
        n = std::snprintf(line, sizeof(line),
                          "(APIServer pid=7) INFO:     10.0.%llu.%llu:51234 - \"POST "
                          "/v1/chat/completions HTTP/1.1\" 200 OK\n",
                          static_cast<unsigned long long>(i / 256 % 256),
                          static_cast<unsigned long long>(i % 256));
        break;
      default:
        n = std::snprintf(line, sizeof(line),
                          "(APIServer pid=7) INFO %s [loggers.py:123] Engine 000: Avg prompt "
                          "throughput: %llu.0 tokens/s, Avg generation throughput: 812.4 "
                          "tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: "
                          "31.2%%, Prefix cache hit rate: 44.0%%\n",
                          stamp, static_cast<unsigned long long>(i % 5000));
        break;
    }
    out->append(line, static_cast<size_t>(n));
  }

 private:
  uint64_t total_;
};

class RunReleaseTest : public RunFixture {
 protected:
  // The sidecar's config (deploy/k8s/sidecar/fingerprintd.yaml) with this
  // test's paths and bound.
  std::unique_ptr<DaemonProcess> StartReleasing(uint64_t bound,
                                                std::vector<std::string> extra = {}) {
    fs::path config = dir_ / "fingerprintd.yaml";
    std::ofstream(config) << "sources:\n"
                          << "  - type: file\n"
                          << "    paths: ['" << (dir_ / "logs" / "*.log").string() << "']\n"
                          << "    format: plain\n"
                          << "    start_at: beginning\n"
                          << "    labels: {deployment: qwen3}\n"
                          << "    release_read_bytes: true\n"
                          << "    max_retained_bytes: " << bound << "\n"
                          << "checkpoint_dir: " << (dir_ / "checkpoints").string() << "\n"
                          << "http: {listen: '127.0.0.1:0'}\n"
                          << "incidents: {path: " << Incidents().string() << "}\n";
    std::vector<std::string> args = {"--config", config.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<DaemonProcess>(args, dir_ / "daemon.err");
  }
  fs::path LogPath() const { return dir_ / "logs" / "vllm.log"; }
  double Metric(const std::string& family) const {
    uint16_t port = HttpPort();
    return port == 0 ? -1 : MetricValue(HttpGet(port, "/metrics").body, family);
  }
  bool HasTargetIncident() const {
    for (const Json& j : IncidentLines()) {
      if (j["rule"] == kTargetRule && j["workers"]["affected"] == 2) return true;
    }
    return false;
  }
  // The example failure (examples/qwen3-fp8-rtx5090): the target's traceback on both ranks.
  std::string ExampleFailure() const {
    return ReadFile(fs::path(FINGERPRINTD_SOURCE_DIR) / "examples/qwen3-fp8-rtx5090/worker.log");
  }
};

// `tee -a FILE > /dev/null`: vLLM's pipe in the sidecar manifest.
class Tee {
 public:
  explicit Tee(const fs::path& file)
      : pipe_(::popen(("exec tee -a '" + file.string() + "' > /dev/null").c_str(), "w")) {}
  ~Tee() { Close(); }
  bool Write(const std::string& bytes) {
    return pipe_ != nullptr && std::fwrite(bytes.data(), 1, bytes.size(), pipe_) == bytes.size() &&
           std::fflush(pipe_) == 0;
  }
  // Waits for tee to have written everything and exited.
  int Close() { return pipe_ == nullptr ? -1 : ::pclose(std::exchange(pipe_, nullptr)); }

 private:
  FILE* pipe_;
};

uint64_t Newlines(const std::string& text) {
  return static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(RunReleaseTest,
       ThreeTimesItsBoundWrittenThroughTeeStaysUnderItOnDiskAndEveryLineIsReadOnce) {
  // Written at a steady 32 MiB/s (a busy vLLM writes ~100 KB/s) for 12 s,
  // three times the bound: the daemon reads ~200 MB/s on one core, and the
  // half of the bound left for unread bytes (release_policy.h) covers it
  // being off the CPU for 1.7 s.
#if defined(FINGERPRINTD_ASAN)
  // The sanitizer build (clang, -O0, ASan) reads ~6 MB/s on a loaded CI
  // core, ~35x slower: a sixteenth of the data at a sixteenth of the rate,
  // so the bound's unread half still covers 8 s off the CPU.
  constexpr uint64_t kTotal = 64 * kMiB;
  constexpr uint64_t kRate = 2 * kMiB;
  constexpr uint64_t kBound = 32 * kMiB;
#else
  constexpr uint64_t kTotal = 384 * kMiB;
  constexpr uint64_t kRate = 32 * kMiB;
  constexpr uint64_t kBound = 128 * kMiB;
#endif
  const auto started = Clock::now();
  auto daemon = StartReleasing(kBound);
  ASSERT_TRUE(WaitFor([&] { return StderrHas("running"); })) << Stderr();
  Tee tee(LogPath());
  ServingLines serving(kTotal / 157);  // about 157 bytes a line
  uint64_t written_bytes = 0, written_lines = 0, max_allocated = 0;
  std::string chunk;
  for (uint64_t i = 0; written_bytes < kTotal;) {
    chunk.clear();
    for (; written_bytes + chunk.size() < kTotal && chunk.size() < kMiB; ++i) {
      serving.Append(i, &chunk);
    }
    ASSERT_TRUE(tee.Write(chunk));
    written_bytes += chunk.size();
    written_lines += Newlines(chunk);
    max_allocated = std::max(max_allocated, AllocatedBytes(LogPath()));
    // Paced: what a daemon that keeps up is sized for (release_policy.h).
    const auto due = started + std::chrono::microseconds(written_bytes * 1'000'000 / kRate);
    if (due > Clock::now()) std::this_thread::sleep_until(due);
  }
  const std::string failure = ExampleFailure();
  ASSERT_TRUE(tee.Write(failure));
  ASSERT_EQ(tee.Close(), 0);
  written_bytes += failure.size();
  written_lines += Newlines(failure);
  const auto written_at = Clock::now();

  ASSERT_TRUE(WaitFor(
      [&] {
        max_allocated = std::max(max_allocated, AllocatedBytes(LogPath()));
        return HasTargetIncident() &&
               Metric("fingerprintd_lines_total") == static_cast<double>(written_lines);
      },
      std::chrono::seconds(120)))
      << "lines read " << Metric("fingerprintd_lines_total") << " of " << written_lines << "\n"
      << Stderr();
  const double released = Metric("fingerprintd_released_bytes_total");
  const double failures = Metric("fingerprintd_release_failures_total");
  StopSummary summary = Stop(daemon);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::cout << "[ figures  ] " << written_bytes << " bytes, " << written_lines
            << " lines written through tee -a; read " << summary.lines << " lines, "
            << summary.bytes << " bytes; allocated at most " << max_allocated << " of a bound of "
            << kBound << "; released " << static_cast<uint64_t>(released) << " bytes; read "
            << std::chrono::duration<double>(Clock::now() - written_at).count()
            << " s after the last write; " << seconds << " s in all\n";

  EXPECT_LT(max_allocated, kBound);
  EXPECT_EQ(summary.lines, written_lines);
  EXPECT_EQ(summary.bytes, written_bytes);
  EXPECT_EQ(summary.truncations, 0u);
  EXPECT_EQ(static_cast<uint64_t>(fs::file_size(LogPath())), written_bytes);  // nothing truncated
  EXPECT_GE(released, static_cast<double>(written_bytes - kBound));
  EXPECT_EQ(failures, 0);
  std::vector<Json> incidents = IncidentLines();
  ASSERT_FALSE(incidents.empty());
  EXPECT_EQ(incidents.back()["rule"], kTargetRule);
  EXPECT_EQ(incidents.back()["workers"]["affected"], 2);
}

TEST_F(RunReleaseTest, ASigkillInTheMiddleResumesExactlyWithNothingLostOrDoubled) {
  // Killed while the file is being written and released; written on while
  // it is down; restarted: the audit of committed lines holds every line
  // written exactly once, and the failure written last is one incident.
  constexpr uint64_t kBound = 16 * kMiB;
  constexpr uint64_t kLines = 400'000;  // ~70 MB
  fs::path audit = dir_ / "audit.txt";
  ServingLines serving(kLines);
  std::map<std::string, int> written;
  auto write_lines = [&](Tee& tee, uint64_t from, uint64_t to) {
    std::string chunk, line;
    for (uint64_t i = from; i < to; ++i) {
      line.clear();
      serving.Append(i, &line);
      chunk += line;
      line.pop_back();
      ++written[DigestOf(line)];
      if (chunk.size() >= kMiB || i + 1 == to) {
        ASSERT_TRUE(tee.Write(chunk));
        chunk.clear();
      }
    }
  };
  auto daemon = StartReleasing(kBound, {"--audit", audit.string()});
  ASSERT_TRUE(WaitFor([&] { return StderrHas("running"); })) << Stderr();
  {
    Tee tee(LogPath());
    write_lines(tee, 0, kLines / 2);
    ASSERT_TRUE(WaitFor([&] { return Metric("fingerprintd_released_bytes_total") > 0; }))
        << Stderr();
    EXPECT_EQ(daemon->Kill(SIGKILL), -1);
    write_lines(tee, kLines / 2, kLines * 3 / 4);  // while the sidecar restarts
  }
  daemon = StartReleasing(kBound, {"--audit", audit.string()});
  ASSERT_TRUE(WaitFor([&] { return StderrCount("running") == 2; })) << Stderr();
  EXPECT_TRUE(StderrHas("resuming from its checkpoint"));
  Tee tee(LogPath());
  write_lines(tee, kLines * 3 / 4, kLines);
  const std::string failure = ExampleFailure();
  ASSERT_TRUE(tee.Write(failure));
  ASSERT_EQ(tee.Close(), 0);
  std::istringstream failure_lines(failure);
  for (std::string line; std::getline(failure_lines, line);) ++written[DigestOf(line)];
  ASSERT_TRUE(WaitFor([&] { return HasTargetIncident(); }, std::chrono::seconds(60))) << Stderr();
  // A line a day later: no rule needs the lines before it, so the last
  // checkpoint commits every line.
  const std::string later = "(APIServer pid=7) INFO 03-13 10:15:00 [core.py:61] a day later";
  std::ofstream(LogPath(), std::ios::app) << later << "\n";
  ++written[DigestOf(later)];
  // Read and checkpointed: the checkpoint's safe offset is the file's end.
  const std::string checkpoint = (dir_ / "checkpoints" / "checkpoint.json").string();
  ASSERT_TRUE(WaitFor(
      [&] {
        Json j = Json::parse(ReadFile(checkpoint), nullptr, /*allow_exceptions=*/false);
        return j.is_object() && j["sources"].size() == 1 &&
               j["sources"][0]["safe"]["offset"] == fs::file_size(LogPath());
      },
      std::chrono::seconds(30)))
      << ReadFile(checkpoint).substr(0, 2000) << Stderr();
  const double evicted = Metric("fingerprintd_evictions_total{what=\"retained_bytes\"}");
  StopSummary summary = Stop(daemon);
  EXPECT_EQ(summary.truncations, 0u);
  EXPECT_EQ(AuditedDigests(audit), written);
  EXPECT_EQ(evicted, 0);  // every release stayed below the pipeline's safe offset
  std::set<std::string> ids;
  for (const Json& j : IncidentLines()) ids.insert(j["incident_id"].get<std::string>());
  EXPECT_EQ(ids.size(), 1u);
}

}  // namespace
}  // namespace fingerprintd::testing
