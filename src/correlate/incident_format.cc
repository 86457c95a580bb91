// Incident renderers: the JSON object of DESIGN.md §6 (field order fixed, so
// output is byte-identical across runs) and a text block for people.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "fingerprintd/correlate.h"

namespace fingerprintd::correlate {
namespace {

nlohmann::ordered_json TimeOrNull(int64_t time_us) {
  if (time_us == 0) return nullptr;
  return FormatRfc3339(time_us);
}

// Evidence text is for people and JSON: drop control bytes and invalid UTF-8
// so that one garbage byte in a log never breaks the incident line.
std::string Printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c);
      ++i;
      continue;
    }
    size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    }
    if (ok) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string FormatRfc3339(int64_t time_us) {
  int64_t secs = time_us / 1'000'000;
  int64_t micros = time_us % 1'000'000;
  if (micros < 0) {
    micros += 1'000'000;
    --secs;
  }
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  const std::chrono::year_month_day date{std::chrono::sys_days{std::chrono::days{days}}};
  char out[40];
  int n = std::snprintf(out, sizeof(out), "%04d-%02u-%02uT%02d:%02d:%02d",
                        static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                        static_cast<unsigned>(date.day()), static_cast<int>(rem / 3600),
                        static_cast<int>(rem / 60 % 60), static_cast<int>(rem % 60));
  if (micros != 0) {
    std::snprintf(out + n, sizeof(out) - n, ".%06lldZ", static_cast<long long>(micros));
  } else {
    std::snprintf(out + n, sizeof(out) - n, "Z");
  }
  return out;
}

void LatestIncidents::OnIncident(IncidentChange change, const Incident& incident) {
  if (change != IncidentChange::kClosed) ++emissions_;
  latest_[incident.incident_id] = incident;
}

std::string_view CloseReasonName(CloseReason reason) {
  switch (reason) {
    case CloseReason::kNone:
      return "open";
    case CloseReason::kRecovered:
      return "recovered";
    case CloseReason::kGone:
      return "gone";
    case CloseReason::kExpired:
      return "expired";
    case CloseReason::kEvicted:
      return "evicted";
    case CloseReason::kFolded:
      return "folded";
  }
  return "open";
}

std::string_view IncidentChangeName(IncidentChange change) {
  switch (change) {
    case IncidentChange::kOpened:
      return "opened";
    case IncidentChange::kUpdated:
      return "updated";
    case IncidentChange::kClosed:
      return "closed";
  }
  return "opened";
}

std::vector<Incident> LatestIncidents::Sorted() const {
  std::vector<Incident> out;
  for (const auto& [id, incident] : latest_) out.push_back(incident);
  std::sort(out.begin(), out.end(), [](const Incident& a, const Incident& b) {
    return std::tie(a.first_seen_us, a.deployment, a.rule->id, a.incident_id) <
           std::tie(b.first_seen_us, b.deployment, b.rule->id, b.incident_id);
  });
  return out;
}

