// A minimal decoder for Docker json-file records:
//   {"log":"text\n","stream":"stdout","time":"2019-01-01T11:11:11.111111111Z"}
//
// Hand-written rather than a JSON library because it runs on every line of a
// Docker source: it decodes only the three fields it needs (other members,
// such as "attrs" objects, are skipped) and unescapes "log" into a reused
// buffer, so a decoded line costs no allocation once the buffer has grown.
//
// Threading: pure functions; the caller owns the output buffer.
#pragma once

#include <string>
#include <string_view>

namespace fingerprintd::parse {

struct DockerFields {
  std::string_view stream;  // "stdout" / "stderr" (raw, as in the line)
  std::string_view time;    // RFC 3339 text (raw)
};

// Decodes one record. The unescaped "log" value replaces *log. Returns false
// when the line is not a JSON object with a string "log" member, or has an
// invalid escape.
bool DecodeDockerJson(std::string_view line, std::string* log, DockerFields* fields);

// Appends the JSON-unescaped form of `escaped` (the inside of a string literal,
// without quotes) to *out: \" \\ \/ \b \f \n \r \t and \uXXXX including
// surrogate pairs (to UTF-8). Returns false on an invalid escape.
bool AppendJsonUnescaped(std::string_view escaped, std::string* out);

}  // namespace fingerprintd::parse
