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
#include <algorithm>

#include "rules/engine_fast_path.h"
#include "rules/engine_impl.h"

namespace fingerprintd::rules {

bool RuleEngine::Impl::AbsorbQuietRecord(const WorkerInfo& worker) {
  // After an exception or a held family finding, the next INFO line decides
  // whether it was the input's last word (NoteHealthy): that one is read.
  if (unfiltered || last_exception || !held.empty() || worker.id >= streams.size()) return false;
  const Stream& stream = streams[worker.id];
  if (!stream.seen || stream.rank != worker.rank || !stream.pending.empty() ||
      workers[worker.id] != &worker) {
    return false;
  }
  carry.text.clear();  // Rejoin(): a headered record continues no carried line
  tail.clear();        // the input's last words come after a headered record
  return true;
}

void RuleEngine::Impl::ForgetExpiredStages(int64_t floor_us) {
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

Stream* RuleEngine::Impl::StreamFor(const WorkerInfo* worker) {
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

void RuleEngine::Impl::OnRecord(const LogRecord& record) {
  latest_line = std::max(latest_line, record.line_number);
  Stream* stream = StreamFor(record.worker);
  if (stream == nullptr) return;
  if (last_exception || !held.empty()) NoteHealthy(record);
  // A logged message of the stream (it has a level) means no traceback is
  // coming for a symptom seen on an earlier message line. Raw unleveled
  // output (C++/NCCL prints interleaved by the same process) does not.
  if (record.kind == LineKind::kMessage && record.level != Level::kUnknown) {
    ResolveWithoutTraceback(*stream, record.worker,
                            [&](const Pending& p) { return p.symptom.line < record.line_number; });
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

void RuleEngine::Impl::NoteHealthy(const LogRecord& record) {
  if (!record.headered || record.level == Level::kUnknown || record.level > Level::kInfo) return;
  // No sign of health: a process shutting down, or NCCL's error-return trace
  // ("NCCL INFO init.cc:1397 -> 1").
  static const RE2 kShutdown(
      R"((?i)shut\s*down|shutting|terminat|exit|stopp|killed|died|dead|abort|clean\s*up|)"
      R"(sigquit|sigterm|signal|finished server process|waiting for|-> [1-9]\d*$)");
  if (RE2::PartialMatch(record.message, kShutdown)) return;
  if (last_exception && record.line_number > last_exception->tb.last_line) last_exception.reset();
  // The process went on after a family finding on a message line: a notice
  // it survived (a backend it skipped, an optional import), not its failure.
  std::erase_if(held, [&](const HeldHit& h) {
    return record.worker != nullptr && h.hit.worker.id == record.worker->id &&
           record.line_number > h.at.line + 1;
  });
}

void RuleEngine::Impl::ReportHeld(int64_t now_us) {
  std::vector<HeldHit> still;
  for (HeldHit& h : held) {
    const bool old = now_us == 0 || (h.hit.time_us != 0 && !h.hit.time_read &&
                                     now_us - h.hit.time_us > options.last_words_after_us);
    if (old) {
      sink.OnHit(std::move(h.hit));
    } else {
      still.push_back(std::move(h));
    }
  }
  held = std::move(still);
}

void RuleEngine::Impl::KeepTailLine(const LogRecord& record) {
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

void RuleEngine::Impl::PromoteTail() {
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

void RuleEngine::Impl::HitLastException() {
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

void RuleEngine::Impl::Rejoin(const LogRecord& record, Level level) {
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

void RuleEngine::Impl::OnTraceback(const Traceback& tb) {
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
    // A start, ready or stop line decided with it explains no exception.
    if (d.hit.rule->kind == RuleKind::kFailure) explained = true;
    sink.OnHit(std::move(d.hit));
  }
  if (has_root && !explained) last_exception = LastException{tb.worker, tb};
}

void RuleEngine::Impl::Tick(int64_t now_us) {
  for (size_t i : StreamsByPendingLine()) ExpirePending(streams[i], workers[i], now_us);
  if (now_us == 0 || options.last_words_after_us <= 0) return;
  auto old = [&](int64_t time_us) {
    return time_us != 0 && now_us - time_us > options.last_words_after_us;
  };
  if (!tail.empty() && old(tail.back().record.time_us)) PromoteTail();
  if (last_exception && old(last_exception->tb.last_time_us)) HitLastException();
  if (!held.empty()) ReportHeld(now_us);
}

std::vector<size_t> RuleEngine::Impl::StreamsByPendingLine() {
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

void RuleEngine::Impl::LowestNeeded(SourcePosition* pos) const {
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
  for (const HeldHit& h : held) pos->LowerTo(h.at);
}

void RuleEngine::Impl::Forget(const WorkerInfo& worker) {
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

void RuleEngine::Impl::Finish() {
  PromoteTail();
  HitLastException();
  for (size_t i : StreamsByPendingLine()) {
    std::vector<Pending> pending = std::move(streams[i].pending);
    streams[i].pending.clear();
    for (const Pending& p : pending) Resolve(streams[i], workers[i], p, nullptr);
  }
  ReportHeld(0);
}

void RuleEngine::Impl::FindRayOrigin(const Traceback& tb, RuleHit* hit) {
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

void RuleEngine::Impl::FindNamedRank(std::string_view text, RuleHit* hit) {
  // c10's messages name their rank ("[Rank 1] Watchdog caught ...",
  // "[PG ID 2 PG GUID 3 Rank 1] Process group watchdog ...").
  static const RE2 kRank(R"(\[(?:[^\[\]]* )?Rank (\d{1,6})\])");
  int rank = -1;
  if (RE2::PartialMatch(text, kRank, &rank)) {
    hit->worker.rank = rank;
    hit->worker.role = ProcessRole::kWorker;
  }
}

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
bool RuleEngine::FastPath::AbsorbQuietRecord(RuleEngine& engine, const WorkerInfo& worker) {
  return engine.impl_->AbsorbQuietRecord(worker);
}
void RuleEngine::Finish() { impl_->Finish(); }

}  // namespace fingerprintd::rules
