// The tailer against the failures operators reported (issue 29): a log born
// while the daemon was stopped, a file or directory that cannot be read, a
// glob that matches nothing, a deleted file still being written, a delete and
// recreate, a copytruncate of a file last seen empty, and bytes lost for good
// (counted, never silent). Real files in a temp dir; no sleeps.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "source/tailer.h"
#include "testing/counting_events.h"
#include "testing/privileges.h"
#include "testing/scratch_path.h"
#include "testing/tailer_lines.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class Client final : public TailerClient {
 public:
  std::optional<StreamCheckpoint> OnOpen(const std::string& stream) override {
    auto it = checkpoints.find(stream);
    if (it == checkpoints.end()) return std::nullopt;
    return it->second;
  }
  void OnBytes(const std::string& stream, std::string_view bytes, uint64_t offset) override {
    split.Bytes(stream, bytes, offset, [&](const std::string&, std::string_view line, uint64_t at) {
      texts.emplace_back(line);
      offsets.push_back(at);
    });
  }
  void OnLineEnd(const std::string& stream) override {
    split.End(stream, [&](const std::string&, std::string_view line, uint64_t at) {
      texts.emplace_back(line);
      offsets.push_back(at);
    });
  }
  testing::TailerLines split;
  void OnEnded(const std::string& stream) override { ended.push_back(stream); }
  void OnStart(const std::string& stream, StartFrom from, uint64_t) override {
    starts[stream] = from;
  }
  void OnSourceProblem(const SourceProblem& problem, SourceHealth::Event event) override {
    if (event == SourceHealth::Event::kStill) {
      ++retries_failed;
    } else {
      (event == SourceHealth::Event::kResolved ? resolved_problems : problems).push_back(problem);
    }
  }
  void OnUnread(const std::string&, std::string_view reason, uint64_t bytes,
                const std::string&) override {
    unread.emplace_back(std::string(reason), bytes);
  }
  void OnDeleted(const std::string&, bool read_on) override { deleted_read_on.push_back(read_on); }

  std::map<std::string, StreamCheckpoint> checkpoints;
  std::vector<std::string> texts;
  std::vector<uint64_t> offsets;
  std::vector<std::string> ended;
  std::map<std::string, StartFrom> starts;
  std::vector<SourceProblem> problems, resolved_problems;
  int retries_failed = 0;
  std::vector<std::pair<std::string, uint64_t>> unread;
  std::vector<bool> deleted_read_on;
};

class TailerSourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::ScratchPath("sources");
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Append(const std::string& name, const std::string& bytes) {
    std::ofstream(Path(name), std::ios::app | std::ios::binary) << bytes;
  }
  std::unique_ptr<Tailer> MakeTailer(const std::string& glob, bool start_at_end = false) {
    options_.paths = {Path(glob)};
    options_.start_at_end = start_at_end;
    return std::make_unique<Tailer>(options_, events_, client_);
  }
  static int64_t WallMicros(clockid_t clock = CLOCK_REALTIME) {
    timespec ts;
    ::clock_gettime(clock, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
  }

  // An empty w.log, last written long ago (so a copy made now is born after
  // it was last seen, whatever the file system's timestamp granularity), tailed.
  std::unique_ptr<Tailer> TailAnEmptyLogCreatedAWhileAgo() {
    Append("w.log", "");
    const timespec past[2] = {{1'700'000'000, 0}, {1'700'000'000, 0}};
    EXPECT_EQ(::utimensat(AT_FDCWD, Path("w.log").c_str(), past, 0), 0);
    auto tailer = MakeTailer("w.log");
    tailer->Rescan(now_);
    return tailer;
  }
  // A first life reads w.log ("a1\na2\n"), sees it rotated to w.log.1 and
  // "b1\n" written to a new w.log, and is checkpointed at stream offset 3
  // (its pipeline still holding "a2"), with what it read up to when
  // `read_recorded`. While stopped, w.log.1 is deleted. Returns the restart.
  std::unique_ptr<Tailer> RestartAfterTheRotatedPieceIsDeleted(bool read_recorded) {
    Append("w.log", "a1\na2\n");
    {
      auto tailer = MakeTailer("w.log");
      tailer->Rescan(now_);
      fs::rename(Path("w.log"), Path("w.log.1"));
      Append("w.log", "b1\n");
      tailer->Poll(now_);
      client_.checkpoints[Path("w.log")] = {tailer->PiecesFor(Path("w.log"), 3), 3,
                                            read_recorded ? tailer->NextOffset(Path("w.log")) : 0};
    }
    client_.texts.clear();
    fs::remove(Path("w.log.1"));
    auto tailer = MakeTailer("w.log", /*start_at_end=*/true);
    tailer->Rescan(now_);
    return tailer;
  }

  fs::path dir_;
  TailerOptions options_;
  testing::CountingEvents events_;
  Client client_;
  int64_t now_ = 1'000'000'000;
};

