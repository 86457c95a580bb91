// Strict YAML: the one adapter around yaml-cpp for the files a user writes by
// hand, the config (src/config) and the rule files (src/rules/rule_loader.cc). Every failure is a
// Status of the form
//
//   file:line: <scope>field: reason
//
// where <scope> is whatever the caller puts before the field ("" for the
// config, "rule <id>: " for a rule). Unknown keys are errors, never ignored,
// so a misspelt key cannot silently fall back to a default.
//
//   YamlErrors errors("fingerprintd.yaml");
//   YAML::Node root;
//   if (Status s = ParseYamlText(errors, text, &root); !s.ok()) return s;
//   ErrorList list(errors.file());            // every error of the file, not only the first
//   list.Add(CheckDuplicateKeys(errors, root));
//   list.Add(CheckUnterminatedQuotes(errors, text, root));
//   list.Add(CheckKeys(errors, root, "", {"rules", "sources"}));
//   std::string rules;
//   list.Add(GetString(errors, root, "", "rules", false, &rules));
//   return list.ToStatus();
//
// `where` arguments are the dotted path of the mapping being read ("" for the
// root, "sources[0]", "http"); the reported field is `where.key`.
//
// Only these functions call yaml-cpp's converters; they catch what it throws.
// Threading: stateless functions; a YamlErrors is a value.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fingerprintd/status.h"

namespace fingerprintd::yaml_strict {

// Formats `file:line: <scope>field: reason` errors for one file.
class YamlErrors {
 public:
  explicit YamlErrors(std::string file, std::string scope = "")
      : file_(std::move(file)), scope_(std::move(scope)) {}
  // The line of `node` (1 when it has none, e.g. a missing key's parent).
  Status Error(const YAML::Node& node, std::string_view field, std::string_view reason) const;
  Status ErrorAt(int line, std::string_view field, std::string_view reason) const;
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::string scope_;
};

// Collects the errors of one file so that all of them are reported at once:
// a user fixing a config should not learn of its errors one run at a time.
class ErrorList {
 public:
  explicit ErrorList(std::string file) : file_(std::move(file)) {}
  // Keeps `status` when it is an error (each line of its message is one
  // error); returns status.ok().
  bool Add(const Status& status);
  bool ok() const { return errors_.empty(); }
  // OkStatus, or an InvalidArgumentError with every error, one a line, in the
  // order of their lines in the file (then in the order found), each once.
  Status ToStatus() const;

 private:
  std::string file_;
  std::vector<std::pair<int, std::string>> errors_;  // line in the file, message
};

// "where.key", or "key" at the root.
std::string FieldName(std::string_view where, std::string_view key);

// Parses `text`; a syntax error becomes `file:line: yaml: <what>`, placed at
// the quote left open before it when there is one (`file:3: yaml:
// unterminated quote (then at line 9: ...)`). An empty document becomes a
// null node.
Status ParseYamlText(const YamlErrors& errors, const std::string& text, YAML::Node* out);

// What a yaml-cpp exception thrown while reading `text` says, as
// ParseYamlText reports a syntax error.
Status ExceptionError(const YamlErrors& errors, const std::string& text, const YAML::Exception& e);

// Fails on every quoted scalar under `node` that is not closed on its line
// and whose next line is not indented past it: YAML forbids that, but
// yaml-cpp reads on to the next quote, swallowing the keys in between
// (`file:4: field: unterminated quote: the string runs on into line 5`).
Status CheckUnterminatedQuotes(const YamlErrors& errors, const std::string& text,
                               const YAML::Node& node);

// Fails on every key of `map` not in `allowed` (one line each), and when
// `map` is not a mapping.
Status CheckKeys(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                 std::initializer_list<std::string_view> allowed);

// Fails on every key given twice in a mapping anywhere under `node` (yaml-cpp
// keeps both and answers lookups with the first, so the second would be
// silently ignored): `file:line: field: duplicate key (first at line N)`, one
// line each.
Status CheckDuplicateKeys(const YamlErrors& errors, const YAML::Node& node);

// Each Get* leaves `out` untouched when the key is absent or null, and fails
// when it is required and absent, or present with the wrong shape.
Status GetString(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                 std::string_view key, bool required, std::string* out);
// A scalar is accepted as a one-element list.
Status GetStringList(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                     std::string_view key, bool required, std::vector<std::string>* out);
// A mapping of scalars to scalars (labels).
Status GetStringMap(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                    std::string_view key, std::map<std::string, std::string>* out);
Status GetBool(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
               std::string_view key, bool* out);
// A non-negative integer no larger than `max`.
Status GetUint(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
               std::string_view key, uint64_t max, uint64_t* out);
// The longest duration a config key takes: beyond it, an error, never an
// overflow of the microseconds (999999999d would wrap).
inline constexpr int64_t kMaxConfigDurationUs = 3650LL * 86'400'000'000LL;  // 3650d
// "500ms", "30s", "10m", "2h", "1d" -> microseconds (> 0, at most kMaxConfigDurationUs).
Status GetDuration(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                   std::string_view key, int64_t* out_us);
// Parses a duration as above of at most `max_us` (config keys and rule
// files, each with its own maximum): "" when `text` is one (*out_us set),
// else the reason, for the caller's error.
std::string ParseDuration(std::string_view text, int64_t max_us, int64_t* out_us);

}  // namespace fingerprintd::yaml_strict
