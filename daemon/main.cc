// fingerprintd command line: replay, rules check/test, version, and a parse
// debugging view. The only code (with the future Asio wiring) that owns the
// wall clock, stdout/stderr and exit codes; everything else is in the library.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>

#include "build_info.h"
#include "commands.h"
#include "common/wall_clock.h"
#include "config/config.h"
#include "fingerprintd/correlate.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/rules.h"
#include "fingerprintd/source.h"
#include "sink/redaction.h"
#include "source/replay_progress.h"
#include "source/rule_draft.h"
#include "source/source_schemas.h"

namespace fp = fingerprintd;

namespace {

// Exit codes (README "Exit codes"). kExitFound beats a read error: incidents
// found in what was read stand whatever could not be read (the error is still
// printed). A failed write to stdout is always kExitError: the output is lost.
constexpr int kExitOk = 0;
constexpr int kExitFound = 1;
constexpr int kExitError = 2;  // bad arguments or rules, unreadable input, failed output

using fingerprintd::CurrentYear;
using fingerprintd::WallNowMicros;

// Flushes stdout and says whether everything written reached it: a full disk
// or a closed pipe must not look like success.
bool StdoutWritten(std::string_view command) {
  std::cout.flush();
  if (std::cout.good()) return true;
  std::cerr << "fingerprintd " << command << ": writing to stdout failed: " << std::strerror(errno)
            << "\n";
  return false;
}

// Reads a whole number in [min, max] for `flag`; false (with the reason on
// stderr) for anything else, so `--threads abc` says what was wrong.
bool ParseCount(std::string_view flag, const std::string& text, size_t min, size_t max,
                size_t* out) {
  size_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || value < min ||
      value > max) {
    std::cerr << "fingerprintd replay: " << flag << ": expected a whole number from " << min
              << " to " << max << ", got '" << text << "'\n";
    return false;
  }
  *out = value;
  return true;
}

// `--label k=v`, each given once with a value (config::ParseLabelFlags, the
// check `run` makes too); false with the reason on stderr.
bool ParseLabels(const std::vector<std::string>& labels, std::map<std::string, std::string>* out) {
  auto parsed = fp::config::ParseLabelFlags(labels);
  if (!parsed.ok()) {
    std::cerr << "fingerprintd replay: " << parsed.status().message() << "\n";
    return false;
  }
  *out = std::move(*parsed);
  return true;
}

// `tests`: whether the embedded pack's rule tests are wanted (a --rules
// directory is always loaded whole, so its tests are checked).
fp::StatusOr<std::shared_ptr<const fp::rules::RuleSet>> LoadRules(const std::string& dir,
                                                                  fp::rules::EmbeddedTests tests) {
  if (dir.empty()) return fp::rules::LoadEmbeddedRules(tests);
  return fp::rules::LoadRuleDir(dir);
}

// Counts what replay dropped or guessed, for the summary line: bad input is
// counted and reported, never silently lost. Thread-safe (--threads).
class ReplayCounters final : public fp::PipelineEvents {
 public:
  void LineRead(std::string_view, uint64_t) override {}
  void LineDropped(fp::DropReason reason) override {
    dropped_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  }
  void TimeGuessed(fp::TimeFallback f) override {
    guessed_[static_cast<size_t>(f)].fetch_add(1, std::memory_order_relaxed);
  }
  void TracebackAssembled() override { tracebacks_.fetch_add(1, std::memory_order_relaxed); }
  void RuleMatched(std::string_view, std::string_view) override {}
  void IncidentOpened(std::string_view, std::string_view, std::string_view) override {}
  void IncidentUpdated(std::string_view) override {}
  void FileRotated() override {}
  void FileTruncated() override {}

