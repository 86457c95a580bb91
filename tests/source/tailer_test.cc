// The tailer on real files in a temp dir: every rotation shape, truncation,
// deletion, partial and over-long lines, binary bytes, checkpoints, and a
// seeded model test against an in-memory list of the lines that must be read.
#include "source/tailer.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "source/inotify_watcher.h"
#include "testing/counting_events.h"
#include "testing/scratch_path.h"
#include "testing/tailer_lines.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using Lines = std::vector<std::pair<std::string, uint64_t>>;

struct ReadLine {
  std::string stream;
  std::string text;
  uint64_t offset;
};

class RecordingClient final : public TailerClient {
 public:
  std::optional<StreamCheckpoint> OnOpen(const std::string& stream) override {
    if (on_open) std::exchange(on_open, nullptr)(stream);
    auto it = checkpoints.find(stream);
    if (it == checkpoints.end()) return std::nullopt;
    return it->second;
  }
  void OnBytes(const std::string& stream, std::string_view bytes, uint64_t offset) override {
    split.Bytes(stream, bytes, offset,
                [&](const std::string& s, std::string_view line, uint64_t at) {
                  lines.push_back({s, std::string(line), at});
                });
  }
  void OnLineEnd(const std::string& stream) override {
    split.End(stream, [&](const std::string& s, std::string_view line, uint64_t at) {
      lines.push_back({s, std::string(line), at});
    });
  }
  void OnEnded(const std::string& stream) override { ended.push_back(stream); }

  std::vector<std::string> Texts() const {
    std::vector<std::string> out;
    for (const auto& l : lines) out.push_back(l.text);
    return out;
  }
  // Text and stream offset of every line read, in order.
  std::vector<std::pair<std::string, uint64_t>> TextsAndOffsets() const {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (const auto& l : lines) out.emplace_back(l.text, l.offset);
    return out;
  }

  std::map<std::string, StreamCheckpoint> checkpoints;
  std::function<void(const std::string&)> on_open;  // runs once, inside the next OnOpen()
  std::vector<ReadLine> lines;
  std::vector<std::string> ended;
  testing::TailerLines split;  // the bytes handed out, as lines
};

class TailerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::ScratchPath("tailer");
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Append(const std::string& name, const std::string& bytes) {
    std::ofstream(Path(name), std::ios::app | std::ios::binary) << bytes;
  }
  // logrotate's copytruncate: `name` copied to `copy`, then emptied.
  void Copytruncate(const std::string& name, const std::string& copy) {
    fs::copy_file(Path(name), Path(copy));
    fs::resize_file(Path(name), 0);
  }
  std::unique_ptr<Tailer> MakeTailer(const std::string& glob, bool start_at_end = false) {
    options_.paths = {Path(glob)};
    options_.start_at_end = start_at_end;
    return std::make_unique<Tailer>(options_, events_, client_);
  }
  // The first life of a daemon before a restart: a tailer reads `glob` from
  // the beginning, `while_running` rotates or writes (then the tailer polls),
  // and `stream` is checkpointed at `offset` (at what was read when
  // nullopt) as the daemon saves it before it stops. The lines read are
  // forgotten, so a test sees only what the restart reads.
  void RunThenCheckpoint(const std::string& glob, const std::string& stream,
                         std::optional<uint64_t> offset,
                         const std::function<void()>& while_running = {}) {
    auto tailer = MakeTailer(glob);
    tailer->Rescan(now_);
    if (while_running) {
      while_running();
      tailer->Poll(now_);
    }
    uint64_t at = offset.value_or(tailer->NextOffset(Path(stream)));
    client_.checkpoints[Path(stream)] = {tailer->PiecesFor(Path(stream), at), at};
    client_.lines.clear();
  }
  // The restarted daemon: resumes from the checkpoints, new files at their end.
  std::unique_ptr<Tailer> Restart(const std::string& glob) {
    auto tailer = MakeTailer(glob, /*start_at_end=*/true);
    tailer->Rescan(now_);
    return tailer;
  }

  fs::path dir_;
  TailerOptions options_;
  testing::CountingEvents events_;
  RecordingClient client_;
  int64_t now_ = 1'000'000'000;
};

