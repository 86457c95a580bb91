// fingerprintd command line: replay, rules check/test, version, and a parse
// debugging view. The only code (with the future Asio wiring) that owns the
// wall clock, stdout/stderr and exit codes; everything else is in the library.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <ctime>
#include <iostream>
#include <map>

#include "commands.h"
#include "fingerprintd/correlate.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/rules.h"
#include "fingerprintd/source.h"

namespace fp = fingerprintd;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFound = 1;
constexpr int kExitUsage = 2;

int CurrentYear() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  return tm.tm_year + 1900;
}

fp::StatusOr<std::shared_ptr<const fp::rules::RuleSet>> LoadRules(const std::string& dir) {
  if (dir.empty()) return fp::rules::LoadEmbeddedRules();
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
  std::vector<std::string> paths;
  size_t max_line_bytes = 1 << 20;
  size_t threads = 1;
  bool quiet = false;
};

int RunReplay(const ReplayArgs& args) {
  fp::source::ReplayOptions options;
  options.paths = args.paths;
  options.deployment_from = args.deployment_from;
  options.parser.current_year = CurrentYear();
  options.parser.max_line_bytes = args.max_line_bytes;
  options.threads = args.threads;
  if (!fp::parse::ParseEnvelopeName(args.input_format, &options.parser.envelope)) {
    std::cerr << "fingerprintd replay: --input-format: expected auto, plain, cri, docker, "
                 "journald or compose, got '"
              << args.input_format << "'\n";
    return kExitUsage;
  }
  for (const std::string& label : args.labels) {
    size_t eq = label.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "fingerprintd replay: --label: expected key=value, got '" << label << "'\n";
      return kExitUsage;
    }
    options.labels[label.substr(0, eq)] = label.substr(eq + 1);
  }
  fp::rules::Severity fail_on = fp::rules::Severity::kCritical;
  if (!args.fail_on.empty() && !fp::rules::ParseSeverity(args.fail_on, &fail_on)) {
    std::cerr << "fingerprintd replay: --fail-on: expected critical, error, warning or info\n";
    return kExitUsage;
  }
  auto rules = LoadRules(args.rules_dir);
  if (!rules.ok()) {
    std::cerr << "fingerprintd replay: rules: " << rules.status().message() << "\n";
    return kExitUsage;
  }
  auto plan = fp::source::PlanReplay(options);
  if (!plan.ok()) {
    std::cerr << "fingerprintd replay: " << plan.status().message() << "\n";
    return kExitUsage;
  }

  fp::correlate::LatestIncidents incidents;
  ReplayCounters events;
  fp::source::ReplayStats stats;
  auto start = std::chrono::steady_clock::now();
  auto last_progress = start;
  if (!args.quiet) {
    // Long replays say how far they are, every 5 s, on stderr.
    options.progress = [&](const fp::source::ReplayStats& s, const std::string& source) {
      auto now = std::chrono::steady_clock::now();
      if (now - last_progress < std::chrono::seconds(5)) return;
      last_progress = now;
      double elapsed = std::chrono::duration<double>(now - start).count();
      std::cerr << "fingerprintd replay: " << s.bytes / 1000000 << " MB, " << s.lines
                << " lines in " << static_cast<int>(elapsed) << " s ("
                << static_cast<int>(s.bytes / 1e6 / elapsed) << " MB/s), reading " << source
                << "\n";
    };
  }
  fp::Status status = fp::source::Replay(options, *rules, events, incidents, &stats);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) std::cerr << "fingerprintd replay: " << status.message() << "\n";

  std::vector<fp::correlate::Incident> sorted = incidents.Sorted();
  bool found = false;
  for (const auto& incident : sorted) {
    if (args.format == "jsonl") {
      std::cout << fp::correlate::IncidentToJson(incident) << "\n";
    } else {
      std::cout << fp::correlate::IncidentToText(incident) << "\n";
    }
    if (!args.fail_on.empty() && incident.rule->severity >= fail_on) found = true;
  }
  if (args.format == "text" && sorted.empty()) std::cout << "no incidents\n";
  if (!args.quiet) {
    std::cerr << "fingerprintd replay: " << plan->size() << " source(s), " << stats.files
              << " file(s), " << stats.lines << " lines, " << stats.bytes << " bytes in " << seconds
              << " s; " << sorted.size() << " incident(s)" << events.Summary() << "\n";
  }
  if (!status.ok()) return kExitUsage;
  return found ? kExitFound : kExitOk;
}

// Lints what the loader cannot: every rule has tests, one of them negative.
std::vector<std::string> Lint(const fp::rules::RuleSet& rules) {
  std::vector<std::string> problems;
  for (const auto& rule : rules.rules()) {
    if (rule.tests.empty()) {
      problems.push_back(rule.file + ":1: rule " + rule.id + ": tests: no embedded tests");
      continue;
    }
    bool negative = std::any_of(rule.tests.begin(), rule.tests.end(), [&](const auto& t) {
      return std::none_of(t.expect.begin(), t.expect.end(),
                          [&](const auto& e) { return e.rule == rule.id; });
    });
    if (!negative) {
      problems.push_back(rule.file + ":" + std::to_string(rule.tests.front().line) + ": rule " +
                         rule.id + ": tests: no negative test (one whose expect omits this rule)");
    }
  }
  return problems;
}

