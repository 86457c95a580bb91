// The checkpoint file: round trip, atomic replacement, skipped when unchanged,
// corrupt or foreign files refused with a reason (never a crash), one daemon
// per directory.
#include "source/checkpoint_store.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/scratch_path.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::ScratchPath("checkpoint");
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static Checkpoint Sample() {
    Checkpoint c;
    SourceCheckpoint& s = c.sources.emplace_back();
    s.name = "/var/log/pods/ns_pod_uid/vllm/0.log";
    s.safe = {1234, 40};
    FilePiece piece;
    piece.identity = {2049, 131, 1024, 0x9ae1f00dcafe0001ull};
    piece.base = 0;
    s.pieces.push_back(piece);
    piece.identity.inode = 132;
    piece.base = 1000;
    s.pieces.push_back(piece);
    c.pipeline_state = R"({"version":1,"deployments":[]})";
    return c;
  }

  fs::path dir_;
};

TEST_F(CheckpointStoreTest, WhatIsSavedIsLoadedBack) {
  CheckpointStore store(dir_.string());
  ASSERT_TRUE(store.Save(Sample()).ok());
  CheckpointStore again(dir_.string());
  auto loaded = again.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->sources.size(), 1u);
  EXPECT_EQ(loaded->sources[0].name, Sample().sources[0].name);
  EXPECT_EQ(loaded->sources[0].safe, (SourcePosition{1234, 40}));
  ASSERT_EQ(loaded->sources[0].pieces.size(), 2u);
  EXPECT_EQ(loaded->sources[0].pieces[0].identity, Sample().sources[0].pieces[0].identity);
  EXPECT_EQ(loaded->sources[0].pieces[1].base, 1000u);
  EXPECT_EQ(loaded->pipeline_state, Sample().pipeline_state);
}

// Where each stream was read up to and when the daemon first ran: a
// restart tells a log born while it was stopped, and bytes never read, by them.
TEST_F(CheckpointStoreTest, TheReadOffsetAndTheFirstRunAreLoadedBack) {
  Checkpoint checkpoint = Sample();
  checkpoint.sources[0].read = 5678;
  checkpoint.first_run_us = 1'767'225'600'000'000;
  CheckpointStore store(dir_.string());
  ASSERT_TRUE(store.Save(checkpoint).ok());
  auto loaded = CheckpointStore(dir_.string()).Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->sources[0].read, 5678u);
  EXPECT_EQ(loaded->first_run_us, 1'767'225'600'000'000);
}

// A checkpoint of an older version has no first run: its last save (the
// file's modification time) stands in, so a log created after it was
// created while the daemon was stopped.
TEST_F(CheckpointStoreTest, AnOlderCheckpointWithoutAFirstRunTakesItsModificationTime) {
  CheckpointStore store(dir_.string());
  ASSERT_TRUE(store.Save(Sample()).ok());
  const timespec saved[2] = {{1'767'225'600, 500'000}, {1'767'225'600, 500'000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, store.path().c_str(), saved, 0), 0);
  auto loaded = CheckpointStore(dir_.string()).Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->first_run_us, 1'767'225'600'000'500);
}

TEST_F(CheckpointStoreTest, NoCheckpointYetIsNotFound) {
  CheckpointStore store(dir_.string());
  EXPECT_EQ(store.Load().status().code(), StatusCode::kNotFound);
}

TEST_F(CheckpointStoreTest, AnUnchangedCheckpointIsNotWrittenAgain) {
  CheckpointStore store(dir_.string());
  bool written = false;
  ASSERT_TRUE(store.Save(Sample(), &written).ok());
  EXPECT_TRUE(written);
  auto mtime = fs::last_write_time(store.path());
  ASSERT_TRUE(store.Save(Sample(), &written).ok());
  EXPECT_FALSE(written);
  EXPECT_EQ(store.writes(), 1u);
  EXPECT_EQ(store.skipped(), 1u);
  EXPECT_EQ(fs::last_write_time(store.path()), mtime);
  Checkpoint changed = Sample();
  changed.sources[0].safe.offset = 2000;
  ASSERT_TRUE(store.Save(changed, &written).ok());
  EXPECT_TRUE(written);
  EXPECT_FALSE(fs::exists(store.path() + ".tmp"));  // renamed over the old one
}