std::string IncidentToJson(const Incident& incident) {
  using nlohmann::ordered_json;
  const rules::Rule& rule = *incident.rule;
  ordered_json j;
  j["schema"] = "fingerprintd/incident/v1";
  j["incident_id"] = incident.incident_id;
  j["rule"] = rule.id;
  j["class"] = rule.rule_class;
  j["severity"] = rules::SeverityName(incident.severity);
  j["confidence"] = rules::ConfidenceName(incident.confidence);
  j["title"] = rule.title;
  j["deployment"] = Printable(incident.deployment);
  ordered_json labels = ordered_json::object();
  for (const auto& [k, v] : incident.labels) labels[Printable(k)] = Printable(v);
  j["labels"] = labels;
  j["workers"] = {{"expected", incident.expected},
                  {"affected", incident.affected},
                  {"ranks", incident.ranks},
                  {"labels", incident.workers}};
  j["identical"] = incident.identical;
  j["first_seen"] = TimeOrNull(incident.first_seen_us);
  j["last_seen"] = TimeOrNull(incident.last_seen_us);
  j["occurrences"] = incident.occurrences;
  ordered_json stages = ordered_json::array();
  for (const IncidentStage& s : incident.stages) {
    ordered_json lines = ordered_json::array();
    for (const auto& [source, line] : s.lines) {
      lines.push_back({{"source", Printable(source)}, {"line", line}});
    }
    stages.push_back(
        {{"id", s.id}, {"required", s.required}, {"matched", s.matched}, {"evidence", lines}});
  }
  j["stages"] = stages;
  ordered_json facts = ordered_json::object();
  for (const auto& [k, v] : incident.facts) facts[k] = Printable(v);
  j["facts"] = facts;
  ordered_json evidence = ordered_json::array();
  for (const IncidentEvidence& e : incident.evidence) {
    evidence.push_back(
        {{"source", Printable(e.source)}, {"line", e.line}, {"text", Printable(e.text)}});
  }
  j["evidence"] = evidence;
  j["explanation"] = Printable(incident.explanation);
  j["remediation"] = incident.remediation;
  j["phase"] = rule.phase;
  j["exception"] = Printable(incident.exception);
  j["traceback_fingerprint"] = incident.traceback_fingerprint;
  j["revision"] = incident.revision;
  if (incident.closed != CloseReason::kNone) {
    j["closed"] = CloseReasonName(incident.closed);
    j["closed_at"] = TimeOrNull(incident.closed_us);
  }
  if (!incident.regressed_from.empty()) j["regressed_from"] = incident.regressed_from;
  if (!incident.consequences.empty()) {
    ordered_json consequences = ordered_json::array();
    for (const IncidentConsequence& c : incident.consequences) {
      ordered_json jc;
      jc["rule"] = c.rule->id;
      jc["class"] = c.rule->rule_class;
      jc["severity"] = rules::SeverityName(c.rule->severity);
      jc["title"] = c.rule->title;
      jc["ranks"] = c.ranks;
      ordered_json workers = ordered_json::array();
      for (const std::string& w : c.workers) workers.push_back(Printable(w));
      jc["workers"] = workers;
      jc["first_seen"] = TimeOrNull(c.first_seen_us);
      if (!c.evidence.source.empty()) {
        jc["evidence"] = {{"source", Printable(c.evidence.source)},
                          {"line", c.evidence.line},
                          {"text", Printable(c.evidence.text)}};
      }
      consequences.push_back(std::move(jc));
    }
    j["consequences"] = consequences;
  }
  if (!incident.folded_into.empty()) j["folded_into"] = incident.folded_into;
  if (!incident.signature.empty()) {
    j["signature"] = incident.signature;
    j["signature_version"] = incident.signature_version;
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string IncidentToText(const Incident& incident) {
  const rules::Rule& rule = *incident.rule;
  std::ostringstream out;
  out << "INCIDENT " << incident.incident_id << "  [" << rules::SeverityName(incident.severity)
      << "] " << rule.title << "\n";
  out << "  rule:        " << rule.id << " (" << rules::ConfidenceName(incident.confidence)
      << ")\n";
  out << "  class:       " << rule.rule_class << "\n";
  out << "  deployment:  " << Printable(incident.deployment);
  for (const auto& [k, v] : incident.labels) out << " " << Printable(k) << "=" << Printable(v);
  out << "\n";
  out << "  workers:     " << incident.affected << "/" << incident.expected << " affected";
  if (!incident.ranks.empty()) {
    out << ", ranks";
    for (size_t i = 0; i < incident.ranks.size(); ++i) out << (i ? "," : " ") << incident.ranks[i];
  }
  out << (incident.identical ? ", identical traceback" : "") << "\n";
  if (incident.first_seen_us != 0) {
    out << "  seen:        " << FormatRfc3339(incident.first_seen_us) << " .. "
        << FormatRfc3339(incident.last_seen_us) << "\n";
  }
  out << "  state:       ";
  if (incident.closed == CloseReason::kNone) {
    out << "open, still failing";
  } else {
    out << "closed, " << CloseReasonName(incident.closed);
    if (incident.closed_us != 0) out << " at " << FormatRfc3339(incident.closed_us);
  }
  out << " (" << incident.occurrences
      << (incident.occurrences == 1 ? " occurrence" : " occurrences") << ")\n";
  if (!incident.regressed_from.empty()) {
    out << "  regressed:   from " << incident.regressed_from << " (it had recovered)\n";
  }
  if (!incident.folded_into.empty()) {
    out << "  folded:      into " << incident.folded_into << " (the failure that caused it)\n";
  }
  for (const IncidentConsequence& c : incident.consequences) {
    out << "  then:        " << c.rule->id << " [" << rules::SeverityName(c.rule->severity) << "]";
    if (!c.ranks.empty()) {
      out << " ranks";
      for (size_t i = 0; i < c.ranks.size(); ++i) out << (i ? "," : " ") << c.ranks[i];
    } else if (!c.workers.empty()) {
      out << " " << Printable(c.workers.front());
      if (c.workers.size() > 1) out << " +" << c.workers.size() - 1;
    }
    if (c.first_seen_us != 0) out << " from " << FormatRfc3339(c.first_seen_us);
    out << " (a consequence)\n";
  }
  if (!incident.facts.empty()) {
    out << "  facts:      ";
    for (const auto& [k, v] : incident.facts) out << " " << k << "=" << Printable(v);
    out << "\n";
  }
  if (!incident.exception.empty())
    out << "  exception:   " << Printable(incident.exception) << "\n";
  out << "  why:         " << Printable(incident.explanation) << "\n";
  out << "  evidence:\n";
  size_t shown = 0;
  for (const IncidentEvidence& e : incident.evidence) {
    if (++shown > 6) break;
    std::string text = Printable(e.text);
    if (text.size() > 160) text = text.substr(0, 157) + "...";
    out << "    " << Printable(e.source) << ":" << e.line << "  " << text << "\n";
  }
  out << "  remedies:\n";
  for (const std::string& r : incident.remediation) out << "    - " << r << "\n";
  return out.str();
}

}  // namespace fingerprintd::correlate
