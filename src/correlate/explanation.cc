#include "correlate/explanation.h"

#include <re2/re2.h>

#include <algorithm>

namespace fingerprintd::correlate {
namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

// "9.0" matches exactly; "10.*" matches every 10.x capability.
bool Implements(const std::string& entry, const std::string& capability) {
  if (entry.size() > 2 && entry.compare(entry.size() - 2, 2, ".*") == 0) {
    std::string major = entry.substr(0, entry.size() - 1);  // "10."
    return capability.compare(0, major.size(), major) == 0;
  }
  return entry == capability;
}

std::string WorkersClause(const Incident& incident, bool tensor_parallel_known) {
  std::string out = std::to_string(incident.affected) + "/" + std::to_string(incident.expected) +
                    (tensor_parallel_known ? " tensor-parallel workers" : " workers");
  if (incident.affected == 1 && incident.expected == 1) out = "the only worker";
  if (incident.affected > 1 && incident.identical) {
    out += " failed identically";
  } else if (incident.affected > 1 && !incident.traceback_fingerprint.empty()) {
    out += " failed with differing tracebacks";
  } else {  // one worker, or failures without a Python traceback (an NCCL watchdog)
    out += " failed";
  }
  return out;
}

std::string CapabilityClause(const rules::Rule& rule, const rules::RuleSet& rules,
                             const std::map<std::string, std::string>& facts) {
  const rules::KernelSupport* support = rules.FindLibrary(rule.library);
  auto cap = facts.find("compute_capability");
  if (support == nullptr) {
    if (cap == facts.end()) return "the device's compute capability was not logged";
    return "the device reports compute capability " + cap->second;
  }
  std::string implemented = Join(support->implements);
  if (cap == facts.end()) {
    return "the device's compute capability was not logged (" + support->library + " implements " +
           implemented + ")";
  }
  bool listed =
      std::any_of(support->implements.begin(), support->implements.end(),
                  [&](const std::string& entry) { return Implements(entry, cap->second); });
  if (listed) {
    return "the device reports compute capability " + cap->second + ", which " + support->library +
           " lists as implemented (" + implemented + ")";
  }
  return "the device reports compute capability " + cap->second + ", which " + support->library +
         " does not implement (" + implemented + ")";
}

// A parenthesised list of facts, "(model: {fact.model}, kernel: {fact.kernel})",
// keeps only the facts that are known, and disappears (with the space before
// it) when none is: no "(model: unknown)" in front of an operator.
std::string DropUnknownFacts(const std::string& text,
                             const std::map<std::string, std::string>& facts) {
  static const RE2 kGroup(R"(( ?)\(([^()]*\{fact\.[^()]*)\))");
  static const RE2 kItem(R"(([\w ]+: )\{fact\.(\w+)\})");
  std::string out;
  re2::StringPiece rest(text);
  re2::StringPiece space, body;
  while (true) {
    const char* before = rest.data();
    if (!RE2::FindAndConsume(&rest, kGroup, &space, &body)) break;
    const char* group_start = space.data();
    out.append(before, static_cast<size_t>(group_start - before));
    std::vector<std::string> kept;
    bool all_facts = true;
    size_t start = 0;
    std::string list(body.data(), body.size());
    while (start <= list.size()) {
      size_t comma = list.find(", ", start);
      std::string item =
          list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      std::string label, name;
      if (!RE2::FullMatch(item, kItem, &label, &name)) {
        all_facts = false;
        break;
      }
      if (facts.count(name) > 0) kept.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 2;
    }
    if (!all_facts) {
      out.append(group_start, static_cast<size_t>(rest.data() - group_start));
    } else if (!kept.empty()) {
      out.append(space.data(), space.size());
      out += "(" + Join(kept) + ")";
    }
  }
  out.append(rest.data(), rest.size());
  return out;
}

// "`TypeError` raised in `sglang.srt.models.x` (`forward`)": the evidence a
// family finding was decided by, from the incident's root exception.
std::string DecidedByClause(const Incident& incident) {
  if (incident.exception.empty()) return "its message";
  const size_t colon = incident.exception.find(": ");
  std::string out = "`" + incident.exception.substr(0, colon) + "`";
  const size_t sep = incident.raised_in.rfind(':');
  if (sep != std::string::npos && sep > 0) {
    out += " raised in `" + incident.raised_in.substr(0, sep) + "`";
    if (sep + 1 < incident.raised_in.size()) {
      out += " (`" + incident.raised_in.substr(sep + 1) + "`)";
    }
  }
  return out;
}

}  // namespace

std::string ExpandExplanation(const rules::Rule& rule, const rules::RuleSet& rules,
                              const Incident& incident,
                              const std::map<std::string, std::string>& facts,
                              bool tensor_parallel_known) {
  const std::string text = DropUnknownFacts(rule.explanation, facts);
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find('{', i);
    size_t close = open == std::string::npos ? std::string::npos : text.find('}', open);
    if (close == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    out.append(text, i, open - i);
    std::string key = text.substr(open + 1, close - open - 1);
    if (key == "workers") {
      out += WorkersClause(incident, tensor_parallel_known);
    } else if (key == "capability") {
      out += CapabilityClause(rule, rules, facts);
    } else if (key == "decided_by") {
      out += DecidedByClause(incident);
    } else if (key.rfind("fact.", 0) == 0) {
      auto it = facts.find(key.substr(5));
      out += it == facts.end() ? "unknown" : it->second;
    } else {
      out.append(text, open, close - open + 1);
    }
    i = close + 1;
  }
  // Sentence case: the template may start with a placeholder.
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

}  // namespace fingerprintd::correlate
