// RuleEngine's state and the declarations of its work, shared by engine.cc
// (records, tracebacks, ticks) and engine_state.cc (what a checkpoint keeps).
// Internal to src/rules/.
#pragma once

#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "fingerprintd/rules.h"
#include "parse/message_reading.h"
#include "rules/clause_match.h"

namespace fingerprintd::rules {

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
inline Level EffectiveLevel(const LogRecord& record) {
  Level level = record.level == Level::kUnknown ? Level::kInfo : record.level;
  if (record.kind == LineKind::kException && level < Level::kWarning) level = Level::kError;
  return level;
}

// "sm_120" / "120" -> "12.0"; "9.0" unchanged.
inline std::string NormalizeCapability(std::string value) {
  if (value.rfind("sm_", 0) == 0) value = value.substr(3);
  if (value.find('.') == std::string::npos && value.size() >= 2 && value.size() <= 3 &&
      std::all_of(value.begin(), value.end(), ::isdigit)) {
    return value.substr(0, value.size() - 1) + "." + value.substr(value.size() - 1);
  }
  return value;
}

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
  // A family finding decided on a logged message alone (no traceback: a
  // library's error line, a launcher's notice) is the process's failure only
  // if the process did not go on: it is held until a healthy line of the same
  // stream (headered, INFO or below, not a shutdown line) drops it, and is
  // reported with the input's last words (Finish, or Tick once
  // last_words_after_us old).
  struct HeldHit {
    RuleHit hit;        // hit.worker.id: the stream it waits on
    SourcePosition at;  // the symptom line, kept for LowestNeeded
  };
  std::vector<HeldHit> held;
  void ReportHeld(int64_t now_us);
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

  bool AbsorbQuietRecord(const WorkerInfo& worker);

  int64_t KeptFor(uint32_t rule) const {
    return rules->rules()[rule].maxspan_us + kStageClockSkewUs;
  }

  // A dated match older than maxspan plus kStageClockSkewUs before the floor.
  void ForgetExpiredStages(int64_t floor_us);

  Stream* StreamFor(const WorkerInfo* worker);

  void OnFactMatch(uint32_t fact, int pattern_id, std::string_view text) {
    if (fact_known[fact]) return;
    if (!RE2::PartialMatch(text, rules->Pattern(pattern_id), &capture) || capture.empty()) return;
    fact_known[fact] = true;
    const std::string& name = rules->facts()[fact].name;
    std::string value = name == "compute_capability" ? NormalizeCapability(capture) : capture;
    sink.OnFact(source_id, name, value);
  }

  void OnRecord(const LogRecord& record);

  // A healthy line after the last exception: a headered record at INFO or
  // below that is not a process shutting down.
  void NoteHealthy(const LogRecord& record);

  void KeepTailLine(const LogRecord& record);

  void PromoteTail();

  // The input's last exception, when nothing healthy followed it, is a
  // failure: the `last_exception` rules (the catch-all) hit it, partial,
  // unless a veto of theirs fires. A stronger incident of the deployment
  // still wins in the correlator.
  void HitLastException();

  // A message hard-wrapped over up to three physical lines (a terminal, a
  // Markdown list, a blog's code block) is matched once more as one text:
  // the previous piece looked cut off or this line cannot start a record
  // (parse/message_reading.h), and this one is bare (no prefix, no header,
  // not indented). Only patterns that neither piece matched alone count,
  // attributed to the first piece's stream and line. Lines at INFO and below
  // are never carried: wrapped failures are errors or bare pastes, and the
  // hot path stays one branch per ordinary line.
  void Rejoin(const LogRecord& record, Level level);

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

  void OnTraceback(const Traceback& tb);

  // Live input has no end: a symptom seen on a message line is decided
  // without a traceback once event time moved past it by the timeout.
  // Streams are visited in the order of their earliest pending symptom's
  // line, not of their ids (the order processes were first seen), so the
  // hits come out in the same order however far back the input was read.
  void Tick(int64_t now_us);

  std::vector<size_t> StreamsByPendingLine();

  // See RuleEngine::LowestNeeded. Stage matches and the last root cause are
  // not here: SaveState keeps them.
  void LowestNeeded(SourcePosition* pos) const;

  std::string SaveState(uint64_t safe_line) const;

  Status RestoreState(const std::string& text, const parse::WorkerTable& table);

  // The parser forgot the stream (its slot goes to another process): its
  // symptoms are decided now, and nothing of it is kept.
  void Forget(const WorkerInfo& worker);

  void Finish();

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

    // A clause whose finding is the place it was raised (`raised_in`) holds
    // only for a block whose raise site it names: a pasted exception line
    // without frames, or a logged message with no traceback at all, cannot
    // say where, so it is not this rule's.
    if (rule.traceback && rule.traceback->raised_in &&
        (block == nullptr || !RaisedInAllows(*rule.traceback, *block))) {
      return;
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
      if (const Frame* site = block->RaiseSite()) {
        hit.raised_in = ModuleOfFile(site->file) + ":" + site->function;
      }
    }
    if (tb != nullptr) FindRayOrigin(*tb, &hit);
    // A failure printed outside any process prefix (a C++ abort on the
    // process's raw stderr) belongs to the rank its own text names.
    if (hit.worker.name.empty() && hit.worker.rank < 0) {
      FindNamedRank(block != nullptr ? std::string_view(block->message)
                                     : std::string_view(pending.symptom.text),
                    &hit);
    }
    if (rule.family && tb == nullptr && block == nullptr && !pending.at_end_of_input &&
        worker != nullptr) {
      held.push_back(HeldHit{std::move(hit), {pending.symptom.offset, pending.symptom.line - 1}});
    } else if (deciding != nullptr) {
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
      if (!b.has_header && MatchesExceptionLine(clause, b, rejoined) && RaisedInAllows(clause, b) &&
          !Vetoed(rule, b)) {
        *frames_cut = true;
        return &b;
      }
    }
    return nullptr;
  }

  // "ray::RayWorkerWrapper.execute_method() (pid=2346, ip=10.10.10.1, actor_id=...)"
  static void FindRayOrigin(const Traceback& tb, RuleHit* hit);
  // Sets hit->worker.rank to the rank `text` names in c10's words, if any.
  static void FindNamedRank(std::string_view text, RuleHit* hit);
};

}  // namespace fingerprintd::rules
