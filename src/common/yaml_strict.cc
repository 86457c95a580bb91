#include "common/yaml_strict.h"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fingerprintd::yaml_strict {

Status YamlErrors::Error(const YAML::Node& node, std::string_view field,
                         std::string_view reason) const {
  int line = node.IsDefined() ? node.Mark().line + 1 : 0;
  return ErrorAt(line, field, reason);
}

Status YamlErrors::ErrorAt(int line, std::string_view field, std::string_view reason) const {
  std::ostringstream out;
  out << file_ << ":" << (line > 0 ? line : 1) << ": " << scope_ << field << ": " << reason;
  return InvalidArgumentError(out.str());
}

bool ErrorList::Add(const Status& status) {
  if (status.ok()) return true;
  std::string_view rest = status.message();
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view message = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (message.empty()) continue;
    // "file:LINE: ..." from YamlErrors; anything else sorts first.
    int line = 0;
    if (message.size() > file_.size() && message.substr(0, file_.size()) == file_ &&
        message[file_.size()] == ':') {
      std::string_view digits = message.substr(file_.size() + 1);
      std::from_chars(digits.data(), digits.data() + digits.size(), line);
    }
    errors_.emplace_back(line, std::string(message));
  }
  return false;
}

Status ErrorList::ToStatus() const {
  if (errors_.empty()) return OkStatus();
  std::vector<std::pair<int, std::string>> sorted = errors_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (size_t i = 0; i < sorted.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) seen = sorted[j].second == sorted[i].second;
    if (seen) continue;
    if (!out.empty()) out += '\n';
    out += sorted[i].second;
  }
  return InvalidArgumentError(out);
}

std::string FieldName(std::string_view where, std::string_view key) {
  if (where.empty()) return std::string(key);
  return std::string(where) + "." + std::string(key);
}

namespace {

// The source lines of one file, for checks yaml-cpp does not make.
std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

size_t Indent(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

// A quoted scalar opening at (line, column) that is not closed on its line
// and whose next non-blank line is not indented past the opening line: YAML
// forbids that, but yaml-cpp reads on until the next quote, swallowing the keys
// in between. Returns the 0-based line of the swallowed text, or -1.
int UnterminatedQuoteRunsInto(const std::vector<std::string_view>& lines, size_t line,
                              size_t column) {
  if (line >= lines.size() || column >= lines[line].size()) return -1;
  std::string_view text = lines[line];
  const char quote = text[column];
  if (quote != '"' && quote != '\'') return -1;
  for (size_t i = column + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is an escaped quote
      } else {
        return -1;  // closed on its own line
      }
    }
  }
  for (size_t next = line + 1; next < lines.size(); ++next) {
    if (lines[next].find_first_not_of(" \t\r") == std::string_view::npos) continue;
    return Indent(lines[next]) <= Indent(text) ? static_cast<int>(next) : -1;
  }
  return -1;
}

// The first quote left open before line `upto` (0-based), found in the text
// since the document did not parse; block scalars (`log: |`) are skipped.
// Returns its line, or -1.
int UnterminatedQuoteBefore(const std::vector<std::string_view>& lines, size_t upto) {
  static const RE2 kQuoted(R"(^ *(?:- +)?(?:[A-Za-z_][\w.-]*: +)?(["']))");
  static const RE2 kBlock(R"(^ *(?:- +)?(?:[A-Za-z_][\w.-]*: *)?[|>][-+0-9]*\s*$)");
  size_t block_indent = std::string_view::npos;
  for (size_t i = 0; i <= upto && i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (block_indent != std::string_view::npos) {
      if (Indent(line) > block_indent) continue;
      block_indent = std::string_view::npos;
    }
    if (RE2::PartialMatch(line, kBlock)) {
      block_indent = Indent(line);
      continue;
    }
    re2::StringPiece quote;
    if (RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), kQuoted, &quote) &&
        UnterminatedQuoteRunsInto(lines, i, quote.data() - line.data()) >= 0) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// A quoted scalar anywhere under `node` left open (UnterminatedQuoteRunsInto).
void FindUnterminatedQuotes(const YamlErrors& errors, const std::vector<std::string_view>& lines,
                            const YAML::Node& node, const std::string& where, std::string* out) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      FindUnterminatedQuotes(errors, lines, kv.second, FieldName(where, key), out);
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      FindUnterminatedQuotes(errors, lines, node[i], where + "[" + std::to_string(i) + "]", out);
    }
  } else if (node.IsScalar() && node.Tag() == "!") {  // a quoted scalar
    const YAML::Mark mark = node.Mark();
    if (mark.line < 0 || mark.column < 0) return;
    if (int into = UnterminatedQuoteRunsInto(lines, mark.line, mark.column); into >= 0) {
      Status s = errors.ErrorAt(
          mark.line + 1, where.empty() ? "yaml" : where,
          "unterminated quote: the string runs on into line " + std::to_string(into + 1));
      *out += (out->empty() ? "" : "\n") + s.message();
    }
  }
}

}  // namespace

