// libFuzzer target: the HTTP request path. The bytes are a raw request fed to
// Beast's request_parser<empty_body> with the limits src/http/http_server.cc
// sets (header_limit = max_request_bytes, body_limit 0); a parsed GET/HEAD
// target is split at '?' as the server does and handled by http::Api over a
// store holding one open incident. Invariants: the parser never consumes more
// bytes than it was given, every answer has a known status and a content
// type, and percent-decoding never grows the text.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz/fuzz_util.h"
#include "http/api.h"

namespace {

namespace bhttp = boost::beast::http;

constexpr int64_t kNow = 1'764'504'000'000'000;

struct World {
  World()
      : metrics("0.0.0-fuzz"),
        store(events, 500, 24LL * 3600 * 1'000'000),
        api(metrics, store, "0.0.0-fuzz") {
    auto rules = *fingerprintd::rules::LoadEmbeddedRules();
    fingerprintd::correlate::Incident incident;
    incident.incident_id = "fuzz0001";
    incident.rule = std::shared_ptr<const fingerprintd::rules::Rule>(rules, &rules->rules()[0]);
    incident.deployment = "qwen3-tp2";
    incident.expected = 2;
    incident.affected = 1;
    incident.ranks = {1};
    incident.first_seen_us = kNow - 2'000'000;
    incident.last_seen_us = kNow - 1'000'000;
    incident.revision = 1;
    store.OnIncident(fingerprintd::correlate::IncidentChange::kOpened, incident);
    api.SetReady(true, "");
  }
  fingerprintd::NullPipelineEvents events;
  fingerprintd::sink::Metrics metrics;
  fingerprintd::sink::IncidentStore store;
  fingerprintd::http::Api api;
};

void Check(const fingerprintd::http::Response& response) {
  FUZZ_CHECK(response.status >= 200 && response.status < 600);
  FUZZ_CHECK(!response.content_type.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = new World();
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const size_t max_request_bytes = fingerprintd::http::ServerOptions{}.max_request_bytes;

  // The raw bytes as path?query straight to the handler (what a parsed target can hold).
  size_t q = bytes.find('?');
  Check(world->api.Handle(
      {"GET", bytes.substr(0, q),
       q == std::string_view::npos ? std::string_view() : bytes.substr(q + 1), ""},
      kNow));
  FUZZ_CHECK(fingerprintd::http::PercentDecode(bytes).size() <= bytes.size());

  // The same bytes as a request on the wire, possibly several (keep-alive).
  std::string_view wire = bytes;
  for (int requests = 0; requests < 4 && !wire.empty(); ++requests) {
    bhttp::request_parser<bhttp::empty_body> parser;
    parser.header_limit(static_cast<uint32_t>(max_request_bytes));
    parser.body_limit(0);
    boost::beast::error_code ec;
    size_t used = 0;
    while (!parser.is_done() && used < wire.size()) {
      size_t n = parser.put(boost::asio::buffer(wire.data() + used, wire.size() - used), ec);
      FUZZ_CHECK(n <= wire.size() - used);
      used += n;
      if (ec == bhttp::error::need_more) {
        ec = {};
        break;  // the rest of the request never came: the server times out
      }
      if (ec || n == 0) break;
    }
    if (!parser.is_done()) {
      if (!ec) parser.put_eof(ec);
      break;
    }
    wire.remove_prefix(used);
    const auto& request = parser.get();
    bool head = request.method() == bhttp::verb::head;
    if (request.method() != bhttp::verb::get && !head) continue;
    std::string_view target(request.target().data(), request.target().size());
    size_t mark = target.find('?');
    fingerprintd::http::Response response = world->api.Handle(
        {head ? "HEAD" : "GET", target.substr(0, mark),
         mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1), ""},
        kNow);
    Check(response);
  }
  return 0;
}
