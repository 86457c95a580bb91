// RuleEngine: runs a RuleSet over the records and tracebacks of one source.
//
// Per process stream it keeps, for each rule that has matched something, the
// latest line of each stage. A symptom match does not decide at once: it is
// parked as pending and resolved by what follows in the same stream —
//   * the stream's next Traceback (the symptom was its exception line, or a
//     message such as "WorkerProc failed to start." that precedes it): the
//     rule's traceback clause and vetoes are checked on it;
//   * the stream's next ordinary message line, for a symptom that was not
//     itself an exception line: no traceback came;
//   * Tick(): event time moved past it (live input; message-line symptoms);
//   * Finish(): end of input.
// That is what tells the target from a sibling raising the same text at run
// time (same message, different frames) and a one-line paste (partial).
#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "fingerprintd/rules.h"
#include "parse/message_reading.h"
#include "rules/clause_match.h"

namespace fingerprintd::rules {
namespace {

// How far (lines) after a traceback a catch-all symptom still reports its exception.
constexpr uint64_t kCarriedExceptionLines = 12;
// A symptom may be dated before the source's floor, the latest time of any of
// its streams: a header written in another zone than its envelope's, a
// traceback dated by the envelope. Stage matches are kept this much longer
// than maxspan, so aging them never changes what a symptom dated up to a day
// behind the floor would match.
constexpr int64_t kStageClockSkewUs = 24LL * 3600 * 1'000'000;

struct StageMatch {
  uint64_t line = 0;
  uint64_t offset = 0;
  int64_t time_us = 0;
  std::string text;
  bool time_read = false;  // LogRecord::time_read
};

struct RuleState {
  uint32_t rule = 0;
  std::vector<std::optional<StageMatch>> stages;
};

struct Pending {
  uint32_t rule = 0;
  StageMatch symptom;
  bool on_exception_line = false;
  // Matched on a hard-wrapped message rejoined from several lines: the
  // traceback's exception line holds only the first piece, so the clause's
  // message may be found in the rejoined text instead.
  bool rejoined = false;
  // Given by HitLastException: the input ended in this exception.
  bool at_end_of_input = false;
};

struct Stream {
  bool seen = false;
  int32_t rank = -1;
  std::vector<RuleState> rules;  // only rules that matched something here
  std::vector<Pending> pending;
  bool in_pending_streams = false;  // its index is in Impl::pending_streams
  // The root cause of the stream's last traceback and its last line: a
  // catch-all symptom printed just after it (SGLang's parent: "Received
  // sigquit from a child process") reports that exception.
  std::optional<ExceptionBlock> last_root;
  uint64_t last_root_line = 0;

  RuleState& StateFor(uint32_t rule, size_t stage_count) {
    for (RuleState& s : rules) {
      if (s.rule == rule) return s;
    }
    rules.push_back(RuleState{rule, std::vector<std::optional<StageMatch>>(stage_count)});
    return rules.back();
  }
};

// An exception line counts as ERROR, unless its logger said WARNING: a
// traceback logged as a warning is one the process survived.
Level EffectiveLevel(const LogRecord& record) {
  Level level = record.level == Level::kUnknown ? Level::kInfo : record.level;
  if (record.kind == LineKind::kException && level < Level::kWarning) level = Level::kError;
  return level;
}

// "sm_120" / "120" -> "12.0"; "9.0" unchanged.
std::string NormalizeCapability(std::string value) {
  if (value.rfind("sm_", 0) == 0) value = value.substr(3);
  if (value.find('.') == std::string::npos && value.size() >= 2 && value.size() <= 3 &&
      std::all_of(value.begin(), value.end(), ::isdigit)) {
    return value.substr(0, value.size() - 1) + "." + value.substr(value.size() - 1);
  }
  return value;
}

}  // namespace

struct RuleEngine::Impl {
  std::shared_ptr<const RuleSet> rules;
  uint32_t source_id;
  PipelineEvents& events;
  HitSink& sink;
  Options options;
  std::vector<Stream> streams;             // indexed by WorkerInfo::id
  std::vector<const WorkerInfo*> workers;  // same index
  // Indexes of the streams that have had a symptom pending since the last
  // StreamsByPendingLine(), which drops those that have none left: a tick
  // looks at these, not at every process the source ever had.
  std::vector<uint32_t> pending_streams;
  std::vector<bool> fact_known;
  RuleSet::MatchScratch scratch;     // reused per line
  std::vector<int> matches, joined;  // pattern ids, reused per line
  std::vector<int> applied;          // pattern ids ApplyMatches accepted (level passed)
  std::string capture;               // scratch
  // While OnTraceback decides its pending symptoms: their hits, held back
  // until every rule has been checked against that traceback.
  struct Decided {
    RuleHit hit;
    bool frames_cut = false;
  };
  std::vector<Decided>* deciding = nullptr;
  // End of input (Finish) reads the input's last words as its failure when
  // nothing healthy followed them (a paste, or a log that ends in a crash):
  //  * the unleveled lines after the source's last headered line, whose
  //    patterns a stage's level filtered out, are matched again as ERROR;
  //  * the last exception is given to the `last_exception` rules.
  struct TailLine {
    const WorkerInfo* worker = nullptr;
    LogRecord record;  // views cleared; `text` holds the message
    std::string text;
    std::vector<int> ids;  // patterns the line's level kept out
  };
  static constexpr size_t kTailLines = 8;
  std::vector<TailLine> tail;
  struct LastException {
    const WorkerInfo* worker = nullptr;
    Traceback tb;
  };
  std::optional<LastException> last_exception;
  bool unfiltered = false;   // patterns without atoms: run on every line
  uint64_t latest_line = 0;  // the last line seen (LowestNeeded)
  // No dated stage match expires before the floor passes this (the earliest
  // time_us + maxspan + kStageClockSkewUs): until then a tick has nothing to
  // forget, and the matches, kept for a day, are not visited on every tick.
  int64_t next_expiry_us = INT64_MAX;
  // The previous physical line(s) of the source while they look cut off.
  struct Carry {
    std::string text;
    int lines = 0;
    const WorkerInfo* worker = nullptr;
    uint64_t line = 0, offset = 0;
    Level level = Level::kUnknown;
    LineKind kind = LineKind::kMessage;
    std::vector<int> matched;     // pattern ids the pieces matched alone
    size_t last_piece_bytes = 0;  // the last piece's physical line
    bool cut = false;             // the last piece looked cut off
  } carry;