// Item 2: a DaemonSet rollout. The daemon first ran (and checkpointed) before
// w1.log existed; w1.log was created while it was stopped. start_at: end is
// for what existed before the daemon first ran; w1.log is read whole.
TEST_F(TailerSourcesTest, ALogCreatedWhileTheDaemonWasStoppedIsReadFromItsStart) {
  Append("w0.log", "old, before the daemon first ran\n");
  options_.first_run_us = WallMicros() + 1;
  // File times come from the kernel's coarse clock: wait (a tick at most)
  // until it has passed the first run, as it has for any real rollout.
  while (WallMicros(CLOCK_REALTIME_COARSE) <= options_.first_run_us) {
  }
  Append("w1.log", "RuntimeError: written during the rollout\n");
  auto tailer = MakeTailer("*.log", /*start_at_end=*/true);
  tailer->Rescan(now_);
  EXPECT_THAT(client_.texts, ElementsAre("RuntimeError: written during the rollout"));
  EXPECT_EQ(client_.starts[Path("w0.log")], StartFrom::kEnd);
  EXPECT_EQ(client_.starts[Path("w1.log")], StartFrom::kBornWhileStopped);
  EXPECT_EQ(tailer->stats().born_while_stopped, 1u);
}

TEST_F(TailerSourcesTest, WithoutAFirstRunStartAtEndSkipsEveryFileOfTheFirstScan) {
  Append("w1.log", "there before\n");
  auto tailer = MakeTailer("*.log", /*start_at_end=*/true);
  tailer->Rescan(now_);
  EXPECT_THAT(client_.texts, IsEmpty());
  EXPECT_EQ(client_.starts[Path("w1.log")], StartFrom::kEnd);
}

// Item 3: chmod 000 (as root, with the DAC override taken away: see
// testing/privileges.h). Not a stream, not open, reported once with the
// path and the reason, retried at every rescan, read whole once readable.
TEST_F(TailerSourcesTest, AChmod000LogIsReportedOnceAndReadOnceItIsReadable) {
  testing::WithoutDacOverride scope;
  Append("w.log", "a1\na2\n");
  fs::permissions(Path("w.log"), fs::perms::none);
  ASSERT_LT(::open(Path("w.log").c_str(), O_RDONLY), 0) << "chmod 000 did not deny the read";
  auto tailer = MakeTailer("*.log");
  tailer->Rescan(now_);
  tailer->Rescan(now_);
  ASSERT_EQ(client_.problems.size(), 1u);  // found once, retried
  EXPECT_EQ(client_.retries_failed, 1);
  EXPECT_EQ(client_.problems[0].path, Path("w.log"));
  EXPECT_EQ(client_.problems[0].reason, "permission_denied");
  EXPECT_EQ(tailer->OpenFiles(), 0u);
  ASSERT_EQ(tailer->Problems().size(), 1u);
  fs::permissions(Path("w.log"), fs::perms::owner_read | fs::perms::owner_write);
  tailer->Rescan(now_);
  EXPECT_THAT(client_.texts, ElementsAre("a1", "a2"));
  EXPECT_EQ(client_.resolved_problems.size(), 1u);
  EXPECT_THAT(tailer->Problems(), IsEmpty());
  EXPECT_EQ(tailer->OpenFiles(), 1u);
}

