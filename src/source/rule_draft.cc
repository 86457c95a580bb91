// Drafts a rule from an incident: see rule_draft.h.
#include "source/rule_draft.h"

#include <re2/re2.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "correlate/signature.h"

namespace fingerprintd::source {

namespace {

using nlohmann::json;

// The longest run of `masked` between its masks (<n>, <path>, ...), trimmed.
std::string LongestFixedRun(const std::string& masked) {
  static const RE2 kMask(R"((<(?:n|size|path|name|hex|hash|url|str)>))");
  std::string best, piece;
  re2::StringPiece rest(masked);
  re2::StringPiece mask;
  auto take = [&](std::string run) {
    while (!run.empty() && (run.back() == ' ' || run.back() == ':' || run.back() == '(')) {
      run.pop_back();
    }
    while (!run.empty() && (run.front() == ' ' || run.front() == ')' || run.front() == ',')) {
      run.erase(0, 1);
    }
    if (run.size() > best.size()) best = run;
  };
  while (true) {
    const char* before = rest.data();
    if (!RE2::FindAndConsume(&rest, kMask, &mask)) break;
    take(std::string(before, mask.data() - before));
  }
  take(std::string(rest));
  return best;
}

// `text` for a YAML single-quoted scalar.
std::string SingleQuoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

bool Printable(const std::string& line) {
  for (unsigned char c : line) {
    if (c < 0x20 && c != '\t') return false;
  }
  return true;
}

}  // namespace

StatusOr<std::string> DraftRule(std::string_view incident_json) {
  json incident;
  try {
    incident = json::parse(incident_json);
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("not an incident: ") + e.what());
  }
  if (!incident.is_object() || !incident.contains("incident_id")) {
    return InvalidArgumentError("not an incident: no incident_id");
  }
  const std::string id = incident.value("incident_id", "");
  const std::string rule_class = incident.value("class", "unknown");
  const std::string exception = incident.value("exception", "");
  std::vector<std::string> evidence;
  for (const json& e : incident.value("evidence", json::array())) {
    const std::string text = e.value("text", "");
    if (!text.empty() && Printable(text)) evidence.push_back(text);
  }
  const std::string cause = !exception.empty()  ? exception
                            : !evidence.empty() ? evidence.back()
                                                : std::string();
  if (cause.empty()) {
    return InvalidArgumentError(id + ": neither an exception nor evidence to draft a rule from");
  }
  // The failure's fixed words: its type, then the longest run of its message
  // that holds no value (the masks of the signature).
  std::string type, message = cause;
  static const RE2 kType(R"(^((?:[A-Za-z_]\w*(?:\.|::))*[A-Za-z_]\w*):\s)");
  if (RE2::PartialMatch(cause, kType, &type)) message = cause.substr(type.size() + 1);
  while (!message.empty() && message.front() == ' ') message.erase(0, 1);
  const std::string words = LongestFixedRun(correlate::MaskValues(message));
  if (words.size() < 8 && type.empty()) {
    return InvalidArgumentError(id + ": its failure has too few fixed words to match ('" + words +
                                "')");
  }
  std::string pattern;
  if (!type.empty()) {
    pattern = RE2::QuoteMeta(type) + ": ";
    if (!words.empty()) {
      pattern += (message.rfind(words, 0) == 0 ? "" : ".*") + RE2::QuoteMeta(words);
    }
  } else {
    pattern = RE2::QuoteMeta(words);
  }
  const std::string signature =
      incident.value("signature", correlate::Signature(rule_class, exception, cause, ""));
  const std::string rule_id = "draft-" + signature.substr(signature.rfind('-') + 1, 8);
  std::string title = type.empty() ? words : type + ": " + words;
  if (title.size() > 100) title = title.substr(0, 97) + "...";
  // The positive test's log: the evidence, then the failure's own line.
  std::vector<std::string> log = evidence;
  if (std::find(log.begin(), log.end(), cause) == log.end()) log.push_back(cause);

  std::ostringstream out;
  out << "# Drafted by `fingerprintd rules draft " << id << "` from incident " << id
      << " (deployment " << incident.value("deployment", "") << ", signature " << signature << " v"
      << incident.value("signature_version", correlate::kSignatureVersion) << ").\n"
      << "# Review every line before it ships: the class, severity, title, explanation and\n"
      << "# remedies are yours to write; the pattern is the failure's fixed words and the\n"
      << "# first test its evidence. Check it with `fingerprintd rules test DIR` on a copy of\n"
      << "# the pack with this file in it (rules/README.md, \"From a signature to a rule\").\n"
      << "id: " << rule_id << "\n"
      << "title: " << SingleQuoted(title) << "\n"
      << "class: " << rule_class
      << (rule_class == "unknown"
              ? "   # choose: hardware_support, model_bug, resource, distributed or config"
              : "")
      << "\n"
      << "severity: error\n"
      << "sequence:\n"
      << "  - id: symptom\n"
      << "    level: ANY\n"
      << "    patterns:\n"
      << "      - " << SingleQuoted(pattern) << "\n"
      << "    required: true\n"
      << "    symptom: true\n"
      << "explanation: >-\n"
      << "  {workers} failed with " << (type.empty() ? "this error" : type)
      << ". Say here why, and what it is not.\n"
      << "remediation:\n"
      << "  - \"Say here what the operator does about it.\"\n"
      << "tests:\n"
      << "  - name: the evidence of incident " << id << "\n"
      << "    log: |2\n";
  for (const std::string& line : log) out << "      " << line << "\n";
  out << "    expect:\n"
      << "      - {rule: " << rule_id << "}\n"
      << "  - name: the failure's line alone, pasted\n"
      << "    log: |2\n"
      << "      " << cause << "\n"
      << "    expect:\n"
      << "      - {rule: " << rule_id << "}\n"
      << "  - name: NEGATIVE - a healthy server's line is not it\n"
      << "    log: |\n"
      << "      INFO 01-01 00:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 "
         "tokens/s\n"
      << "    expect: []\n";
  return out.str();
}

StatusOr<std::string> FindIncident(std::string_view text, std::string_view id) {
  std::string found;
  auto consider = [&](const json& j) {
    if (j.is_object() && j.value("incident_id", "") == id) found = j.dump();
  };
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '[') {
    try {
      for (const json& j : json::parse(text)) consider(j);
    } catch (const json::exception& e) {
      return InvalidArgumentError(std::string("not a JSON array of incidents: ") + e.what());
    }
  } else {
    std::istringstream in{std::string(text)};
    size_t number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        consider(json::parse(line));
      } catch (const json::exception&) {
        return InvalidArgumentError("line " + std::to_string(number) + ": not a JSON incident");
      }
    }
  }
  if (found.empty()) return NotFoundError(std::string(id) + ": no such incident");
  return found;
}

}  // namespace fingerprintd::source