TEST_F(TailerTest, StartAtBeginningReadsExistingLinesWithTheirOffsets) {
  Append("0.log", "first\nsecond\n");
  auto tailer = MakeTailer("*.log");
  tailer->Rescan(now_);
  ASSERT_EQ(client_.lines.size(), 2u);
  EXPECT_EQ(client_.lines[0].stream, Path("0.log"));
  EXPECT_EQ(client_.lines[0].offset, 0u);
  EXPECT_EQ(client_.lines[1].text, "second");
  EXPECT_EQ(client_.lines[1].offset, 6u);
  EXPECT_EQ(tailer->NextOffset(Path("0.log")), 13u);
}

TEST_F(TailerTest, StartAtEndSkipsWhatIsThereAndReadsWhatIsWrittenNext) {
  Append("0.log", "old\n");
  auto tailer = MakeTailer("*.log", /*start_at_end=*/true);
  tailer->Rescan(now_);
  Append("0.log", "new\n");
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("new"));
  EXPECT_EQ(client_.lines[0].offset, 4u);
}

TEST_F(TailerTest, AFileCreatedAfterTheFirstScanIsReadFromItsBeginning) {
  auto tailer = MakeTailer("*.log", /*start_at_end=*/true);
  tailer->Rescan(now_);
  Append("1.log", "hello\n");
  tailer->Rescan(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("hello"));
}

TEST_F(TailerTest, RenameAndCreateReadsTheOldFileToItsEndBeforeTheNewOne) {
  Append("0.log", "a1\na2\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  Append("0.log", "a3\n");  // written after the last read, before the rename
  fs::rename(Path("0.log"), Path("0.log.1"));
  Append("0.log", "b1\n");
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "a2", "a3", "b1"));
  EXPECT_EQ(client_.lines[3].offset, 9u);  // the stream goes on where the old file ended
  EXPECT_EQ(events_.rotations, 1u);
  EXPECT_EQ(tailer->stats().rotations, 1u);
}

TEST_F(TailerTest, AFileRotatedAwayWhileTheClientIsToldOfItIsStillReadBeforeItsSuccessor) {
  // The daemon logs "tailing PATH" in OnOpen(); a rotation right then must not
  // make the tailer open the successor instead and lose the first file.
  Append("0.log", "a1\na2\n");
  auto tailer = MakeTailer("0.log");
  client_.on_open = [&](const std::string&) {
    fs::rename(Path("0.log"), Path("0.log.1"));
    Append("0.log", "b1\n");
  };
  tailer->Rescan(now_);
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "a2", "b1"));
  EXPECT_EQ(tailer->stats().rotations, 1u);
}

TEST_F(TailerTest, RenameWithTheNewFileCreatedLaterKeepsReadingTheOldOne) {
  Append("0.log", "a1\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  fs::rename(Path("0.log"), Path("0.log.1"));
  Append("0.log.1", "a2\n");  // the writer has not reopened yet
  tailer->Poll(now_);
  Append("0.log", "b1\n");
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "a2", "b1"));
  EXPECT_TRUE(client_.ended.empty());
}

// No copy beside it (a sibling with another head is not taken for one):
// reading goes on at byte 0 of the truncated file.
TEST_F(TailerTest, CopytruncateRestartsAtTheBeginningOfTheTruncatedFile) {
  Append("0.log", "a1\na2\n");
  Append("0.log.1", "older piece\nolder line\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  fs::resize_file(Path("0.log"), 0);
  Append("0.log", "b1\n");
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "a2", "b1"));
  EXPECT_EQ(client_.lines[2].offset, 6u);  // stream offsets stay monotonic
  EXPECT_EQ(events_.truncations, 1u);
}

TEST_F(TailerTest, CopytruncateOvertakenByTheWriterIsCaughtByTheHeadHash) {
  Append("0.log", "a1\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  fs::resize_file(Path("0.log"), 0);
  Append("0.log", "b1 longer than what was read before\nb2\n");
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "b1 longer than what was read before", "b2"));
  EXPECT_EQ(events_.truncations, 1u);
}