int RunRulesCheck(const std::string& dir) {
  auto rules = LoadRules(dir);
  if (!rules.ok()) {
    std::cerr << rules.status().message() << "\n";
    return kExitUsage;
  }
  std::vector<std::string> problems = Lint(**rules);
  for (const auto& p : problems) std::cerr << p << "\n";
  if (!problems.empty()) return kExitUsage;
  std::cout << (*rules)->rules().size() << " rules, " << (*rules)->facts().size()
            << " fact extractors loaded from " << (dir.empty() ? "the embedded pack" : dir) << "; "
            << (*rules)->UnfilteredPatternCount()
            << " pattern(s) without a prefilter literal (run on every line)\n";
  return kExitOk;
}

int RunRulesTest(const std::string& dir) {
  auto rules = LoadRules(dir);
  if (!rules.ok()) {
    std::cerr << rules.status().message() << "\n";
    return kExitUsage;
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
  return failed == 0 ? kExitOk : kExitFound;
}

// Debug view: how every line of a file (plain or .gz) is parsed (worker,
// level, kind) and which tracebacks are assembled.
class PrintingSink final : public fp::parse::RecordSink {
 public:
  void OnRecord(const fp::LogRecord& r) override {
    std::string message(r.message.substr(0, 120));
    std::cout << r.line_number << "\t" << r.worker->Label() << "\trank=" << r.worker->rank << "\t"
              << fp::LevelName(r.level) << "\t" << KindName(r.kind) << "\t" << message << "\n";
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
    return kExitUsage;
  }
  fp::NullPipelineEvents events;
  for (const auto& source : *plan) {
    PrintingSink sink;
    fp::parse::ParserOptions parser_options;
    parser_options.current_year = CurrentYear();
    fp::parse::SourceParser parser(0, source.name, parser_options, events, sink);
    fp::source::ReplayStats stats;
    fp::Status status = fp::source::ReadLines(
        source, parser_options.max_line_bytes, events,
        [&parser](std::string_view line) { parser.Feed(line); }, &stats);
    if (!status.ok()) std::cerr << "fingerprintd parse: " << status.message() << "\n";
    parser.Finish();
  }
  return kExitOk;
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
  replay_cmd->add_option("--label", replay.labels, "Source label k=v (deployment=NAME names it)");
  replay_cmd->add_option("--deployment-from", replay.deployment_from,
                         "RE2 over each path; its capture groups name the deployment");
  replay_cmd->add_option("--fail-on", replay.fail_on,
                         "Exit 1 if an incident at or above this severity is found");
  replay_cmd->add_option("--max-line-bytes", replay.max_line_bytes, "Line cap (longer: truncated)");
  replay_cmd
      ->add_option("--threads", replay.threads,
                   "Replay different deployments in parallel (same output for any N)")
      ->check(CLI::Range(1, 256));
  replay_cmd->add_flag("--quiet", replay.quiet, "No summary on stderr");
  replay_cmd->add_option("paths", replay.paths, "Files, directories, .gz, or -")->required();

  fp::daemon::RunCommands run;  // run, config check: daemon/run.cc
  fp::daemon::AddRunCommands(app, &run);

  auto* rules_cmd = app.add_subcommand("rules", "Check or test a rule pack");
  rules_cmd->require_subcommand(1);
  std::string check_dir, test_dir;
  auto* check_cmd = rules_cmd->add_subcommand("check", "Compile and lint rules (exit 2 on error)");
  check_cmd->add_option("dir", check_dir, "Rule directory (default: embedded pack)");
  auto* test_cmd = rules_cmd->add_subcommand("test", "Run every rule's embedded tests");
  test_cmd->add_option("dir", test_dir, "Rule directory (default: embedded pack)");

  std::string parse_path;
  auto* parse_cmd = app.add_subcommand("parse", "Debug: show how each line of a file is parsed");
  parse_cmd->add_option("path", parse_path, "Log file")->required();

  app.add_subcommand("version", "Print the version");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  if (*replay_cmd) return RunReplay(replay);
  if (*check_cmd) return RunRulesCheck(check_dir);
  if (*test_cmd) return RunRulesTest(test_dir);
  if (*parse_cmd) return RunParse(parse_path);
  if (int code = fp::daemon::DispatchRunCommands(run); code >= 0) return code;
  if (app.got_subcommand("version")) {
    std::cout << "fingerprintd " << FINGERPRINTD_VERSION << "\n";
    return kExitOk;
  }
  return kExitUsage;
}
