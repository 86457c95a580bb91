// Redactor: masks secrets in text before it leaves the node: the incident
// log, /incidents, the status page, the Alertmanager payload, replay's output
// and the daemon's own log all pass what they print through one.
//
// Log lines carry secrets by accident: an exception that prints a presigned
// S3 URL, a request dump with its `Authorization: Bearer` header, a model
// URL with a password in it, `--hf-token hf_...` echoed by a launcher. The
// incident must still say what failed, so only the secret itself is
// replaced, by `[redacted:<kind>]`, which also shows that something was.
//
//   auto redactor = Redactor::Create(Redactor::Defaults());       // or + the config's
//   std::map<std::string, uint64_t> counts;
//   redactor->Redact(&text, &counts);   // counts["hf_token"] == 1
//
// A pattern is an RE2 with at most one capture group: the group is what is
// masked (the value after `password=`), or the whole match without one.
// Patterns apply in order, each to the text the previous ones left; a mask
// is never matched again (no pattern's secret may contain '[').
//
// Threading: Redact is const and thread-safe (RE2 is).
#pragma once

#include <re2/re2.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fingerprintd/status.h"

namespace fingerprintd {

struct RedactionPattern {
  std::string kind;   // the mask's name and the metric's label: [a-z0-9_]+
  std::string regex;  // RE2, at most one capture group
};

class Redactor {
 public:
  // The built-in patterns: hf_token, bearer, authorization, aws_access_key_id,
  // url_signature (presigned URLs' signatures, credentials and tokens),
  // url_password (user-info), secret_argument (token=, api_key=, password=,
  // --hf-token X and the like).
  static std::vector<RedactionPattern> Defaults();

  // InvalidArgumentError naming the pattern (by index and kind) and why.
  static StatusOr<std::shared_ptr<const Redactor>> Create(
      const std::vector<RedactionPattern>& patterns);

  // Masks every secret in *text; adds what was masked, by kind, to *counts
  // (optional). Returns how many were masked.
  size_t Redact(std::string* text, std::map<std::string, uint64_t>* counts = nullptr) const;

  // The reason `pattern` cannot be used, "" when it can.
  static std::string Problem(const RedactionPattern& pattern);

 private:
  struct Compiled {
    std::string kind;
    std::unique_ptr<RE2> re;
  };
  std::vector<Compiled> patterns_;
};

}  // namespace fingerprintd