TEST_F(TailerTest, KubeletRotationWithTheOldPieceGzippedLosesNothing) {
  fs::create_directories(dir_ / "ns_pod_uid" / "vllm");
  std::string live = "ns_pod_uid/vllm/0.log";
  Append(live, "a1\n");
  auto tailer = MakeTailer("*/*/*.log");
  tailer->Rescan(now_);
  Append(live, "a2\n");
  fs::rename(Path(live), Path(live + ".20260104-143410"));
  Append(live, "b1\n");
  ASSERT_EQ(std::system(("gzip " + Path(live + ".20260104-143410")).c_str()), 0);
  tailer->Poll(now_);
  tailer->Rescan(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "a2", "b1"));
  EXPECT_EQ(tailer->Streams().size(), 1u);  // the .gz piece is not a stream
}

TEST_F(TailerTest, AGlobThatAlsoMatchesRotatedNamesDoesNotReadAFileTwice) {
  Append("x.log", "a1\n");
  auto tailer = MakeTailer("x.log*");
  tailer->Rescan(now_);
  fs::rename(Path("x.log"), Path("x.log.1"));
  Append("x.log", "b1\n");
  tailer->Poll(now_);
  tailer->Rescan(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "b1"));
}

TEST_F(TailerTest, DeletionWhileOpenReadsToTheEndThenEndsTheStreamAfterTheGrace) {
  Append("0.log", "a1\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  Append("0.log", "a2\n");
  fs::remove(Path("0.log"));
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "a2"));
  EXPECT_TRUE(client_.ended.empty());  // its path may come back (a delete and recreate)
  tailer->Poll(now_ + options_.deleted_grace_us);
  EXPECT_THAT(client_.ended, ElementsAre(Path("0.log")));
  Append("0.log", "c1\n");  // the path comes back: the stream goes on
  tailer->Rescan(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "a2", "c1"));
  EXPECT_EQ(client_.lines[2].offset, 6u);
}

TEST_F(TailerTest, ASwappedSymlinkIsFollowedToItsNewTarget) {
  Append("target-a", "a1\n");
  Append("target-b", "b1\n");
  fs::create_symlink(Path("target-a"), Path("current.log"));
  auto tailer = MakeTailer("current.log");
  tailer->Rescan(now_);
  Append("target-a", "a2\n");
  fs::create_symlink(Path("target-b"), Path("next.log"));
  fs::rename(Path("next.log"), Path("current.log"));  // atomic swap
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "a2", "b1"));
  EXPECT_EQ(events_.rotations, 1u);
}

// The tailer hands out bytes as read: a line cut between two reads is joined
// by whoever splits them (Pipeline::Feed; here testing::TailerLines), and a
// checkpoint's `read` offset counts what was handed out (the pipeline's safe
// position keeps the line's start: tests/pipeline/pipeline_live_test.cc).
TEST_F(TailerTest, ALineCutBetweenTwoReadsIsJoinedByWhoeverSplitsTheBytes) {
  Append("0.log", "whole\npart");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("whole"));
  EXPECT_EQ(tailer->NextOffset(Path("0.log")), 10u);
  Append("0.log", "ial\n");
  tailer->Poll(now_ + 1'000'000);
  EXPECT_THAT(client_.Texts(), ElementsAre("whole", "partial"));
  EXPECT_EQ(client_.lines[1].offset, 6u);
  EXPECT_EQ(events_.Dropped(DropReason::kLineTooLong), 0u);
}

