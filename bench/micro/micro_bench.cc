// Micro-benchmarks of the per-line stages (issue 15), so that a regression in
// one of them shows as a number and not only as a slower bench/run.sh.
//
//   build-perf/fingerprintd_micro_bench                      # all, on a generated 4 MB mix
//   build-perf/fingerprintd_micro_bench --benchmark_filter=Prefix
//   FINGERPRINTD_MICRO_LOG=/tmp/b.log build-perf/fingerprintd_micro_bench
//
// The input is bench/gen_log.py's realistic vLLM mix (seed 1, 4 MiB, plain),
// generated once into /tmp/fingerprintd-micro-bench/ unless
// FINGERPRINTD_MICRO_LOG names a file. Each benchmark first runs the stages
// before it once, untimed, so it measures one stage on the inputs that stage
// really sees: the literal scanner on header-stripped messages, the prefix
// parser on ANSI-cleaned lines, the header parser on the text after the prefix.
// Throughput counters are bytes of the stage's own input per second.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fingerprintd/correlate.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/pipeline.h"
#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/rules.h"
#include "fingerprintd/source.h"
#include "parse/ansi.h"
#include "parse/header.h"
#include "parse/line_templates.h"
#include "parse/prefix.h"
#include "rules/buffer_matcher.h"
#include "rules/literal_scanner.h"

namespace fingerprintd {
namespace {

// The lines of the mix, and what each stage sees of them.
struct Corpus {
  std::string text;                   // the whole file
  std::vector<std::string> lines;     // physical lines, ANSI kept
  std::vector<std::string> cleaned;   // after CleanLine
  std::vector<std::string> rests;     // after the process prefixes
  std::vector<std::string> messages;  // after the header
  size_t Bytes(const std::vector<std::string>& v) const {
    size_t n = 0;
    for (const std::string& s : v) n += s.size();
    return n;
  }
};

std::string InputPath() {
  if (const char* env = std::getenv("FINGERPRINTD_MICRO_LOG"); env != nullptr && *env != '\0') {
    return env;
  }
  const std::filesystem::path dir = "/tmp/fingerprintd-micro-bench";
  const std::filesystem::path file = dir / "mix-seed1-4mb.log";
  if (!std::filesystem::exists(file)) {
    std::filesystem::create_directories(dir);
    const std::string cmd = "python3 " FINGERPRINTD_SOURCE_DIR
                            "/bench/gen_log.py --size-mb 4 --seed 1 --format plain -o " +
                            file.string() + ".tmp 2>/dev/null && mv " + file.string() + ".tmp " +
                            file.string();
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "cannot generate %s\n", file.c_str());
      std::exit(1);
    }
  }
  return file.string();
}

const Corpus& GetCorpus() {
  static const Corpus* corpus = [] {
    auto* c = new Corpus;
    std::ifstream in(InputPath(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    c->text = ss.str();
    std::string scratch;
    std::istringstream lines(c->text);
    for (std::string line; std::getline(lines, line);) {
      parse::CleanFlags flags;
      const std::string clean(parse::CleanLine(line, &scratch, &flags));
      parse::ProcessId id;
      std::string_view key;
      const size_t consumed = parse::ParsePrefixes(clean, &id, &key);
      const std::string rest = clean.substr(consumed);
      parse::Header header;
      parse::ParseHeader(rest, &header);
      c->messages.emplace_back(header.message);
      c->lines.push_back(std::move(line));
      c->cleaned.push_back(clean);
      c->rests.push_back(rest);
    }
    return c;
  }();
  return *corpus;
}

std::shared_ptr<const rules::RuleSet> Pack() {
  static const std::shared_ptr<const rules::RuleSet> pack = [] {
    auto loaded = rules::LoadEmbeddedRules();
    if (!loaded.ok()) {
      std::fprintf(stderr, "embedded rule pack: %s\n", loaded.status().message().c_str());
      std::exit(1);
    }
    return *loaded;
  }();
  return pack;
}

// The prefilter's atoms, as the rule set's engine scans them.
const rules::LiteralScanner& PackScanner() {
  static const rules::LiteralScanner* scanner = new rules::LiteralScanner(Pack()->Atoms());
  return *scanner;
}

void SetThroughput(benchmark::State& state, size_t bytes, size_t items) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * items));
}