Status ExceptionError(const YamlErrors& errors, const std::string& text, const YAML::Exception& e) {
  const std::vector<std::string_view> lines = SplitLines(text);
  const int quote = e.mark.line >= 0 ? UnterminatedQuoteBefore(lines, e.mark.line) : -1;
  if (quote >= 0) {
    return errors.ErrorAt(
        quote + 1, "yaml",
        "unterminated quote (then at line " + std::to_string(e.mark.line + 1) + ": " + e.msg + ")");
  }
  return errors.ErrorAt(e.mark.line + 1, "yaml", e.msg);
}

Status ParseYamlText(const YamlErrors& errors, const std::string& text, YAML::Node* out) {
  try {
    *out = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return ExceptionError(errors, text, e);
  }
  return OkStatus();
}

Status CheckUnterminatedQuotes(const YamlErrors& errors, const std::string& text,
                               const YAML::Node& node) {
  std::string out;
  FindUnterminatedQuotes(errors, SplitLines(text), node, "", &out);
  return out.empty() ? OkStatus() : InvalidArgumentError(out);
}

Status CheckKeys(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                 std::initializer_list<std::string_view> allowed) {
  if (!map.IsMap())
    return errors.Error(map, where.empty() ? "(root)" : where, "expected a mapping");
  std::string out;
  auto add = [&out](const Status& s) { out += (out.empty() ? "" : "\n") + s.message(); };
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) {
      add(errors.Error(kv.first, where, "keys must be strings"));
      continue;
    }
    std::string key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      add(errors.Error(kv.first, FieldName(where, key), "unknown key"));
    }
  }
  return out.empty() ? OkStatus() : InvalidArgumentError(out);
}

namespace {

void FindDuplicateKeys(const YamlErrors& errors, const YAML::Node& node, const std::string& where,
                       std::string* out) {
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      FindDuplicateKeys(errors, node[i], where + "[" + std::to_string(i) + "]", out);
    }
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;  // scalar key -> its line
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) continue;  // CheckKeys reports these
    const std::string& key = kv.first.Scalar();
    const std::string field = FieldName(where, key);
    int line = kv.first.Mark().line + 1;
    auto [it, inserted] = first_line.emplace(key, line);
    if (!inserted) {
      Status s = errors.Error(kv.first, field,
                              "duplicate key (first at line " + std::to_string(it->second) +
                                  "; a second value would be ignored)");
      *out += (out->empty() ? "" : "\n") + s.message();
    }
    FindDuplicateKeys(errors, kv.second, field, out);
  }
}

}  // namespace

Status CheckDuplicateKeys(const YamlErrors& errors, const YAML::Node& node) {
  std::string out;
  FindDuplicateKeys(errors, node, "", &out);
  return out.empty() ? OkStatus() : InvalidArgumentError(out);
}

namespace {

// The node at map[key], or an undefined node; never throws (map is a mapping).
YAML::Node Child(const YAML::Node& map, std::string_view key) {
  if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  return map[std::string(key)];
}

bool Absent(const YAML::Node& node) { return !node.IsDefined() || node.IsNull(); }

}  // namespace