  Impl(std::shared_ptr<const RuleSet> r, uint32_t id, PipelineEvents& e, HitSink& s, Options o)
      : rules(std::move(r)), source_id(id), events(e), sink(s), options(o) {
    fact_known.assign(rules->facts().size(), false);
    unfiltered = rules->UnfilteredPatternCount() != 0;
  }

  bool SkipQuietRecord(const WorkerInfo& worker) {
    // After an exception, the next INFO line decides whether it was the
    // input's last word (NoteHealthy): that one is read.
    if (unfiltered || last_exception || worker.id >= streams.size()) return false;
    const Stream& stream = streams[worker.id];
    if (!stream.seen || stream.rank != worker.rank || !stream.pending.empty() ||
        workers[worker.id] != &worker) {
      return false;
    }
    carry.text.clear();  // Rejoin(): a headered record continues no carried line
    tail.clear();        // the input's last words come after a headered record
    return true;
  }

  int64_t KeptFor(uint32_t rule) const {
    return rules->rules()[rule].maxspan_us + kStageClockSkewUs;
  }

  // A dated match older than maxspan plus kStageClockSkewUs before the floor.
  void ForgetExpiredStages(int64_t floor_us) {
    if (floor_us == 0 || floor_us <= next_expiry_us) return;
    next_expiry_us = INT64_MAX;
    for (Stream& stream : streams) {
      for (RuleState& state : stream.rules) {
        const int64_t maxspan = KeptFor(state.rule);
        for (std::optional<StageMatch>& m : state.stages) {
          if (!m || m->time_us == 0) continue;
          if (floor_us - m->time_us > maxspan) {
            m.reset();
            events.StateEvicted(Evicted::kStageMatch);
          } else {
            next_expiry_us = std::min(next_expiry_us, m->time_us + maxspan);
          }
        }
      }
      std::erase_if(stream.rules, [](const RuleState& state) {
        return std::none_of(state.stages.begin(), state.stages.end(),
                            [](const std::optional<StageMatch>& m) { return m.has_value(); });
      });
    }
  }

  Stream* StreamFor(const WorkerInfo* worker) {
    if (worker == nullptr) return nullptr;
    if (worker->id >= streams.size()) {
      if (worker->id >= options.max_streams) {
        events.StateEvicted(Evicted::kProcessStream);
        return nullptr;
      }
      streams.resize(worker->id + 1);
      workers.resize(worker->id + 1, nullptr);
    }
    Stream& stream = streams[worker->id];
    workers[worker->id] = worker;
    if (!stream.seen) {
      stream.seen = true;
      stream.rank = worker->rank;
      sink.OnWorkerSeen(source_id, *worker);
    } else if (stream.rank != worker->rank) {
      stream.rank = worker->rank;
      sink.OnWorkerRank(source_id, *worker);
    }
    return &stream;
  }

  void OnFactMatch(uint32_t fact, int pattern_id, std::string_view text) {
    if (fact_known[fact]) return;
    if (!RE2::PartialMatch(text, rules->Pattern(pattern_id), &capture) || capture.empty()) return;
    fact_known[fact] = true;
    const std::string& name = rules->facts()[fact].name;
    std::string value = name == "compute_capability" ? NormalizeCapability(capture) : capture;
    sink.OnFact(source_id, name, value);
  }

