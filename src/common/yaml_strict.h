// Strict YAML helpers: the shared adapter shape around yaml-cpp for files a
// user writes by hand (the config; the rule loader has the same helpers in
// its own file and can move onto these). Every failure is a Status of the form
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
//   if (Status s = CheckKeys(errors, root, "", {"rules", "sources"}); !s.ok()) return s;
//   std::string rules;
//   if (Status s = GetString(errors, root, "", "rules", false, &rules); !s.ok()) return s;
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

// "where.key", or "key" at the root.
std::string FieldName(std::string_view where, std::string_view key);

// Parses `text`; a syntax error becomes `file:line: yaml: <what>`. An empty
// document becomes a null node.
Status ParseYamlText(const YamlErrors& errors, const std::string& text, YAML::Node* out);

// Fails on the first key of `map` not in `allowed`, and when `map` is not a
// mapping.
Status CheckKeys(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                 std::initializer_list<std::string_view> allowed);

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
// "500ms", "30s", "10m", "2h", "1d" -> microseconds (> 0).
Status GetDuration(const YamlErrors& errors, const YAML::Node& map, std::string_view where,
                   std::string_view key, int64_t* out_us);
// Parses a duration as above; false when it is not one.
bool ParseDuration(std::string_view text, int64_t* out_us);

}  // namespace fingerprintd::yaml_strict
