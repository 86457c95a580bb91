// The daemon of `fingerprintd run`: its sources, pipeline, sinks, HTTP server
// and timers on one io_context, until SIGTERM or the end of stdin
// (daemon/run.cc). The command line around it is daemon/run_commands.cc.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "config/source_types.h"
#include "fingerprintd/rules.h"

namespace fingerprintd::daemon {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;

// Runs the daemon over `config` with `rules` until it stops; its exit code.
// `source_types`: what a SIGHUP reload reads `sources:` with.
// `audit_path`: `run --audit` (sink/audit_log.h), empty = none.
int RunDaemonWith(config::DaemonConfig config, std::shared_ptr<const rules::RuleSet> rules,
                  const config::SourceTypes& source_types, std::string audit_path);

}  // namespace fingerprintd::daemon