  void OnRecord(const LogRecord& record) {
    latest_line = std::max(latest_line, record.line_number);
    Stream* stream = StreamFor(record.worker);
    if (stream == nullptr) return;
    if (last_exception) NoteHealthy(record);
    // A logged message of the stream (it has a level) means no traceback is
    // coming for a symptom seen on an earlier message line. Raw unleveled
    // output (C++/NCCL prints interleaved by the same process) does not.
    if (record.kind == LineKind::kMessage && record.level != Level::kUnknown) {
      ResolveWithoutTraceback(*stream, record.worker, [&](const Pending& p) {
        return p.symptom.line < record.line_number;
      });
    }
    ExpirePending(*stream, record.worker, record.time_us);
    if (record.message.empty()) {
      carry.text.clear();
      return;
    }
    const Level level = EffectiveLevel(record);
    // An unleveled bare line may be promoted to ERROR at end of input
    // (KeepTailLine): it is matched as one.
    const bool tail_candidate = !record.headered && record.level == Level::kUnknown;
    const Level match_level = tail_candidate ? RuleSet::kErrorStageLevel : level;
    if (record.atom_free_for == rules.get()) {
      rules->MatchAtomFree(record.message, match_level, &scratch, &matches);
    } else {
      rules->Match(record.message, match_level, &scratch, &matches);
    }
    applied.clear();
    if (!matches.empty()) ApplyMatches(*stream, record, record.message, level, matches, false);
    Rejoin(record, level);
    if (record.headered) {
      tail.clear();
    } else if (tail_candidate && matches.size() > applied.size()) {
      KeepTailLine(record);
    }
  }

  // A healthy line after the last exception: a headered record at INFO or
  // below that is not a process shutting down.
  void NoteHealthy(const LogRecord& record) {
    if (!last_exception || !record.headered || record.level == Level::kUnknown ||
        record.level > Level::kInfo || record.line_number <= last_exception->tb.last_line) {
      return;
    }
    static const RE2 kShutdown(
        R"((?i)shut\s*down|shutting|terminat|exit|stopp|killed|died|dead|abort|clean\s*up|)"
        R"(sigquit|sigterm|signal|finished server process|waiting for)");
    if (RE2::PartialMatch(record.message, kShutdown)) return;
    last_exception.reset();
  }

  void KeepTailLine(const LogRecord& record) {
    if (record.kind != LineKind::kMessage && record.kind != LineKind::kException) return;
    TailLine line;
    for (int id : matches) {
      if (rules->Ref(id).kind == RuleSet::PatternRef::kFact) continue;
      if (std::find(applied.begin(), applied.end(), id) == applied.end()) line.ids.push_back(id);
    }
    if (line.ids.empty()) return;
    if (tail.size() == kTailLines) tail.erase(tail.begin());
    line.worker = record.worker;
    line.record = record;
    line.record.message = {};
    line.record.raw = {};
    line.record.location = {};
    line.text.assign(record.message);
    tail.push_back(std::move(line));
  }

  void PromoteTail() {
    std::vector<TailLine> lines = std::move(tail);
    tail.clear();
    for (TailLine& line : lines) {
      Stream* stream = StreamFor(line.worker);
      if (stream == nullptr) continue;
      line.record.message = line.text;
      applied.clear();
      ApplyMatches(*stream, line.record, line.text, Level::kError, line.ids, false);
    }
  }

  // The input's last exception, when nothing healthy followed it, is a
  // failure: the `last_exception` rules (the catch-all) hit it, partial,
  // unless a veto of theirs fires. A stronger incident of the deployment
  // still wins in the correlator.
  void HitLastException() {
    if (!last_exception) return;
    LastException last = std::move(*last_exception);
    last_exception.reset();
    const ExceptionBlock* root = last.tb.RootCause();
    Stream* stream = StreamFor(last.worker);
    if (root == nullptr || stream == nullptr) return;
    for (uint32_t r = 0; r < rules->rules().size(); ++r) {
      const Rule& rule = rules->rules()[r];
      if (!rule.last_exception || Vetoed(rule, *root)) continue;
      Pending p;
      p.rule = r;
      p.symptom.line = last.tb.last_line;
      p.symptom.offset = last.tb.first_offset;
      p.symptom.time_us = last.tb.last_time_us;
      p.symptom.time_read = last.tb.time_read;
      p.symptom.text = root->message.empty() ? root->type : root->type + ": " + root->message;
      p.on_exception_line = true;
      p.at_end_of_input = true;
      Resolve(*stream, last.worker, p, &last.tb);
    }
  }

