// Loads rule YAML into Rule structs. The only code that touches yaml-cpp:
// every exception it throws is caught here and becomes a Status of the form
// `file:line: rule <id>: <field>: <reason>`. A pack loads whole or not at all.
#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/re2_limits.h"
#include "common/yaml_strict.h"
#include "fingerprintd/rules.h"

namespace fingerprintd::rules {

const std::vector<std::pair<std::string_view, std::string_view>>& EmbeddedRuleFiles();

namespace {

using yaml_strict::CheckKeys;
using yaml_strict::GetBool;
using yaml_strict::GetString;
using yaml_strict::GetStringList;

constexpr std::string_view kFactsFile = "facts.yaml";

// Where errors of one rule file point: `file:line: rule <id>: field: reason`,
// yaml_strict's format with the rule as its scope ("rule ?" before its id is
// known).
class Context {
 public:
  explicit Context(std::string file) : file_(std::move(file)), errors_(file_, "rule ?: ") {}
  void set_rule(const std::string& id) {
    errors_ = yaml_strict::YamlErrors(file_, "rule " + id + ": ");
  }
  const yaml_strict::YamlErrors& errors() const { return errors_; }

  Status Error(const YAML::Node& node, std::string_view field, std::string_view reason) const {
    return errors_.Error(node, field, reason);
  }
  Status ErrorAt(int line, std::string_view field, std::string_view reason) const {
    return errors_.ErrorAt(line, field, reason);
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  yaml_strict::YamlErrors errors_;
};

// The level names a stage may require, defined here only (rules/README.md
// lists them): Python logging's names, and ANY for lines of any level. Aliases
// the log parser also reads (WARN, FATAL, TRACE) are rejected, not mapped, so
// every rule spells a level one way.
constexpr std::pair<std::string_view, Level> kStageLevels[] = {
    {"ANY", Level::kUnknown},     {"DEBUG", Level::kDebug}, {"INFO", Level::kInfo},
    {"WARNING", Level::kWarning}, {"ERROR", Level::kError}, {"CRITICAL", Level::kCritical}};

std::string StageLevelList() {
  std::string out;
  for (size_t i = 0; i < std::size(kStageLevels); ++i) {
    if (i > 0) out += i + 1 == std::size(kStageLevels) ? " or " : ", ";
    out += kStageLevels[i].first;
  }
  return out;
}

// Durations beyond a week are a typo, and would overflow microseconds.
constexpr int64_t kMaxDurationUs = 7LL * 24 * 3'600'000'000LL;

// "30m", "120s", "2h", "500ms" (yaml_strict::ParseDuration), at most a week.
Status GetDuration(const Context& ctx, const YAML::Node& map, std::string_view field,
                   int64_t* out_us) {
  YAML::Node node = map[std::string(field)];
  if (!node.IsDefined() || node.IsNull()) return OkStatus();
  const std::string text = node.IsScalar() ? node.as<std::string>() : "";
  if (std::string problem = yaml_strict::ParseDuration(text, kMaxDurationUs, out_us);
      !problem.empty()) {
    return ctx.Error(node, field, problem);
  }
  return OkStatus();
}

// Compiles a pattern to check it; "" compiles to null (= any) when allowed.
Status CompilePattern(const Context& ctx, const YAML::Node& node, std::string_view field,
                      const std::string& pattern, bool allow_empty,
                      std::shared_ptr<const re2::RE2>* out) {
  if (pattern.empty()) {
    if (allow_empty) return OkStatus();
    return ctx.Error(node, field, "empty pattern");
  }
  // Bounded (common/re2_limits.h): no rule file makes RE2 use unbounded memory.
  auto re = std::make_shared<const re2::RE2>(pattern, BoundedRe2Options());
  if (std::string problem = Re2Problem(*re); !problem.empty()) {
    return ctx.Error(node, field, problem);
  }
  if (out) *out = std::move(re);
  return OkStatus();
}

// Compiles every pattern of a list (or of a lone scalar); an error names the
// pattern's own line and its index: `sequence[1].patterns[2]`.
Status CompilePatternList(const Context& ctx, const YAML::Node& node, const std::string& field,
                          const std::vector<std::string>& patterns) {
  for (size_t i = 0; i < patterns.size(); ++i) {
    const YAML::Node item = node.IsSequence() ? node[i] : node;
    if (Status s = CompilePattern(ctx, item, field + "[" + std::to_string(i) + "]", patterns[i],
                                  false, nullptr);
        !s.ok())
      return s;
  }
  return OkStatus();
}

Status ParseFramePattern(const Context& ctx, const YAML::Node& node, std::string_view field,
                         FramePattern* out) {
  if (Status s = CheckKeys(ctx.errors(), node, field, {"file", "function"}); !s.ok()) return s;
  std::string file, function;
  if (Status s = GetString(ctx.errors(), node, field, "file", false, &file); !s.ok()) return s;
  if (Status s = GetString(ctx.errors(), node, field, "function", false, &function); !s.ok())
    return s;
  if (file.empty() && function.empty()) {
    return ctx.Error(node, field, "a frame needs a file or a function pattern");
  }
  std::string f = std::string(field);
  if (Status s = CompilePattern(ctx, node["file"], f + ".file", file, true, &out->file); !s.ok())
    return s;
  return CompilePattern(ctx, node["function"], f + ".function", function, true, &out->function);
}

Status ParseStages(const Context& ctx, const YAML::Node& rule_node, Rule* rule) {
  YAML::Node seq = rule_node["sequence"];
  if (!seq.IsDefined()) return ctx.Error(rule_node, "sequence", "missing required field");
  if (!seq.IsSequence() || seq.size() == 0) {
    return ctx.Error(seq, "sequence", "expected a non-empty list of stages");
  }
  std::set<std::string> ids;
  int symptoms = 0;
  for (size_t i = 0; i < seq.size(); ++i) {
    const YAML::Node& node = seq[i];
    std::string where = "sequence[" + std::to_string(i) + "]";
    if (Status s = CheckKeys(ctx.errors(), node, where,
                             {"id", "level", "patterns", "required", "symptom"});
        !s.ok())
      return s;
    Stage stage;
    if (Status s = GetString(ctx.errors(), node, where, "id", true, &stage.id); !s.ok()) return s;
    if (!ids.insert(stage.id).second) {
      return ctx.Error(node["id"], where + ".id", "duplicate stage id '" + stage.id + "'");
    }
    std::string level = "INFO";
    if (Status s = GetString(ctx.errors(), node, where, "level", false, &level); !s.ok()) return s;
    const auto* known = std::find_if(std::begin(kStageLevels), std::end(kStageLevels),
                                     [&](const auto& named) { return named.first == level; });
    if (known == std::end(kStageLevels)) {
      return ctx.Error(node["level"], where + ".level",
                       "expected " + StageLevelList() + ", got '" + level + "'");
    }
    stage.level = known->second;
    if (Status s = GetStringList(ctx.errors(), node, where, "patterns", true, &stage.patterns);
        !s.ok())
      return s;
    if (Status s = CompilePatternList(ctx, node["patterns"], where + ".patterns", stage.patterns);
        !s.ok())
      return s;
    if (Status s = GetBool(ctx.errors(), node, where, "required", &stage.required); !s.ok())
      return s;
    if (Status s = GetBool(ctx.errors(), node, where, "symptom", &stage.symptom); !s.ok()) return s;
    if (stage.symptom) {
      ++symptoms;
      rule->symptom_stage = rule->stages.size();
      stage.required = true;
    }
    rule->stages.push_back(std::move(stage));
  }
  if (symptoms != 1) {
    return ctx.Error(seq, "sequence", "exactly one stage must have `symptom: true`");
  }
  return OkStatus();
}

Status ParseTraceback(const Context& ctx, const YAML::Node& node, Rule* rule) {
  if (!node.IsDefined() || node.IsNull()) return OkStatus();
  if (Status s = CheckKeys(ctx.errors(), node, "traceback",
                           {"exception", "message", "frames", "raised_in", "require_frames"});
      !s.ok())
    return s;
  TracebackClause clause;
  std::string exception, message;
  if (Status s = GetString(ctx.errors(), node, "traceback", "exception", true, &exception); !s.ok())
    return s;
  if (Status s = CompilePattern(ctx, node["exception"], "traceback.exception", exception, false,
                                &clause.exception);
      !s.ok())
    return s;
  if (Status s = GetString(ctx.errors(), node, "traceback", "message", false, &message); !s.ok())
    return s;
  if (Status s =
          CompilePattern(ctx, node["message"], "traceback.message", message, true, &clause.message);
      !s.ok())
    return s;
  YAML::Node frames = node["frames"];
  if (frames.IsDefined() && !frames.IsNull()) {
    if (!frames.IsSequence()) return ctx.Error(frames, "traceback.frames", "expected a list");
    for (size_t i = 0; i < frames.size(); ++i) {
      FramePattern fp;
      if (Status s =
              ParseFramePattern(ctx, frames[i], "traceback.frames[" + std::to_string(i) + "]", &fp);
          !s.ok())
        return s;
      clause.frames.push_back(std::move(fp));
    }
  }
  if (YAML::Node raised_in = node["raised_in"]; raised_in.IsDefined() && !raised_in.IsNull()) {
    FramePattern fp;
    if (Status s = ParseFramePattern(ctx, raised_in, "traceback.raised_in", &fp); !s.ok()) return s;
    clause.raised_in = std::move(fp);
  }
  if (Status s = GetBool(ctx.errors(), node, "traceback", "require_frames", &clause.require_frames);
      !s.ok())
    return s;
  if (clause.require_frames && clause.frames.empty()) {
    return ctx.Error(node["require_frames"], "traceback.require_frames",
                     "needs a non-empty traceback.frames");
  }
  rule->traceback = std::move(clause);
  return OkStatus();
}

Status ParseUnless(const Context& ctx, const YAML::Node& node, Rule* rule) {
  if (!node.IsDefined() || node.IsNull()) return OkStatus();
  if (!node.IsSequence()) return ctx.Error(node, "unless", "expected a list");
  for (size_t i = 0; i < node.size(); ++i) {
    std::string where = "unless[" + std::to_string(i) + "]";
    const YAML::Node& item = node[i];
    if (Status s = CheckKeys(ctx.errors(), item, where, {"frame", "message", "exception"}); !s.ok())
      return s;
    Veto veto;
    if (item["frame"].IsDefined()) {
      FramePattern fp;
      if (Status s = ParseFramePattern(ctx, item["frame"], where + ".frame", &fp); !s.ok())
        return s;
      veto.frame = std::move(fp);
    }
    std::string message;
    if (Status s = GetString(ctx.errors(), item, where, "message", false, &message); !s.ok())
      return s;
    if (Status s =
            CompilePattern(ctx, item["message"], where + ".message", message, true, &veto.message);
        !s.ok())
      return s;
    std::string exception;
    if (Status s = GetString(ctx.errors(), item, where, "exception", false, &exception); !s.ok())
      return s;
    if (Status s = CompilePattern(ctx, item["exception"], where + ".exception", exception, true,
                                  &veto.exception);
        !s.ok())
      return s;
    if (!veto.frame && !veto.message && !veto.exception) {
      return ctx.Error(item, where, "needs frame, message or exception");
    }
    rule->unless.push_back(std::move(veto));
  }
  return OkStatus();
}

Status ParseTests(const Context& ctx, const YAML::Node& node, Rule* rule) {
  if (!node.IsDefined() || node.IsNull()) return OkStatus();
  if (!node.IsSequence()) return ctx.Error(node, "tests", "expected a list");
  for (size_t i = 0; i < node.size(); ++i) {
    std::string where = "tests[" + std::to_string(i) + "]";
    const YAML::Node& item = node[i];
    if (Status s = CheckKeys(ctx.errors(), item, where, {"name", "log", "expect"}); !s.ok())
      return s;
    RuleTest test;
    test.line = item.Mark().line + 1;
    if (Status s = GetString(ctx.errors(), item, where, "name", true, &test.name); !s.ok())
      return s;
    if (Status s = GetString(ctx.errors(), item, where, "log", true, &test.log); !s.ok()) return s;
    YAML::Node expect = item["expect"];
    if (!expect.IsDefined()) return ctx.Error(item, where + ".expect", "missing required field");
    if (!expect.IsSequence()) return ctx.Error(expect, where + ".expect", "expected a list");
    for (const auto& e : expect) {
      if (Status s = CheckKeys(ctx.errors(), e, where + ".expect",
                               {"rule", "confidence", "affected", "occurrences", "closed"});
          !s.ok())
        return s;
      RuleTest::Expected exp;
      if (Status s = GetString(ctx.errors(), e, where + ".expect", "rule", true, &exp.rule);
          !s.ok())
        return s;
      if (Status s =
              GetString(ctx.errors(), e, where + ".expect", "confidence", false, &exp.confidence);
          !s.ok())
        return s;
      if (!exp.confidence.empty() && exp.confidence != "confirmed" && exp.confidence != "partial") {
        return ctx.Error(e["confidence"], where + ".expect.confidence",
                         "expected confirmed or partial");
      }
      if (e["affected"].IsDefined()) {
        int affected = -1;
        if (!YAML::convert<int>::decode(e["affected"], affected) || affected < 0) {
          return ctx.Error(e["affected"], where + ".expect.affected", "expected a count");
        }
        exp.affected = affected;
      }
      if (e["occurrences"].IsDefined()) {
        int occurrences = 0;
        if (!YAML::convert<int>::decode(e["occurrences"], occurrences) || occurrences < 1) {
          return ctx.Error(e["occurrences"], where + ".expect.occurrences",
                           "expected a count of at least 1");
        }
        exp.occurrences = occurrences;
      }
      if (Status s = GetString(ctx.errors(), e, where + ".expect", "closed", false, &exp.closed);
          !s.ok())
        return s;
      static const std::set<std::string> kStates = {"open", "recovered", "gone", "expired",
                                                    "evicted"};
      if (!exp.closed.empty() && kStates.count(exp.closed) == 0) {
        return ctx.Error(e["closed"], where + ".expect.closed",
                         "expected open, recovered, gone, expired or evicted");
      }
      test.expect.push_back(std::move(exp));
    }
    rule->tests.push_back(std::move(test));
  }
  return OkStatus();
}

// Checks the id: kebab-case, and the file's stem.
Status ParseRuleId(const Context& ctx, const YAML::Node& root, Rule* rule) {
  if (Status s = GetString(ctx.errors(), root, "", "id", true, &rule->id); !s.ok()) return s;
  static const RE2 kKebab("[a-z0-9]+(-[a-z0-9]+)*");
  if (!RE2::FullMatch(rule->id, kKebab)) {
    return ctx.Error(root["id"], "id", "must be kebab-case ([a-z0-9-])");
  }
  std::string stem = std::filesystem::path(ctx.file()).stem().string();
  if (stem != rule->id) {
    return ctx.Error(root["id"], "id", "must equal the file name stem '" + stem + "'");
  }
  return OkStatus();
}

// `kind: ready`: the line an engine prints once it serves (the deployment
// started healthy); its hit closes the deployment's open incidents as
// recovered. `kind: stop`: an operator or supervisor stopping it; what
// follows within its window is not a failure. Neither is ever an incident, so
// what describes an incident (class, severity, explanation, remedies,
// tracebacks, facts, layers) is an error.
Status ParseMarkerRule(const Context& ctx, const YAML::Node& root, RuleKind kind, Rule* rule) {
  rule->kind = kind;
  const std::string name = kind == RuleKind::kReady  ? "ready"
                           : kind == RuleKind::kStop ? "stop"
                                                     : "start";
  const std::string what =
      "not allowed for kind: " + name + " (a " + name + " line " +
      (kind == RuleKind::kReady ? "closes incidents, it is not one)" : "is not a failure)");
  for (const char* key :
       {"class", "severity", "library", "phase", "fallback", "family", "consequence",
        "last_exception", "traceback", "unless", "facts", "explanation", "remediation"}) {
    if (root[key].IsDefined()) return ctx.Error(root[key], key, what);
  }
  if (Status s = ParseRuleId(ctx, root, rule); !s.ok()) return s;
  if (Status s = GetString(ctx.errors(), root, "", "title", true, &rule->title); !s.ok()) return s;
  std::string scope = "deployment";
  if (Status s = GetString(ctx.errors(), root, "", "scope", false, &scope); !s.ok()) return s;
  if (scope != "deployment" && scope != "rank") {
    return ctx.Error(root["scope"], "scope", "expected deployment or rank, got '" + scope + "'");
  }
  rule->rank_scope = scope == "rank";
  if (Status s = GetDuration(ctx, root, "maxspan", &rule->maxspan_us); !s.ok()) return s;
  if (Status s = GetDuration(ctx, root, "window", &rule->window_us); !s.ok()) return s;
  if (Status s = ParseStages(ctx, root, rule); !s.ok()) return s;
  if (Status s = ParseTests(ctx, root["tests"], rule); !s.ok()) return s;
  rule->file = ctx.file();
  return OkStatus();
}

Status ParseRule(const Context& file_ctx, const YAML::Node& root, Rule* rule) {
  Context ctx = file_ctx;
  if (root.IsMap() && root["id"].IsScalar()) ctx.set_rule(root["id"].as<std::string>());
  if (Status s = CheckKeys(ctx.errors(), root, "",
                           {"id",      "kind",        "title",          "class",       "severity",
                            "library", "phase",       "maxspan",        "window",      "fallback",
                            "family",  "consequence", "last_exception", "sequence",    "traceback",
                            "unless",  "facts",       "explanation",    "remediation", "tests",
                            "scope"});
      !s.ok())
    return s;
  std::string kind = "failure";
  if (Status s = GetString(ctx.errors(), root, "", "kind", false, &kind); !s.ok()) return s;
  if (root["scope"].IsDefined() && kind != "ready") {
    return ctx.Error(root["scope"], "scope", "only for kind: ready, got kind: " + kind);
  }
  static const std::map<std::string, RuleKind> kMarkers = {
      {"ready", RuleKind::kReady}, {"stop", RuleKind::kStop}, {"start", RuleKind::kStart}};
  if (auto marker = kMarkers.find(kind); marker != kMarkers.end()) {
    return ParseMarkerRule(ctx, root, marker->second, rule);
  } else if (kind != "failure") {
    return ctx.Error(root["kind"], "kind",
                     "expected failure, ready, stop or start, got '" + kind + "'");
  }
  if (Status s = ParseRuleId(ctx, root, rule); !s.ok()) return s;
  if (Status s = GetString(ctx.errors(), root, "", "title", true, &rule->title); !s.ok()) return s;
  if (Status s = GetString(ctx.errors(), root, "", "class", true, &rule->rule_class); !s.ok())
    return s;
  if (!IsValidRuleClass(rule->rule_class)) {
    return ctx.Error(root["class"], "class",
                     "expected hardware_support, model_bug, resource, distributed, config or "
                     "unknown, got '" +
                         rule->rule_class + "'");
  }
  std::string severity;
  if (Status s = GetString(ctx.errors(), root, "", "severity", true, &severity); !s.ok()) return s;
  if (!ParseSeverity(severity, &rule->severity)) {
    return ctx.Error(root["severity"], "severity",
                     "expected critical, error, warning or info, got '" + severity + "'");
  }
  if (Status s = GetString(ctx.errors(), root, "", "library", false, &rule->library); !s.ok())
    return s;
  if (Status s = GetString(ctx.errors(), root, "", "phase", false, &rule->phase); !s.ok()) return s;
  if (Status s = GetDuration(ctx, root, "maxspan", &rule->maxspan_us); !s.ok()) return s;
  if (Status s = GetDuration(ctx, root, "window", &rule->window_us); !s.ok()) return s;
  if (Status s = GetBool(ctx.errors(), root, "", "fallback", &rule->fallback); !s.ok()) return s;
  if (Status s = GetBool(ctx.errors(), root, "", "family", &rule->family); !s.ok()) return s;
  if (Status s = GetBool(ctx.errors(), root, "", "consequence", &rule->consequence); !s.ok())
    return s;
  if (Status s = GetBool(ctx.errors(), root, "", "last_exception", &rule->last_exception); !s.ok())
    return s;
  if (rule->last_exception && !rule->fallback) {
    return ctx.Error(root["last_exception"], "last_exception", "only a fallback rule may have it");
  }
  if (rule->family && rule->fallback) {
    return ctx.Error(root["family"], "family", "a rule is a family rule or a fallback, not both");
  }
  if (Status s = ParseStages(ctx, root, rule); !s.ok()) return s;
  if (Status s = ParseTraceback(ctx, root["traceback"], rule); !s.ok()) return s;
  if (Status s = ParseUnless(ctx, root["unless"], rule); !s.ok()) return s;
  if (Status s = GetStringList(ctx.errors(), root, "", "facts", false, &rule->facts); !s.ok())
    return s;
  if (Status s = GetString(ctx.errors(), root, "", "explanation", true, &rule->explanation);
      !s.ok())
    return s;
  if (Status s = GetStringList(ctx.errors(), root, "", "remediation", true, &rule->remediation);
      !s.ok())
    return s;
  if (Status s = ParseTests(ctx, root["tests"], rule); !s.ok()) return s;
  rule->file = ctx.file();
  return OkStatus();
}

Status ParseFactsFile(const Context& ctx, const YAML::Node& root, std::vector<FactExtractor>* facts,
                      std::vector<KernelSupport>* support) {
  if (Status s = CheckKeys(ctx.errors(), root, "", {"facts", "kernel_support"}); !s.ok()) return s;
  YAML::Node list = root["facts"];
  if (!list.IsSequence()) return ctx.Error(root, "facts", "expected a list of fact extractors");
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = "facts[" + std::to_string(i) + "]";
    if (Status s = CheckKeys(ctx.errors(), list[i], where, {"name", "patterns"}); !s.ok()) return s;
    FactExtractor fact;
    if (Status s = GetString(ctx.errors(), list[i], where, "name", true, &fact.name); !s.ok())
      return s;
    if (Status s = GetStringList(ctx.errors(), list[i], where, "patterns", true, &fact.patterns);
        !s.ok())
      return s;
    const YAML::Node patterns = list[i]["patterns"];
    for (size_t k = 0; k < fact.patterns.size(); ++k) {
      const YAML::Node item = patterns.IsSequence() ? patterns[k] : patterns;
      const std::string field = where + ".patterns[" + std::to_string(k) + "]";
      std::shared_ptr<const re2::RE2> re;
      if (Status s = CompilePattern(ctx, item, field, fact.patterns[k], false, &re); !s.ok())
        return s;
      if (re->NumberOfCapturingGroups() < 1) {
        return ctx.Error(item, field, "needs a capture group for the value: " + fact.patterns[k]);
      }
    }
    facts->push_back(std::move(fact));
  }
  YAML::Node ks = root["kernel_support"];
  if (ks.IsDefined() && !ks.IsNull()) {
    if (!ks.IsSequence()) return ctx.Error(ks, "kernel_support", "expected a list");
    for (size_t i = 0; i < ks.size(); ++i) {
      std::string where = "kernel_support[" + std::to_string(i) + "]";
      if (Status s = CheckKeys(ctx.errors(), ks[i], where, {"library", "implements", "note"});
          !s.ok())
        return s;
      KernelSupport k;
      if (Status s = GetString(ctx.errors(), ks[i], where, "library", true, &k.library); !s.ok())
        return s;
      if (Status s = GetStringList(ctx.errors(), ks[i], where, "implements", true, &k.implements);
          !s.ok())
        return s;
      if (Status s = GetString(ctx.errors(), ks[i], where, "note", false, &k.note); !s.ok())
        return s;
      support->push_back(std::move(k));
    }
  }
  return OkStatus();
}

// The rule id of a file that is not valid YAML, read from its `id:` line so
// the error can still name the rule; "?" if there is none.
std::string RuleIdOfText(const std::string& text) {
  static const RE2 kIdLine(R"((?m)^id:[ \t]*['"]?([a-z0-9-]+))");
  std::string id;
  return RE2::PartialMatch(text, kIdLine, &id) ? id : "?";
}

}  // namespace

