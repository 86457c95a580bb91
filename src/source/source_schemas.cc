// The built-in source types (source/source_schemas.h).
#include "source/source_schemas.h"

namespace fingerprintd::source {

const config::SourceTypes& BuiltInSourceTypes() {
  static const config::SourceTypes* types = [] {
    auto* t = new config::SourceTypes;
    t->Add("file", config::SourceType::kFile, &ReadFileSourceSection);
    t->Add("tcp", config::SourceType::kTcp, &ReadTcpSourceSection);
    t->Add("unix", config::SourceType::kUnix, &ReadUnixSourceSection);
    t->Add("stdin", config::SourceType::kStdin, &ReadStdinSourceSection);
    return t;
  }();
  return *types;
}

}  // namespace fingerprintd::source
