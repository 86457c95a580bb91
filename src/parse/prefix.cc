#include "parse/prefix.h"

namespace fingerprintd::parse {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c) || c == '-' || c == '.'; }

// Reads a non-negative decimal at text[*pos]; advances *pos. False if none.
bool ReadNumber(std::string_view text, size_t* pos, int32_t* out) {
  size_t i = *pos;
  int64_t v = 0;
  while (i < text.size() && IsDigit(text[i]) && v < (int64_t{1} << 31)) {
    v = v * 10 + (text[i] - '0');
    ++i;
  }
  if (i == *pos || v >= (int64_t{1} << 31)) return false;
  *out = static_cast<int32_t>(v);
  *pos = i;
  return true;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// One `( ... )` prefix at text[0]. Returns its length including ')' or 0.
size_t ParseParenPrefix(std::string_view text, ProcessId* out) {
  // Longest real prefix is a Ray actor with an IPv6 address; anything longer
  // is message text in parentheses.
  const size_t close = text.find(')', 1);
  if (close == std::string_view::npos || close > 160) return 0;
  std::string_view body = text.substr(1, close - 1);
  ProcessId id;
  size_t pos = 0;
  // Name and optional qualifiers ("VllmWorker rank=1", "VllmWorker TP1").
  if (!StartsWith(body, "pid=")) {
    if (body.empty() || !IsNameStart(body[0])) return 0;
    while (pos < body.size() && IsNameChar(body[pos])) ++pos;
    size_t name_end = pos;
    for (int qualifiers = 0; qualifiers < 2 && pos < body.size() && body[pos] == ' ';
         ++qualifiers) {
      size_t q = pos + 1;
      if (StartsWith(body.substr(q), "pid=")) break;
      size_t e = q;
      while (e < body.size() && (IsNameChar(body[e]) || body[e] == '=')) ++e;
      if (e == q) return 0;
      pos = e;
      name_end = e;
    }
    id.name = body.substr(0, name_end);
    if (pos == body.size() || body[pos] == ',') {
      // Only Ray's own daemons print a bare name; anything else in parentheses
      // without a pid is ordinary text such as "(note)".
      if (id.name != "raylet" && id.name != "gcs_server" && id.name != "autoscaler") return 0;
    } else {
      if (body[pos] != ' ') return 0;
      ++pos;
    }
  }
  if (StartsWith(body.substr(pos), "pid=")) {
    pos += 4;
    if (!ReadNumber(body, &pos, &id.pid)) return 0;
  }
  if (pos < body.size()) {
    if (!StartsWith(body.substr(pos), ", ip=")) return 0;
    id.ip = body.substr(pos + 5);
    if (id.ip.empty() || id.ip.find(' ') != std::string_view::npos) return 0;
  }
  ClassifyProcessName(id.name, &id);
  *out = id;
  return close + 1;
}

// torch's `[rankN]:` at text[0]. Returns its length or 0.
size_t ParseTorchRank(std::string_view text, ProcessId* out) {
  if (!StartsWith(text, "[rank")) return 0;
  size_t pos = 5;
  int32_t rank = 0;
  if (!ReadNumber(text, &pos, &rank)) return 0;
  if (!StartsWith(text.substr(pos), "]:")) return 0;
  ProcessId id;
  id.role = ProcessRole::kWorker;
  id.name = text.substr(1, pos - 1);  // "rank1"
  id.rank = rank;
  *out = id;
  return pos + 2;
}

}  // namespace

bool ParseParallelParts(std::string_view parts, ProcessId* out) {
  bool any = false;
  size_t i = 0;
  while (i < parts.size()) {
    size_t end = i;
    while (end < parts.size() && parts[end] != '_' && parts[end] != ' ') ++end;
    std::string_view part = parts.substr(i, end - i);
    size_t letters = 0;
    while (letters < part.size() && !IsDigit(part[letters])) ++letters;
    std::string_view tag = part.substr(0, letters);
    size_t npos = letters;
    int32_t value = -1;
    if (letters < part.size() && ReadNumber(part, &npos, &value) && npos == part.size()) {
      if (tag == "DP") {
        out->dp = value, any = true;
      } else if (tag == "PP") {
        out->pp = value, any = true;
      } else if (tag == "TP") {
        out->tp = value, any = true;
      } else if (tag == "EP") {
        out->ep = value, any = true;
      }
      // DCP, PCP, CP, MOE_DP, ...: accepted, not modelled.
    }
    i = end + 1;
  }
  return any;
}

