// The status page (`GET /`): one self-contained HTML document — inline CSS, no
// script, no external asset, refreshed by the browser every 5 s — for an
// operator who opens the sidecar's port during an incident.
//
// It shows the open incidents, the most severe first, then the longest open
// (rule, id, exception line, class, severity, confidence, workers, open since,
// last hit, occurrences, key facts: device, capability, model, kernel; the
// incident it regressed from), what to do under each across the table (no
// sideways scrolling), then per deployment a grid: one row per
// open or recent incident, one cell per rank 0..expected-1, a failed rank in
// red (`<td class="rank failed" data-rank="N">`), so "every worker failed the
// same way" and "one rank failed" look different at a glance; ranks the logs
// never named are counted beside the grid. Then the recent closed incidents
// with their occurrences and why and when they closed. Last, what the daemon
// reads: each source (a tailed file, a socket listener, stdin) with its state
// and when it last gave a line, what cannot be read first (the problems
// /readyz names), at most kMaxSourceRows rows. Every text from a log or a rule
// is HTML-escaped.
//
// Threading: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sink/incident_store.h"

namespace fingerprintd::http {

// One thing the daemon reads, as the page lists it.
struct SourceRow {
  std::string name;   // a file's path, a glob, "tcp:127.0.0.1:5170", "stdin"
  std::string type;   // file, tcp, unix, stdin
  std::string state;  // "reading", "deleted, still written: read on", "permission_denied (...)"
  int64_t last_line_us = 0;  // wall time it last gave a line; 0: none since the daemon started
  bool problem = false;      // it cannot be read (listed first, marked)
};

// Rows beyond this are counted, not listed (a node may tail 10,000 files).
inline constexpr size_t kMaxSourceRows = 200;

std::string RenderStatusPage(const std::vector<const sink::StoredIncident*>& incidents,
                             const std::vector<SourceRow>& sources, int64_t now_us,
                             std::string_view version);

// &, <, >, " and ' as entities.
std::string HtmlEscape(std::string_view text);

}  // namespace fingerprintd::http