TEST_F(TailerSourcesTest, AnUnreadableFileAtStartKeepsStartAtEndOnceReadable) {
  testing::WithoutDacOverride scope;
  Append("w.log", "before the daemon\n");
  fs::permissions(Path("w.log"), fs::perms::none);
  auto tailer = MakeTailer("*.log", /*start_at_end=*/true);
  tailer->Rescan(now_);
  fs::permissions(Path("w.log"), fs::perms::owner_read | fs::perms::owner_write);
  Append("w.log", "after\n");
  tailer->Rescan(now_);
  tailer->Poll(now_);
  EXPECT_THAT(client_.texts, IsEmpty());  // both lines were there when it became readable
  EXPECT_EQ(client_.starts[Path("w.log")], StartFrom::kEnd);
}

TEST_F(TailerSourcesTest, ADirectoryThatCannotBeListedIsReportedWithItsPath) {
  testing::WithoutDacOverride scope;
  fs::create_directories(dir_ / "pod");
  Append("pod/w.log", "a1\n");
  fs::permissions(dir_ / "pod", fs::perms::none);
  auto tailer = MakeTailer("*/*.log");
  tailer->Rescan(now_);
  std::vector<std::string> reasons;
  for (const SourceProblem& p : tailer->Problems()) reasons.push_back(p.path + " " + p.reason);
  EXPECT_THAT(reasons,
              ElementsAre(Path("*/*.log") + " no_match", Path("pod") + " permission_denied"));
}

TEST_F(TailerSourcesTest, AGlobThatMatchesNothingIsAProblemUntilAFileAppears) {
  auto tailer = MakeTailer("*.log");
  tailer->Rescan(now_);
  ASSERT_EQ(client_.problems.size(), 1u);
  EXPECT_EQ(client_.problems[0].path, Path("*.log"));
  EXPECT_EQ(client_.problems[0].reason, "no_match");
  EXPECT_THAT(tailer->GlobMatches(), ElementsAre(std::pair{Path("*.log"), size_t{0}}));
  tailer->Rescan(now_);
  EXPECT_EQ(client_.problems.size(), 1u);  // once, however often retried
  Append("0.log", "a1\n");
  tailer->Rescan(now_);
  EXPECT_EQ(client_.resolved_problems.size(), 1u);
  EXPECT_THAT(tailer->GlobMatches(), ElementsAre(std::pair{Path("*.log"), size_t{1}}));
  EXPECT_THAT(client_.texts, ElementsAre("a1"));
}

TEST_F(TailerSourcesTest, AVanishedDirectoryIsReportedMissing) {
  fs::create_directories(dir_ / "pod");
  Append("pod/w.log", "a1\n");
  auto tailer = MakeTailer("pod/*.log");
  tailer->Rescan(now_);
  EXPECT_THAT(tailer->Problems(), IsEmpty());
  fs::remove_all(dir_ / "pod");
  tailer->Poll(now_);
  tailer->Rescan(now_);
  std::vector<std::string> reasons;
  for (const SourceProblem& p : tailer->Problems()) reasons.push_back(p.path + " " + p.reason);
  EXPECT_THAT(reasons,
              ElementsAre(Path("pod") + " directory_missing", Path("pod/*.log") + " no_match"));
}