// The prefilter's first pass, as the engine runs it: once per message.
void BM_LiteralScannerAnyPerMessage(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const rules::LiteralScanner& scanner = PackScanner();
  for (auto _ : state) {
    size_t hits = 0;
    for (const std::string& m : c.messages) hits += scanner.Any(m);
    benchmark::DoNotOptimize(hits);
  }
  SetThroughput(state, c.Bytes(c.messages), c.messages.size());
}
BENCHMARK(BM_LiteralScannerAnyPerMessage);

// The same scanner over the raw file in 64 KiB read buffers (what a
// buffer-first matcher would do): every atom of each buffer.
void BM_LiteralScannerFindAllPerBuffer(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const rules::LiteralScanner& scanner = PackScanner();
  constexpr size_t kBuffer = 64 << 10;
  std::vector<int> found;
  for (auto _ : state) {
    size_t hits = 0;
    for (size_t at = 0; at < c.text.size(); at += kBuffer) {
      scanner.FindAll(std::string_view(c.text).substr(at, kBuffer), &found);
      hits += found.size();
    }
    benchmark::DoNotOptimize(hits);
  }
  SetThroughput(state, c.text.size(), c.lines.size());
}
BENCHMARK(BM_LiteralScannerFindAllPerBuffer);

// Buffer-first matching: every occurrence of the atoms and quiet-line
// triggers replay searches (BufferMatcher::Searched, 136 literals) in each
// 1 MiB read buffer of the raw file. Arg 0: our backend (SimdLiteralSearch with
// AVX2; the LiteralScanner on a CPU without); 1: Hyperscan (skipped where the
// build has none); 2: the LiteralScanner, what a CPU without AVX2 runs.
void BM_BufferMatcherSearch(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const std::vector<std::string> atoms = parse::WithQuietLineTriggers(Pack()->Atoms());
  const auto backend = state.range(0) == 1 ? rules::BufferMatcher::Backend::kHyperscan
                                           : rules::BufferMatcher::Backend::kOwn;
  if (backend == rules::BufferMatcher::Backend::kHyperscan &&
      !rules::BufferMatcher::HasHyperscan()) {
    state.SkipWithError("built without Hyperscan");
    return;
  }
  rules::BufferMatcher matcher(atoms, backend);
  rules::BufferMatcher::Scratch scratch(matcher);
  const rules::LiteralScanner scanner(rules::BufferMatcher::Searched(atoms));
  constexpr size_t kBuffer = 1 << 20;
  std::vector<size_t> ends;
  for (auto _ : state) {
    ends.clear();
    for (size_t at = 0; at < c.text.size(); at += kBuffer) {
      const std::string_view buffer = std::string_view(c.text).substr(at, kBuffer);
      if (state.range(0) == 2) {
        scanner.FindEnds(buffer, &ends);
      } else {
        matcher.Search(buffer, &ends, &scratch);
      }
    }
    benchmark::DoNotOptimize(ends.size());
  }
  state.SetLabel(state.range(0) == 2 ? "literal-scanner" : matcher.backend_name());
  SetThroughput(state, c.text.size(), c.lines.size());
}
BENCHMARK(BM_BufferMatcherSearch)->Arg(0)->Arg(1)->Arg(2);

// The own scanner as the buffer-first fallback, same buffers.
void BM_LiteralScannerFindEndsPerBuffer(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const rules::LiteralScanner& scanner = PackScanner();
  constexpr size_t kBuffer = 1 << 20;
  std::vector<size_t> ends;
  for (auto _ : state) {
    ends.clear();
    for (size_t at = 0; at < c.text.size(); at += kBuffer) {
      scanner.FindEnds(std::string_view(c.text).substr(at, kBuffer), &ends);
    }
    benchmark::DoNotOptimize(ends.size());
  }
  SetThroughput(state, c.text.size(), c.lines.size());
}
BENCHMARK(BM_LiteralScannerFindEndsPerBuffer);

// `parse` over the cleaned lines that start with '(' or '[', as the source
// parser calls it; the bytes counted are those of every cleaned line.
template <typename ParseFn>
void RunPrefixes(benchmark::State& state, ParseFn parse) {
  const Corpus& c = GetCorpus();
  for (auto _ : state) {
    size_t consumed = 0;
    for (const std::string& line : c.cleaned) {
      if (line.empty() || (line[0] != '(' && line[0] != '[')) continue;
      parse::ProcessId id;
      std::string_view key;
      consumed += parse(line, &id, &key);
    }
    benchmark::DoNotOptimize(consumed);
  }
  SetThroughput(state, c.Bytes(c.cleaned), c.cleaned.size());
}

