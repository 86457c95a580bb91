// Docker json-file records:
//   {"log":"text\n","stream":"stdout","time":"2019-01-01T11:11:11.111111111Z"}
// read with the one JSON decoder of log records (common/json_object.h, the
// same as `jsonl` socket frames): the three members it needs are unescaped
// into a reused record, every other member (an "attrs" object) validated and
// skipped, so a decoded line costs no allocation once the buffers have grown.
//
// Threading: the caller owns the scanner and the record.
#pragma once

#include <string>
#include <string_view>

#include "common/json_object.h"

namespace fingerprintd::parse {

struct DockerRecord {
  std::string log;     // unescaped, its trailing "\n" kept
  std::string stream;  // "stdout" / "stderr"; "" when absent
  std::string time;    // RFC 3339 text; "" when absent
};

// Decodes one record into *out (overwritten). False when the line is not a
// JSON object with a string "log" member.
bool DecodeDockerJson(std::string_view line, JsonObjectScanner& scanner, DockerRecord* out);

}  // namespace fingerprintd::parse
