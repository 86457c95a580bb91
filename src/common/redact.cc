// Redactor: see redact.h.
#include "common/redact.h"

#include <string_view>

#include "common/re2_limits.h"

namespace fingerprintd {

// The names a secret goes by in key=value, key: value and JSON.
const std::string kSecretKey =
    R"((?i)\b(?:access[_-]?token|auth[_-]?token|hf[_-]?token|token|api[_-]?key|apikey|password|)"
    R"(passwd|client[_-]?secret|secret[_-]?key|secret))";

std::vector<RedactionPattern> Redactor::Defaults() {
  return {
      // Hugging Face user and organisation tokens.
      {"hf_token", R"(\b(hf_[A-Za-z0-9]{20,}))"},
      // Authorization headers (Bearer, Basic, token), then a bearer
      // credential printed anywhere else.
      {"authorization",
       R"((?i)\bauthorization["']?\s*[:=]\s*["']?(?:bearer|basic|token)\s+([A-Za-z0-9._~+/-]{6,}=*))"},
      // (without a scheme: the value alone, ending the header's value)
      {"authorization",
       R"((?i)\bauthorization["']?\s*[:=]\s*["']?([A-Za-z0-9._~+/-]{6,}=*)(?:["',;]|$))"},
      {"bearer", R"((?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*))"},
      // AWS access key ids (long-term AKIA, temporary ASIA).
      {"aws_access_key_id", R"(\b((?:AKIA|ASIA)[A-Z0-9]{16})\b)"},
      // Presigned URLs (S3, GCS, Azure SAS): the signature, credential and
      // token parameters.
      {"url_signature",
       R"((?i)[?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|signature|sig)=([^&\s'"<>\[]+))"},
      // A password in a URL's user-info (scheme://user:password@host).
      {"url_password", R"(\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@'"]+:([^/\s@'"\[]+)@)"},
      // token=, api_key=, password=, secret: (query strings, key=value
      // dumps, JSON, YAML): a quoted value whole, else up to a delimiter;
      // and the arguments --hf-token X, --api-key=X.
      {"secret_argument", kSecretKey + R"re(["']?\s*[=:]\s*"([^"\[]+)")re"},
      {"secret_argument", kSecretKey + R"re(["']?\s*[=:]\s*'([^'\[]+)')re"},
      {"secret_argument", kSecretKey + R"(["']?\s*[=:]\s*([^\s'",&;\[\]{}()<>]{4,}))"},
      {"secret_argument",
       R"((?i)--(?:hf-token|token|api-key|password|secret)(?:=|\s+)["']?([^\s'",&;\[\]{}()<>]{4,}))"},
  };
}

std::string Redactor::Problem(const RedactionPattern& pattern) {
  if (pattern.kind.empty()) return "kind: missing";
  for (char c : pattern.kind) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return "kind: only a-z, 0-9 and _, got '" + pattern.kind + "'";
    }
  }
  RE2 re(pattern.regex, BoundedRe2Options());
  if (!re.ok()) return "regex: " + re.error();
  if (std::string problem = Re2Problem(re); !problem.empty()) return "regex: " + problem;
  if (re.NumberOfCapturingGroups() > 1) {
    return "regex: at most one capture group (the secret), got " +
           std::to_string(re.NumberOfCapturingGroups());
  }
  return "";
}

StatusOr<std::shared_ptr<const Redactor>> Redactor::Create(
    const std::vector<RedactionPattern>& patterns) {
  auto redactor = std::make_shared<Redactor>();
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (std::string problem = Problem(patterns[i]); !problem.empty()) {
      return InvalidArgumentError("redaction pattern " + std::to_string(i) + " (" +
                                  patterns[i].kind + "): " + problem);
    }
    redactor->patterns_.push_back(
        {patterns[i].kind, std::make_unique<RE2>(patterns[i].regex, BoundedRe2Options())});
  }
  return std::shared_ptr<const Redactor>(std::move(redactor));
}

size_t Redactor::Redact(std::string* text, std::map<std::string, uint64_t>* counts) const {
  size_t masked = 0;
  for (const Compiled& p : patterns_) {
    const std::string mask = "[redacted:" + p.kind + "]";
    const bool group = p.re->NumberOfCapturingGroups() == 1;
    std::string out;
    std::string_view input(*text);
    size_t copied = 0, at = 0;
    size_t found = 0;
    const re2::StringPiece whole(input.data(), input.size());
    re2::StringPiece match[2];
    while (at <= input.size() &&
           p.re->Match(whole, at, input.size(), RE2::UNANCHORED, match, group ? 2 : 1)) {
      const re2::StringPiece secret = group ? match[1] : match[0];
      const size_t match_end =
          static_cast<size_t>(match[0].data() - input.data()) + match[0].size();
      if (secret.data() != nullptr && !secret.empty()) {
        const size_t begin = static_cast<size_t>(secret.data() - input.data());
        out.append(input.substr(copied, begin - copied));
        out += mask;
        copied = begin + secret.size();
        ++found;
      }
      at = match_end > at ? match_end : at + 1;
    }
    if (found == 0) continue;
    out.append(input.substr(copied));
    *text = std::move(out);
    masked += found;
    if (counts != nullptr) (*counts)[p.kind] += found;
  }
  return masked;
}

}  // namespace fingerprintd