void BM_ParsePrefixes(benchmark::State& state) { RunPrefixes(state, parse::ParsePrefixes); }
BENCHMARK(BM_ParsePrefixes);

// The same lines through the source parser's PrefixCache: chains seen in the
// last few prefixed lines are compared, not parsed.
void BM_PrefixCache(benchmark::State& state) {
  parse::PrefixCache cache;
  RunPrefixes(state, [&](std::string_view line, parse::ProcessId* id, std::string_view* key) {
    return cache.Parse(line, id, key);
  });
}
BENCHMARK(BM_PrefixCache);

void BM_ParseHeader(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  for (auto _ : state) {
    size_t found = 0;
    for (const std::string& rest : c.rests) {
      parse::Header header;
      found += parse::ParseHeader(rest, &header);
    }
    benchmark::DoNotOptimize(found);
  }
  SetThroughput(state, c.Bytes(c.rests), c.rests.size());
}
BENCHMARK(BM_ParseHeader);

// The whole prefilter (scan, then FilteredRE2 and RE2 on candidates) per message.
void BM_RuleSetMatch(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const std::shared_ptr<const rules::RuleSet> pack = Pack();
  rules::RuleSet::MatchScratch scratch;
  std::vector<int> matched;
  for (auto _ : state) {
    size_t hits = 0;
    for (const std::string& m : c.messages) {
      pack->Match(m, Level::kInfo, &scratch, &matched);
      hits += matched.size();
    }
    benchmark::DoNotOptimize(hits);
  }
  SetThroughput(state, c.Bytes(c.messages), c.messages.size());
}
BENCHMARK(BM_RuleSetMatch);

class NullRecordSink final : public parse::RecordSink {
 public:
  void OnRecord(const LogRecord& record) override { benchmark::DoNotOptimize(record.message); }
  void OnTraceback(const Traceback&) override {}
};

class NullHitSink final : public rules::HitSink {
 public:
  void OnHit(rules::RuleHit hit) override { benchmark::DoNotOptimize(hit.time_us); }
  void OnFact(uint32_t, const std::string&, const std::string&) override {}
  void OnWorkerSeen(uint32_t, const WorkerInfo&) override {}
  void OnWorkerRank(uint32_t, const WorkerInfo&) override {}
};

// A source's parser alone (envelope, cleaning, prefixes, header, time,
// tracebacks), one fresh parser per pass over the mix.
void BM_SourceParser(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  NullPipelineEvents events;
  NullRecordSink sink;
  for (auto _ : state) {
    parse::SourceParser parser(0, "mix.log", parse::ParserOptions{}, events, sink);
    for (const std::string& line : c.lines) parser.Feed(line);
    parser.Finish();
  }
  SetThroughput(state, c.text.size(), c.lines.size());
}
BENCHMARK(BM_SourceParser)->Unit(benchmark::kMillisecond);

// The parser feeding the rule engine: the per-line work of replay short of
// reading and correlation. Minus BM_SourceParser, the engine's share.
void BM_SourceParserAndRuleEngine(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  NullPipelineEvents events;
  NullHitSink hits;
  for (auto _ : state) {
    rules::RuleEngine engine(Pack(), 0, events, hits);
    parse::SourceParser parser(0, "mix.log", parse::ParserOptions{}, events, engine);
    for (const std::string& line : c.lines) parser.Feed(line);
    parser.Finish();
    engine.Finish();
  }
  SetThroughput(state, c.text.size(), c.lines.size());
}
BENCHMARK(BM_SourceParserAndRuleEngine)->Unit(benchmark::kMillisecond);