  // A message hard-wrapped over up to three physical lines (a terminal, a
  // Markdown list, a blog's code block) is matched once more as one text:
  // the previous piece looked cut off or this line cannot start a record
  // (parse/message_reading.h), and this one is bare (no prefix, no header,
  // not indented). Only patterns that neither piece matched alone count,
  // attributed to the first piece's stream and line. Lines at INFO and below
  // are never carried: wrapped failures are errors or bare pastes, and the
  // hot path stays one branch per ordinary line.
  void Rejoin(const LogRecord& record, Level level) {
    const bool bare = !record.headered && record.worker != nullptr && record.worker->name.empty() &&
                      record.message[0] != ' ' && record.message[0] != '\t';
    const bool continues =
        !carry.text.empty() && bare && carry.lines < 3 &&
        (record.kind == LineKind::kMessage || record.kind == LineKind::kException) &&
        (carry.cut || parse::CannotStartRecord(record.message));
    if (continues) {
      parse::AppendWrapped(&carry.text, carry.last_piece_bytes, record.message);
      carry.last_piece_bytes = record.raw.size();
      carry.cut = LooksCutOff(record);
      ++carry.lines;
      carry.matched.insert(carry.matched.end(), applied.begin(), applied.end());
      rules->Match(carry.text, std::max(level, carry.level), &scratch, &joined);
      std::erase_if(joined, [&](int id) {
        return std::find(carry.matched.begin(), carry.matched.end(), id) != carry.matched.end();
      });
      if (!joined.empty() && carry.worker != nullptr) {
        Stream* first = StreamFor(carry.worker);
        if (first != nullptr) {
          LogRecord whole = record;
          whole.worker = carry.worker;
          whole.line_number = carry.line;
          whole.offset = carry.offset;
          whole.kind = carry.kind;
          ApplyMatches(*first, whole, carry.text, std::max(level, carry.level), joined, true);
          carry.matched.insert(carry.matched.end(), applied.begin(), applied.end());
        }
      }
      return;
    }
    carry.text.clear();
    if (record.level != Level::kUnknown && record.level < Level::kWarning) return;
    if (record.kind != LineKind::kMessage && record.kind != LineKind::kException) return;
    // An exception line may go on with a location that cannot start a record.
    const bool cut = LooksCutOff(record);
    if (!cut && record.kind != LineKind::kException) return;
    carry.text.assign(record.message);
    carry.last_piece_bytes = record.raw.size();
    carry.cut = cut;
    carry.lines = 1;
    carry.worker = record.worker;
    carry.line = record.line_number;
    carry.offset = record.offset;
    carry.level = level;
    carry.kind = record.kind;
    carry.matched = applied;
  }

  // A line a wrap may have cut: terminal width reached (the physical line's),
  // or its message ends where a message cannot.
  static bool LooksCutOff(const LogRecord& record) {
    return record.raw.size() >= parse::kNarrowestTerminal || parse::LooksCutOff(record.message);
  }

  void ApplyMatches(Stream& stream, const LogRecord& record, std::string_view text, Level level,
                    const std::vector<int>& ids, bool rejoined) {
    for (int id : ids) {
      const RuleSet::PatternRef& ref = rules->Ref(id);
      if (ref.kind == RuleSet::PatternRef::kFact) {
        OnFactMatch(ref.owner, id, text);
        applied.push_back(id);
        continue;
      }
      const Rule& rule = rules->rules()[ref.owner];
      const Stage& stage = rule.stages[ref.stage];
      if (level < stage.level) continue;
      applied.push_back(id);
      RuleState& state = stream.StateFor(ref.owner, rule.stages.size());
      if (state.stages[ref.stage] && state.stages[ref.stage]->line == record.line_number) continue;
      StageMatch match{record.line_number, record.offset, record.time_us, std::string(text),
                       record.time_read};
      events.RuleMatched(rule.id, stage.id);
      if (stage.symptom) AddPending(stream, record, ref.owner, match, rejoined);
      if (match.time_us != 0) {
        next_expiry_us = std::min(next_expiry_us, match.time_us + KeptFor(ref.owner));
      }
      state.stages[ref.stage] = std::move(match);
    }
  }

  // Parks a symptom match. The same rule already waiting on an earlier
  // message line is decided first when another message line repeats the
  // symptom (two failures, e.g. two watchdog timeouts minutes apart); an
  // exception line after it is the traceback it was waiting for.
  void AddPending(Stream& stream, const LogRecord& record, uint32_t rule, const StageMatch& match,
                  bool rejoined) {
    bool on_exception_line = record.kind == LineKind::kException;
    for (size_t i = 0; i < stream.pending.size(); ++i) {
      Pending& p = stream.pending[i];
      if (p.rule != rule) continue;
      // Inside one traceback a second matching line (two entry frames) is
      // the same failure: the traceback decides the first.
      if (p.on_exception_line || on_exception_line || record.kind == LineKind::kFrame ||
          record.kind == LineKind::kCode) {
        return;
      }
      Pending earlier = std::move(p);
      stream.pending.erase(stream.pending.begin() + static_cast<std::ptrdiff_t>(i));
      Resolve(stream, record.worker, earlier, nullptr);
      break;
    }
    if (!stream.in_pending_streams) {
      stream.in_pending_streams = true;
      pending_streams.push_back(static_cast<uint32_t>(&stream - streams.data()));
    }
    stream.pending.push_back(Pending{rule, match, on_exception_line, rejoined});
  }

