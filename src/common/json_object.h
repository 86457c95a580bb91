// The one JSON decoder for log records that arrive as JSON objects: Docker's
// json-file lines ({"log":"...\n","stream":"stdout","time":"..."}, read by
// parse/docker_json.h) and `jsonl` socket frames from Vector, Fluent Bit and
// the like (source/socket_framing.h). One decoder, so a record gives the same
// text whichever way it came in.
//
//   JsonObjectScanner scanner;                       // reused: its buffers grow once
//   bool ok = scanner.Scan(line, [&](std::string_view path, const JsonString& s) {
//     if (path == "log") s.AppendTo(&log);           // only what is wanted is unescaped
//   });
//
// - One validating pass over the bytes (RFC 8259 grammar), no DOM, no copy of
//   what is not wanted. Iterative: nesting depth costs heap, never stack.
// - The callback sees every string member outside arrays, with its dotted
//   path ("kubernetes.pod_name"; a nested empty key still adds its dot) and
//   its raw body, escapes already validated.
// - Escapes decode to UTF-8; a surrogate pair is joined; a lone surrogate
//   (shippers built on UTF-16 emit them) becomes U+FFFD, so a log line is
//   never lost for one. Bytes inside strings are not checked as UTF-8: the
//   parser downstream counts invalid ones.
//
// Threading: a scanner is used by one thread at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprintd {

// A string member's body between its quotes, its escapes valid.
struct JsonString {
  std::string_view raw;
  bool escaped = false;  // false: raw is the value itself
  // Appends the unescaped value to *out.
  void AppendTo(std::string* out) const;
};

class JsonObjectScanner {
 public:
  using OnString = std::function<void(std::string_view path, const JsonString& value)>;

  // Scans `record`, which must be exactly one JSON object (white space
  // around it allowed); false when it is not. on_string runs for the string
  // members met before that was known.
  bool Scan(std::string_view record, const OnString& on_string);

 private:
  void SkipSpace();
  bool Key();
  bool String(std::string_view* raw, bool* escaped);
  bool Scalar();
  bool Digits();
  bool Literal(std::string_view word);
  void Push(char c);
  void Pop();

  const char* p_ = nullptr;
  const char* end_ = nullptr;
  std::string path_;
  std::vector<char> stack_;       // '{' or '[' per open container
  std::vector<size_t> path_len_;  // path_'s length where each open container began
  int arrays_ = 0;
};

}  // namespace fingerprintd
