// Api: see api.h for the paths.
#include "http/api.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

#include "common/hash.h"
#include "parse/time_util.h"

namespace fingerprintd::http {

namespace {

Response Text(int status, std::string body) {
  return Response{status, "text/plain; charset=utf-8", std::move(body), ""};
}

// `since`: RFC 3339 ("2026-11-30T12:00:00Z") or Unix seconds ("1764504000").
bool ParseSince(std::string_view text, int64_t* out_us) {
  int64_t seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && end == text.data() + text.size()) {
    // Beyond this the microseconds overflow int64 (found by tests/fuzz/http_fuzz.cc).
    constexpr int64_t kMaxSeconds = INT64_MAX / 1'000'000;
    if (seconds > kMaxSeconds || seconds < -kMaxSeconds) return false;
    *out_us = seconds * 1'000'000;
    return true;
  }
  int32_t offset_s = 0;
  return !text.empty() && parse::ParseRfc3339(text, out_us, &offset_s) == text.size();
}

}  // namespace

std::string PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && HexDigitValue(text[i + 1]) >= 0 &&
               HexDigitValue(text[i + 2]) >= 0) {
      out += static_cast<char>(HexDigitValue(text[i + 1]) * 16 + HexDigitValue(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

Api::Api(sink::Metrics& metrics, sink::IncidentStore& store, std::string version)
    : metrics_(metrics), store_(store), version_(std::move(version)) {}

void Api::SetReady(bool ready, std::string reason) {
  ready_ = ready;
  not_ready_reason_ = std::move(reason);
}

bool Api::Authorized(const Request& request) const {
  if (token_.empty() || request.path == "/healthz" || request.path == "/readyz") return true;
  if (request.path == "/metrics" && !metrics_auth_) return true;
  constexpr std::string_view kScheme = "Bearer ";
  std::string_view given = request.authorization;
  if (given.size() < kScheme.size() ||
      !std::equal(kScheme.begin(), kScheme.end(), given.begin(),
                  [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
    return false;
  }
  given.remove_prefix(kScheme.size());
  // Compared in time independent of where they differ.
  unsigned char differ = given.size() == token_.size() ? 0 : 1;
  for (size_t i = 0; i < token_.size(); ++i) {
    differ |= static_cast<unsigned char>(token_[i] ^ (i < given.size() ? given[i] : 0));
  }
  return differ == 0;
}

Response Api::Handle(const Request& request, int64_t now_us) {
  if (!Authorized(request)) {
    Response denied = Text(401, "unauthorized: this path needs Authorization: Bearer <token>\n");
    denied.www_authenticate = "Bearer realm=\"fingerprintd\"";
    return denied;
  }
  if (request.path == "/metrics") {
    if (server_stats_ != nullptr) {
      const ServerStats& stats = *server_stats_;
      metrics_.SetHttpRequests("answered", stats.requests);
      metrics_.SetHttpRequests("bad_request", stats.bad_requests);
      metrics_.SetHttpRequests("refused", stats.refused);
      metrics_.SetHttpRequests("evicted_idle", stats.evicted_idle);
      metrics_.SetHttpRequests("evicted_slow", stats.evicted_slow);
      metrics_.SetHttpRequests("timeout", stats.timeouts);
    }
    return Response{200, "text/plain; version=0.0.4; charset=utf-8", metrics_.Serialize(now_us),
                    ""};
  }
  if (request.path == "/incidents") return Incidents(request.query);
  if (request.path == "/healthz") return Text(200, "ok\n");
  if (request.path == "/readyz") {
    return ready_ ? Text(200, "ready\n") : Text(503, "not ready: " + not_ready_reason_ + "\n");
  }
  if (request.path == "/") {
    return Response{200, "text/html; charset=utf-8",
                    RenderStatusPage(store_.Query({}), sources_, now_us, version_), ""};
  }
  return Text(404, "not found; try /, /metrics, /incidents, /healthz, /readyz\n");
}

Response Api::Incidents(std::string_view query) {
  sink::IncidentQuery filter;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1));
    if (key == "deployment") {
      filter.deployment = value;
    } else if (key == "since") {
      if (!ParseSince(value, &filter.since_us)) {
        return Text(400, "since: '" + value +
                             "' is neither RFC 3339 (2026-11-30T12:00:00Z) nor Unix seconds\n");
      }
    } else if (key == "signature") {
      filter.signature = value;
    } else if (key == "id") {
      filter.incident_id = value;
    } else {
      return Text(400, "unknown parameter '" + key + "' (deployment, since, signature, id)\n");
    }
  }
  return Response{200, "application/json", sink::IncidentsToJsonArray(store_.Query(filter)), ""};
}

}  // namespace fingerprintd::http
