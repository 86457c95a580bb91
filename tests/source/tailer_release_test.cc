// Released heads (source/tailer.h, release_read_bytes): a file whose read and
// checkpointed prefix was punched out keeps its size, frees its blocks, stays
// the same file for the tailer and for a restart, and a writer appending while
// it is released loses nothing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "source/tailer.h"
#include "testing/counting_events.h"
#include "testing/scratch_path.h"
#include "testing/tailer_lines.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;

class LinesClient final : public TailerClient {
 public:
  std::optional<StreamCheckpoint> OnOpen(const std::string&) override { return checkpoint; }
  void OnBytes(const std::string& stream, std::string_view bytes, uint64_t offset) override {
    split.Bytes(stream, bytes, offset, [&](const std::string&, std::string_view line, uint64_t at) {
      lines.emplace_back(std::string(line), at);
    });
  }
  void OnLineEnd(const std::string& stream) override {
    split.End(stream, [&](const std::string&, std::string_view line, uint64_t at) {
      lines.emplace_back(std::string(line), at);
    });
  }
  testing::TailerLines split;
  void OnEnded(const std::string&) override {}

  std::optional<StreamCheckpoint> checkpoint;
  std::vector<std::pair<std::string, uint64_t>> lines;
};

// Line `i` of a test file: 100 bytes with its '\n', a vLLM access line.
std::string Line(size_t i) {
  std::string line =
      "INFO 03-12 09:30:44 [api_server.py:1] 10.0.0.7 \"POST /v1/completions\" 200 #" +
      std::to_string(i);
  line.resize(99, ' ');
  return line;
}
constexpr uint64_t kLineBytes = 100;

struct stat Stat(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st;
}
uint64_t Allocated(const std::string& path) {
  return static_cast<uint64_t>(Stat(path).st_blocks) * 512;
}

class TailerReleaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::ScratchPath("release");
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "vllm.log").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Appends lines [from, to) as `tee -a` does: O_APPEND writes.
  void AppendLines(size_t from, size_t to) {
    std::string text;
    for (size_t i = from; i < to; ++i) text += Line(i) + "\n";
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  std::unique_ptr<Tailer> MakeTailer(LinesClient& client) {
    TailerOptions options;
    options.paths = {path_};
    options.start_at_end = false;
    return std::make_unique<Tailer>(options, events_, client);
  }
  // A tailer that has read the file as it is (the daemon's first life).
  std::unique_ptr<Tailer> ReadAll(LinesClient& client) {
    auto tailer = MakeTailer(client);
    tailer->Rescan(now_);
    return tailer;
  }
  // The daemon restarted from `checkpoint`: a tailer that has read what it resumes.
  std::unique_ptr<Tailer> Restart(LinesClient& client, const StreamCheckpoint& checkpoint) {
    client.checkpoint = checkpoint;
    return ReadAll(client);
  }
  // The daemon's first life: reads the file, allows the release below
  // `allow` and checkpoints at `safe` (as PrepareCheckpoint and the snapshot
  // do), releases if `release` (the checkpoint was committed), then dies.
  StreamCheckpoint FirstLife(uint64_t allow, uint64_t safe, bool release) {
    LinesClient client;
    auto tailer = ReadAll(client);
    EXPECT_EQ(tailer->AllowRelease(path_, allow), allow);
    StreamCheckpoint checkpoint{tailer->PiecesFor(path_, safe), safe};
    if (release) {
      EXPECT_TRUE(tailer->Release(path_).ok());
    }
    return checkpoint;
  }
  // Lines [from, to) with their offsets, as the tailer must hand them out.
  static std::vector<std::pair<std::string, uint64_t>> Expected(size_t from, size_t to) {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (size_t i = from; i < to; ++i) out.emplace_back(Line(i), i * kLineBytes);
    return out;
  }

  fs::path dir_;
  std::string path_;
  testing::CountingEvents events_;
  int64_t now_ = 1'000'000;
};

