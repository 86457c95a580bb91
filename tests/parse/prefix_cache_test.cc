// PrefixCache returns exactly what ParsePrefixes returns, line after line:
// the cached chain repeated, followed by one more prefix, with or without its
// separating space, changed in one byte, cut short; checked against
// ParsePrefixes on seeded random lines.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "parse/prefix.h"

namespace fingerprintd::parse {
namespace {

struct Parsed {
  size_t consumed = 0;
  ProcessId id;
  std::string_view key;
};

Parsed Slow(std::string_view text) {
  Parsed p;
  p.consumed = ParsePrefixes(text, &p.id, &p.key);
  return p;
}

Parsed Fast(PrefixCache &cache, std::string_view text) {
  Parsed p;
  p.consumed = cache.Parse(text, &p.id, &p.key);
  return p;
}

bool Inside(std::string_view part, std::string_view text) {
  return part.empty() ||
         (part.data() >= text.data() && part.data() + part.size() <= text.data() + text.size());
}

// The same result, and the views point into the text parsed (not the cache).
void ExpectSame(const Parsed &fast, const Parsed &slow, std::string_view text) {
  SCOPED_TRACE(::testing::Message() << "line: '" << text << "'");
  EXPECT_EQ(fast.consumed, slow.consumed);
  EXPECT_EQ(fast.id.role, slow.id.role);
  EXPECT_EQ(fast.id.name, slow.id.name);
  EXPECT_EQ(fast.id.pid, slow.id.pid);
  EXPECT_EQ(fast.id.ip, slow.id.ip);
  EXPECT_EQ(fast.id.dp, slow.id.dp);
  EXPECT_EQ(fast.id.pp, slow.id.pp);
  EXPECT_EQ(fast.id.tp, slow.id.tp);
  EXPECT_EQ(fast.id.ep, slow.id.ep);
  EXPECT_EQ(fast.id.rank, slow.id.rank);
  EXPECT_EQ(fast.key, slow.key);
  EXPECT_TRUE(Inside(fast.id.name, text));
  EXPECT_TRUE(Inside(fast.id.ip, text));
  EXPECT_TRUE(Inside(fast.key, text));
}

void ExpectSameSequence(const std::vector<std::string> &lines) {
  PrefixCache cache;
  for (const std::string &line : lines) ExpectSame(Fast(cache, line), Slow(line), line);
}

TEST(PrefixCacheTest, RepeatedPrefixIsReusedAndPointsIntoTheNewLine) {
  PrefixCache cache;
  const std::string a = "(APIServer pid=1) INFO 03-04 10:15:22 [logger.py:49] a";
  const std::string b = "(APIServer pid=1) INFO 03-04 10:15:23 [logger.py:49] b";
  Parsed first = Fast(cache, a);
  Parsed second = Fast(cache, b);
  EXPECT_EQ(second.consumed, 18u);
  EXPECT_EQ(second.id.role, ProcessRole::kApiServer);
  EXPECT_EQ(second.id.pid, 1);
  EXPECT_EQ(second.key.data(), b.data());
  EXPECT_EQ(second.id.name.data(), b.data() + 1);
  ExpectSame(first, Slow(a), a);
  ExpectSame(second, Slow(b), b);
}

TEST(PrefixCacheTest, OneMorePrefixAfterTheCachedChainIsParsedWhole) {
  ExpectSameSequence(
      {"(EngineCore_DP0 pid=1) x", "(EngineCore_DP0 pid=1) (RayWorkerWrapper pid=2) y",
       "(EngineCore_DP0 pid=1)  (RayWorkerWrapper pid=2) y", "(EngineCore_DP0 pid=1) [rank1]: z",
       "(EngineCore_DP0 pid=1) (note) z", "(EngineCore_DP0 pid=1) x"});
}

TEST(PrefixCacheTest, AChainCachedWithoutItsSpaceDoesNotSwallowTheNextLinesSpace) {
  ExpectSameSequence({"[rank0]:x", "[rank0]: x", "[rank0]:x", "[rank0]:  x", "[rank0]:"});
  ExpectSameSequence({"(Worker_TP1 pid=5)INFO x", "(Worker_TP1 pid=5) INFO x",
                      "(Worker_TP1 pid=5)(Worker_TP2 pid=6) x", "(Worker_TP1 pid=5)"});
}

TEST(PrefixCacheTest, ALineWithoutAPrefixLeavesTheCacheAsItWas) {
  ExpectSameSequence({"(Worker_TP1 pid=5) a", "NCCL INFO b", "(note) c", "", "(Worker_TP1 pid=5) d",
                      "(Worker_TP1 pid=5", "(Worker_TP1 pid=56) e"});
}

// Lines built from a small alphabet of real and broken prefixes, separators
// and message starts, so that a chain is often repeated, extended, cut or
// changed in one byte from one line to the next.
TEST(PrefixCacheTest, AgreesWithParsePrefixesOnRandomLines) {
  const std::vector<std::string> prefixes = {"(APIServer pid=1)",
                                             "(APIServer pid=12)",
                                             "(Worker_TP0 pid=7)",
                                             "(Worker_TP1 pid=7)",
                                             "(EngineCore_DP0 pid=3)",
                                             "(VllmWorker rank=1 pid=9)",
                                             "(RayWorkerWrapper pid=2395, ip=10.0.0.1)",
                                             "(pid=5)",
                                             "(raylet)",
                                             "[rank1]:",
                                             "[rank12]:",
                                             "(note)",
                                             "(",
                                             "[rank",
                                             "[rank2]",
                                             "(Worker pid=)",
                                             "(pid=2147483648)",
                                             "(x pid=1, ip=)"};
  const std::vector<std::string> separators = {"", " ", " ", " ", "  ", "\t"};
  const std::vector<std::string> tails = {"INFO 03-04 10:15:22 [logger.py:49] Received request",
                                          "",
                                          "x",
                                          "(",
                                          "[",
                                          " ",
                                          "(rank",
                                          "[r",
                                          "ERROR"};
  std::mt19937 rng(20261130);
  auto pick = [&](const std::vector<std::string> &v) { return v[rng() % v.size()]; };
  PrefixCache cache;
  std::string previous = "(APIServer pid=1) INFO";
  for (int i = 0; i < 200'000; ++i) {
    std::string line;
    switch (rng() % 6) {
      case 0:  // the previous line's chain again (a cache hit, unless the tail
               // extends it)
        line = previous.substr(0, Slow(previous).consumed) + pick(separators) + pick(tails);
        break;
      case 1:  // the previous line cut anywhere, a new tail
        line = previous.substr(0, rng() % (previous.size() + 1)) + pick(separators) + pick(tails);
        break;
      case 2: {  // the previous line with one byte changed
        line = previous;
        if (!line.empty()) line[rng() % line.size()] = "( )[]:=1a_,"[rng() % 11];
        break;
      }
      default: {  // a fresh chain of 0-3 prefixes
        const int depth = static_cast<int>(rng() % 4);
        for (int d = 0; d < depth; ++d) line += pick(prefixes) + pick(separators);
        line += pick(tails);
        break;
      }
    }
    ExpectSame(Fast(cache, line), Slow(line), line);
    if (::testing::Test::HasFailure()) break;
    previous = line;
  }
}

}  // namespace
}  // namespace fingerprintd::parse
