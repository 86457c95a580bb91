// The daemon's subcommands, registered into main's CLI11 app:
//   fingerprintd run --config FILE
//   fingerprintd run [--label k=v]... [--deployment-from REGEX] [--checkpoint-dir DIR]
//                    [--incidents PATH] [--start-at beginning|end] PATH-OR-GLOB...
//   fingerprintd run ... --audit FILE   (hidden: the committed lines, sink/audit_log.h)
//   fingerprintd config check FILE
//
//   RunCommands run;
//   AddRunCommands(app, &run);
//   app.parse(argc, argv);
//   if (int rc = DispatchRunCommands(run); rc >= 0) return rc;
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "config/config.h"
#include "config/source_types.h"

namespace fingerprintd::daemon {

struct RunCommands {
  CLI::App* run = nullptr;
  CLI::App* config_check = nullptr;
  std::string config_path;
  std::string check_path;
  std::string audit_path;  // --audit: empty = none
  config::RunFlags flags;
  // The source types `sources:` may name, each with its section's schema
  // (main registers source::BuiltInSourceTypes()); must outlive the run.
  const config::SourceTypes* source_types = nullptr;
};

// Adds `run` and `config check` to `app`; `commands` must outlive parsing.
void AddRunCommands(CLI::App& app, RunCommands* commands);
// Runs the subcommand that was parsed and returns its exit code, or -1 when
// neither was given.
int DispatchRunCommands(const RunCommands& commands);

}  // namespace fingerprintd::daemon