TEST_F(TailerReleaseTest, AReleasedFileKeepsItsSizeFreesItsBlocksAndIsReadOnWithoutATruncation) {
  AppendLines(0, 20'000);  // 2 MB
  LinesClient client;
  auto tailer = ReadAll(client);
  ASSERT_EQ(client.lines.size(), 20'000u);
  EXPECT_GE(Allocated(path_), 2'000'000u);

  EXPECT_EQ(tailer->AllowRelease(path_, tailer->NextOffset(path_)), 2'000'000u);
  auto released = tailer->Release(path_);
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_GE(released->released_bytes, 2'000'000u - 4096);
  EXPECT_LE(released->allocated_bytes, 8192u);  // the last block, not read whole yet
  EXPECT_EQ(released->allocated_bytes, Allocated(path_));
  EXPECT_EQ(Stat(path_).st_size, 2'000'000);  // nothing truncated under the writer
  std::string head(1024, 'x');
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(::pread(fd, head.data(), head.size(), 0), 1024);
  ::close(fd);
  EXPECT_EQ(head, std::string(1024, '\0'));

  AppendLines(20'000, 20'100);
  tailer->Poll(now_);
  ASSERT_EQ(client.lines.size(), 20'100u);
  EXPECT_EQ(std::vector(client.lines.begin() + 20'000, client.lines.end()),
            Expected(20'000, 20'100));
  EXPECT_EQ(tailer->stats().truncations, 0u);
  EXPECT_EQ(tailer->stats().rotations, 0u);
}

TEST_F(TailerReleaseTest, NothingNotYetReadIsReleased) {
  AppendLines(0, 1'000);
  LinesClient client;
  auto tailer = ReadAll(client);
  AppendLines(1'000, 50'000);                                    // written, not read
  EXPECT_EQ(tailer->AllowRelease(path_, 10'000'000), 100'000u);  // clamped to what was read
  ASSERT_TRUE(tailer->Release(path_).ok());
  tailer->Poll(now_);
  EXPECT_EQ(client.lines, Expected(0, 50'000));
}

TEST_F(TailerReleaseTest, ARestartFromTheCheckpointOfAReleasedFileResumesAtItsSafeOffsetExactly) {
  AppendLines(0, 30'000);
  // The pipeline still needs line 25,000 on: released below it, checkpointed there.
  const uint64_t safe = 25'000 * kLineBytes;
  StreamCheckpoint checkpoint = FirstLife(safe, safe, /*release=*/true);
  ASSERT_EQ(checkpoint.pieces.size(), 1u);
  EXPECT_EQ(checkpoint.pieces[0].released, safe);
  AppendLines(30'000, 31'000);  // written while the daemon restarts

  LinesClient second;
  auto restarted = Restart(second, checkpoint);
  EXPECT_EQ(second.lines, Expected(25'000, 31'000));
  EXPECT_EQ(restarted->stats().checkpoint_pieces_missing, 0u);
  EXPECT_EQ(restarted->stats().truncations, 0u);
  // And its next release starts where the first life's ended.
  restarted->AllowRelease(path_, restarted->NextOffset(path_));
  auto released = restarted->Release(path_);
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_LE(released->released_bytes, 600'000u);  // 30,000..31,000 lines' blocks, not again
  EXPECT_LE(released->allocated_bytes, 8192u);
}

TEST_F(TailerReleaseTest, ACheckpointCommittedBeforeTheReleaseWasDoneStillFindsTheFile) {
  AppendLines(0, 10'000);
  const uint64_t safe = 9'000 * kLineBytes;
  // Killed before Release(): the head is still there.
  StreamCheckpoint checkpoint = FirstLife(safe, safe, /*release=*/false);

  LinesClient second;
  auto restarted = Restart(second, checkpoint);
  EXPECT_EQ(second.lines, Expected(9'000, 10'000));
  EXPECT_EQ(restarted->stats().checkpoint_pieces_missing, 0u);
}

TEST_F(TailerReleaseTest, ARestartWhoseSafeOffsetWasReleasedResumesWhereTheReleaseEnded) {
  // The release went past what the pipeline held (release_policy.h): the
  // bytes between read as zeros and are not read again; no line of NULs.
  AppendLines(0, 10'000);
  StreamCheckpoint checkpoint =
      FirstLife(/*allow=*/8'000 * kLineBytes, /*safe=*/1'000 * kLineBytes, /*release=*/true);

  LinesClient second;
  auto restarted = Restart(second, checkpoint);
  EXPECT_EQ(second.lines, Expected(8'000, 10'000));
}

TEST_F(TailerReleaseTest, AReleasedFileTruncatedAndWrittenAgainIsATruncation) {
  AppendLines(0, 10'000);
  LinesClient client;
  auto tailer = ReadAll(client);
  tailer->AllowRelease(path_, tailer->NextOffset(path_));
  ASSERT_TRUE(tailer->Release(path_).ok());
  // Emptied and written past where it was read before the next poll: only
  // its head (text again, not zeros) tells.
  ASSERT_EQ(::truncate(path_.c_str(), 0), 0);
  AppendLines(100'000, 112'000);
  tailer->Poll(now_);
  EXPECT_EQ(tailer->stats().truncations, 1u);
  ASSERT_EQ(client.lines.size(), 22'000u);
  EXPECT_EQ(client.lines[10'000].first, Line(100'000));
  EXPECT_EQ(client.lines.back().first, Line(111'999));
}

TEST_F(TailerReleaseTest, AWriterAppendingDuringReleasesLosesNoLineAndItsFileStaysSmall) {
  // A writer appends as fast as it can while the reader reads, releases
  // what it read, and starts again: every line is read once, in order, and
  // the file's blocks never hold much more than what was not read yet.
  constexpr size_t kLines = 300'000;  // 30 MB
  constexpr size_t kBatch = 500;
  AppendLines(0, 1);
  LinesClient client;
  auto tailer = ReadAll(client);
  std::atomic<size_t> written{1};
  std::thread writer([&] {
    for (size_t i = 1; i < kLines; i += kBatch) {
      AppendLines(i, std::min(i + kBatch, kLines));
      written = std::min(i + kBatch, kLines);
    }
  });
  uint64_t released = 0, max_unread = 0, max_over_unread = 0;
  while (client.lines.size() < kLines) {
    tailer->Poll(now_);
    tailer->AllowRelease(path_, tailer->NextOffset(path_));
    auto result = tailer->Release(path_);
    ASSERT_TRUE(result.ok()) << result.status().message();
    released += result->released_bytes;
    // What the blocks hold beyond the bytes not read yet (sampled after the
    // release, the writer still going, so the blocks before the size): the
    // block the next line starts in.
    const uint64_t allocated = Allocated(path_);
    const uint64_t size = static_cast<uint64_t>(Stat(path_).st_size);
    const uint64_t unread = size - tailer->NextOffset(path_);
    max_unread = std::max(max_unread, unread);
    if (allocated > unread) max_over_unread = std::max(max_over_unread, allocated - unread);
  }
  writer.join();
  tailer->Poll(now_);
  EXPECT_EQ(client.lines, Expected(0, kLines));
  EXPECT_EQ(tailer->stats().truncations, 0u);
  EXPECT_GE(released, kLines * kLineBytes - 8192);
  EXPECT_LE(max_over_unread, 64u << 10) << "unread at most " << max_unread;
}

TEST_F(TailerReleaseTest, AFileThatCannotBeWrittenIsRefusedOnceNamingTheFileAndTheReason) {
  AppendLines(0, 1'000);
  // Immutable (chattr +i): not even root may open it for writing.
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  int flags = 0;
  bool immutable = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 &&
                   (flags |= FS_IMMUTABLE_FL, ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0);
  if (!immutable) {
    ::close(fd);
    GTEST_SKIP() << "cannot make a file immutable here (needs CAP_LINUX_IMMUTABLE)";
  }
  LinesClient client;
  auto tailer = ReadAll(client);
  tailer->AllowRelease(path_, tailer->NextOffset(path_));
  auto refused = tailer->Release(path_);
  auto again = tailer->Release(path_);
  flags &= ~FS_IMMUTABLE_FL;
  ::ioctl(fd, FS_IOC_SETFLAGS, &flags);
  ::close(fd);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            path_ + ": cannot release read bytes: not writable (Operation not permitted)");
  ASSERT_TRUE(again.ok());  // reported once
  EXPECT_EQ(again->released_bytes, 0u);
  EXPECT_EQ(client.lines.size(), 1'000u);  // reading goes on
}

}  // namespace
}  // namespace fingerprintd::source
