#include "common/yaml_strict.h"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <sstream>

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

Status ParseYamlText(const YamlErrors& errors, const std::string& text, YAML::Node* out) {
  try {
    *out = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return errors.ErrorAt(e.mark.line + 1, "yaml", e.msg);
  }
  return OkStatus();
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