Status GetString(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                 std::string_view key, bool required, std::string* out) {
  YAML::Node node = Child(map, key);
  std::string field = FieldName(where, key);
  if (Absent(node)) {
    if (required) return errors.Error(map, field, "missing required key");
    return OkStatus();
  }
  if (!node.IsScalar()) return errors.Error(node, field, "expected a string");
  *out = node.Scalar();
  if (required && out->empty()) return errors.Error(node, field, "must not be empty");
  return OkStatus();
}

Status GetStringList(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                     std::string_view key, bool required, std::vector<std::string>* out) {
  YAML::Node node = Child(map, key);
  std::string field = FieldName(where, key);
  if (Absent(node)) {
    if (required) return errors.Error(map, field, "missing required key");
    return OkStatus();
  }
  if (node.IsScalar()) {
    out->push_back(node.Scalar());
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      if (!item.IsScalar()) return errors.Error(item, field, "expected a string");
      out->push_back(item.Scalar());
    }
  } else {
    return errors.Error(node, field, "expected a list of strings");
  }
  if (required && out->empty()) return errors.Error(node, field, "must not be empty");
  return OkStatus();
}

Status GetStringMap(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                    std::string_view key, std::map<std::string, std::string>* out) {
  YAML::Node node = Child(map, key);
  std::string field = FieldName(where, key);
  if (Absent(node)) return OkStatus();
  if (!node.IsMap()) return errors.Error(node, field, "expected a mapping of strings");
  for (const auto& kv : node) {
    if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
      return errors.Error(kv.first, field, "expected string keys and string values");
    }
    if (kv.first.Scalar().empty()) return errors.Error(kv.first, field, "empty key");
    (*out)[kv.first.Scalar()] = kv.second.Scalar();
  }
  return OkStatus();
}

Status GetBool(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
               std::string_view key, bool* out) {
  YAML::Node node = Child(map, key);
  if (Absent(node)) return OkStatus();
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    return errors.Error(node, FieldName(where, key), "expected true or false");
  }
  *out = value;
  return OkStatus();
}

Status GetUint(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
               std::string_view key, uint64_t max, uint64_t* out) {
  YAML::Node node = Child(map, key);
  if (Absent(node)) return OkStatus();
  uint64_t value = 0;
  const std::string text = node.IsScalar() ? node.Scalar() : "";
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > max) {
    return errors.Error(node, FieldName(where, key),
                        "expected an integer from 0 to " + std::to_string(max));
  }
  *out = value;
  return OkStatus();
}

std::string ParseDuration(std::string_view text, int64_t max_us, int64_t* out_us) {
  int64_t value = 0;
  std::string unit;
  static const RE2 kDuration(R"((\d{1,12})(ms|s|m|h|d))");  // compiled once, not per key
  if (!RE2::FullMatch(text, kDuration, &value, &unit) || value <= 0) {
    return "expected a positive duration such as 500ms, 30s, 10m, 2h or 1d";
  }
  const int64_t scale = unit == "ms"  ? 1000
                        : unit == "s" ? 1'000'000
                        : unit == "m" ? 60'000'000
                        : unit == "h" ? 3'600'000'000LL
                                      : 86'400'000'000LL;
  if (value > max_us / scale) {
    return "'" + std::string(text) + "' is longer than the maximum of " +
           (max_us % 86'400'000'000LL == 0 ? std::to_string(max_us / 86'400'000'000LL) + "d"
                                           : std::to_string(max_us / 3'600'000'000LL) + "h");
  }
  *out_us = value * scale;
  return "";
}

Status GetDuration(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                   std::string_view key, int64_t* out_us) {
  YAML::Node node = Child(map, key);
  if (Absent(node)) return OkStatus();
  const std::string problem =
      node.IsScalar() ? ParseDuration(node.Scalar(), kMaxConfigDurationUs, out_us)
                      : "expected a positive duration such as 500ms, 30s, 10m, 2h or 1d";
  if (!problem.empty()) return errors.Error(node, FieldName(where, key), problem);
  return OkStatus();
}

}  // namespace fingerprintd::yaml_strict
