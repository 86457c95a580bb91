// The status page (`GET /`): one self-contained HTML document — inline CSS, no
// script, no external asset, refreshed by the browser every 5 s — for an
// on-call engineer who opens the sidecar's port during an incident and asks
// what failed, since when, and what to do.
//
// Open incidents come first, the most severe, then the longest open, each a
// block (`<section class="incident" data-incident="ID">`): a headline (its
// severity and title; class, deployment, workers, occurrences, confidence,
// rule and a link to its JSON, /incidents?id=ID), "open for N min, last
// failure N s ago", the failure's line (the exception, or the first evidence
// line when there is no traceback), the incident it regressed from (linked),
// key facts (device, capability, model, kernel), "seen in N deployments" when
// its signature is open elsewhere, what it provoked ("Then, as a
// consequence:"), why (the explanation), the remedies under "What to do:",
// and its evidence (file:line and text, the first kMaxEvidenceShown lines).
// Then per deployment a grid: one row per open or recent incident, one cell
// per rank 0..expected-1, a failed rank in red (`<td class="rank failed"
// data-rank="N">`), a rank that failed only as a consequence in amber; a
// deployment whose last close was a healthy start says "healthy again since" and
// its grid fades. Then the recent closed incidents (id linked, deployment,
// rule, failure line, why and when closed, the incident it regressed from,
// linked). Last, what the daemon reads: each source with its state and when
// it last gave a line, what cannot be read first, at most kMaxSourceRows
// rows. Every text from a log or a rule is HTML-escaped.
//
// Threading: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sink/incident_store.h"
#include "source/source_status.h"

namespace fingerprintd::http {

// Rows beyond this are counted, not listed (a node may tail 10,000 files).
inline constexpr size_t kMaxSourceRows = 200;

std::string RenderStatusPage(const std::vector<const sink::StoredIncident*>& incidents,
                             const std::vector<source::SourceStatus>& sources, int64_t now_us,
                             std::string_view version);

// &, <, >, " and ' as entities.
std::string HtmlEscape(std::string_view text);

}  // namespace fingerprintd::http