StatusOr<std::shared_ptr<const RuleSet>> LoadRuleTexts(
    const std::vector<std::pair<std::string, std::string>>& files) {
  std::shared_ptr<RuleSet> set(new RuleSet());
  std::set<std::string> ids;
  bool have_facts = false;
  for (const auto& [file, text] : files) {
    Context ctx(file);
    // Errors of the document as a whole name the rule its `id:` line gives.
    Context doc_ctx = ctx;
    doc_ctx.set_rule(RuleIdOfText(text));
    YAML::Node root;
    if (Status s = yaml_strict::ParseYamlText(doc_ctx.errors(), text, &root); !s.ok()) return s;
    try {
      if (Status s = yaml_strict::CheckDuplicateKeys(doc_ctx.errors(), root); !s.ok()) return s;
      if (Status s = yaml_strict::CheckUnterminatedQuotes(doc_ctx.errors(), text, root); !s.ok()) {
        return s;
      }
      if (std::filesystem::path(file).filename() == kFactsFile) {
        have_facts = true;
        if (Status s = ParseFactsFile(ctx, root, &set->facts_, &set->kernel_support_); !s.ok())
          return s;
        continue;
      }
      Rule rule;
      if (Status s = ParseRule(ctx, root, &rule); !s.ok()) return s;
      if (!ids.insert(rule.id).second) {
        ctx.set_rule(rule.id);
        return ctx.Error(root["id"], "id", "duplicate rule id");
      }
      set->rules_.push_back(std::move(rule));
    } catch (const YAML::Exception& e) {
      return yaml_strict::ExceptionError(doc_ctx.errors(), text, e);
    }
  }
  if (set->rules_.empty()) return InvalidArgumentError("rule pack: no rules found");
  (void)have_facts;  // a pack without facts.yaml is valid; incidents then carry no facts
  for (const Rule& rule : set->rules_) {
    for (const std::string& fact : rule.facts) {
      bool known = std::any_of(set->facts_.begin(), set->facts_.end(),
                               [&](const FactExtractor& f) { return f.name == fact; });
      if (!known) {
        Context ctx(rule.file);
        ctx.set_rule(rule.id);
        return ctx.ErrorAt(1, "facts", "unknown fact '" + fact + "' (not in facts.yaml)");
      }
    }
    if (!rule.library.empty() && !set->FindLibrary(rule.library)) {
      Context ctx(rule.file);
      ctx.set_rule(rule.id);
      return ctx.ErrorAt(1, "library", "'" + rule.library + "' is not in kernel_support");
    }
  }
  if (Status s = set->Compile(); !s.ok()) return s;
  return std::shared_ptr<const RuleSet>(std::move(set));
}

