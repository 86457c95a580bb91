// Loads rule YAML into Rule structs. The only code that touches yaml-cpp:
// every exception it throws is caught here and becomes a Status of the form
// `file:line: rule <id>: <field>: <reason>`. A pack loads whole or not at all.
#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "fingerprintd/rules.h"

namespace fingerprintd::rules {

const std::vector<std::pair<std::string_view, std::string_view>>& EmbeddedRuleFiles();

namespace {

constexpr std::string_view kFactsFile = "facts.yaml";

// Collects the location prefix for error messages of one rule file.
class Context {
 public:
  Context(std::string file) : file_(std::move(file)) {}
  void set_rule(std::string id) { rule_ = std::move(id); }

  Status Error(const YAML::Node& node, std::string_view field, std::string_view reason) const {
    int line = node.IsDefined() ? node.Mark().line + 1 : 0;
    return ErrorAt(line, field, reason);
  }
  Status ErrorAt(int line, std::string_view field, std::string_view reason) const {
    std::ostringstream out;
    out << file_ << ":" << (line > 0 ? line : 1) << ": rule " << (rule_.empty() ? "?" : rule_)
        << ": " << field << ": " << reason;
    return InvalidArgumentError(out.str());
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::string rule_;
};

Status CheckKeys(const Context& ctx, const YAML::Node& map, std::string_view where,
                 std::initializer_list<std::string_view> allowed) {
  if (!map.IsMap()) return ctx.Error(map, where, "expected a mapping");
  for (const auto& kv : map) {
    std::string key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string field = where.empty() ? key : std::string(where) + "." + key;
      return ctx.Error(kv.first, field, "unknown key");
    }
  }
  return OkStatus();
}

Status GetString(const Context& ctx, const YAML::Node& map, std::string_view field, bool required,
                 std::string* out) {
  YAML::Node node = map[std::string(field)];
  if (!node.IsDefined() || node.IsNull()) {
    if (required) return ctx.Error(map, field, "missing required field");
    return OkStatus();
  }
  if (!node.IsScalar()) return ctx.Error(node, field, "expected a string");
  *out = node.as<std::string>();
  if (required && out->empty()) return ctx.Error(node, field, "must not be empty");
  return OkStatus();
}

Status GetStringList(const Context& ctx, const YAML::Node& map, std::string_view field,
                     bool required, std::vector<std::string>* out) {
  YAML::Node node = map[std::string(field)];
  if (!node.IsDefined() || node.IsNull()) {
    if (required) return ctx.Error(map, field, "missing required field");
    return OkStatus();
  }
  if (node.IsScalar()) {
    out->push_back(node.as<std::string>());
    return OkStatus();
  }
  if (!node.IsSequence()) return ctx.Error(node, field, "expected a list of strings");
  for (const auto& item : node) {
    if (!item.IsScalar()) return ctx.Error(item, field, "expected a string");
    out->push_back(item.as<std::string>());
  }
  if (required && out->empty()) return ctx.Error(node, field, "must not be empty");
  return OkStatus();
}

Status GetBool(const Context& ctx, const YAML::Node& map, std::string_view field, bool* out) {
  YAML::Node node = map[std::string(field)];
  if (!node.IsDefined() || node.IsNull()) return OkStatus();
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    return ctx.Error(node, field, "expected true or false");
  }
  *out = value;
  return OkStatus();
}

// "30m", "120s", "2h", "500ms".
Status GetDuration(const Context& ctx, const YAML::Node& map, std::string_view field,
                   int64_t* out_us) {
  YAML::Node node = map[std::string(field)];
  if (!node.IsDefined() || node.IsNull()) return OkStatus();
  std::string text = node.IsScalar() ? node.as<std::string>() : "";
  int64_t value = 0;
  std::string unit;
  if (!RE2::FullMatch(text, R"((\d+)(ms|s|m|h))", &value, &unit) || value <= 0) {
    return ctx.Error(node, field, "expected a positive duration such as 30s, 10m or 2h");
  }
  int64_t scale = unit == "ms"  ? 1000
                  : unit == "s" ? 1'000'000
                  : unit == "m" ? 60'000'000
                                : 3'600'000'000LL;
  *out_us = value * scale;
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
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const re2::RE2>(pattern, options);
  if (!re->ok()) return ctx.Error(node, field, "invalid RE2 pattern: " + re->error());
  if (out) *out = std::move(re);
  return OkStatus();
}

Status ParseFramePattern(const Context& ctx, const YAML::Node& node, std::string_view field,
                         FramePattern* out) {
  if (Status s = CheckKeys(ctx, node, field, {"file", "function"}); !s.ok()) return s;
  std::string file, function;
  if (Status s = GetString(ctx, node, "file", false, &file); !s.ok()) return s;
  if (Status s = GetString(ctx, node, "function", false, &function); !s.ok()) return s;
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
    if (Status s = CheckKeys(ctx, node, where, {"id", "level", "patterns", "required", "symptom"});
        !s.ok())
      return s;
    Stage stage;
    if (Status s = GetString(ctx, node, "id", true, &stage.id); !s.ok()) return s;
    where = "sequence." + stage.id;
    if (!ids.insert(stage.id).second) return ctx.Error(node["id"], where, "duplicate stage id");
    std::string level = "INFO";
    if (Status s = GetString(ctx, node, "level", false, &level); !s.ok()) return s;
    stage.level = ParseLevel(level);
    if (stage.level == Level::kUnknown && level != "ANY") {
      return ctx.Error(node["level"], where + ".level",
                       "expected ANY, DEBUG, INFO, WARNING, ERROR or CRITICAL");
    }
    if (Status s = GetStringList(ctx, node, "patterns", true, &stage.patterns); !s.ok()) return s;
    for (const std::string& p : stage.patterns) {
      if (Status s = CompilePattern(ctx, node["patterns"], where + ".patterns", p, false, nullptr);
          !s.ok())
        return s;
    }
    if (Status s = GetBool(ctx, node, "required", &stage.required); !s.ok()) return s;
    if (Status s = GetBool(ctx, node, "symptom", &stage.symptom); !s.ok()) return s;
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
  if (Status s = CheckKeys(ctx, node, "traceback", {"exception", "message", "frames"}); !s.ok())
    return s;
  TracebackClause clause;
  std::string exception, message;
  if (Status s = GetString(ctx, node, "exception", true, &exception); !s.ok()) return s;
  if (Status s = CompilePattern(ctx, node["exception"], "traceback.exception", exception, false,
                                &clause.exception);
      !s.ok())
    return s;
  if (Status s = GetString(ctx, node, "message", false, &message); !s.ok()) return s;
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
  rule->traceback = std::move(clause);
  return OkStatus();
}

Status ParseUnless(const Context& ctx, const YAML::Node& node, Rule* rule) {
  if (!node.IsDefined() || node.IsNull()) return OkStatus();
  if (!node.IsSequence()) return ctx.Error(node, "unless", "expected a list");
  for (size_t i = 0; i < node.size(); ++i) {
    std::string where = "unless[" + std::to_string(i) + "]";
    const YAML::Node& item = node[i];
    if (Status s = CheckKeys(ctx, item, where, {"frame", "message"}); !s.ok()) return s;
    Veto veto;
    if (item["frame"].IsDefined()) {
      FramePattern fp;
      if (Status s = ParseFramePattern(ctx, item["frame"], where + ".frame", &fp); !s.ok())
        return s;
      veto.frame = std::move(fp);
    }
    std::string message;
    if (Status s = GetString(ctx, item, "message", false, &message); !s.ok()) return s;
    if (Status s =
            CompilePattern(ctx, item["message"], where + ".message", message, true, &veto.message);
        !s.ok())
      return s;
    if (!veto.frame && !veto.message) return ctx.Error(item, where, "needs frame or message");
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
    if (Status s = CheckKeys(ctx, item, where, {"name", "log", "expect"}); !s.ok()) return s;
    RuleTest test;
    test.line = item.Mark().line + 1;
    if (Status s = GetString(ctx, item, "name", true, &test.name); !s.ok()) return s;
    if (Status s = GetString(ctx, item, "log", true, &test.log); !s.ok()) return s;
    YAML::Node expect = item["expect"];
    if (!expect.IsDefined()) return ctx.Error(item, where + ".expect", "missing required field");
    if (!expect.IsSequence()) return ctx.Error(expect, where + ".expect", "expected a list");
    for (const auto& e : expect) {
      if (Status s = CheckKeys(ctx, e, where + ".expect", {"rule", "confidence", "affected"});
          !s.ok())
        return s;
      RuleTest::Expected exp;
      if (Status s = GetString(ctx, e, "rule", true, &exp.rule); !s.ok()) return s;
      if (Status s = GetString(ctx, e, "confidence", false, &exp.confidence); !s.ok()) return s;
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
      test.expect.push_back(std::move(exp));
    }
    rule->tests.push_back(std::move(test));
  }
  return OkStatus();
}

Status ParseRule(const Context& file_ctx, const YAML::Node& root, Rule* rule) {
  Context ctx = file_ctx;
  if (root.IsMap() && root["id"].IsScalar()) ctx.set_rule(root["id"].as<std::string>());
  if (Status s = CheckKeys(
          ctx, root, "",
          {"id", "title", "class", "severity", "library", "phase", "maxspan", "window", "fallback",
           "sequence", "traceback", "unless", "facts", "explanation", "remediation", "tests"});
      !s.ok())
    return s;
  if (Status s = GetString(ctx, root, "id", true, &rule->id); !s.ok()) return s;
  if (!RE2::FullMatch(rule->id, "[a-z0-9]+(-[a-z0-9]+)*")) {
    return ctx.Error(root["id"], "id", "must be kebab-case ([a-z0-9-])");
  }
  std::string stem = std::filesystem::path(ctx.file()).stem().string();
  if (stem != rule->id) {
    return ctx.Error(root["id"], "id", "must equal the file name stem '" + stem + "'");
  }
  if (Status s = GetString(ctx, root, "title", true, &rule->title); !s.ok()) return s;
  if (Status s = GetString(ctx, root, "class", true, &rule->rule_class); !s.ok()) return s;
  if (!IsValidRuleClass(rule->rule_class)) {
    return ctx.Error(root["class"], "class",
                     "expected hardware_support, model_bug, resource, distributed, config or "
                     "unknown");
  }
  std::string severity;
  if (Status s = GetString(ctx, root, "severity", true, &severity); !s.ok()) return s;
  if (!ParseSeverity(severity, &rule->severity)) {
    return ctx.Error(root["severity"], "severity", "expected critical, error, warning or info");
  }
  if (Status s = GetString(ctx, root, "library", false, &rule->library); !s.ok()) return s;
  if (Status s = GetString(ctx, root, "phase", false, &rule->phase); !s.ok()) return s;
  if (Status s = GetDuration(ctx, root, "maxspan", &rule->maxspan_us); !s.ok()) return s;
  if (Status s = GetDuration(ctx, root, "window", &rule->window_us); !s.ok()) return s;
  if (Status s = GetBool(ctx, root, "fallback", &rule->fallback); !s.ok()) return s;
  if (Status s = ParseStages(ctx, root, rule); !s.ok()) return s;
  if (Status s = ParseTraceback(ctx, root["traceback"], rule); !s.ok()) return s;
  if (Status s = ParseUnless(ctx, root["unless"], rule); !s.ok()) return s;
  if (Status s = GetStringList(ctx, root, "facts", false, &rule->facts); !s.ok()) return s;
  if (Status s = GetString(ctx, root, "explanation", true, &rule->explanation); !s.ok()) return s;
  if (Status s = GetStringList(ctx, root, "remediation", true, &rule->remediation); !s.ok())
    return s;
  if (Status s = ParseTests(ctx, root["tests"], rule); !s.ok()) return s;
  rule->file = ctx.file();
  return OkStatus();
}

Status ParseFactsFile(const Context& ctx, const YAML::Node& root, std::vector<FactExtractor>* facts,
                      std::vector<KernelSupport>* support) {
  if (Status s = CheckKeys(ctx, root, "", {"facts", "kernel_support"}); !s.ok()) return s;
  YAML::Node list = root["facts"];
  if (!list.IsSequence()) return ctx.Error(root, "facts", "expected a list of fact extractors");
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = "facts[" + std::to_string(i) + "]";
    if (Status s = CheckKeys(ctx, list[i], where, {"name", "patterns"}); !s.ok()) return s;
    FactExtractor fact;
    if (Status s = GetString(ctx, list[i], "name", true, &fact.name); !s.ok()) return s;
    if (Status s = GetStringList(ctx, list[i], "patterns", true, &fact.patterns); !s.ok()) return s;
    for (const std::string& p : fact.patterns) {
      std::shared_ptr<const re2::RE2> re;
      if (Status s = CompilePattern(ctx, list[i]["patterns"], "facts." + fact.name + ".patterns", p,
                                    false, &re);
          !s.ok())
        return s;
      if (re->NumberOfCapturingGroups() < 1) {
        return ctx.Error(list[i]["patterns"], "facts." + fact.name + ".patterns",
                         "needs a capture group for the value: " + p);
      }
    }
    facts->push_back(std::move(fact));
  }
  YAML::Node ks = root["kernel_support"];
  if (ks.IsDefined() && !ks.IsNull()) {
    if (!ks.IsSequence()) return ctx.Error(ks, "kernel_support", "expected a list");
    for (size_t i = 0; i < ks.size(); ++i) {
      std::string where = "kernel_support[" + std::to_string(i) + "]";
      if (Status s = CheckKeys(ctx, ks[i], where, {"library", "implements", "note"}); !s.ok())
        return s;
      KernelSupport k;
      if (Status s = GetString(ctx, ks[i], "library", true, &k.library); !s.ok()) return s;
      if (Status s = GetStringList(ctx, ks[i], "implements", true, &k.implements); !s.ok())
        return s;
      if (Status s = GetString(ctx, ks[i], "note", false, &k.note); !s.ok()) return s;
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

Status YamlError(const std::string& file, const std::string& text, const YAML::Exception& e) {
  std::ostringstream msg;
  msg << file << ":" << e.mark.line + 1 << ": rule " << RuleIdOfText(text) << ": yaml: " << e.msg;
  return InvalidArgumentError(msg.str());
}

// Calls yaml-cpp; turns its exceptions into a Status naming the file and line.
Status ParseYamlText(const std::string& file, const std::string& text, YAML::Node* out) {
  try {
    *out = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return YamlError(file, text, e);
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::shared_ptr<const RuleSet>> LoadRuleTexts(
    const std::vector<std::pair<std::string, std::string>>& files) {
  std::shared_ptr<RuleSet> set(new RuleSet());
  std::set<std::string> ids;
  bool have_facts = false;
  for (const auto& [file, text] : files) {
    Context ctx(file);
    YAML::Node root;
    if (Status s = ParseYamlText(file, text, &root); !s.ok()) return s;
    try {
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
      return YamlError(file, text, e);
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
    return NotFoundError(dir + ": not a directory");
  }
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      paths.push_back(entry.path().string());
    }
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

StatusOr<std::shared_ptr<const RuleSet>> LoadEmbeddedRules() {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [name, text] : EmbeddedRuleFiles()) {
    files.emplace_back("rules/" + std::string(name), std::string(text));
  }
  return LoadRuleTexts(files);
}

}  // namespace fingerprintd::rules