  // "; 3 tracebacks; dropped: line_too_long=1; time guessed: year_from_mtime=120"
  std::string Summary() const {
    std::string out = "; " + std::to_string(tracebacks_.load()) + " traceback(s)";
    std::string part;
    for (size_t i = 0; i < dropped_.size(); ++i) {
      if (dropped_[i] == 0) continue;
      part += (part.empty() ? "" : ", ") +
              std::string(fp::DropReasonName(static_cast<fp::DropReason>(i))) + "=" +
              std::to_string(dropped_[i].load());
    }
    if (!part.empty()) out += "; dropped/repaired: " + part;
    part.clear();
    for (size_t i = 0; i < guessed_.size(); ++i) {
      if (guessed_[i] == 0) continue;
      part += (part.empty() ? "" : ", ") +
              std::string(fp::TimeFallbackName(static_cast<fp::TimeFallback>(i))) + "=" +
              std::to_string(guessed_[i].load());
    }
    if (!part.empty()) out += "; time guessed: " + part;
    return out;
  }

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(fp::DropReason::kCount)> dropped_{};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(fp::TimeFallback::kCount)> guessed_{};
  std::atomic<uint64_t> tracebacks_{0};
};

struct ReplayArgs {
  std::string rules_dir;
  std::string format = "text";
  std::string input_format = "auto";
  std::vector<std::string> labels;
  std::string deployment_from;
  std::string fail_on;
  bool fail_on_given = false;  // `--fail-on ''` is an error, not "no gate"
  std::vector<std::string> paths;
  std::string max_line_bytes = std::to_string(1 << 20);
  std::string threads = "1";
  std::string shard;  // "I/N", "" = the whole input
  bool quiet = false;
  bool progress = false;  // --progress: the progress line even when stderr is no terminal
};

// Counts the incidents opened so far, for the progress line: the progress
// callback runs on replay threads while incidents reach the sink.
class OpenedCounter final : public fp::correlate::IncidentSink {
 public:
  explicit OpenedCounter(fp::correlate::IncidentSink& next) : next_(next) {}
  void OnIncident(fp::correlate::IncidentChange change,
                  const fp::correlate::Incident& incident) override {
    if (change == fp::correlate::IncidentChange::kOpened) opened_.fetch_add(1);
    next_.OnIncident(change, incident);
  }
  uint64_t opened() const { return opened_.load(); }

 private:
  fp::correlate::IncidentSink& next_;
  std::atomic<uint64_t> opened_{0};
};

// `--shard I/N`: shard I (0-based, as a Kubernetes Indexed Job numbers its
// pods) of N; false with the reason on stderr.
bool ParseShard(const std::string& text, fp::source::ReplayOptions* options) {
  const size_t slash = text.find('/');
  size_t index = 0, count = 0;
  if (slash == std::string::npos ||
      !ParseCount("--shard count", text.substr(slash + 1), 1, 1 << 16, &count) ||
      !ParseCount("--shard index", text.substr(0, slash), 0, count - 1, &index)) {
    std::cerr << "fingerprintd replay: --shard: expected I/N with 0 <= I < N (e.g. 0/4), got '"
              << text << "'\n";
    return false;
  }
  options->shard_index = static_cast<uint32_t>(index);
  options->shard_count = static_cast<uint32_t>(count);
  return true;
}

// Says once which paths --deployment-from captured nothing from: they fall
// back to the default naming on purpose, but a typo must not pass unseen.
void WarnUnmatchedDeploymentFrom(const ReplayArgs& args, const fp::source::ReplayOptions& options,
                                 const std::vector<fp::source::ReplaySource>& plan) {
  if (args.deployment_from.empty()) return;
  if (options.labels.count("deployment") != 0) {
    std::cerr << "fingerprintd replay: warning: --deployment-from is not used: --label "
                 "deployment=... names every source\n";
    return;
  }
  size_t missed = 0;
  std::string first;
  for (const auto& source : plan) {
    if (source.deployment_from_matched) continue;
    if (missed++ == 0) first = source.pieces.empty() ? source.name : source.pieces.front();
  }
  if (missed == 0) return;
  std::cerr << "fingerprintd replay: warning: --deployment-from '" << args.deployment_from
            << "' captured nothing from " << missed << " of " << plan.size()
            << " source(s) (first: " << first
            << "); they are named by the default rule (README: deployment naming)\n";
}

