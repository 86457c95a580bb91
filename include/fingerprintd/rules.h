// The rule stage: a compiled rule pack (RuleSet) and the per-source engine
// (RuleEngine) that runs it over parsed records and tracebacks.
//
//   StatusOr<std::shared_ptr<const rules::RuleSet>> pack = rules::LoadRuleDir("rules/");
//   if (!pack.ok()) return pack.status();
//   rules::RuleEngine engine(*pack, source_id, events, hit_sink);  // a parse::RecordSink
//   parse::SourceParser parser(source_id, name, options, events, engine);
//
// Rules are YAML (format in rules/README.md). Loading is all-or-nothing: the
// first error returns `file:line: rule <id>: <field>: <reason>`. Every stage
// pattern and fact pattern of the pack sits behind a literal prefilter (two
// tiers: the patterns of ERROR and CRITICAL stages are asked about a text only
// at those levels, so the rare error lines alone pay for them):
// FilteredRE2 reduces each pattern to atoms (lowercased literals a match must
// contain), and a LiteralScanner (rules/literal_scanner.h: 4-byte case-folded
// windows in an L1-sized bitmap, probed every few bytes) finds which atoms a
// message contains. A line with none of the pack's atoms costs that one scan
// and no regex work; otherwise only the patterns whose atoms all occurred run
// as RE2 programs. (A pack with non-ASCII atoms, which the scanner does not
// fold, uses a case-insensitive RE2::Set of the atoms instead.)
//
// Threading: a RuleSet is immutable and shared (shared_ptr, swapped whole on
// reload). A RuleEngine is single-threaded, one per source; it allocates only
// when a pattern matches. No wall clock: maxspan runs on event time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fingerprintd/log_record.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/status.h"
#include "fingerprintd/traceback.h"

namespace re2 {
class RE2;
}

namespace fingerprintd::rules {

enum class Confidence : uint8_t { kPartial = 0, kConfirmed };
std::string_view ConfidenceName(Confidence c);  // "partial" | "confirmed"

// Severity order: info < warning < error < critical.
enum class Severity : uint8_t { kInfo = 0, kWarning, kError, kCritical };
std::string_view SeverityName(Severity s);
bool ParseSeverity(std::string_view text, Severity* out);

// The classes of DESIGN.md §1.
bool IsValidRuleClass(std::string_view text);

struct FramePattern {
  std::shared_ptr<const re2::RE2> file;      // null = any
  std::shared_ptr<const re2::RE2> function;  // null = any
};

struct Stage {
  std::string id;
  Level level = Level::kInfo;  // minimum level
  std::vector<std::string> patterns;
  bool required = false;
  bool symptom = false;
};

struct TracebackClause {
  std::shared_ptr<const re2::RE2> exception;  // against ExceptionBlock::type
  std::shared_ptr<const re2::RE2> message;    // null = any
  std::vector<FramePattern> frames;           // ordered subsequence
  // Where the exception was raised (ExceptionBlock::RaiseSite): a block with
  // frames whose raise site does not match is not this rule's, and without
  // frames the place cannot be told: the rule does not hit.
  std::optional<FramePattern> raised_in;
  // The frames are the finding (a phase sibling: the same exception on
  // another path): without them in order the rule does not hit. Otherwise
  // frames cut or missing only lower the hit to partial.
  bool require_frames = false;
};

struct Veto {
  std::optional<FramePattern> frame;          // a frame anywhere in the matched block
  std::shared_ptr<const re2::RE2> message;    // against the block's exception message
  std::shared_ptr<const re2::RE2> exception;  // against the block's exception type
};

// An embedded test: the log is replayed alone, as one deployment, through the
// whole pack; it must yield exactly `expect` (order irrelevant).
struct RuleTest {
  struct Expected {
    std::string rule;
    std::string confidence;  // "" = any
    int affected = -1;       // -1 = any
    int occurrences = -1;    // -1 = any
    std::string closed;      // "" = any; "open" = still open at the end of the log, else a
                             // close reason ("recovered", ...: CloseReasonName)
  };
  std::string name;
  std::string log;
  std::vector<Expected> expect;
  int line = 0;  // YAML line of the test, for messages
};

// What a rule's hit means. A failure rule's hits become incidents; a ready
// rule's hit is the deployment starting healthy (vLLM's "Application startup
// complete.", SGLang's ready message, ...): it closes the deployment's open
// incidents as recovered and never becomes an incident itself. A stop rule's
// hit is an operator or supervisor stopping the deployment (SIGTERM, Ctrl-C):
// for its window, the `consequence` findings that
// follow it (dead-engine errors, dying workers, aborted collectives) are what
// the stop provoked, not failures. A start rule's hit is the engine starting
// (its start banner): a new attempt of the deployment, so a failure after it
// is another occurrence, never a consequence of one before it.
enum class RuleKind : uint8_t { kFailure, kReady, kStop, kStart };

struct Rule {
  std::string id;
  RuleKind kind = RuleKind::kFailure;
  std::string title;
  std::string rule_class;
  Severity severity = Severity::kError;
  std::string library;  // kernel library for the capability check ("" = none)
  std::string phase;
  int64_t maxspan_us = 30LL * 60 * 1'000'000;
  int64_t window_us = 120LL * 1'000'000;
  bool fallback = false;  // catch-all layer: reported only when no other rule hit
  bool family = false;    // family layer: always partial; a specific rule's hit wins
  // Its findings can be consequences of another failure or of an operator's
  // stop (a dead engine, a collective a peer left): after a stop they are
  // not failures.
  bool consequence = false;
  // Also hits, partial, the last exception of the input when nothing healthy
  // follows it (a paste or a log that ends in its failure), at end of input.
  bool last_exception = false;
  // kind: ready, `scope: rank`: the line is one rank's own start going past
  // every start-up phase (its CUDA graphs captured), printed by every rank,
  // not only the leader: it recovers the failures of that rank, so a
  // deployment split across nodes (one daemon each) recovers on every node.
  bool rank_scope = false;
  std::vector<Stage> stages;
  size_t symptom_stage = 0;
  std::optional<TracebackClause> traceback;
  std::vector<Veto> unless;
  std::vector<std::string> facts;
  std::string explanation;
  std::vector<std::string> remediation;
  std::vector<RuleTest> tests;
  std::string file;  // where it was loaded from
};

struct FactExtractor {
  std::string name;
  std::vector<std::string> patterns;  // group 1 is the value
};

struct KernelSupport {
  std::string library;
  std::vector<std::string> implements;  // "9.0", "10.0"
  std::string note;
};

class RuleSet;
StatusOr<std::shared_ptr<const RuleSet>> LoadRuleDir(const std::string& dir);
// The pack built into the binary. Its rules' `tests:` sections are two thirds
// of its YAML and of the time to load it; only `rules check` and `rules test`
// read them, so replay and the daemon load the pack without (kSkip).
enum class EmbeddedTests { kLoad, kSkip };
StatusOr<std::shared_ptr<const RuleSet>> LoadEmbeddedRules(
    EmbeddedTests tests = EmbeddedTests::kLoad);
// `files` are (file name, YAML text); `facts.yaml` holds facts and kernel_support.
StatusOr<std::shared_ptr<const RuleSet>> LoadRuleTexts(
    const std::vector<std::pair<std::string, std::string>>& files);

class RuleSet {
 public:
  ~RuleSet();
  const std::vector<Rule>& rules() const { return rules_; }
  const std::vector<FactExtractor>& facts() const { return facts_; }
  const std::vector<KernelSupport>& kernel_support() const { return kernel_support_; }
  const Rule* Find(std::string_view id) const;
  const KernelSupport* FindLibrary(std::string_view library) const;

