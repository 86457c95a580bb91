// sink/audit_log: the committed lines of `run --audit`, kept in step with the
// checkpoints: only what a checkpoint covers is written, and a crash between
// the audit's fsync and the checkpoint's rename is cut off at the restart.
#include "sink/audit_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "testing/scratch_path.h"

namespace fingerprintd::sink {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::ScratchPath("audit");
    fs::remove(path_);
  }
  void TearDown() override { fs::remove(path_); }

  // (offset or "-") and source of every record, in order.
  std::vector<std::string> Records() const {
    std::ifstream in(path_);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line.substr(17));
    return out;
  }
  static source::Checkpoint SafeAt(const std::string& source, uint64_t offset) {
    source::Checkpoint checkpoint;
    source::SourceCheckpoint& s = checkpoint.sources.emplace_back();
    s.name = source;
    s.safe.offset = offset;
    return checkpoint;
  }

  fs::path path_;
};

TEST_F(AuditLogTest, OnlyLinesBelowTheSafeOffsetAreWrittenTheRestWaitForALaterCheckpoint) {
  auto audit = AuditLog::Open(path_.string(), 0);
  ASSERT_TRUE(audit.ok());
  (*audit)->OnFileLine("a.log", "one", 0);
  (*audit)->OnFileLine("a.log", "two", 4);
  (*audit)->OnSocketLine("tcp:127.0.0.1:5170", "sock");
  auto bytes = (*audit)->Prepare(SafeAt("a.log", 4));
  ASSERT_TRUE(bytes.ok());
  (*audit)->Confirm();
  EXPECT_EQ(*bytes, fs::file_size(path_));
  EXPECT_THAT(Records(), ElementsAre("0 a.log", "- tcp:127.0.0.1:5170"));
  EXPECT_EQ((*audit)->waiting(), 1u);
  ASSERT_TRUE((*audit)->Prepare(SafeAt("a.log", 8)).ok());
  (*audit)->Confirm();
  EXPECT_THAT(Records(), ElementsAre("0 a.log", "- tcp:127.0.0.1:5170", "4 a.log"));
}

TEST_F(AuditLogTest, ACrashBeforeTheCheckpointWasRenamedIsCutOffAtTheRestart) {
  uint64_t committed = 0;
  {
    auto audit = AuditLog::Open(path_.string(), 0);
    ASSERT_TRUE(audit.ok());
    (*audit)->OnFileLine("a.log", "one", 0);
    committed = *(*audit)->Prepare(SafeAt("a.log", 4));
    (*audit)->Confirm();
    (*audit)->OnFileLine("a.log", "two", 4);
    ASSERT_TRUE((*audit)->Prepare(SafeAt("a.log", 8)).ok());  // then killed: no checkpoint
  }
  EXPECT_THAT(Records(), ElementsAre("0 a.log", "4 a.log"));
  auto restarted = AuditLog::Open(path_.string(), committed);
  ASSERT_TRUE(restarted.ok());
  EXPECT_THAT(Records(), ElementsAre("0 a.log"));  // "two" is read again from the checkpoint
}

TEST_F(AuditLogTest, AFailedCheckpointWriteTakesThePreparedLinesBackToWaiting) {
  auto audit = AuditLog::Open(path_.string(), 0);
  ASSERT_TRUE(audit.ok());
  (*audit)->OnFileLine("a.log", "one", 0);
  ASSERT_TRUE((*audit)->Prepare(SafeAt("a.log", 4)).ok());
  (*audit)->Abort();
  EXPECT_TRUE(Records().empty());
  EXPECT_EQ((*audit)->waiting(), 1u);
  ASSERT_TRUE((*audit)->Prepare(SafeAt("a.log", 4)).ok());
  (*audit)->Confirm();
  EXPECT_THAT(Records(), ElementsAre("0 a.log"));
}

TEST_F(AuditLogTest, AReloadDropsTheWaitingLinesItsNewSourcesReadAgain) {
  auto audit = AuditLog::Open(path_.string(), 0);
  ASSERT_TRUE(audit.ok());
  (*audit)->OnFileLine("a.log", "one", 0);
  (*audit)->OnFileLine("a.log", "two", 4);
  (*audit)->Rewind(SafeAt("a.log", 4));
  (*audit)->OnFileLine("a.log", "two", 4);  // the reloaded source reads it again
  ASSERT_TRUE((*audit)->Prepare(SafeAt("a.log", 8)).ok());
  (*audit)->Confirm();
  EXPECT_THAT(Records(), ElementsAre("0 a.log", "4 a.log"));
}

TEST_F(AuditLogTest, AFileShorterThanTheCheckpointSaysIsDataLoss) {
  std::ofstream(path_) << "short\n";
  auto audit = AuditLog::Open(path_.string(), 1000);
  ASSERT_FALSE(audit.ok());
  EXPECT_EQ(audit.status().code(), StatusCode::kDataLoss);
}

TEST_F(AuditLogTest, TheDigestIsCrc32ThenAdler32) {
  // Python: zlib.crc32(b"hello") << 32 | zlib.adler32(b"hello")
  EXPECT_EQ(AuditDigest("hello"), 0x3610a686062c0215ull);
}

}  // namespace
}  // namespace fingerprintd::sink