  // Decides without a traceback the stream's message-line symptoms for which
  // `done` holds. An exception-line symptom always gets its Traceback (at the
  // latest at Finish), possibly after the stream's next line: it waits.
  template <typename Done>
  void ResolveWithoutTraceback(Stream& stream, const WorkerInfo* worker, Done done) {
    if (stream.pending.empty()) return;
    std::vector<Pending> still;
    for (Pending& p : stream.pending) {
      if (!p.on_exception_line && done(p)) {
        Resolve(stream, worker, p, nullptr);
      } else {
        still.push_back(std::move(p));
      }
    }
    stream.pending = std::move(still);
  }

  // Symptoms that waited longer than the pending timeout in event time.
  void ExpirePending(Stream& stream, const WorkerInfo* worker, int64_t now_us) {
    if (now_us == 0) return;
    ResolveWithoutTraceback(stream, worker, [&](const Pending& p) {
      return p.symptom.time_us != 0 && now_us - p.symptom.time_us > options.pending_timeout_us;
    });
  }

  void OnTraceback(const Traceback& tb) {
    Stream* stream = StreamFor(tb.worker);
    if (stream == nullptr) return;
    const ExceptionBlock* root = tb.RootCause();
    const bool has_root = root != nullptr && !root->type.empty();
    if (has_root) {
      stream->last_root = *root;
      stream->last_root_line = tb.last_line;
    }
    latest_line = std::max(latest_line, tb.last_line);
    // The input's last exception so far; a rule that hits it explains it. A
    // traceback cut before its exception line leaves the last one in place.
    if (has_root) last_exception.reset();
    if (stream->pending.empty()) {
      if (has_root) last_exception = LastException{tb.worker, tb};
      return;
    }
    std::vector<Pending> pending = std::move(stream->pending);
    stream->pending.clear();
    std::vector<Decided> decided;
    deciding = &decided;
    for (const Pending& p : pending) Resolve(*stream, tb.worker, p, &tb);
    deciding = nullptr;
    // The frames are the stronger evidence: a rule whose clause matched this
    // traceback whole outranks one that matched only its exception line.
    const bool whole = std::any_of(decided.begin(), decided.end(), [](const Decided& d) {
      return !d.frames_cut && d.hit.rule->traceback && !d.hit.rule->family;
    });
    bool explained = false;
    for (Decided& d : decided) {
      if (whole && d.frames_cut) continue;
      explained = true;
      sink.OnHit(std::move(d.hit));
    }
    if (has_root && !explained) last_exception = LastException{tb.worker, tb};
  }

  // Live input has no end: a symptom seen on a message line is decided
  // without a traceback once event time moved past it by the timeout.
  // Streams are visited in the order of their earliest pending symptom's
  // line, not of their ids (the order processes were first seen), so the
  // hits come out in the same order however far back the input was read.
  void Tick(int64_t now_us) {
    for (size_t i : StreamsByPendingLine()) ExpirePending(streams[i], workers[i], now_us);
    if (now_us == 0 || options.last_words_after_us <= 0) return;
    auto old = [&](int64_t time_us) {
      return time_us != 0 && now_us - time_us > options.last_words_after_us;
    };
    if (!tail.empty() && old(tail.back().record.time_us)) PromoteTail();
    if (last_exception && old(last_exception->tb.last_time_us)) HitLastException();
  }

  std::vector<size_t> StreamsByPendingLine() {
    std::erase_if(pending_streams, [&](uint32_t i) {
      if (!streams[i].pending.empty()) return false;
      streams[i].in_pending_streams = false;
      return true;
    });
    std::vector<std::pair<uint64_t, size_t>> order;
    for (const uint32_t i : pending_streams) {
      uint64_t first = UINT64_MAX;
      for (const Pending& p : streams[i].pending) first = std::min(first, p.symptom.line);
      order.emplace_back(first, i);
    }
    std::sort(order.begin(), order.end());
    std::vector<size_t> out;
    for (const auto& [line, i] : order) out.push_back(i);
    return out;
  }

  // See RuleEngine::LowestNeeded. Stage matches and the last root cause are
  // not here: SaveState keeps them.
  void LowestNeeded(SourcePosition* pos) const {
    for (const Stream& stream : streams) {
      for (const Pending& p : stream.pending) {
        pos->LowerTo({p.symptom.offset, p.symptom.line - 1});
      }
    }
    if (!carry.text.empty()) pos->LowerTo({carry.offset, carry.line - 1});
    if (!tail.empty())
      pos->LowerTo({tail.front().record.offset, tail.front().record.line_number - 1});
    if (last_exception) {
      const Traceback& tb = last_exception->tb;
      pos->LowerTo({tb.first_offset, tb.first_line == 0 ? 0 : tb.first_line - 1});
    }
  }

