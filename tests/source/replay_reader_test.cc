// ReadPieces (source/replay_reader.h): a gzip piece, inflated ahead on a
// thread of its own, gives the same buffers, lines and counts as the plain
// file it was made of, at any chunk size, next to plain pieces; one cut short
// still gives every line before the cut and then names the file.
#include "source/replay_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/line_splitter.h"
#include "fingerprintd/pipeline_events.h"
#include "testing/scratch_path.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;

struct Read {
  Status status;
  std::string buffers;  // every buffer handed to on_buffer, in order
  std::vector<std::string> lines;
  ReplayStats stats;
  int chunks = 0;
};

Read ReadAll(const std::vector<std::string>& pieces, size_t chunk_bytes) {
  ReplaySource source;
  source.name = "test";
  source.pieces = pieces;
  NullPipelineEvents events;
  Read out;
  LineSplitter splitter(1 << 20, events);  // the lines, as Pipeline::Feed makes them
  auto on_line = [&](std::string_view line, uint64_t) { out.lines.emplace_back(line); };
  out.status = ReadPieces(
      source,
      [&](std::string_view buffer) {
        out.buffers.append(buffer);
        splitter.Append(buffer, on_line);
      },
      &out.stats, [&](const ReplayStats&, const std::string&) { ++out.chunks; }, chunk_bytes);
  splitter.Finish(on_line);
  return out;
}

class ReplayReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::ScratchPath("replay-reader");
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }
  std::string WriteGzip(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_ / name;
    gzFile out = gzopen(path.c_str(), "wb");
    EXPECT_NE(out, nullptr);
    EXPECT_EQ(gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    EXPECT_EQ(gzclose(out), Z_OK);
    return path.string();
  }

  fs::path dir_;
};

// Lines of random length (some empty, one longer than most chunks), the last
// one without a newline.
std::string RandomLog(uint32_t seed, size_t lines) {
  std::mt19937 rng(seed);
  std::string log;
  for (size_t i = 0; i < lines; ++i) {
    const size_t n = i == lines / 2 ? 9000 : rng() % 300;
    for (size_t k = 0; k < n; ++k) log += static_cast<char>('a' + rng() % 26);
    log += '\n';
  }
  log += "no newline at the end";
  return log;
}

TEST_F(ReplayReaderTest, AGzipPieceGivesTheBuffersLinesAndCountsOfItsPlainFile) {
  const std::string log = RandomLog(1, 2000);
  const std::string plain = Write("a.log", log);
  const std::string gz = WriteGzip("a.log.gz", log);
  for (size_t chunk : {size_t{1} << 20, size_t{4096}, size_t{61}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const Read a = ReadAll({plain}, chunk);
    const Read b = ReadAll({gz}, chunk);
    ASSERT_TRUE(a.status.ok()) << a.status.message();
    ASSERT_TRUE(b.status.ok()) << b.status.message();
    EXPECT_EQ(a.buffers, log);
    EXPECT_EQ(b.buffers, log);
    EXPECT_EQ(a.lines, b.lines);
    EXPECT_EQ(a.lines.size(), 2001u);
    EXPECT_EQ(a.stats.bytes, b.stats.bytes);
    EXPECT_EQ(a.chunks, b.chunks);
  }
}

TEST_F(ReplayReaderTest, GzipAndPlainPiecesOfOneSourceAreReadInTheirOrder) {
  // Rotated pieces, oldest first: two gzipped, then the live plain file.
  const std::string p1 = RandomLog(2, 300) + "\n";
  const std::string p2 = RandomLog(3, 300) + "\n";
  const std::string p3 = RandomLog(4, 300) + "\n";
  const std::string a = WriteGzip("0.log.1.gz", p1);
  const std::string b = WriteGzip("0.log.2.gz", p2);
  const std::string c = Write("0.log", p3);
  const Read read = ReadAll({a, b, c}, 777);
  ASSERT_TRUE(read.status.ok()) << read.status.message();
  EXPECT_EQ(read.buffers, p1 + p2 + p3);
  EXPECT_EQ(read.stats.files, 3u);
  EXPECT_EQ(read.lines.size(), 3u * 301);
}

TEST_F(ReplayReaderTest, AGzipPieceCutShortGivesItsLinesThenADataLossErrorNamingIt) {
  const std::string log = RandomLog(5, 4000) + "\n";
  const std::string whole = WriteGzip("whole.log.gz", log);
  std::ifstream in(whole, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = Write("cut.log.gz", bytes.substr(0, bytes.size() * 3 / 4));
  const Read read = ReadAll({cut}, 4096);
  EXPECT_EQ(read.status.code(), StatusCode::kDataLoss);
  EXPECT_NE(read.status.message().find(cut + ": truncated gzip stream"), std::string::npos)
      << read.status.message();
  // What was inflated is a prefix of the log, and every whole line of it was read.
  ASSERT_FALSE(read.buffers.empty());
  EXPECT_EQ(log.compare(0, read.buffers.size(), read.buffers), 0);
  EXPECT_GE(read.lines.size(),
            static_cast<size_t>(std::count(read.buffers.begin(), read.buffers.end(), '\n')));
}

}  // namespace
}  // namespace fingerprintd::source
