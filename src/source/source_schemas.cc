// The built-in source types (source/source_schemas.h).
#include "source/source_schemas.h"

#include <string>
#include <utility>

namespace fingerprintd::source {

const config::SourceTypes& BuiltInSourceTypes() {
  static const config::SourceTypes* types = [] {
    auto* t = new config::SourceTypes;
    // Named as everywhere else (config::SourceTypeName), in the order an
    // unknown type's error offers them.
    const std::pair<config::SourceType, config::SourceSchema> kBuiltIn[] = {
        {config::SourceType::kFile, &ReadFileSourceSection},
        {config::SourceType::kTcp, &ReadTcpSourceSection},
        {config::SourceType::kUnix, &ReadUnixSourceSection},
        {config::SourceType::kStdin, &ReadStdinSourceSection},
    };
    for (const auto& [type, schema] : kBuiltIn) {
      t->Add(std::string(config::SourceTypeName(type)), type, schema);
    }
    return t;
  }();
  return *types;
}

}  // namespace fingerprintd::source