  std::string SaveState(uint64_t safe_line) const {
    using nlohmann::json;
    json jstreams = json::array();
    for (size_t i = 0; i < streams.size(); ++i) {
      const Stream& stream = streams[i];
      if (!stream.seen) continue;
      json jrules = json::array();
      for (const RuleState& state : stream.rules) {
        const Rule& rule = rules->rules()[state.rule];
        json jstages = json::object();
        for (size_t st = 0; st < state.stages.size(); ++st) {
          const std::optional<StageMatch>& m = state.stages[st];
          if (!m || m->line > safe_line) continue;
          jstages[rule.stages[st].id] = {{"line", m->line},
                                         {"offset", m->offset},
                                         {"time", m->time_us},
                                         {"text", m->text},
                                         {"time_read", m->time_read}};
        }
        if (!jstages.empty()) jrules.push_back({{"rule", rule.id}, {"stages", jstages}});
      }
      json jstream = {{"worker", i}, {"rank", stream.rank}, {"rules", jrules}};
      // A catch-all symptom just after the last traceback reports its
      // exception (kCarriedExceptionLines).
      if (stream.last_root && stream.last_root_line <= safe_line &&
          latest_line < stream.last_root_line + kCarriedExceptionLines) {
        json frames = json::array();
        for (const Frame& f : stream.last_root->frames) {
          frames.push_back({f.file, f.line, f.function, f.code});
        }
        jstream["last_root"] = {{"line", stream.last_root_line},
                                {"type", stream.last_root->type},
                                {"message", stream.last_root->message},
                                {"has_header", stream.last_root->has_header},
                                {"frames", frames}};
      }
      jstreams.push_back(std::move(jstream));
    }
    return json{{"streams", jstreams}}.dump();
  }

  Status RestoreState(const std::string& text, const parse::WorkerTable& table) {
    using nlohmann::json;
    if (!streams.empty()) {
      return FailedPreconditionError("engine state: restore into an engine already fed");
    }
    std::map<std::string_view, uint32_t> rule_index;
    for (uint32_t r = 0; r < rules->rules().size(); ++r) rule_index[rules->rules()[r].id] = r;
    std::vector<Stream> read(std::min<size_t>(table.size(), options.max_streams));
    size_t dropped = 0;
    try {
      const json js = json::parse(text);
      for (const json& jstream : js.at("streams")) {
        const size_t id = jstream.at("worker").get<size_t>();
        if (id >= read.size()) continue;  // a stream the parser did not keep
        Stream& stream = read[id];
        stream.seen = true;
        stream.rank = jstream.at("rank").get<int32_t>();
        if (jstream.contains("last_root")) {
          const json& jr = jstream.at("last_root");
          ExceptionBlock root;
          root.type = jr.at("type").get<std::string>();
          root.message = jr.at("message").get<std::string>();
          root.has_header = jr.at("has_header").get<bool>();
          for (const json& jf : jr.at("frames")) {
            root.frames.push_back(Frame{jf.at(0).get<std::string>(), jf.at(1).get<int32_t>(),
                                        jf.at(2).get<std::string>(), jf.at(3).get<std::string>()});
          }
          stream.last_root = std::move(root);
          stream.last_root_line = jr.at("line").get<uint64_t>();
        }
        for (const json& jrule : jstream.at("rules")) {
          auto r = rule_index.find(jrule.at("rule").get<std::string>());
          const json& jstages = jrule.at("stages");
          if (r == rule_index.end()) {
            dropped += jstages.size();
            continue;
          }
          const Rule& rule = rules->rules()[r->second];
          RuleState& state = stream.StateFor(r->second, rule.stages.size());
          for (const auto& [saved_id, jm] : jstages.items()) {
            const std::string& stage_id = saved_id;  // clang 14 cannot capture a binding
            auto stage = std::find_if(rule.stages.begin(), rule.stages.end(),
                                      [&](const Stage& st) { return st.id == stage_id; });
            if (stage == rule.stages.end()) {
              ++dropped;
              continue;
            }
            state.stages[stage - rule.stages.begin()] =
                StageMatch{jm.at("line").get<uint64_t>(), jm.at("offset").get<uint64_t>(),
                           jm.at("time").get<int64_t>(), jm.at("text").get<std::string>(),
                           jm.at("time_read").get<bool>()};
          }
        }
      }
    } catch (const json::exception& e) {
      return DataLossError(std::string("engine state: ") + e.what());
    }
    streams = std::move(read);
    workers.assign(streams.size(), nullptr);
    for (size_t i = 0; i < streams.size(); ++i) {
      if (streams[i].seen) workers[i] = &table.Get(static_cast<uint32_t>(i));
    }
    for (size_t i = 0; i < dropped; ++i) events.StateEvicted(Evicted::kStageMatch);
    for (const Stream& stream : streams) {
      for (const RuleState& state : stream.rules) {
        for (const std::optional<StageMatch>& m : state.stages) {
          if (m && m->time_us != 0) {
            next_expiry_us = std::min(next_expiry_us, m->time_us + KeptFor(state.rule));
          }
        }
      }
    }
    return OkStatus();
  }

