// The `run` and `config check` subcommands (commands.h): flags, the config,
// logging and the rules, then the daemon itself (daemon.h).
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "commands.h"
#include "config/config.h"
#include "daemon.h"
#include "fingerprintd/rules.h"
#include "sink/redacting_log_sink.h"

namespace fingerprintd::daemon {

namespace {

void SetUpLogging(const config::DaemonConfig& config) {
  sink::LogSink() = std::make_shared<sink::RedactingStderrSink>();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("fingerprintd", sink::LogSink()));
  if (config.log_format == "json") {
    spdlog::set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","msg":"%v"})",
                        spdlog::pattern_time_type::utc);
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  spdlog::set_level(spdlog::level::from_str(config.log_level));
}

int RunDaemon(const RunCommands& commands) {
  StatusOr<config::DaemonConfig> config =
      commands.config_path.empty()
          ? config::ConfigFromFlags(commands.flags)
          : config::LoadConfigFile(commands.config_path, *commands.source_types);
  if (config.ok() && !commands.config_path.empty()) {
    auto labels = config::ParseLabelFlags(commands.flags.labels);
    if (!labels.ok()) {
      config = labels.status();
    } else {
      config::ApplyLabels(*labels, &*config);
    }
  }
  if (!config.ok()) {
    std::cerr << "fingerprintd run: " << config.status().message() << "\n";
    return kExitUsage;
  }
  SetUpLogging(*config);
  auto rules = config->rules_dir.empty() ? rules::LoadEmbeddedRules(rules::EmbeddedTests::kSkip)
                                         : rules::LoadRuleDir(config->rules_dir);
  if (!rules.ok()) {
    spdlog::error("rules: {}", rules.status().message());
    return kExitUsage;
  }
  return RunDaemonWith(std::move(*config), std::move(*rules), *commands.source_types,
                       commands.audit_path);
}

int RunConfigCheck(const std::string& path, const config::SourceTypes& source_types) {
  auto config = config::LoadConfigFile(path, source_types);
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return kExitUsage;
  }
  if (!config->rules_dir.empty()) {
    auto rules = rules::LoadRuleDir(config->rules_dir);
    if (!rules.ok()) {
      std::cerr << rules.status().message() << "\n";
      return kExitUsage;
    }
  }
  std::cout << path << ": ok, " << config->sources.size() << " source(s)\n";
  return kExitOk;
}

}  // namespace

void AddRunCommands(CLI::App& app, RunCommands* commands) {
  config::RunFlags& flags = commands->flags;
  CLI::App* run = app.add_subcommand(
      "run", "Run the daemon: tail files (globs) and write incidents as they are decided");
  run->add_option("--config", commands->config_path,
                  "Config file (YAML); only --label goes with it");
  run->add_option("--rules", flags.rules_dir, "Rule directory (default: embedded pack)");
  // One value per occurrence, so `--label a=b PATH` leaves PATH a positional.
  // One value per occurrence, every occurrence kept; with --config they are
  // added to every source of the file (config::ApplyLabels).
  run->add_option("--label", flags.labels, "Source label k=v (deployment=NAME names it)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("--deployment-from", flags.deployment_from,
                  "RE2 over each path; its capture groups name the deployment");
  run->add_option("--checkpoint-dir", flags.checkpoint_dir,
                  "Keep checkpoints here (resume after a restart)");
  run->add_option("--incidents", flags.incidents, "JSONL incident log: - (stdout) or a file");
  run->add_option("--http", flags.http,
                  "HTTP listen address (default 127.0.0.1:9464; port 0 = any free port)");
  run->add_option("--http-token-file", flags.http_token_file,
                  "File holding the bearer token for /incidents and the status page (needed "
                  "for an --http address beyond loopback)");
  run->add_option("--start-at", flags.start_at, "For files never seen: end or beginning")
      ->check(CLI::IsMember({"end", "beginning"}));
  run->add_option("--input-format", flags.format,
                  "Envelope: auto, plain, cri, docker, journald, compose");
  run->add_option("paths", flags.paths, "Files or globs (`**` allowed), or - for stdin");
  // Hidden (a test tool, sink/audit_log.h): goes with --config too; needs a checkpoint dir.
  run->add_option("--audit", commands->audit_path,
                  "Write the lines committed by each checkpoint to FILE (bench/soak.sh)")
      ->group("");
  commands->run = run;

  CLI::App* config_cmd = app.add_subcommand("config", "Check a daemon config");
  config_cmd->require_subcommand(1);
  CLI::App* check = config_cmd->add_subcommand("check", "Exit 2 with file:line: key: reason");
  check->add_option("file", commands->check_path, "Config file (YAML)")->required();
  commands->config_check = check;
}

int DispatchRunCommands(const RunCommands& commands) {
  if (commands.config_check != nullptr && *commands.config_check) {
    return RunConfigCheck(commands.check_path, *commands.source_types);
  }
  if (commands.run != nullptr && *commands.run) {
    // With --config, the file says it all but the labels (a sidecar's pod,
    // namespace and node come from its args); any other flag would be ignored.
    std::string conflicting = commands.flags.paths.empty() ? "" : "PATH-OR-GLOB";
    for (const char* flag : {"--rules", "--deployment-from", "--checkpoint-dir", "--incidents",
                             "--start-at", "--input-format", "--http", "--http-token-file"}) {
      if (commands.run->count(flag) > 0)
        conflicting += (conflicting.empty() ? "" : ", ") + std::string(flag);
    }
    if (!commands.config_path.empty() && !conflicting.empty()) {
      std::cerr << "fingerprintd run: --config excludes " << conflicting
                << " (set them in the config file; only --label goes with --config)\n";
      return kExitUsage;
    }
    if (commands.config_path.empty() && commands.flags.paths.empty()) {
      std::cerr << "fingerprintd run: give --config FILE or at least one PATH-OR-GLOB\n";
      return kExitUsage;
    }
    return RunDaemon(commands);
  }
  return -1;
}

}  // namespace fingerprintd::daemon