int RunReplay(const ReplayArgs& args) {
  fp::source::ReplayOptions options;
  options.paths = args.paths;
  options.deployment_from = args.deployment_from;
  options.parser.current_year = CurrentYear();
  options.parser.now_us = WallNowMicros();
  if (!ParseCount("--max-line-bytes", args.max_line_bytes, 1, size_t{1} << 30,
                  &options.parser.max_line_bytes) ||
      !ParseCount("--threads", args.threads, 1, 256, &options.threads) ||
      (!args.shard.empty() && !ParseShard(args.shard, &options))) {
    return kExitError;
  }
  if (!fp::parse::ParseEnvelopeName(args.input_format, &options.parser.envelope)) {
    std::cerr << "fingerprintd replay: --input-format: expected auto, plain, cri, docker, "
                 "journald or compose, got '"
              << args.input_format << "'\n";
    return kExitError;
  }
  if (!ParseLabels(args.labels, &options.labels)) return kExitError;
  fp::rules::Severity fail_on = fp::rules::Severity::kCritical;
  if (args.fail_on_given && !fp::rules::ParseSeverity(args.fail_on, &fail_on)) {
    std::cerr << "fingerprintd replay: --fail-on: expected critical, error, warning or info, got '"
              << args.fail_on << "'\n";
    return kExitError;
  }
  auto rules = LoadRules(args.rules_dir, fp::rules::EmbeddedTests::kSkip);
  if (!rules.ok()) {
    std::cerr << "fingerprintd replay: rules: " << rules.status().message() << "\n";
    return kExitError;
  }
  auto plan = fp::source::PlanReplay(options);
  if (!plan.ok()) {
    std::cerr << "fingerprintd replay: " << plan.status().message() << "\n";
    return kExitError;
  }
  WarnUnmatchedDeploymentFrom(args, options, *plan);

  fp::correlate::LatestIncidents incidents;
  ReplayCounters events;
  fp::source::ReplayStats stats;
  OpenedCounter counted(incidents);
  auto start = std::chrono::steady_clock::now();
  // On a terminal (or with --progress), one status line rewritten a few times
  // a second (source/replay_progress.h); piped, nothing but the summary.
  const bool show_progress = !args.quiet && (args.progress || isatty(STDERR_FILENO) == 1);
  bool progress_shown = false;
  auto last_progress = start - std::chrono::seconds(1);
  if (show_progress) {
    fp::source::ReplayTotals totals{fp::source::ReplayInputBytes(*plan), 0};
    for (const auto& source : *plan) totals.files += source.pieces.size();
    options.progress = [&, totals](const fp::source::ReplayStats& s, const std::string&) {
      auto now = std::chrono::steady_clock::now();
      if (now - last_progress < std::chrono::milliseconds(250)) return;
      last_progress = now;
      const double elapsed = std::chrono::duration<double>(now - start).count();
      std::cerr << "\r" << fp::source::ReplayProgressLine(s, totals, elapsed, counted.opened())
                << "\x1b[K" << std::flush;
      progress_shown = true;
    };
  }
  fp::Status status = fp::source::Replay(options, *rules, events, counted, &stats);
  if (progress_shown) std::cerr << "\r\x1b[K" << std::flush;  // the summary takes its place
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) std::cerr << "fingerprintd replay: " << status.message() << "\n";

  std::vector<fp::correlate::Incident> sorted = incidents.Sorted();
  // The same redaction as the daemon's outputs (sink/redaction.h): what a
  // replay prints may be pasted anywhere.
  auto redactor = fp::Redactor::Create(fp::Redactor::Defaults());
  size_t redacted = 0;
  for (auto& incident : sorted) redacted += fp::sink::RedactIncident(**redactor, &incident);
  const auto still_failing = std::count_if(sorted.begin(), sorted.end(), [](const auto& incident) {
    return incident.closed == fp::correlate::CloseReason::kNone;
  });
  bool found = false;
  for (const auto& incident : sorted) {
    if (args.format == "jsonl") {
      std::cout << fp::correlate::IncidentToJson(incident) << "\n";
    } else {
      std::cout << fp::correlate::IncidentToText(incident) << "\n";
    }
    if (args.fail_on_given && incident.severity >= fail_on) found = true;
  }
  if (args.format == "text" && sorted.empty()) std::cout << "no incidents\n";
  if (!args.quiet) {
    std::cerr << "fingerprintd replay: " << plan->size() << " source(s), " << stats.files
              << " file(s), " << stats.lines << " lines, " << stats.bytes << " bytes in " << seconds
              << " s; " << sorted.size() << " incident(s), " << still_failing
              << " still failing at the end"
              << (redacted > 0 ? "; " + std::to_string(redacted) + " secret(s) redacted" : "")
              << events.Summary() << (args.shard.empty() ? "" : "; shard " + args.shard) << "\n";
  }
  if (!StdoutWritten("replay")) return kExitError;
  if (found) return kExitFound;
  return status.ok() ? kExitOk : kExitError;
}

