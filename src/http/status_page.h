// The status page (`GET /`): one self-contained HTML document — inline CSS, no
// script, no external asset, refreshed by the browser every 5 s — for an
// operator who opens the sidecar's port during an incident.
//
// It shows the open incidents, the most severe first, then the longest open
// (rule, id, exception line, class, severity, confidence, workers, open since,
// last hit, occurrences, key facts: device, capability, model, kernel; the
// incident it regressed from; remediation), then per deployment a grid: one row per
// open or recent incident, one cell per rank 0..expected-1, a failed rank in
// red (`<td class="rank failed" data-rank="N">`), so "every worker failed the
// same way" and "one rank failed" look different at a glance; ranks the logs
// never named are counted beside the grid. Then the recent closed incidents
// with their occurrences and why and when they closed. Every text from a log or a rule is
// HTML-escaped.
//
// Threading: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sink/incident_store.h"

namespace fingerprintd::http {

std::string RenderStatusPage(const std::vector<const sink::StoredIncident*>& incidents,
                             int64_t now_us, std::string_view version);

// &, <, >, " and ' as entities.
std::string HtmlEscape(std::string_view text);

}  // namespace fingerprintd::http