TEST_F(TailerTest, AFiveMegabyteLineIsCutAtTheCapAndCounted) {
  client_.split.events = &events_;  // the pipeline's splitter, cap 1 MiB
  options_.read_chunk_bytes = 64 << 10;
  Append("0.log", "before\n" + std::string(5 << 20, 'x') + "\nafter\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  ASSERT_EQ(client_.lines.size(), 3u);
  EXPECT_EQ(client_.lines[1].text.size(), 1u << 20);
  EXPECT_EQ(client_.lines[1].offset, 7u);
  EXPECT_EQ(client_.lines[2].text, "after");
  EXPECT_EQ(client_.lines[2].offset, 7u + (5u << 20) + 1);
  EXPECT_EQ(events_.Dropped(DropReason::kLineTooLong), 1u);
}

TEST_F(TailerTest, BinaryBytesArePassedThroughAsTheyAre) {
  std::string garbage("\x00\x01\xff\xfe\r\x1b[31m", 10);
  Append("0.log", garbage + "\nok\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  ASSERT_EQ(client_.lines.size(), 2u);
  EXPECT_EQ(client_.lines[0].text, garbage);
  EXPECT_EQ(client_.lines[1].text, "ok");
}

TEST_F(TailerTest, ABusyFileIsReadInBudgetedSlices) {
  options_.max_read_per_call = 1024;
  options_.read_chunk_bytes = 512;
  std::string line(99, 'y');
  for (int i = 0; i < 50; ++i) Append("0.log", line + "\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  EXPECT_TRUE(tailer->HasMoreToRead());
  for (int i = 0; i < 10 && tailer->HasMoreToRead(); ++i) tailer->Poll(now_);
  EXPECT_FALSE(tailer->HasMoreToRead());
  EXPECT_EQ(client_.lines.size(), 50u);
}

// fingerprintd_source_lag_bytes: what is on disk and not read yet (issue 29).
TEST_F(TailerTest, TheLagIsTheFileSizeLessWhatWasReadAndZeroOnceCaughtUp) {
  options_.max_read_per_call = 1024;
  options_.read_chunk_bytes = 512;
  std::string line(99, 'y');
  for (int i = 0; i < 50; ++i) Append("0.log", line + "\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);  // one slice of the 5,000 bytes
  ASSERT_TRUE(tailer->HasMoreToRead());
  EXPECT_THAT(tailer->Lags(), ElementsAre(std::pair{Path("0.log"), uint64_t{5000 - 1024}}));
  for (int i = 0; i < 10 && tailer->HasMoreToRead(); ++i) tailer->Poll(now_);
  EXPECT_THAT(tailer->Lags(), ElementsAre(std::pair{Path("0.log"), uint64_t{0}}));
}

TEST_F(TailerTest, TheLagGrowsWithTheFileWhileTheTailerDoesNotRead) {
  Append("0.log", "first\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  EXPECT_THAT(tailer->Lags(), ElementsAre(std::pair{Path("0.log"), uint64_t{0}}));
  Append("0.log", "second\n");  // written, not polled: a stalled daemon
  EXPECT_THAT(tailer->Lags(), ElementsAre(std::pair{Path("0.log"), uint64_t{7}}));
  Append("0.log", "third\n");
  EXPECT_THAT(tailer->Lags(), ElementsAre(std::pair{Path("0.log"), uint64_t{13}}));
  tailer->Poll(now_);
  EXPECT_THAT(tailer->Lags(), ElementsAre(std::pair{Path("0.log"), uint64_t{0}}));
}

TEST_F(TailerTest, ALineWithoutItsNewlineYetIsReadAndNoLag) {
  Append("0.log", "complete\npartial");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("complete"));
  EXPECT_THAT(tailer->Lags(), ElementsAre(std::pair{Path("0.log"), uint64_t{0}}));
}

TEST_F(TailerTest, AFileRotatedInAndNotReadYetIsLag) {
  Append("0.log", "old\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  fs::rename(Path("0.log"), Path("0.log.1"));
  Append("0.log", "new file\n");  // not polled yet
  Append("0.log.1", "late\n");    // the old file's last write, not read yet either
  EXPECT_THAT(tailer->Lags(), ElementsAre(std::pair{Path("0.log"), uint64_t{9 + 5}}));
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("old", "late", "new file"));
  EXPECT_THAT(tailer->Lags(), ElementsAre(std::pair{Path("0.log"), uint64_t{0}}));
}

TEST_F(TailerTest, AStreamWhoseFileWasDeletedAndClosedHasNoLag) {
  Append("0.log", "only\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  fs::remove(Path("0.log"));
  tailer->Poll(now_);  // read to its end and closed: nobody writes it (or, without
  tailer->Poll(now_ + options_.deleted_grace_us);  // leases, nothing was written for the grace)
  EXPECT_EQ(tailer->OpenFiles(), 0u);
  EXPECT_TRUE(tailer->Lags().empty());
}

TEST_F(TailerTest, IdentityTellsAReusedInodeFromTheSameFile) {
  Append("0.log", "original head\n");
  int fd = ::open(Path("0.log").c_str(), O_RDONLY);
  auto id = ReadIdentity(fd);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->head_bytes, 14u);
  Append("0.log", "grown\n");
  EXPECT_TRUE(IsSameFile(fd, *id));  // a shorter head is compared as a prefix
  ::close(fd);
  std::ofstream(Path("0.log"), std::ios::trunc) << "other content!\n";  // same inode
  fd = ::open(Path("0.log").c_str(), O_RDONLY);
  EXPECT_FALSE(IsSameFile(fd, *id));
  ::close(fd);
}

TEST_F(TailerTest, ACheckpointResumesMidFile) {
  Append("0.log", "a1\na2\n");
  RunThenCheckpoint("0.log", "0.log", 3);
  Append("0.log", "a3\n");
  auto tailer = Restart("0.log");
  EXPECT_THAT(client_.Texts(), ElementsAre("a2", "a3"));
  EXPECT_EQ(client_.lines[0].offset, 3u);
}

TEST_F(TailerTest, ACheckpointFindsItsFileRenamedByARotationWhileStopped) {
  Append("0.log", "a1\na2\n");
  RunThenCheckpoint("0.log", "0.log", std::nullopt);
  Append("0.log", "a3\n");
  fs::rename(Path("0.log"), Path("0.log.20260104-143410"));
  Append("0.log", "b1\n");
  auto tailer = Restart("0.log");
  EXPECT_THAT(client_.Texts(), ElementsAre("a3", "b1"));
  EXPECT_EQ(client_.lines[1].offset, 9u);
}

TEST_F(TailerTest, ACheckpointWhoseFileIsGoneStartsTheNewFileFromItsBeginning) {
  Append("0.log", "a1\n");
  RunThenCheckpoint("0.log", "0.log", 3);
  fs::remove(Path("0.log"));
  Append("0.log", "new1\n");
  auto tailer = Restart("0.log");
  EXPECT_THAT(client_.Texts(), ElementsAre("new1"));
  EXPECT_EQ(client_.lines[0].offset, 3u);
}

// The pipeline's safe offset lags behind what was read (start-up lines a rule
// may still need), so a checkpoint can point into a file that copytruncate
// has since emptied: the restart reads those lines from the copy (found by
// its head), to the copy's end, then the live file.
TEST_F(TailerTest, ACheckpointBehindACopytruncateRereadsItsLinesFromTheCopy) {
  Append("0.log", "a1\na2\n");
  RunThenCheckpoint("0.log", "0.log", 3, [&] {
    fs::copy_file(Path("0.log"), Path("0.log.1"));
    Append("0.log.1", "a3\n");  // written after the last read, before the truncation
    fs::resize_file(Path("0.log"), 0);
    Append("0.log", "b1\n");
  });
  Append("0.log", "b2\n");
  auto tailer = Restart("0.log");
  EXPECT_EQ(client_.TextsAndOffsets(), (Lines{{"a2", 3}, {"a3", 6}, {"b1", 9}, {"b2", 12}}));
  EXPECT_EQ(tailer->stats().checkpoint_pieces_missing, 0u);
}

// A file truncated and written back to the size it had when last read: the
// size alone cannot tell, its modification time and head do.
TEST_F(TailerTest, ATruncatedFileWrittenBackToTheSameSizeIsSeenByItsMtime) {
  Append("0.log", "a1\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  const auto read_at = fs::last_write_time(Path("0.log"));
  fs::resize_file(Path("0.log"), 0);
  Append("0.log", "b1\n");
  fs::last_write_time(Path("0.log"), read_at + std::chrono::seconds(1));
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "b1"));
  EXPECT_EQ(events_.truncations, 1u);
}

// Lines written after the last read and then copied away by copytruncate are
// read from the copy before the truncated file goes on: a busy file read in
// budgeted slices, or a poll that came late.
TEST_F(TailerTest, CopytruncateOfLinesNotReadYetReadsThemFromTheCopy) {
  Append("0.log", "a1\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  Append("0.log", "a2\na3 partial");  // not read yet
  Copytruncate("0.log", "0.log.1");
  Append("0.log", "b1 new\n");
  tailer->Poll(now_);
  EXPECT_EQ(client_.TextsAndOffsets(),  // "b1 new" after the copy's 16 bytes
            (Lines{{"a1", 0}, {"a2", 3}, {"a3 partial", 6}, {"b1 new", 16}}));
  EXPECT_EQ(events_.truncations, 1u);
  // A checkpoint taken now names the copy for the old piece.
  std::vector<FilePiece> pieces = tailer->PiecesFor(Path("0.log"), 3);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].base, 0u);
  EXPECT_EQ(pieces[1].base, 16u);
}

// The soak's case: after a restart the catch-up still reads the pieces the
// checkpoint named (slowly: 3 bytes per poll here) when the live file is
// copied and truncated. Its lines are read from the copy, none lost.
TEST_F(TailerTest, ACopytruncateWhileARestartStillCatchesUpLosesNothing) {
  Append("0.log", "a1\na2\n");
  RunThenCheckpoint("0.log", "0.log", 3, [&] {
    fs::rename(Path("0.log"), Path("0.log.1"));
    Append("0.log", "b1\n");
  });
  Append("0.log", "b2\n");  // while stopped
  options_.max_read_per_call = 3;
  auto tailer = Restart("0.log");
  EXPECT_THAT(client_.Texts(), ElementsAre("a2"));
  Copytruncate("0.log", "0.log.2");
  Append("0.log", "c1\n");
  for (int i = 0; i < 10; ++i) tailer->Poll(now_);
  EXPECT_EQ(client_.TextsAndOffsets(), (Lines{{"a2", 3}, {"b1", 6}, {"b2", 9}, {"c1", 12}}));
  EXPECT_EQ(tailer->stats().truncations, 1u);
}

// The live file is empty when a restart resumes (just rotated); it is
// written and then copied and truncated while the catch-up still reads the
// older piece. Its head was kept up to date while it waited, so the copy is
// found by it.
TEST_F(TailerTest, ALiveFileEmptyAtARestartAndCopytruncatedDuringTheCatchUpLosesNothing) {
  Append("0.log", "a1\na2\na3\na4\n");
  RunThenCheckpoint("0.log", "0.log", 3, [&] {
    fs::rename(Path("0.log"), Path("0.log.1"));
    Append("0.log", "");
  });
  options_.max_read_per_call = 3;
  auto tailer = Restart("0.log");
  Append("0.log", "b1\nb2\n");
  tailer->Poll(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a2", "a3"));
  Copytruncate("0.log", "0.log.2");
  Append("0.log", "c1 new\n");
  for (int i = 0; i < 10; ++i) tailer->Poll(now_);
  EXPECT_EQ(client_.TextsAndOffsets(),
            (Lines{{"a2", 3}, {"a3", 6}, {"a4", 9}, {"b1", 12}, {"b2", 15}, {"c1 new", 18}}));
}

TEST_F(TailerTest, ACheckpointInAPieceTheKubeletGzippedSinceIsReadFromTheGz) {
  fs::create_directories(dir_ / "ns_pod_uid" / "vllm");
  std::string live = "ns_pod_uid/vllm/0.log";
  Append(live, "a1\na2\n");
  RunThenCheckpoint("*/*/*.log", live, 3, [&] {
    fs::rename(Path(live), Path(live + ".20260104-143410"));
    Append(live, "b1\n");
  });
  // While stopped: the next rotation, and the older piece gzipped.
  fs::rename(Path(live), Path(live + ".20260104-143500"));
  Append(live, "c1\n");
  ASSERT_EQ(std::system(("gzip " + Path(live + ".20260104-143410")).c_str()), 0);
  auto tailer = Restart("*/*/*.log");
  EXPECT_THAT(client_.Texts(), ElementsAre("a2", "b1", "c1"));
  ASSERT_EQ(client_.lines.size(), 3u);
  EXPECT_EQ(client_.lines[0].offset, 3u);
  EXPECT_EQ(client_.lines[2].offset, 9u);
}

// A process still writing to the renamed file after the rotation was seen:
// a resumed piece ends where it ended when it was switched away from, so the
// next piece's offsets are not read twice.
TEST_F(TailerTest, AResumedPieceIsReadOnlyUpToWhereItsSuccessorBegan) {
  Append("0.log", "a1\na2\n");
  RunThenCheckpoint("0.log", "0.log", 3, [&] {
    fs::rename(Path("0.log"), Path("0.log.1"));
    Append("0.log", "b1\n");
  });
  Append("0.log.1", "late\n");
  auto tailer = Restart("0.log");
  EXPECT_THAT(client_.Texts(), ElementsAre("a2", "b1"));
}

// A checkpoint may lag many rotations behind (a rule's maxspan of start-up
// lines): its pieces must reach back to the one holding its offset.
TEST_F(TailerTest, ACheckpointTwentyRotationsBackStillNamesThePieceHoldingItsOffset) {
  Append("0.log", "a1\na2\n");
  auto tailer = MakeTailer("0.log");
  tailer->Rescan(now_);
  for (int i = 0; i < 20; ++i) {
    fs::rename(Path("0.log"), Path("0.log." + std::to_string(100 + i)));
    Append("0.log", "r" + std::to_string(i) + "\n");
    tailer->Poll(now_);
  }
  std::vector<FilePiece> pieces = tailer->PiecesFor(Path("0.log"), 3);
  ASSERT_EQ(pieces.size(), 21u);
  EXPECT_EQ(pieces.front().base, 0u);
}

TEST_F(TailerTest, InotifyReportsWritesAndNewFiles) {
  auto watcher = InotifyWatcher::Create();
  ASSERT_TRUE(watcher.ok()) << watcher.status().message();
  Append("0.log", "a1\n");
  auto tailer = MakeTailer("*.log");
  tailer->SetWatcher(watcher->get());
  tailer->Rescan(now_);
  Append("0.log", "a2\n");
  Append("1.log", "b1\n");
  struct pollfd pfd = {(*watcher)->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 5000), 1);
  tailer->HandleInotify(now_);
  EXPECT_THAT(client_.Texts(), ElementsAre("a1", "a2", "b1"));
}

// A daemon catching up on a file it left behind (a crashed worker's last log,
// no longer written) while another file in the same directory is written: the
// other file's inotify event must not end the catch-up. It did: the backlog
// stalled at the first budget until the file was written again, or the
// 60 s safety poll.
TEST_F(TailerTest, AWriteToAnotherFileDoesNotStallTheCatchUpOfABusyOne) {
  options_.max_read_per_call = 1024;
  options_.read_chunk_bytes = 512;
  auto watcher = InotifyWatcher::Create();
  ASSERT_TRUE(watcher.ok()) << watcher.status().message();
  std::string line(99, 'y');
  for (int i = 0; i < 50; ++i) Append("0.log", line + "\n");
  auto tailer = MakeTailer("*.log");
  tailer->SetWatcher(watcher->get());
  tailer->Rescan(now_);  // one slice of 0.log's 5,000 bytes
  ASSERT_TRUE(tailer->HasMoreToRead());
  Append("1.log", "b1\n");
  struct pollfd pfd = {(*watcher)->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 5000), 1);
  tailer->HandleInotify(now_);
  EXPECT_TRUE(tailer->HasMoreToRead());
  for (int i = 0; i < 10 && tailer->HasMoreToRead(); ++i) tailer->Poll(now_);
  EXPECT_EQ(client_.lines.size(), 51u);
}

// Seeded model test: random writes (whole lines and split lines), rename and
// copytruncate rotations, deletions, restarts from a checkpoint (with a
// rotation while stopped: one rotation while stopped is recovered, two are
// not) and polls, against the list of lines written. Every line must be read
// once, in order. Copytruncate happens at any time when it leaves a copy
// (`app.log.copyN`, as logrotate does), only after a poll when it does not:
// bytes truncated away before they were read and copied nowhere are lost.
// Deletion is only done after a poll.
class TailerModelTest : public TailerTest, public ::testing::WithParamInterface<uint32_t> {};

TEST_P(TailerModelTest, EveryLineWrittenIsReadOnceInOrder) {
  const uint32_t seed = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with this seed to reproduce)");
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  options_.read_chunk_bytes = 7 + pick(64);  // small chunks: lines split across reads
  std::vector<std::string> expected;
  std::vector<std::string> read;
  std::string pending_fragment;  // second half of a line written in two parts
  int line_no = 0, rotations = 0, copies = 0;
  auto tailer = MakeTailer("app.log");
  tailer->Rescan(now_);
  // The tailer knows a copy by the head it saw: a file still empty when it
  // last looked has none, so its copy cannot be told from other siblings.
  bool head_seen = false;
  auto note_head = [&] {
    head_seen = !tailer->Streams().empty() && fs::exists(Path("app.log")) &&
                fs::file_size(Path("app.log")) > 0;
  };
  auto poll = [&] {
    tailer->Poll(now_);
    note_head();
  };
  note_head();
  auto collect = [&] {
    for (const auto& l : client_.lines) read.push_back(l.text);
    client_.lines.clear();
  };
  auto finish_line = [&] {
    if (pending_fragment.empty()) return;
    Append("app.log", pending_fragment);
    pending_fragment.clear();
  };
  bool polled_since_write = true;
  for (int step = 0; step < 300; ++step) {
    int op = pick(100);
    if (op < 45) {  // write whole lines, maybe the first half of one more
      finish_line();
      int n = 1 + pick(4);
      for (int i = 0; i < n; ++i) {
        std::string text = "line " + std::to_string(line_no++) + " " + std::string(pick(40), 'z');
        expected.push_back(text);
        Append("app.log", text + "\n");
      }
      if (pick(3) == 0) {
        std::string text = "split " + std::to_string(line_no++);
        expected.push_back(text);
        size_t cut = 1 + pick(static_cast<int>(text.size()) - 1);
        Append("app.log", text.substr(0, cut));
        pending_fragment = text.substr(cut) + "\n";
      }
      polled_since_write = false;
    } else if (op < 75) {
      tailer->Rescan(now_);
      poll();
      polled_since_write = true;
    } else if (op < 83) {  // rename + create, polled before the next rotation
      finish_line();
      tailer->Rescan(now_);  // the daemon's inotify has seen the file by now
      poll();
      if (fs::exists(Path("app.log"))) {
        fs::rename(Path("app.log"), Path("app.log." + std::to_string(++rotations)));
      }
      if (pick(2) == 0) Append("app.log", "");
      poll();
      polled_since_write = true;
    } else if (op < 88 && pending_fragment.empty() && (head_seen || polled_since_write)) {
      // copytruncate
      if (fs::exists(Path("app.log"))) {
        if (head_seen && (!polled_since_write || pick(2) == 0)) {
          // logrotate's copy: what was not read yet is read from it
          Copytruncate("app.log", "app.log.copy" + std::to_string(++copies));
        } else {
          poll();  // no copy: what was not read would be lost
          fs::resize_file(Path("app.log"), 0);
        }
        head_seen = false;
      }
    } else if (op < 92 && polled_since_write && pending_fragment.empty()) {  // delete
      poll();
      fs::remove(Path("app.log"));
      poll();
    } else if (op < 100) {  // restart from a checkpoint of everything consumed
      tailer->Rescan(now_);
      poll();  // the daemon has seen the file events before it checkpoints
      std::string stream = Path("app.log");
      uint64_t next = tailer->NextOffset(stream);
      if (!tailer->Streams().empty()) {
        client_.checkpoints[stream] = {tailer->PiecesFor(stream, next), next};
      }
      tailer.reset();
      collect();
      if (pick(3) == 0 && fs::exists(Path("app.log"))) {  // a rotation while stopped
        finish_line();
        fs::rename(Path("app.log"), Path("app.log." + std::to_string(++rotations)));
        Append("app.log", "");
      }
      tailer = MakeTailer("app.log", /*start_at_end=*/true);
      tailer->Rescan(now_);
      note_head();
    }
  }
  finish_line();
  poll();
  tailer->Rescan(now_);
  collect();
  for (size_t i = 0; i < std::min(read.size(), expected.size()); ++i) {
    ASSERT_EQ(read[i], expected[i]) << "line " << i;
  }
  ASSERT_EQ(read.size(), expected.size());
  for (size_t i = 0; i < read.size(); ++i) ASSERT_EQ(read[i], expected[i]) << "line " << i;
}

INSTANTIATE_TEST_SUITE_P(Seeds, TailerModelTest, ::testing::Range(1u, 41u));

}  // namespace
}  // namespace fingerprintd::source