  // The parser forgot the stream (its slot goes to another process): its
  // symptoms are decided now, and nothing of it is kept.
  void Forget(const WorkerInfo& worker) {
    if (carry.worker == &worker) carry.text.clear();
    std::erase_if(tail, [&](const TailLine& line) { return line.worker == &worker; });
    if (last_exception && last_exception->worker == &worker) last_exception.reset();
    if (worker.id >= streams.size()) return;
    Stream& stream = streams[worker.id];
    std::vector<Pending> pending = std::move(stream.pending);
    stream.pending.clear();
    for (const Pending& p : pending) Resolve(stream, &worker, p, nullptr);
    const bool listed = stream.in_pending_streams;  // until StreamsByPendingLine() drops it
    stream = Stream();
    stream.in_pending_streams = listed;
  }

  void Finish() {
    PromoteTail();
    HitLastException();
    for (size_t i : StreamsByPendingLine()) {
      std::vector<Pending> pending = std::move(streams[i].pending);
      streams[i].pending.clear();
      for (const Pending& p : pending) Resolve(streams[i], workers[i], p, nullptr);
    }
  }

  // Required non-symptom stages matched in order, before the symptom and within maxspan.
  bool RequiredStagesMatched(const Rule& rule, const RuleState& state, const StageMatch& symptom,
                             std::vector<std::pair<size_t, const StageMatch*>>* matched) const {
    bool ok = true;
    uint64_t last_line = 0;
    for (size_t s = 0; s < rule.stages.size(); ++s) {
      if (s == rule.symptom_stage) continue;
      const std::optional<StageMatch>& m = state.stages[s];
      bool in_span = m && m->line <= symptom.line && m->line >= last_line &&
                     (m->time_us == 0 || symptom.time_us == 0 ||
                      symptom.time_us - m->time_us <= rule.maxspan_us);
      if (in_span) {
        matched->emplace_back(s, &*m);
        last_line = m->line;
      } else if (rule.stages[s].required) {
        ok = false;
      }
    }
    return ok;
  }

  void Resolve(Stream& stream, const WorkerInfo* worker, const Pending& pending,
               const Traceback* tb) {
    const Rule& rule = rules->rules()[pending.rule];
    const std::string_view rejoined =
        pending.rejoined ? std::string_view(pending.symptom.text) : std::string_view();
    const ExceptionBlock* block = nullptr;
    bool has_frames = tb != nullptr && tb->FrameCount() > 0;
    bool frames_cut = false;  // the clause's exception, but not its frames in order
    if (has_frames) {
      if (rule.traceback) {
        block = ClauseBlock(rule, *tb, rejoined, &frames_cut);
        if (block == nullptr) return;  // another exception, a veto, or a phase sibling's frames
      } else {
        block = tb->RootCause();
      }
      if (block != nullptr && Vetoed(rule, *block)) return;
    } else if (tb == nullptr && rule.fallback && stream.last_root &&
               pending.symptom.line >= stream.last_root_line &&
               pending.symptom.line - stream.last_root_line <= kCarriedExceptionLines) {
      block = &*stream.last_root;
    } else if (tb != nullptr) {
      // A pasted exception line without frames: it must still be the
      // exception the clause names (type and message), or it is not this rule.
      block = tb->RootCause();
      if (rule.traceback && block != nullptr && !block->type.empty() &&
          !MatchesExceptionLine(*rule.traceback, *block, rejoined)) {
        return;
      }
    }

    // No exception block to veto: an `unless` message veto reads the symptom's own text
    // ("... not supported on sm_120; falling back to Triton").
    if (block == nullptr && VetoedMessage(rule, pending.symptom.text)) return;
    RuleState& state = stream.StateFor(pending.rule, rule.stages.size());
    std::vector<std::pair<size_t, const StageMatch*>> matched;
    bool required_ok = RequiredStagesMatched(rule, state, pending.symptom, &matched);
    bool context_ok = rule.traceback ? has_frames && !frames_cut : true;

    RuleHit hit;
    hit.rule = &rule;
    hit.source_id = source_id;
    if (worker != nullptr) hit.worker = *worker;
    hit.confidence = required_ok && context_ok && !rule.family && !pending.at_end_of_input
                         ? Confidence::kConfirmed
                         : Confidence::kPartial;
    hit.time_us = pending.symptom.time_us;
    hit.time_read = pending.symptom.time_read;
    hit.first_time_us = pending.symptom.time_us;
    for (const auto& [s, m] : matched) {
      if (m->time_us != 0 && (hit.first_time_us == 0 || m->time_us < hit.first_time_us)) {
        hit.first_time_us = m->time_us;
      }
      hit.stages.push_back(
          EvidenceLine{source_id, m->line, m->time_us, rule.stages[s].id, m->text});
    }
    hit.stages.push_back(EvidenceLine{source_id, pending.symptom.line, pending.symptom.time_us,
                                      rule.stages[rule.symptom_stage].id, pending.symptom.text});
    std::sort(hit.stages.begin(), hit.stages.end(),
              [](const EvidenceLine& a, const EvidenceLine& b) { return a.line < b.line; });
    if (block != nullptr) {
      hit.exception = block->message.empty() ? block->type : block->type + ": " + block->message;
      if (!block->frames.empty()) hit.traceback_fingerprint = TracebackFingerprint(*block);
      for (const Frame& f : block->frames) {
        hit.frames.push_back(ModuleOfFile(f.file) + ":" + f.function);
      }
    }
    if (tb != nullptr) FindRayOrigin(*tb, &hit);
    if (deciding != nullptr) {
      deciding->push_back(Decided{std::move(hit), frames_cut});
    } else {
      sink.OnHit(std::move(hit));
    }
  }