  // What a prefilter pattern id refers to.
  struct PatternRef {
    enum Kind : uint8_t { kStage, kFact } kind;
    uint32_t owner;  // rule index or fact index
    uint32_t stage;  // stage index (kStage)
  };
  // Stages at this level or above (ERROR, CRITICAL) have their patterns in a
  // tier of their own, asked about a text only when it could reach them.
  static constexpr Level kErrorStageLevel = Level::kError;
  // Scratch space for Match(), reused between calls (one per caller thread).
  struct MatchScratch {
    std::vector<int> atoms;
    std::vector<int> local;
  };
  // Sets `out` to the ids, ascending, of every pattern matching `text` that
  // could apply at `level`: fact patterns and stages below ERROR always;
  // patterns of ERROR and CRITICAL stages only for a `level` of ERROR or
  // above (a caller that may still raise a text's level, as the engine does
  // for an unleveled tail line at end of input, passes kError).
  void Match(std::string_view text, Level level, MatchScratch* scratch,
             std::vector<int>* out) const;
  // Match() for a text known to hold none of Atoms() (LogRecord::atom_free_for):
  // of the every-line patterns only the unfiltered ones run.
  void MatchAtomFree(std::string_view text, Level level, MatchScratch* scratch,
                     std::vector<int>* out) const;
  // The every-line patterns' atoms (lowercased literals), for a whole-buffer
  // search; empty when the prefilter does not use them case-folded as ASCII.
  // The error-stage patterns' atoms are not among them.
  const std::vector<std::string>& Atoms() const;
  const PatternRef& Ref(int id) const { return refs_[id]; }
  // Every-line patterns without a literal the prefilter can use; run on every
  // line.
  size_t UnfilteredPatternCount() const;
  const re2::RE2& Pattern(int id) const;

 private:
  friend StatusOr<std::shared_ptr<const RuleSet>> LoadRuleTexts(
      const std::vector<std::pair<std::string, std::string>>& files);
  RuleSet();
  Status Compile();
  void Collect(std::string_view text, Level level, bool atom_free, MatchScratch* scratch,
               std::vector<int>* out) const;