// Item 4: a worker keeps writing into its log after it was deleted (the
// writer holds it open). Lines written after the deletion are read; the file
// is closed when its writer is gone, and the stream ends after the grace.
TEST_F(TailerSourcesTest, ADeletedFileStillBeingWrittenIsReadToItsEnd) {
  Append("w.log", "");
  int writer = ::open(Path("w.log").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(writer, 0);
  auto write = [&](const std::string& text) {
    ASSERT_EQ(::write(writer, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  };
  write("a1\n");
  auto tailer = MakeTailer("w.log");
  tailer->Rescan(now_);
  fs::remove(Path("w.log"));
  write("a2\n");
  tailer->Poll(now_);
  EXPECT_THAT(client_.deleted_read_on, ElementsAre(true));
  EXPECT_TRUE(tailer->Draining());
  write("a3\n");
  tailer->Poll(now_ + options_.deleted_grace_us * 10);  // still written: kept however long
  EXPECT_THAT(client_.texts, ElementsAre("a1", "a2", "a3"));
  EXPECT_THAT(client_.ended, IsEmpty());
  write("a4\n");
  ::close(writer);
  tailer->Poll(now_ + options_.deleted_grace_us * 10);
  EXPECT_THAT(client_.texts, ElementsAre("a1", "a2", "a3", "a4"));
  EXPECT_EQ(tailer->OpenFiles(), 0u);
  tailer->Poll(now_ + options_.deleted_grace_us * 11);
  EXPECT_THAT(client_.ended, ElementsAre(Path("w.log")));
  EXPECT_FALSE(tailer->Draining());
  EXPECT_EQ(tailer->stats().deleted_read_on, 1u);
}

// Item 4: the log deleted and created again between two lines of a
// traceback. The new file continues the stream (offsets go on), so the
// traceback is one; the stream is not ended.
TEST_F(TailerSourcesTest, DeleteAndRecreateMidTracebackContinuesTheStream) {
  Append("w.log", "Traceback (most recent call last):\n");
  auto tailer = MakeTailer("w.log");
  tailer->Rescan(now_);
  fs::remove(Path("w.log"));
  tailer->Poll(now_);
  EXPECT_THAT(client_.deleted_read_on, ElementsAre(false));
  Append("w.log", "RuntimeError: boom\n");
  tailer->Poll(now_ + 1000);
  EXPECT_THAT(client_.texts,
              ElementsAre("Traceback (most recent call last):", "RuntimeError: boom"));
  EXPECT_THAT(client_.offsets, ElementsAre(0u, 35u));
  tailer->Poll(now_ + options_.deleted_grace_us * 2);
  EXPECT_THAT(client_.ended, IsEmpty());
  EXPECT_FALSE(tailer->Draining());
}

// The empty file has no head to know its copy by; the copy is the sibling
// born since the file was last seen that holds what the file does not.
TEST_F(TailerSourcesTest, AnEmptyLogFilledAndCopytruncatedBetweenTwoPollsLosesNothing) {
  auto tailer = TailAnEmptyLogCreatedAWhileAgo();
  Append("w.log", "a1\na2\n");
  fs::copy_file(Path("w.log"), Path("w.log.1"));
  fs::resize_file(Path("w.log"), 0);
  Append("w.log", "b1\n");
  tailer->Poll(now_);
  EXPECT_THAT(client_.texts, ElementsAre("a1", "a2", "b1"));
  EXPECT_THAT(client_.offsets, ElementsAre(0u, 3u, 6u));
  EXPECT_EQ(tailer->stats().truncations, 1u);
  EXPECT_THAT(client_.unread, IsEmpty());
}

TEST_F(TailerSourcesTest, AnEmptyLogAppendedToIsNotMistakenForACopytruncate) {
  auto tailer = TailAnEmptyLogCreatedAWhileAgo();
  Append("w.log", "a1\n");
  fs::copy_file(Path("w.log"), Path("w.log.bak"));  // a copy of what it still holds
  tailer->Poll(now_);
  EXPECT_THAT(client_.texts, ElementsAre("a1"));
  EXPECT_EQ(tailer->stats().truncations, 0u);
}

// A plain truncation (no copy) of bytes not read yet: they are gone, and
// how many is counted.
TEST_F(TailerSourcesTest, BytesTruncatedBeforeTheyWereReadAreCounted) {
  Append("w.log", std::string(100, 'x') + "\n");
  options_.max_read_per_call = 10;  // a daemon still catching up
  auto tailer = MakeTailer("w.log");
  tailer->Rescan(now_);
  ASSERT_TRUE(tailer->HasMoreToRead());
  fs::resize_file(Path("w.log"), 0);
  Append("w.log", "b1\n");
  tailer->Poll(now_);
  tailer->Poll(now_);
  ASSERT_EQ(client_.unread.size(), 1u);
  EXPECT_EQ(client_.unread[0].first, "truncated_unread");
  EXPECT_EQ(client_.unread[0].second, 91u);  // 101 written, 10 read
  EXPECT_EQ(client_.texts.back(), "b1");
}

TEST_F(TailerSourcesTest, ACheckpointedPieceDeletedBeforeItWasReadIsCountedAsUnread) {
  auto tailer = RestartAfterTheRotatedPieceIsDeleted(/*read_recorded=*/false);
  EXPECT_THAT(client_.texts, ElementsAre("b1"));
  ASSERT_EQ(client_.unread.size(), 1u);
  EXPECT_EQ(client_.unread[0].first, "deleted_unread");
  EXPECT_EQ(client_.unread[0].second, 3u);  // "a2\n", as far as the checkpoint can tell
}

// The same, knowing "a2" was read before the stop: only the pipeline's
// re-read is missing, no byte of the log was lost.
TEST_F(TailerSourcesTest, APieceDeletedAfterItWasReadIsNotCountedAsUnread) {
  auto tailer = RestartAfterTheRotatedPieceIsDeleted(/*read_recorded=*/true);
  EXPECT_THAT(client_.texts, ElementsAre("b1"));
  EXPECT_THAT(client_.unread, IsEmpty());
  EXPECT_EQ(tailer->stats().checkpoint_pieces_missing, 1u);
}

}  // namespace
}  // namespace fingerprintd::source

namespace fingerprintd::source {
namespace {

// Issue 42: a FIFO matched by the glob is never opened (an open would block
// the daemon's only thread until a writer came): it is named as a problem,
// and the regular files beside it are read.
TEST_F(TailerSourcesTest, AFifoInTheGlobIsNamedNotOpenedAndTheFilesBesideItAreRead) {
  ASSERT_EQ(::mkfifo(Path("pipe.log").c_str(), 0644), 0);
  Append("w.log", "RuntimeError: read beside the FIFO\n");
  auto tailer = MakeTailer("*.log");
  tailer->Rescan(now_);
  EXPECT_THAT(client_.texts, ElementsAre("RuntimeError: read beside the FIFO"));
  ASSERT_EQ(client_.problems.size(), 1u);
  EXPECT_EQ(client_.problems[0].path, Path("pipe.log"));
  EXPECT_EQ(client_.problems[0].reason, "not_regular_file");
  EXPECT_THAT(client_.problems[0].detail, ::testing::HasSubstr("FIFO"));
  tailer->Rescan(now_);  // still there: retried, not reported again
  EXPECT_EQ(client_.problems.size(), 1u);
  fs::remove(Path("pipe.log"));
  tailer->Rescan(now_);
  EXPECT_EQ(client_.resolved_problems.size(), 1u);
}

// The same, for a watched log replaced by a FIFO (mkfifo at its path after
// a rotation): the stream is not switched to it, the problem is named, and a
// regular file put back at the path is read.
TEST_F(TailerSourcesTest, AWatchedLogReplacedByAFifoIsNamedAndAFileAfterItIsRead) {
  Append("w.log", "a1\n");
  auto tailer = MakeTailer("w.log");
  tailer->Rescan(now_);
  fs::rename(Path("w.log"), Path("w.log.1"));
  ASSERT_EQ(::mkfifo(Path("w.log").c_str(), 0644), 0);
  tailer->Poll(now_);  // would block in open() forever
  ASSERT_FALSE(client_.problems.empty());
  EXPECT_EQ(client_.problems.back().reason, "not_regular_file");
  fs::remove(Path("w.log"));
  Append("w.log", "b1\n");
  tailer->Poll(now_);
  tailer->Rescan(now_);
  EXPECT_THAT(client_.texts, ElementsAre("a1", "b1"));
}

}  // namespace
}  // namespace fingerprintd::source
