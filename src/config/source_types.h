// The source types a config may name, each with the schema of its section.
//
// The config loader reads `sources:` as a list of mappings and knows only
// their `type:`. What else a `type: tcp` section may hold, its defaults and
// its checks belong to the tcp source (src/source/source_schemas.h), which
// registers them here; so does every other type. The daemon hands the
// registry it built to ParseConfig (daemon/main.cc: source::BuiltInSourceTypes()),
// and the loader includes nothing of the sources.
//
//   SourceTypes types;
//   types.Add("tcp", SourceType::kTcp, &ReadTcpSection);
//   auto config = ParseConfig("fingerprintd.yaml", text, types);
//
//   void ReadTcpSection(SourceSection& section, SourceConfig* out) {
//     section.Keys({"type", "listen", "labels"});
//     section.String("listen", /*required=*/false, &out->listen);
//     if (bad) section.Error("listen", "expected host:port");
//     section.Labels(&out->labels);
//   }
//
// A schema reports every problem it finds through the section (errors read
// `file:line: sources[i].key: reason`, all of them at once) and never throws.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace YAML {
class Node;
}

namespace fingerprintd::config {

// The most any max_line_bytes of the config may be (a source's, the tailer's).
inline constexpr uint64_t kMaxLineBytesCap = 256ull << 20;

struct ConfigErrors;  // the loader's error list (config.cc)

// One `sources[i]` mapping as its type's schema reads it. Each getter leaves
// *out as it was (the default) when the key is absent, and records an error
// naming the key when it is present but wrong.
class SourceSection {
 public:
  SourceSection(ConfigErrors& errors, const YAML::Node& node, std::string where);

  // The keys this type allows (`type` among them); any other is an error.
  void Keys(std::initializer_list<std::string_view> allowed);
  // False when the key is required and missing, or not a string.
  bool String(std::string_view key, bool required, std::string* out);
  void Bool(std::string_view key, bool* out);
  void Duration(std::string_view key, int64_t* out_us);  // "30s", "5m"
  void StringList(std::string_view key, bool required, std::vector<std::string>* out);
  void StringMap(std::string_view key, std::map<std::string, std::string>* out);
  // An integer in [min, max] / in [1, max] ("must be > 0").
  void AtLeast(std::string_view key, uint64_t min, uint64_t max, uint64_t* out);
  void Positive(std::string_view key, uint64_t max, uint64_t* out);
  // The scalar of `key`, "" when it is absent or not a scalar.
  std::string Scalar(std::string_view key) const;
  bool Has(std::string_view key) const;
  // An error at `key` (at the section itself when the key is absent).
  void Error(std::string_view key, std::string_view reason);

  // The keys several types share, checked alike for each:
  // labels: {name: value} as Prometheus and Alertmanager take them;
  void Labels(std::map<std::string, std::string>* out);
  // deployment_from: an RE2 (memory-bounded) with a capture group;
  void DeploymentFrom(std::string* out);
  // format: auto, plain, cri, docker, journald or compose.
  void Format(parse::Envelope* out);

 private:
  ConfigErrors& errors_;
  const YAML::Node& node_;
  std::string where_;
};

// Reads one type's section into `out` (out->type is already set).
using SourceSchema = void (*)(SourceSection& section, SourceConfig* out);

class SourceTypes {
 public:
  struct Entry {
    std::string name;  // what `type:` says
    SourceType type;
    SourceSchema schema;
  };
  void Add(std::string name, SourceType type, SourceSchema schema);
  // Null when no type of that name was added.
  const Entry* Find(std::string_view name) const;
  // "file, tcp, unix or stdin": what an unknown type's error offers.
  std::string Names() const;

 private:
  std::vector<Entry> entries_;
};

}  // namespace fingerprintd::config