  std::vector<Rule> rules_;
  std::vector<FactExtractor> facts_;
  std::vector<KernelSupport> kernel_support_;
  std::vector<PatternRef> refs_;
  struct Prefilter;
  std::unique_ptr<Prefilter> prefilter_;
};

// One line of evidence: where it was and what it said (ANSI removed).
struct EvidenceLine {
  uint32_t source_id = 0;
  uint64_t line = 0;
  int64_t time_us = 0;
  std::string stage;  // stage id, "traceback", or "" for context
  std::string text;
};

// A rule matched in one process stream.
struct RuleHit {
  const Rule* rule = nullptr;
  uint32_t source_id = 0;
  WorkerInfo worker;  // copy: name, role, pid, ip, indices, rank
  Confidence confidence = Confidence::kPartial;
  int64_t first_time_us = 0;  // earliest matched stage
  int64_t time_us = 0;        // the symptom's time
  // The symptom's line had no time of its own: time_us is when it was read
  // (live) or 0 (replay). Not part of the incident id (correlate.h).
  bool time_read = false;
  std::vector<EvidenceLine> stages;  // one per matched stage, in order
  std::string exception;  // "RuntimeError: Assertion error (...): Unknown SF transformation"
  std::string traceback_fingerprint;  // "" if no traceback with frames
  std::vector<std::string> frames;    // "module:function" of the matched block, outermost first
  std::string raised_in;  // "module:function" of the block's raise site (ExceptionBlock::RaiseSite)
  // Ray re-raises name the remote actor: "(pid=2346, ip=10.10.10.1, ...)".
  int32_t origin_pid = -1;
  std::string origin_ip;
};

// Receives hits and the facts of a source. Called on the engine's thread.
class HitSink {
 public:
  virtual ~HitSink() = default;
  virtual void OnHit(RuleHit hit) = 0;
  // A fact seen for the first time in this source (first value wins).
  virtual void OnFact(uint32_t source_id, const std::string& name, const std::string& value) = 0;
  // A process stream produced its first record.
  virtual void OnWorkerSeen(uint32_t source_id, const WorkerInfo& worker) = 0;
  // A process stream's rank became known after its first record (Ray).
  virtual void OnWorkerRank(uint32_t source_id, const WorkerInfo& worker) = 0;
};

// Traceback fingerprint (Sentry-like): exception type + ordered module:function
// frames of the block, no line numbers; "v1:" + 16 hex digits.
std::string TracebackFingerprint(const ExceptionBlock& block);
// "vllm/utils/deep_gemm.py" -> "vllm.utils.deep_gemm" (site/dist-packages stripped).
std::string ModuleOfFile(std::string_view file);

class RuleEngine final : public parse::RecordSink {
 public:
  struct Options {
    size_t max_streams = 4096;  // per-source stream states; beyond: evicted, counted
    // A symptom on a message line waits this long (event time) for its
    // traceback before Tick() decides it without one.
    int64_t pending_timeout_us = 5'000'000;
    // The input's last words (the last exception with nothing healthy after
    // it, the unleveled lines at the end: Finish()) are decided by Tick()
    // once they are this old in event time, so that live input, which never
    // ends, reports them too. 0 = only at Finish().
    int64_t last_words_after_us = 60'000'000;
  };
  RuleEngine(std::shared_ptr<const RuleSet> rules, uint32_t source_id, PipelineEvents& events,
             HitSink& sink);
  RuleEngine(std::shared_ptr<const RuleSet> rules, uint32_t source_id, PipelineEvents& events,
             HitSink& sink, Options options);
  ~RuleEngine() override;

  void OnRecord(const LogRecord& record) override;
  void OnTraceback(const Traceback& traceback) override;
  // Lowers *pos to the earliest line a restart must read again to rebuild
  // what SaveState() does not keep: a symptom waiting for its traceback, a
  // hard-wrapped line being carried, the input's last words.
  void LowestNeeded(SourcePosition* pos) const;
  // What a restart at a safe position cannot read again: each stream's rank
  // as last reported, its stage matches at lines up to `safe_line` (those
  // after it are read again, and would be matched twice) and its last root
  // cause while a catch-all symptom may still report it. JSON text.
  std::string SaveState(uint64_t safe_line) const;
  // Takes SaveState()'s text into an engine not yet fed, for the parser's
  // restored streams (`workers`, by id). A match of a rule or stage no
  // longer in the pack is dropped, counted as Evicted::kStageMatch. Fails
  // (and changes nothing) on a text it cannot read.
  Status RestoreState(const std::string& state, const parse::WorkerTable& workers);
  // Decides the stream's pending symptoms and drops its state.
  void OnStreamForgotten(const WorkerInfo& worker) override;
  // Decides symptoms on message lines older than the pending timeout, and the
  // input's last words older than last_words_after_us (live input).
  void Tick(int64_t now_us);
  // Drops the stage matches older than their rule's maxspan, plus a day for
  // clocks that disagree, before floor_us (the source's latest event time):
  // a symptom dated after floor_us minus a day can no longer use them.
  // Without this they lived as long as their stream. Called with the floor
  // only, never a time moved on by the wall clock: a silent source's next line
  // may still be dated there.
  void ForgetExpiredStages(int64_t floor_us);
  // End of input: resolves pending symptoms without a traceback.
  void Finish();

  // The pipeline's fast path reaches into the engine through this
  // (src/rules/engine_fast_path.h); nothing else uses it.
  struct FastPath;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fingerprintd::rules