  // The block of `tb` the rule's clause names: the first whose exception and
  // frames match; else (the top of the traceback cut off, so frames may be
  // missing) the first headerless block whose exception matches and that no
  // veto contradicts, with *frames_cut set; else none. A clause with `require_frames` (a phase
  // sibling, whose frames are its finding) takes only the first kind.
  static const ExceptionBlock* ClauseBlock(const Rule& rule, const Traceback& tb,
                                           std::string_view rejoined, bool* frames_cut) {
    const TracebackClause& clause = *rule.traceback;
    for (const ExceptionBlock& b : tb.blocks) {
      if (MatchesClause(clause, b, rejoined)) return &b;
    }
    if (clause.require_frames) return nullptr;
    // Python prints every frame between "Traceback (most recent call last):"
    // and the exception: only a block without that header can have lost
    // frames; a whole block with other frames is another path.
    for (const ExceptionBlock& b : tb.blocks) {
      if (!b.has_header && MatchesExceptionLine(clause, b, rejoined) && !Vetoed(rule, b)) {
        *frames_cut = true;
        return &b;
      }
    }
    return nullptr;
  }

  // "ray::RayWorkerWrapper.execute_method() (pid=2346, ip=10.10.10.1, actor_id=...)"
  static void FindRayOrigin(const Traceback& tb, RuleHit* hit) {
    static const RE2 kOrigin(R"(\(pid=(\d+), ip=([0-9a-fA-F.:]+))");
    for (const ExceptionBlock& b : tb.blocks) {
      if (b.type.find("RayTaskError") == std::string::npos &&
          b.type.find("RayActorError") == std::string::npos)
        continue;
      int pid = -1;
      std::string ip;
      if (RE2::PartialMatch(b.message, kOrigin, &pid, &ip)) {
        hit->origin_pid = pid;
        hit->origin_ip = ip;
        return;
      }
    }
  }
};

RuleEngine::RuleEngine(std::shared_ptr<const RuleSet> rules, uint32_t source_id,
                       PipelineEvents& events, HitSink& sink)
    : RuleEngine(std::move(rules), source_id, events, sink, Options()) {}

RuleEngine::RuleEngine(std::shared_ptr<const RuleSet> rules, uint32_t source_id,
                       PipelineEvents& events, HitSink& sink, Options options)
    : impl_(std::make_unique<Impl>(std::move(rules), source_id, events, sink, options)) {}

RuleEngine::~RuleEngine() = default;

void RuleEngine::OnRecord(const LogRecord& record) { impl_->OnRecord(record); }
void RuleEngine::OnTraceback(const Traceback& traceback) { impl_->OnTraceback(traceback); }
void RuleEngine::Tick(int64_t now_us) { impl_->Tick(now_us); }
void RuleEngine::LowestNeeded(SourcePosition* pos) const { impl_->LowestNeeded(pos); }
std::string RuleEngine::SaveState(uint64_t safe_line) const { return impl_->SaveState(safe_line); }
Status RuleEngine::RestoreState(const std::string& state, const parse::WorkerTable& workers) {
  return impl_->RestoreState(state, workers);
}
void RuleEngine::OnStreamForgotten(const WorkerInfo& worker) { impl_->Forget(worker); }
void RuleEngine::ForgetExpiredStages(int64_t floor_us) { impl_->ForgetExpiredStages(floor_us); }
bool RuleEngine::SkipQuietRecord(const WorkerInfo& worker) {
  return impl_->SkipQuietRecord(worker);
}
void RuleEngine::Finish() { impl_->Finish(); }

}  // namespace fingerprintd::rules
