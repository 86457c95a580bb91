// The status page: see status_page.h.
#include "http/status_page.h"

#include <algorithm>
#include <map>
#include <set>

namespace fingerprintd::http {

namespace {

using sink::StoredIncident;

// A grid wider than this is shown as its first kMaxGridRanks ranks and a count.
constexpr int kMaxGridRanks = 512;
// Evidence lines shown per incident, and characters per line (all are in its JSON).
constexpr size_t kMaxEvidenceShown = 6;
constexpr size_t kMaxEvidenceChars = 300;

constexpr char kStyle[] = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1b1b;background:#fafafa}
h1{font-size:1.3em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}
.meta{color:#666}table{border-collapse:collapse;margin:.3em 0}
th,td{padding:.25em .6em;text-align:left;vertical-align:top;border-bottom:1px solid #ddd}
th{background:#eee}.sev-critical,.sev-error{color:#a40000;font-weight:600}
.sev-warning{color:#8a5a00}.none{color:#666;font-style:italic}
table.grid td.rank{width:2em;height:2em;padding:0;text-align:center;vertical-align:middle;font-size:12px;
border:1px solid #fff;background:#cfe8cf}
table.grid td.rank.failed{background:#d9372b;color:#fff;font-weight:600}
table.grid tr.closed td.rank.failed{background:#e9a39d}
table.grid td.rank.consequence{background:#f3c969}
table.grid tr.closed td.rank.consequence{background:#f7e2b0}
table.grid.healthy tr.closed td.rank.failed,table.grid.healthy tr.closed td.rank.consequence{background:#dfe6df;color:#555;font-weight:400}
p.healthy{color:#1d6b1d;font-weight:600;margin:.2em 0}
section.incident{border:1px solid #ddd;border-left:4px solid #d9372b;background:#fff;padding:.4em .9em;margin:.6em 0;max-width:1200px}
section.incident h3{margin:.2em 0;font-size:1.05em}section.incident p{margin:.25em 0}
div.remedies ol,div.evidence ul,div.consequences ul{margin:.2em 0}
div.evidence li{overflow-wrap:anywhere}code.where{color:#555}
table#closed td{overflow-wrap:anywhere}table#closed td:nth-child(4){max-width:28em}
table.grid td.label{font-size:12px;white-space:nowrap}
ul{margin:.2em 0;padding-left:1.2em}
tr.problem td{color:#a40000}
code{overflow-wrap:anywhere}
)";

std::string Severity(const correlate::Incident& incident) {
  std::string name(rules::SeverityName(incident.severity));
  return "<span class=\"sev-" + name + "\">" + name + "</span>";
}

std::string Time(int64_t us) { return HtmlEscape(correlate::FormatRfc3339(us)); }

std::string Workers(const correlate::Incident& incident) {
  std::string out = std::to_string(incident.affected) + "/" + std::to_string(incident.expected);
  if (!incident.ranks.empty()) {
    out += " (ranks ";
    for (size_t i = 0; i < incident.ranks.size(); ++i) {
      out += (i ? "," : "") + std::to_string(incident.ranks[i]);
    }
    out += ")";
  }
  return out;
}

// The facts an operator checks first: which GPU, which model, which kernel.
std::string KeyFacts(const correlate::Incident& incident) {
  std::string out;
  for (const char* name : {"device_name", "compute_capability", "model", "kernel"}) {
    auto it = incident.facts.find(name);
    if (it == incident.facts.end()) continue;
    out += std::string(out.empty() ? "" : " · ") + name + ": " + HtmlEscape(it->second);
  }
  return out;
}

// One failure seen in many places: per signature, the deployments with an
// incident of it (open or recently closed) and since when.
struct SignatureSeen {
  std::set<std::string> deployments;
  int64_t since_us = 0;
};
std::map<std::string, SignatureSeen> BySignature(const std::vector<const StoredIncident*>& all) {
  std::map<std::string, SignatureSeen> out;
  for (const StoredIncident* s : all) {
    const correlate::Incident& i = s->incident;
    if (i.signature.empty()) continue;
    SignatureSeen& seen = out[i.signature];
    seen.deployments.insert(i.deployment);
    if (i.first_seen_us != 0 && (seen.since_us == 0 || i.first_seen_us < seen.since_us)) {
      seen.since_us = i.first_seen_us;
    }
  }
  return out;
}

// "45 s", "7 min", "2 h 5 min", "3 d 4 h": how long, as an operator says it.
std::string Duration(int64_t us) {
  const int64_t s = std::max<int64_t>(us, 0) / 1'000'000;
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return std::to_string(s / 60) + " min";
  if (s < 86400) return std::to_string(s / 3600) + " h " + std::to_string(s / 60 % 60) + " min";
  return std::to_string(s / 86400) + " d " + std::to_string(s / 3600 % 24) + " h";
}

// The incident's JSON on this daemon, as a link showing its id.
std::string IncidentLink(const std::string& id) {
  return "<a href=\"/incidents?id=" + HtmlEscape(id) + "\"><code>" + HtmlEscape(id) + "</code></a>";
}

// The failure in one line: the exception when there is a traceback, else the
// first evidence line (an NCCL watchdog, a C++ abort).
std::string FailureLine(const correlate::Incident& incident) {
  if (!incident.exception.empty()) return incident.exception;
  if (!incident.evidence.empty()) return incident.evidence.front().text;
  return "";
}

// What was read, capped: file:line and the text.
void Evidence(const correlate::Incident& incident, std::string& out) {
  if (incident.evidence.empty()) return;
  const size_t shown = std::min(incident.evidence.size(), kMaxEvidenceShown);
  out += "<div class=\"evidence\"><b>Evidence</b> (" + std::to_string(incident.evidence.size()) +
         " line(s)" +
         (shown < incident.evidence.size() ? ", the first " + std::to_string(shown) : "") +
         "; all in its JSON):<ul>";
  for (size_t k = 0; k < shown; ++k) {
    const correlate::IncidentEvidence& e = incident.evidence[k];
    std::string text =
        e.text.size() > kMaxEvidenceChars ? e.text.substr(0, kMaxEvidenceChars) + " …" : e.text;
    out += "<li><code class=\"where\">" + HtmlEscape(e.source) + ":" + std::to_string(e.line) +
           "</code> <code>" + HtmlEscape(text) + "</code></li>";
  }
  out += "</ul></div>\n";
}

void Consequences(const correlate::Incident& i, std::string& out) {
  if (i.consequences.empty()) return;
  out += "<div class=\"consequences\"><b>Then, as a consequence:</b><ul>";
  for (const correlate::IncidentConsequence& c : i.consequences) {
    out += "<li class=\"consequence\" data-rule=\"" + HtmlEscape(c.rule->id) + "\">" +
           HtmlEscape(c.rule->title) + " (<code>" + HtmlEscape(c.rule->id) + "</code>, " +
           HtmlEscape(std::string(rules::SeverityName(c.rule->severity))) + ")";
    if (!c.ranks.empty()) {
      out += ", ranks ";
      for (size_t k = 0; k < c.ranks.size(); ++k)
        out += (k ? "," : "") + std::to_string(c.ranks[k]);
    } else if (!c.workers.empty()) {
      out += ", " + HtmlEscape(c.workers.front());
      if (c.workers.size() > 1) out += " and " + std::to_string(c.workers.size() - 1) + " more";
    }
    if (c.first_seen_us != 0) out += ", from " + Time(c.first_seen_us);
    if (!c.evidence.source.empty()) {
      out += "<br><code>" + HtmlEscape(c.evidence.source) + ":" + std::to_string(c.evidence.line) +
             "</code> <code>" + HtmlEscape(c.evidence.text) + "</code>";
    }
    out += "</li>";
  }
  out += "</ul></div>\n";
}

// Open incidents, the most severe first, then the longest open; each a block
// that answers what, since when, what to do and what was read.
void OpenIncidents(std::vector<const StoredIncident*> open,
                   const std::map<std::string, SignatureSeen>& signatures, int64_t now_us,
                   std::string& out) {
  out += "<h2>Open incidents (" + std::to_string(open.size()) + ")</h2>\n";
  if (open.empty()) {
    out += "<p class=\"none\">No open incident.</p>\n";
    return;
  }
  std::stable_sort(open.begin(), open.end(), [](const StoredIncident* a, const StoredIncident* b) {
    const auto& x = a->incident;
    const auto& y = b->incident;
    if (x.severity != y.severity) return x.severity > y.severity;
    return x.first_seen_us < y.first_seen_us;
  });
  for (const StoredIncident* s : open) {
    const correlate::Incident& i = s->incident;
    out += "<section class=\"incident\" data-incident=\"" + HtmlEscape(i.incident_id) + "\">\n";
    out += "<h3>" + Severity(i) + " " + HtmlEscape(i.rule->title) + "</h3>\n";
    out += "<p class=\"headline\">" + HtmlEscape(i.rule->rule_class) + " · deployment <b>" +
           HtmlEscape(i.deployment) + "</b> · workers " + Workers(i) +
           " · <span class=\"occurrences\">" + std::to_string(i.occurrences) +
           "</span> occurrence(s) · " +
           HtmlEscape(std::string(rules::ConfidenceName(i.confidence))) + " · rule <code>" +
           HtmlEscape(i.rule->id) + "</code> · " + IncidentLink(i.incident_id) + " (JSON)</p>\n";
    out += "<p class=\"when\">open for <b class=\"open-for\">" +
           Duration(now_us - i.first_seen_us) + "</b> (since " + Time(i.first_seen_us) +
           "), last failure <b>" + Duration(now_us - i.last_seen_us) + " ago</b> (" +
           Time(i.last_seen_us) + ")</p>\n";
    if (const std::string line = FailureLine(i); !line.empty()) {
      out += "<p><code class=\"exception\">" + HtmlEscape(line) + "</code></p>\n";
    }
    if (!i.regressed_from.empty()) {
      out += "<p class=\"regressed\">regressed from " + IncidentLink(i.regressed_from) + "</p>\n";
    }
    if (const std::string facts = KeyFacts(i); !facts.empty()) {
      out += "<p class=\"facts\">" + facts + "</p>\n";
    }
    if (auto seen = signatures.find(i.signature);
        seen != signatures.end() && seen->second.deployments.size() > 1) {
      out += "<p class=\"signature\">seen in " + std::to_string(seen->second.deployments.size()) +
             " deployments" +
             (seen->second.since_us != 0 ? " since " + Time(seen->second.since_us) : "") +
             " · <a href=\"/incidents?signature=" + HtmlEscape(i.signature) + "\"><code>" +
             HtmlEscape(i.signature) + "</code></a></p>\n";
    }
    // What it provoked, under its cause: the failures that are not a page of their own.
    Consequences(i, out);
    if (!i.explanation.empty()) {
      out += "<p class=\"why\"><b>Why:</b> " + HtmlEscape(i.explanation) + "</p>\n";
    }
    out += "<div class=\"remedies\"><b>What to do:</b>";
    if (i.remediation.empty()) {
      out += " <span class=\"none\">the rule names no remedy</span>";
    } else {
      out += "<ol>";
      for (const std::string& step : i.remediation) out += "<li>" + HtmlEscape(step) + "</li>";
      out += "</ol>";
    }
    out += "</div>\n";
    Evidence(i, out);
    out += "</section>\n";
  }
}

// One row of a deployment's grid: a cell per rank, failed ones marked.
void GridRow(const StoredIncident& s, int width, std::string& out) {
  const correlate::Incident& i = s.incident;
  std::set<int32_t> failed(i.ranks.begin(), i.ranks.end());
  // Ranks that failed only as a consequence of the cause's, and how.
  std::map<int32_t, std::string> provoked;
  for (const correlate::IncidentConsequence& c : i.consequences) {
    for (int32_t rank : c.ranks) {
      if (failed.count(rank) == 0) provoked.emplace(rank, c.rule->id);
    }
  }
  out += std::string("<tr class=\"") + (s.open ? "open" : "closed") + "\"><td class=\"label\">" +
         HtmlEscape(i.rule->id) + (s.open ? "" : " (closed)") + "</td>";
  for (int rank = 0; rank < width; ++rank) {
    const bool is_failed = failed.count(rank) > 0;
    auto consequence = provoked.find(rank);
    const std::string kind = is_failed                       ? " failed"
                             : consequence != provoked.end() ? " consequence"
                                                             : "";
    const std::string title = is_failed ? ": failed (the cause)"
                              : consequence != provoked.end()
                                  ? ": " + HtmlEscape(consequence->second) + " (a consequence)"
                                  : ": no failure seen";
    out += "<td class=\"rank" + kind + "\" data-rank=\"" + std::to_string(rank) +
           "\" title=\"rank " + std::to_string(rank) + title + "\">" + std::to_string(rank) +
           "</td>";
  }
  int unnamed = i.affected - static_cast<int>(i.ranks.size());
  out += "<td class=\"label\">" + Workers(i);
  if (unnamed > 0) out += "; " + std::to_string(unnamed) + " worker(s) without a known rank";
  if (i.expected > width) out += "; grid shows the first " + std::to_string(width);
  out += "</td></tr>\n";
}

void DeploymentGrids(const std::vector<const StoredIncident*>& incidents, std::string& out) {
  std::map<std::string, std::vector<const StoredIncident*>> by_deployment;
  for (const StoredIncident* s : incidents) by_deployment[s->incident.deployment].push_back(s);
  out += "<h2>Ranks per deployment</h2>\n";
  if (by_deployment.empty()) {
    out += "<p class=\"none\">No incident yet.</p>\n";
    return;
  }
  for (const auto& [deployment, list] : by_deployment) {
    int width = 0;
    for (const StoredIncident* s : list) {
      width = std::max({width, s->incident.expected, s->incident.affected});
      if (!s->incident.ranks.empty()) width = std::max(width, s->incident.ranks.back() + 1);
    }
    width = std::min(width, kMaxGridRanks);
    // Recovered: nothing open, and the last close was the deployment starting healthy.
    const StoredIncident* last_closed = nullptr;
    bool any_open = false;
    for (const StoredIncident* s : list) {
      any_open |= s->open;
      if (!s->open &&
          (last_closed == nullptr || s->incident.closed_us > last_closed->incident.closed_us)) {
        last_closed = s;
      }
    }
    const bool healthy = !any_open && last_closed != nullptr &&
                         last_closed->incident.closed == correlate::CloseReason::kRecovered;
    out += "<h3 class=\"deployment\">" + HtmlEscape(deployment) + "</h3>\n";
    if (healthy) {
      const int64_t since = last_closed->incident.closed_us;
      out += "<p class=\"healthy\">healthy again" + (since != 0 ? " since " + Time(since) : "") +
             "</p>\n";
    }
    out += std::string("<table class=\"grid") + (healthy ? " healthy" : "") +
           "\" data-deployment=\"" + HtmlEscape(deployment) + "\">\n";
    for (const StoredIncident* s : list) GridRow(*s, width, out);
    out += "</table>\n";
  }
}

void ClosedIncidentsTable(const std::vector<const StoredIncident*>& closed, std::string& out) {
  out += "<h2>Recent closed incidents (" + std::to_string(closed.size()) + ")</h2>\n";
  if (closed.empty()) {
    out += "<p class=\"none\">None.</p>\n";
    return;
  }
  out +=
      "<table id=\"closed\"><tr><th>Incident</th><th>Deployment</th><th>Rule</th>"
      "<th>Failure</th><th>Workers</th><th>Open since</th><th>Occurrences</th><th>Closed</th>"
      "<th>Regressed from</th></tr>\n";
  for (const StoredIncident* s : closed) {
    const correlate::Incident& i = s->incident;
    out += "<tr data-incident=\"" + HtmlEscape(i.incident_id) + "\"><td>" +
           IncidentLink(i.incident_id) + "</td><td>" + HtmlEscape(i.deployment) +
           "</td><td><code>" + HtmlEscape(i.rule->id) + "</code><br>" +
           HtmlEscape(i.rule->rule_class) + "</td><td><code class=\"exception\">" +
           HtmlEscape(FailureLine(i)) + "</code></td><td>" + Workers(i) + "</td><td>" +
           Time(i.first_seen_us) + "</td><td>" + std::to_string(i.occurrences) + "</td><td>" +
           HtmlEscape(std::string(correlate::CloseReasonName(i.closed)));
    if (i.closed_us != 0) out += " at " + Time(i.closed_us);
    out += "</td><td>" + (i.regressed_from.empty() ? "" : IncidentLink(i.regressed_from)) +
           "</td></tr>\n";
  }
  out += "</table>\n";
}

// What the daemon reads: problems first, then by name (rows keep their place
// across the page's refreshes).
void SourcesTable(std::vector<source::SourceStatus> sources, int64_t now_us, std::string& out) {
  out += "<h2>Sources (" + std::to_string(sources.size()) + ")</h2>\n";
  if (sources.empty()) {
    out += "<p class=\"none\">Nothing is read yet.</p>\n";
    return;
  }
  std::stable_sort(sources.begin(), sources.end(),
                   [](const source::SourceStatus& a, const source::SourceStatus& b) {
                     if (a.problem != b.problem) return a.problem;
                     return a.name < b.name;
                   });
  out +=
      "<table id=\"sources\"><tr><th>Source</th><th>Type</th><th>State</th>"
      "<th>Last line</th></tr>\n";
  const size_t shown = std::min(sources.size(), kMaxSourceRows);
  for (size_t n = 0; n < shown; ++n) {
    const source::SourceStatus& row = sources[n];
    out += std::string("<tr class=\"") + (row.problem ? "problem" : "source") + "\"><td><code>" +
           HtmlEscape(row.name) + "</code></td><td>" + HtmlEscape(row.type) + "</td><td>" +
           HtmlEscape(row.state) + "</td><td>";
    if (row.last_line_us == 0) {
      out += "<span class=\"none\">none since start</span>";
    } else {
      out += Time(row.last_line_us) + " (" +
             std::to_string(std::max<int64_t>(0, now_us - row.last_line_us) / 1'000'000) +
             " s ago)";
    }
    out += "</td></tr>\n";
  }
  out += "</table>\n";
  if (shown < sources.size()) {
    out += "<p class=\"meta\">and " + std::to_string(sources.size() - shown) +
           " more (fingerprintd_sources_open and fingerprintd_source_lag_bytes on /metrics)</p>\n";
  }
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderStatusPage(const std::vector<const StoredIncident*>& incidents,
                             const std::vector<source::SourceStatus>& sources, int64_t now_us,
                             std::string_view version) {
  std::vector<const StoredIncident*> open, closed;
  for (const StoredIncident* s : incidents) (s->open ? open : closed).push_back(s);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"refresh\" content=\"5\">"
      "<meta name=\"viewport\" content=\"width=device-width\">"
      "<title>fingerprintd: " +
      std::to_string(open.size()) + " open incident(s)</title><style>" + kStyle +
      "</style></head><body>\n<h1>fingerprintd</h1>\n<p class=\"meta\">version " +
      HtmlEscape(version) + " · " + Time(now_us) +
      " · <a href=\"/incidents\">/incidents</a> · <a href=\"/metrics\">/metrics</a></p>\n";
  OpenIncidents(open, BySignature(incidents), now_us, out);
  DeploymentGrids(incidents, out);
  ClosedIncidentsTable(closed, out);
  SourcesTable(sources, now_us, out);
  out += "</body></html>\n";
  return out;
}

}  // namespace fingerprintd::http