int RunRulesCheck(const std::string& dir) {
  auto rules = LoadRules(dir, fp::rules::EmbeddedTests::kLoad);
  if (!rules.ok()) {
    std::cerr << rules.status().message() << "\n";
    return kExitError;
  }
  std::vector<std::string> problems = fp::source::LintRuleTests(**rules);
  for (const auto& p : problems) std::cerr << p << "\n";
  if (!problems.empty()) return kExitError;
  std::cout << (*rules)->rules().size() << " rules, " << (*rules)->facts().size()
            << " fact extractors loaded from " << (dir.empty() ? "the embedded pack" : dir) << "; "
            << (*rules)->UnfilteredPatternCount()
            << " pattern(s) without a prefilter literal (run on every line)\n";
  return StdoutWritten("rules check") ? kExitOk : kExitError;
}

int RunRulesTest(const std::string& dir) {
  auto rules = LoadRules(dir, fp::rules::EmbeddedTests::kLoad);
  if (!rules.ok()) {
    std::cerr << rules.status().message() << "\n";
    return kExitError;
  }
  auto results = fp::source::RunRuleTests(*rules, CurrentYear());
  int passed = 0, failed = 0;
  for (const auto& r : results) {
    if (r.passed) {
      ++passed;
      continue;
    }
    ++failed;
    std::cout << "FAIL " << r.file << ":" << r.line << ": rule " << r.rule << ": test '" << r.test
              << "'" << r.detail << "\n";
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  if (!StdoutWritten("rules test")) return kExitError;
  return failed == 0 ? kExitOk : kExitFound;
}

// `rules draft ID --from FILE`: a rule skeleton from an incident of the
// daemon's incident log, `replay --format jsonl` output or a saved GET
// /incidents ("-": stdin), on stdout (source/rule_draft.h).
int RunRulesDraft(const std::string& id, const std::string& from) {
  std::string text;
  if (from == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(from, std::ios::binary);
    if (!in) {
      std::cerr << "fingerprintd rules draft: " << from << ": cannot read: " << std::strerror(errno)
                << "\n";
      return kExitError;
    }
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto incident = fp::source::FindIncident(text, id);
  if (!incident.ok()) {
    std::cerr << "fingerprintd rules draft: " << from << ": " << incident.status().message()
              << "\n";
    return kExitError;
  }
  auto draft = fp::source::DraftRule(*incident);
  if (!draft.ok()) {
    std::cerr << "fingerprintd rules draft: " << draft.status().message() << "\n";
    return kExitError;
  }
  std::cout << *draft;
  return StdoutWritten("rules draft") ? kExitOk : kExitError;
}

// Debug view: how every line of a file (plain or .gz) is parsed (event time,
// worker, level, kind) and which tracebacks are assembled.
class PrintingSink final : public fp::parse::RecordSink {
 public:
  void OnRecord(const fp::LogRecord& r) override {
    std::string message(r.message.substr(0, 120));
    std::cout << r.line_number << "\t"
              << (r.time_us != 0 ? fp::correlate::FormatRfc3339(r.time_us) : "-") << "\t"
              << r.worker->Label() << "\trank=" << r.worker->rank << "\t" << fp::LevelName(r.level)
              << "\t" << KindName(r.kind) << "\t" << message << "\n";
  }
  void OnTraceback(const fp::Traceback& tb) override {
    std::cout << "== traceback " << tb.worker->Label() << " lines " << tb.first_line << ".."
              << tb.last_line << (tb.complete ? "" : " (incomplete)")
              << (tb.truncated ? " (truncated)" : "") << "\n";
    for (const auto& block : tb.blocks) {
      for (const auto& f : block.frames) {
        std::cout << "     " << f.file << ":" << f.line << " " << f.function << "\n";
      }
      std::cout << "   " << block.type << ": " << block.message.substr(0, 160) << "\n";
    }
  }

 private:
  static const char* KindName(fp::LineKind kind) {
    switch (kind) {
      case fp::LineKind::kMessage:
        return "msg";
      case fp::LineKind::kTracebackHeader:
        return "tb-header";
      case fp::LineKind::kFrame:
        return "frame";
      case fp::LineKind::kCode:
        return "code";
      case fp::LineKind::kChainSeparator:
        return "chain";
      case fp::LineKind::kException:
        return "exception";
    }
    return "?";
  }
};

int RunParse(const std::string& path) {
  fp::source::ReplayOptions options;
  options.paths = {path};
  auto plan = fp::source::PlanReplay(options);
  if (!plan.ok()) {
    std::cerr << "fingerprintd parse: " << plan.status().message() << "\n";
    return kExitError;
  }
  fp::NullPipelineEvents events;
  bool read_ok = true;
  for (const auto& source : *plan) {
    PrintingSink sink;
    fp::parse::ParserOptions parser_options;
    parser_options.current_year = CurrentYear();
    parser_options.now_us = WallNowMicros();
    if (!source.pieces.empty() && source.pieces.back() != "-") {
      parser_options.mtime_us = fp::source::FileMtimeMicros(source.pieces.back());
    }
    fp::parse::SourceParser parser(0, source.name, parser_options, events, sink);
    fp::source::ReplayStats stats;
    fp::Status status = fp::source::ReadLines(
        source, parser_options.max_line_bytes, events,
        [&parser](std::string_view line) { parser.Feed(line); }, &stats);
    if (!status.ok()) {
      std::cerr << "fingerprintd parse: " << status.message() << "\n";
      read_ok = false;
    }
    parser.Finish();
  }
  if (!StdoutWritten("parse")) return kExitError;
  return read_ok ? kExitOk : kExitError;
}

// CLI11 reports an unknown subcommand as "A subcommand is required"; this
// names it and what was expected. "" when argv names no unknown subcommand.
std::string UnknownSubcommand(const CLI::App& app, int argc, char** argv) {
  const CLI::App* current = &app;
  std::string path = "fingerprintd";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-') return "";  // options: CLI11 explains those
    auto subcommands = current->get_subcommands([](const CLI::App*) { return true; });
    if (subcommands.empty()) return "";  // a leaf command: the rest are its arguments
    const CLI::App* next = nullptr;
    std::string names;
    for (const CLI::App* sub : subcommands) {
      if (sub->get_name() == arg) next = sub;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (next == nullptr) {
      return path + ": unknown command '" + arg + "' (expected one of: " + names + ")";
    }
    path += " " + arg;
    current = next;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fingerprintd: recognises failure fingerprints in LLM inference worker logs"};
  app.require_subcommand(1);

  ReplayArgs replay;
  auto* replay_cmd =
      app.add_subcommand("replay", "Replay log files, directories, .gz or - (stdin)");
  replay_cmd->add_option("--rules", replay.rules_dir, "Rule directory (default: embedded pack)");
  replay_cmd->add_option("--format", replay.format, "Output: text or jsonl")
      ->check(CLI::IsMember({"text", "jsonl"}));
  replay_cmd->add_option("--input-format", replay.input_format,
                         "Envelope: auto, plain, cri, docker, journald, compose");
  // One value per --label, so the paths after it stay paths (`--label k=v a.log b.log`).
  replay_cmd->add_option("--label", replay.labels, "Source label k=v (deployment=NAME names it)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  replay_cmd->add_option("--deployment-from", replay.deployment_from,
                         "RE2 over each path; its capture groups name the deployment");
  auto* fail_on = replay_cmd->add_option(
      "--fail-on", replay.fail_on, "Exit 1 if an incident at or above this severity is found");
  // Numbers are read as text and checked in RunReplay, whose messages say what was wrong.
  replay_cmd->add_option("--max-line-bytes", replay.max_line_bytes,
                         "Line cap, at least 1 (longer lines are truncated)");
  replay_cmd->add_option("--threads", replay.threads,
                         "Replay different deployments in parallel, 1-256 (same output for any N)");
  replay_cmd->add_option("--shard", replay.shard,
                         "I/N: only deployments whose name hashes to shard I of N (0-based)");
  auto* quiet =
      replay_cmd->add_flag("--quiet", replay.quiet, "No progress and no summary on stderr");
  replay_cmd
      ->add_flag("--progress", replay.progress,
                 "The progress line on stderr even when it is not a terminal (it is shown on one)")
      ->excludes(quiet);
  replay_cmd->add_option("paths", replay.paths, "Files, directories, .gz, or -")->required();

  fp::daemon::RunCommands run;                           // run, config check: daemon/run.cc
  run.source_types = &fp::source::BuiltInSourceTypes();  // file, tcp, unix, stdin
  fp::daemon::AddRunCommands(app, &run);

  auto* rules_cmd = app.add_subcommand("rules", "Check or test a rule pack");
  rules_cmd->require_subcommand(1);
  std::string check_dir, test_dir;
  auto* check_cmd = rules_cmd->add_subcommand("check", "Compile and lint rules (exit 2 on error)");
  check_cmd->add_option("dir", check_dir, "Rule directory (default: embedded pack)");
  auto* test_cmd = rules_cmd->add_subcommand("test", "Run every rule's embedded tests");
  test_cmd->add_option("dir", test_dir, "Rule directory (default: embedded pack)");
  std::string draft_id, draft_from;
  auto* draft_cmd = rules_cmd->add_subcommand(
      "draft", "Print a rule skeleton drafted from an incident (its fixed words and evidence)");
  draft_cmd->add_option("incident_id", draft_id, "The incident's id (inc-...)")->required();
  draft_cmd
      ->add_option(
          "--from", draft_from,
          "Incident log (JSONL), replay --format jsonl output or GET /incidents; - = stdin")
      ->required();

  std::string parse_path;
  auto* parse_cmd = app.add_subcommand("parse", "Debug: show how each line of a file is parsed");
  parse_cmd->add_option("path", parse_path, "Log file")->required();

  app.add_subcommand("version",
                     "Print the version, the commit built, the build type and the architecture");

  if (std::string unknown = UnknownSubcommand(app, argc, argv); !unknown.empty()) {
    std::cerr << unknown << "\nRun with --help for more information.\n";
    return kExitError;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitError;
  }
  replay.fail_on_given = fail_on->count() > 0;
  // An option given an empty value (an unset variable in a script) must not
  // quietly mean "not given": no gate, the embedded pack, default naming.
  for (const char* name : {"--rules", "--deployment-from", "--shard"}) {
    const CLI::Option* option = replay_cmd->get_option(name);
    if (option->count() > 0 && option->as<std::string>().empty()) {
      std::cerr << "fingerprintd replay: " << name << ": empty value\n";
      return kExitError;
    }
  }

  if (*replay_cmd) return RunReplay(replay);
  if (*check_cmd) return RunRulesCheck(check_dir);
  if (*test_cmd) return RunRulesTest(test_dir);
  if (*draft_cmd) return RunRulesDraft(draft_id, draft_from);
  if (*parse_cmd) return RunParse(parse_path);
  if (int code = fp::daemon::DispatchRunCommands(run); code >= 0) return code;
  if (app.got_subcommand("version")) {
    std::cout << "fingerprintd " << FINGERPRINTD_VERSION << " (commit " << fp::kBuildCommit << ", "
              << (std::string_view(FINGERPRINTD_BUILD_TYPE).empty() ? "no build type"
                                                                    : FINGERPRINTD_BUILD_TYPE)
              << ", " << FINGERPRINTD_ARCH << ")\n";
    return StdoutWritten("version") ? kExitOk : kExitError;
  }
  return kExitError;
}