void ClassifyProcessName(std::string_view name, ProcessId* out) {
  auto suffix_after = [&](std::string_view base) { return name.substr(base.size()); };
  if (name.empty()) {
    out->role = ProcessRole::kOther;  // "(pid=N)": an unnamed Ray task
    return;
  }
  if (StartsWith(name, "VllmWorker")) {
    out->role = ProcessRole::kWorker;
    std::string_view rest = suffix_after("VllmWorker");
    if (StartsWith(rest, "Process")) return;  // V0 "VllmWorkerProcess"
    if (StartsWith(rest, " rank=")) {
      size_t pos = 6;
      ReadNumber(rest, &pos, &out->rank);
    } else if (StartsWith(rest, " ")) {
      ParseParallelParts(rest.substr(1), out);
    }
    return;
  }
  if (name == "Worker" || StartsWith(name, "Worker_")) {
    out->role = ProcessRole::kWorker;
    if (name.size() > 7) ParseParallelParts(name.substr(7), out);
    return;
  }
  if (name == "RayWorkerWrapper") {
    out->role = ProcessRole::kWorker;
    return;
  }
  if (StartsWith(name, "EngineCore")) {
    std::string_view rest = suffix_after("EngineCore");
    if (rest.empty() || rest[0] == '_') {
      out->role = ProcessRole::kEngineCore;
      if (rest.size() > 1) {
        size_t pos = 1;
        // Historical "EngineCore_N" names the DP index without a tag.
        if (!ReadNumber(rest, &pos, &out->dp)) ParseParallelParts(rest.substr(1), out);
      }
      return;
    }
  }
  if (name == "APIServer" || StartsWith(name, "ApiServer_") || name == "ApiServer") {
    out->role = ProcessRole::kApiServer;
    return;
  }
  out->role = ProcessRole::kOther;
}

size_t ParsePrefixes(std::string_view text, ProcessId* out, std::string_view* key) {
  size_t consumed = 0;
  // Real chains are at most three deep; the bound keeps hostile input linear.
  for (int depth = 0; depth < 8 && consumed < text.size(); ++depth) {
    std::string_view rest = text.substr(consumed);
    // Pastes and Ray sometimes put spaces between glued prefixes.
    size_t lead = 0;
    if (depth > 0) {
      while (lead < rest.size() && rest[lead] == ' ') ++lead;
    }
    if (lead >= rest.size()) break;
    ProcessId id;
    size_t len = 0;
    if (rest[lead] == '(') {
      len = ParseParenPrefix(rest.substr(lead), &id);
    } else if (rest[lead] == '[' && rest.size() > lead + 5 && rest[lead + 1] == 'r') {
      len = ParseTorchRank(rest.substr(lead), &id);
    }
    if (len == 0) break;
    *out = id;
    *key = rest.substr(lead, len);
    consumed += lead + len;
    // One separating space belongs to the prefix; a missing one is tolerated.
    if (consumed < text.size() && text[consumed] == ' ') ++consumed;
  }
  return consumed;
}

bool PrefixCache::Hit(const Entry& e, std::string_view text, ProcessId* out,
                      std::string_view* key) const {
  const size_t n = e.bytes.size();
  if (n == 0 || text.size() < n || text.compare(0, n, e.bytes) != 0) return false;
  // The chain's own bytes decide its parse; what follows them must end it as
  // it ended there: no separating space the cached chain lacked, and no
  // further '(' or '[' that could be one more prefix.
  size_t next = n;
  if (e.bytes.back() != ' ' && next < text.size() && text[next] == ' ') return false;
  while (next < text.size() && text[next] == ' ') ++next;
  if (next < text.size() && (text[next] == '(' || text[next] == '[')) return false;
  *out = e.id;
  out->name = text.substr(e.name.at, e.name.size);
  out->ip = text.substr(e.ip.at, e.ip.size);
  *key = text.substr(e.key.at, e.key.size);
  return true;
}

size_t PrefixCache::Parse(std::string_view text, ProcessId* out, std::string_view* key) {
  if (Hit(entries_[last_hit_], text, out, key)) return entries_[last_hit_].bytes.size();
  for (size_t i = 0; i < kEntries; ++i) {
    if (i != last_hit_ && Hit(entries_[i], text, out, key)) {
      last_hit_ = i;
      return entries_[i].bytes.size();
    }
  }
  const size_t consumed = ParsePrefixes(text, out, key);
  if (consumed > 0) {
    auto span = [&](std::string_view part) {
      return part.empty() ? Span{}
                          : Span{static_cast<size_t>(part.data() - text.data()), part.size()};
    };
    Entry& e = entries_[next_victim_];
    last_hit_ = next_victim_;
    next_victim_ = (next_victim_ + 1) % kEntries;
    e.bytes.assign(text.data(), consumed);
    e.id = *out;
    e.id.name = {};
    e.id.ip = {};
    e.name = span(out->name);
    e.ip = span(out->ip);
    e.key = span(*key);
  }
  return consumed;
}

}  // namespace fingerprintd::parse
