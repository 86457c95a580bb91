// How every piece of saved state (checkpoint, pipeline, parser, engine,
// correlator) is written as JSON text: the one call that never throws.
//
// nlohmann-json's default dump throws on a string that is not valid UTF-8.
// State should hold none (names are escaped where they enter the pipeline,
// common/utf8.h, and lines are cleaned by the parser), but a checkpoint must
// never be what ends the daemon: a stray byte is written as U+FFFD instead.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace fingerprintd {

inline std::string DumpState(const nlohmann::json& state) {
  return state.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// What a state that does not decode is told by, for the daemon's log: never
// its text (it holds evidence lines, and so maybe secrets), which nlohmann's
// parse errors quote ("last read: ..."); the byte where it stopped instead.
inline std::string StateErrorText(const nlohmann::json::exception& e) {
  if (const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&e)) {
    return "not valid JSON at byte " + std::to_string(parse->byte);
  }
  return e.what();
}

}  // namespace fingerprintd