StatusOr<std::shared_ptr<const RuleSet>> LoadRuleDir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (!std::filesystem::exists(dir, ec)) return NotFoundError(dir + ": no such directory");
    return NotFoundError(dir + ": not a directory");
  }
  // A pack is the directory's *.yaml files. What looks meant as part of it
  // but would not be read (*.yml, subdirectories) is an error, not a silent
  // skip; other files (README.md) and hidden ones are not rules.
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::filesystem::path& path = entry.path();
    const std::string name = path.filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (entry.is_directory()) {
      return InvalidArgumentError(path.string() +
                                  ": subdirectories of a rule pack are not loaded; move its "
                                  "rules up into " +
                                  dir);
    }
    if (!entry.is_regular_file()) continue;
    if (path.extension() == ".yml") {
      return InvalidArgumentError(path.string() + ": rule files end in .yaml; rename it to " +
                                  path.stem().string() + ".yaml");
    }
    if (path.extension() == ".yaml") paths.push_back(path.string());
  }
  if (ec) return NotFoundError(dir + ": " + ec.message());
  std::sort(paths.begin(), paths.end());
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return NotFoundError(path + ": cannot read");
    std::ostringstream text;
    text << in.rdbuf();
    files.emplace_back(path, text.str());
  }
  return LoadRuleTexts(files);
}

namespace {

// `text` with the lines of its top-level `tests:` key emptied (the key's line
// up to the next top-level key or the end), so that every other line keeps
// its number in an error message.
std::string WithoutTests(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_tests = false;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    end = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view line = text.substr(at, end - at);
    const bool top_level_key =
        !line.empty() && line[0] != ' ' && line[0] != '#' && line[0] != '\n' && line[0] != '\r';
    if (top_level_key) in_tests = line.starts_with("tests:");
    if (in_tests) {
      if (line.back() == '\n') out += '\n';
    } else {
      out.append(line);
    }
    at = end;
  }
  return out;
}

}  // namespace

StatusOr<std::shared_ptr<const RuleSet>> LoadEmbeddedRules(EmbeddedTests tests) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [name, text] : EmbeddedRuleFiles()) {
    files.emplace_back("rules/" + std::string(name),
                       tests == EmbeddedTests::kLoad ? std::string(text) : WithoutTests(text));
  }
  return LoadRuleTexts(files);
}

}  // namespace fingerprintd::rules