// The whole replay engine (parse -> rules -> correlate) on the mix held in
// memory, as one buffer: buffer-first (arg 1) against the per-line path (0).
void BM_ReplayText(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  NullPipelineEvents events;
  parse::ParserOptions options;
  options.current_year = 2026;
  for (auto _ : state) {
    correlate::LatestIncidents sink;
    source::ReplayText(c.text, "mix.log", "mix", options, Pack(), events, sink,
                       state.range(0) != 0);
    benchmark::DoNotOptimize(sink.Sorted().size());
  }
  state.SetLabel(state.range(0) != 0 ? "buffer-first" : "per-line");
  SetThroughput(state, c.text.size(), c.lines.size());
}
BENCHMARK(BM_ReplayText)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Pipeline::Feed as the live daemon drives it: the mix in the buffers a file
// written at 10 MB/s gives a read every N ms (300 KB for arg 0 and 30), the
// wall clock advanced after each. Arg 0: back to back, as replay reads. Arg N:
// the thread sleeps N ms between buffers (untimed), as the daemon does between
// its wake-ups; the CPU time per byte that then grows is what caches and
// branch predictors cold after each sleep cost (bench/README.md, "Live
// tailing: the floor").
void BM_FeedLive(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const auto pause = std::chrono::milliseconds(state.range(0));
  // What a file written at 10 MB/s holds after the pause (30 ms for arg 0).
  const size_t kBuffer = static_cast<size_t>(std::max<int64_t>(state.range(0), 30)) * 10'000;
  const std::shared_ptr<const rules::RuleSet> pack = Pack();  // compiled once, untimed
  for (auto _ : state) {
    NullPipelineEvents events;
    correlate::LatestIncidents sink;
    Pipeline pipeline(pack, Pipeline::Options(), events, sink);
    SourceSpec spec;
    spec.name = "mix.log";
    spec.deployment = "mix";
    spec.parser.current_year = 2026;
    spec.read_as_written = true;
    const Pipeline::SourceId id = pipeline.AddSource(spec);
    int64_t wall_us = 1'780'000'000'000'000;
    for (size_t offset = 0; offset < c.text.size(); offset += kBuffer) {
      pipeline.Feed(id, std::string_view(c.text).substr(offset, kBuffer), offset);
      pipeline.Advance(wall_us += 30'000);
      if (pause.count() > 0) {
        state.PauseTiming();
        std::this_thread::sleep_for(pause);
        state.ResumeTiming();
      }
    }
    pipeline.Finish();
    benchmark::DoNotOptimize(sink.Sorted().size());
  }
  SetThroughput(state, c.text.size(), c.lines.size());
}
BENCHMARK(BM_FeedLive)
    ->Arg(0)
    ->Arg(30)
    ->Arg(100)
    ->Arg(250)
    ->Iterations(8)
    ->Unit(benchmark::kMillisecond);

// The engine's once-a-second pass (Pipeline::AfterLine: Tick and
// ForgetExpiredStages) with `range(0)` processes each holding a startup stage
// match, as after a long log of restarts: matches are kept maxspan plus a day,
// so none has expired yet. Per tick, the same for any number of processes
// since 89422d1 (before 0b4caf2 every match was visited on every tick, and
// before 89422d1 every stream when looking for pending symptoms).
void BM_RuleEngineTickWithStageMatches(benchmark::State& state) {
  NullPipelineEvents events;
  NullHitSink hits;
  rules::RuleEngine engine(Pack(), 0, events, hits);
  constexpr int64_t kSecond = 1'000'000;
  const int64_t start = 1772619322LL * kSecond;  // 2026-03-04T10:15:22Z
  std::vector<WorkerInfo> workers(static_cast<size_t>(state.range(0)));
  uint64_t line = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    workers[i].id = static_cast<uint32_t>(i);
    workers[i].role = ProcessRole::kWorker;
    workers[i].name = "Worker_TP0";
    workers[i].pid = static_cast<int32_t>(1000 + i);
    LogRecord record;
    record.line_number = ++line;
    record.worker = &workers[i];
    record.level = Level::kInfo;
    record.time_us = start + static_cast<int64_t>(i) * kSecond;
    record.message = "Initializing a V1 LLM engine (v0.11.2) with config: model='m'";
    engine.OnRecord(record);
  }
  // The floor moves on a second per tick within an hour after the last
  // match, then starts that hour again: no match expires however long it runs.
  const int64_t last = start + static_cast<int64_t>(workers.size()) * kSecond;
  int64_t tick = 0;
  for (auto _ : state) {
    const int64_t floor = last + (tick++ % 3600) * kSecond;
    engine.Tick(floor);
    engine.ForgetExpiredStages(floor);
  }
  state.counters["processes"] = static_cast<double>(workers.size());
}
BENCHMARK(BM_RuleEngineTickWithStageMatches)->Arg(10)->Arg(100)->Arg(1000);

}  // namespace
}  // namespace fingerprintd

BENCHMARK_MAIN();