TEST_F(CheckpointStoreTest, ACorruptCheckpointIsRefusedWithAReason) {
  fs::create_directories(dir_);
  CheckpointStore store(dir_.string());
  std::string full = EncodeCheckpoint(Sample());
  for (size_t cut : {size_t{0}, size_t{1}, full.size() / 2, full.size() - 3}) {
    std::ofstream(store.path(), std::ios::trunc) << full.substr(0, cut);
    auto loaded = store.Load();
    EXPECT_EQ(loaded.status().code(), StatusCode::kDataLoss) << "cut at " << cut;
    EXPECT_THAT(loaded.status().message(), HasSubstr("checkpoint.json"));
  }
  std::ofstream(store.path(), std::ios::trunc) << std::string("\x00\xff\x13garbage", 10);
  EXPECT_EQ(store.Load().status().code(), StatusCode::kDataLoss);
}

TEST_F(CheckpointStoreTest, ACorruptCheckpointsReasonNeverQuotesItsText) {
  Checkpoint c = Sample();
  c.pipeline_state =
      R"({"evidence":"hf_SECRETSECRETSECRETSECRETSECRET1234 )" + std::string(50'000, 'x') + "\"}";
  const std::string full = EncodeCheckpoint(c);
  for (size_t cut : {full.size() / 3, full.size() / 2, full.size() - 2}) {
    StatusOr<Checkpoint> decoded = DecodeCheckpoint(full.substr(0, cut));
    ASSERT_FALSE(decoded.ok());
    EXPECT_THAT(decoded.status().message(), HasSubstr("not valid JSON at byte"));
    EXPECT_THAT(decoded.status().message(), ::testing::Not(HasSubstr("hf_SECRET")));
    EXPECT_LT(decoded.status().message().size(), 200u) << "cut at " << cut;
  }
}

TEST_F(CheckpointStoreTest, ACorruptCheckpointIsMovedAsideForInspection) {
  fs::create_directories(dir_);
  CheckpointStore store(dir_.string());
  const std::string cut = "{\"format\":\"fingerprintd/check";
  std::ofstream(store.path()) << cut;
  ASSERT_EQ(store.Load().status().code(), StatusCode::kDataLoss);
  StatusOr<std::string> aside = store.MoveAside(1'764'931'200'000'000);  // 2025-12-05T10:40:00Z
  ASSERT_TRUE(aside.ok()) << aside.status().message();
  EXPECT_EQ(*aside, store.path() + ".corrupt-20251205T104000Z");
  EXPECT_FALSE(fs::exists(store.path()));
  EXPECT_EQ(fs::file_size(*aside), cut.size());  // kept as it was
  EXPECT_EQ(store.Load().status().code(), StatusCode::kNotFound);
}

// A path (or a shipper's pod name) may hold any byte: the checkpoint, which
// is JSON, keeps such a name escaped and its bytes in hex, and gives the
// bytes back.
TEST_F(CheckpointStoreTest, ANameThatIsNotUtf8IsKeptByteForByte) {
  Checkpoint c = Sample();
  c.sources[0].name = std::string("/var/log/pods/ns_vllm-\xff\xfe-0/0.log");
  const std::string text = EncodeCheckpoint(c);
  EXPECT_THAT(text, HasSubstr(R"("name":"/var/log/pods/ns_vllm-\\xFF\\xFE-0/0.log")"));
  EXPECT_THAT(text, HasSubstr(R"("name_hex":")"));
  StatusOr<Checkpoint> decoded = DecodeCheckpoint(text);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->sources[0].name, c.sources[0].name);
  EXPECT_THAT(DecodeCheckpoint(R"({"format":"fingerprintd/checkpoint","version":1,)"
                               R"("sources":[{"name":"a","name_hex":"zz","safe":{"offset":0,)"
                               R"("line":0},"pieces":[]}],"pipeline":""})")
                  .status()
                  .message(),
              HasSubstr("bad name_hex"));
}

TEST_F(CheckpointStoreTest, AForeignOrFutureCheckpointIsRefused) {
  EXPECT_THAT(DecodeCheckpoint(R"({"format":"vector/checkpoints","version":1})").status().message(),
              HasSubstr("not a fingerprintd checkpoint"));
  EXPECT_THAT(
      DecodeCheckpoint(R"({"format":"fingerprintd/checkpoint","version":99})").status().message(),
      HasSubstr("version"));
  EXPECT_EQ(DecodeCheckpoint(R"({"format":"fingerprintd/checkpoint","version":1,)"
                             R"("sources":[{"name":3}],"pipeline":""})")
                .status()
                .code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(DecodeCheckpoint("[1,2,3]").status().code(), StatusCode::kDataLoss);
}

TEST_F(CheckpointStoreTest, OnlyOneDaemonHoldsADirectory) {
  CheckpointStore first(dir_.string());
  ASSERT_TRUE(first.Lock().ok());
  CheckpointStore second(dir_.string());
  Status s = second.Lock();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("held by another fingerprintd"));
}

}  // namespace
}  // namespace fingerprintd::source
