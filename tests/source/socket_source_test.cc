// The socket source (source/socket_source.h) as a component: built from its
// config section, a Pipeline, an io_context and a clock the test steps. A
// `unix` listener in a temporary directory; clients are plain sockets. What
// users report: a client killed mid-line, more clients than max_connections,
// garbage on a jsonl socket, a client that goes silent. Idle timeouts run on
// the test's clock; only the socket I/O itself is real (the io_context is
// polled until what was sent has arrived).
#include "source/socket_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fingerprintd/pipeline.h"
#include "testing/counting_events.h"
#include "testing/replay_harness.h"
#include "testing/socket_client.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;
using testing::CountingEvents;

constexpr int64_t kStart = 1'796'000'000'000'000;  // 2026-11-29, microseconds
int64_t g_now = kStart;
int64_t VirtualNow() { return g_now; }

class SocketSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_now = kStart;
    dir_ = fs::temp_directory_path() /
           ("fp-sock-" + std::to_string(::getpid()) + "-" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_.type = config::SourceType::kUnix;
    config_.path = (dir_ / "in.sock").string();
    config_.labels = {{"deployment", "d"}};
  }
  void TearDown() override {
    if (source_) source_->Stop();
    fs::remove_all(dir_);
  }

  void Start() {
    Pipeline::Options options;
    options.line_observer = [this](const SourceSpec&, std::string_view line, uint64_t) {
      lines_.emplace_back(line);
    };
    pipeline_ = std::make_unique<Pipeline>(testing::EmbeddedRules(), options, events_, sink_);
    SocketSourceContext context{io_, *pipeline_, events_, [] {}, [] {}};
    context.clock = &VirtualNow;
    source_ = MakeSocketSource(config_, std::move(context));
    ASSERT_TRUE(source_->Start().ok());
  }
  // Runs the io_context until `done` holds (the bytes sent were read), at
  // most 5 s of real time.
  void RunUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.run_for(std::chrono::milliseconds(2));
    }
    EXPECT_TRUE(done());
  }
  void Settle() {
    for (int i = 0; i < 20; ++i) io_.run_for(std::chrono::milliseconds(2));
  }

  fs::path dir_;
  config::SourceConfig config_;
  boost::asio::io_context io_;
  CountingEvents events_;
  correlate::LatestIncidents sink_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<LiveSource> source_;
  std::vector<std::string> lines_;
};

TEST_F(SocketSourceTest, ALineCutByTheClientDisconnectingIsDroppedAndCounted) {
  Start();
  testing::Client client = testing::Client::Unix(config_.path);
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send("whole line\ncut mid-"));
  client.Close();
  RunUntil([&] { return events_.Dropped(DropReason::kCutAtDisconnect) == 1; });
  EXPECT_EQ(lines_, std::vector<std::string>{"whole line"});
  EXPECT_EQ(source_->OpenStreams(), 0u);
}

TEST_F(SocketSourceTest, AClientBeyondMaxConnectionsIsClosedAndCounted) {
  config_.max_connections = 1;
  Start();
  testing::Client first = testing::Client::Unix(config_.path);
  ASSERT_TRUE(first.connected());
  ASSERT_TRUE(first.Send("from the first\n"));
  RunUntil([&] { return lines_.size() == 1; });
  testing::Client second = testing::Client::Unix(config_.path);
  RunUntil([&] { return events_.Evictions(Evicted::kConnection) == 1; });
  second.Send("from the second\n");  // closed by the daemon: lost, as the refusal says
  ASSERT_TRUE(first.Send("first again\n"));
  RunUntil([&] { return lines_.size() == 2; });
  Settle();
  EXPECT_EQ(lines_, (std::vector<std::string>{"from the first", "first again"}));
}

TEST_F(SocketSourceTest, GarbageOnAJsonlSocketIsCountedAndTheNextRecordIsRead) {
  config_.framing = "jsonl";
  Start();
  testing::Client client = testing::Client::Unix(config_.path);
  ASSERT_TRUE(client.Send("not json at all\n{\"pod\":\"p\"}\n{\"log\":\"ok\\n\",\"pod\":\"p\"}\n"));
  RunUntil([&] { return lines_.size() == 1; });
  EXPECT_EQ(lines_, std::vector<std::string>{"ok"});
  EXPECT_EQ(events_.Dropped(DropReason::kInvalidJson), 1u);
  EXPECT_EQ(events_.Dropped(DropReason::kNoTextField), 1u);
}

TEST_F(SocketSourceTest, AClientSilentForTheIdleTimeoutIsClosedOnTheTestsClock) {
  config_.idle_timeout_us = 300'000'000;
  Start();
  testing::Client client = testing::Client::Unix(config_.path);
  ASSERT_TRUE(client.Send("hello\n"));
  RunUntil([&] { return lines_.size() == 1; });
  EXPECT_EQ(source_->OpenStreams(), 1u);
  g_now += 299'000'000;
  source_->Tick(g_now);
  EXPECT_EQ(source_->OpenStreams(), 1u);
  EXPECT_EQ(events_.Evictions(Evicted::kIdleConnection), 0u);
  g_now += 1'000'000;
  source_->Tick(g_now);
  EXPECT_EQ(source_->OpenStreams(), 0u);
  EXPECT_EQ(events_.Evictions(Evicted::kIdleConnection), 1u);
}

}  // namespace
}  // namespace fingerprintd::source
