#include "parse/envelope.h"

#include "parse/docker_json.h"
#include "parse/time_util.h"

namespace fingerprintd::parse {
namespace {

int MonthFromAbbrev(std::string_view m) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i) {
    if (m == kMonths[i]) return i + 1;
  }
  return 0;
}

}  // namespace

EnvelopeDecoder::EnvelopeDecoder(Envelope configured, const ParserOptions& options,
                                 PipelineEvents& events)
    : options_(options), events_(events), envelope_(configured) {}

bool EnvelopeDecoder::Join(int stream, std::string_view fragment, bool last, EnvelopeRecord* out) {
  Partial& p = partials_[stream];
  if (!p.active) {
    if (last) return true;  // a whole record in one line: *out already has it
    p.active = true;
    p.over_cap = false;
    p.text.clear();
    p.head = *out;
    p.dated = out->has_time;
    p.since_us = out->time_us;
  }
  const size_t room =
      options_.max_line_bytes > p.text.size() ? options_.max_line_bytes - p.text.size() : 0;
  if (fragment.size() > room) {
    p.text.append(fragment.data(), room);
    if (!p.over_cap) events_.LineDropped(DropReason::kPartialTooLong);
    p.over_cap = true;
  } else {
    p.text.append(fragment.data(), fragment.size());
  }
  if (!last) return false;
  *out = p.head;
  out->content = p.text;
  p.active = false;
  emitted_partial_ = stream;
  return true;
}

bool EnvelopeDecoder::DecodeCri(std::string_view line, EnvelopeRecord* out, bool* complete) {
  int64_t utc = 0;
  int32_t offset = 0;
  size_t pos = cri_time_.Parse(line, &utc, &offset);
  if (pos == 0 || pos >= line.size() || line[pos] != ' ') return false;
  ++pos;
  int stream;
  if (line.substr(pos, 7) == "stdout ") {
    stream = 0;
  } else if (line.substr(pos, 7) == "stderr ") {
    stream = 1;
  } else {
    return false;
  }
  pos += 7;
  if (pos >= line.size() || (line[pos] != 'P' && line[pos] != 'F')) return false;
  const bool last = line[pos] == 'F';
  ++pos;
  if (pos < line.size() && line[pos] == ':') {  // forward-compatible tags: "F:x:y"
    while (pos < line.size() && line[pos] != ' ') ++pos;
  }
  if (pos < line.size() && line[pos] != ' ') return false;
  out->content = pos < line.size() ? line.substr(pos + 1) : std::string_view();
  out->has_time = true;
  out->time_us = utc;
  out->zone_offset_s = offset;
  out->year = EnvelopeYear::kKnown;
  *complete = Join(stream, out->content, last, out);
  return true;
}

bool EnvelopeDecoder::DecodeDocker(std::string_view line, EnvelopeRecord* out, bool* complete) {
  if (line.empty() || line[0] != '{') return false;
  if (!DecodeDockerJson(line, json_, &docker_)) return false;
  std::string_view log = docker_.log;
  const bool last = !log.empty() && log.back() == '\n';
  if (last) {
    log.remove_suffix(1);
    if (!log.empty() && log.back() == '\r') log.remove_suffix(1);
  }
  out->content = log;
  int64_t utc = 0;
  int32_t offset = 0;
  if (ParseRfc3339(docker_.time, &utc, &offset) != 0) {
    out->has_time = true;
    out->time_us = utc;
    out->zone_offset_s = offset;
    out->year = EnvelopeYear::kKnown;
  }
  *complete = Join(docker_.stream == "stderr" ? 1 : 0, log, last, out);
  return true;
}

bool EnvelopeDecoder::DecodeJournald(std::string_view line, EnvelopeRecord* out) {
  // "Aug 19 18:34:30 host ident[pid]: msg"
  if (line.size() < 20 || line[3] != ' ' || line[6] != ' ' || line[9] != ':' || line[12] != ':' ||
      line[15] != ' ') {
    return false;
  }
  CivilTime t;
  t.month = MonthFromAbbrev(line.substr(0, 3));
  if (t.month == 0) return false;
  if (line[4] == ' ') {
    if (!ReadDigits(line, 5, 1, &t.day)) return false;
  } else if (!ReadDigits(line, 4, 2, &t.day)) {
    return false;
  }
  if (!ReadDigits(line, 7, 2, &t.hour) || !ReadDigits(line, 10, 2, &t.minute) ||
      !ReadDigits(line, 13, 2, &t.second) || !PlausibleCivil(t)) {
    return false;
  }
  const size_t host_end = line.find(' ', 16);
  if (host_end == std::string_view::npos || host_end == 16) return false;
  const size_t colon = line.find(": ", host_end + 1);
  const size_t bare =
      line.size() > 0 && line.back() == ':' ? line.size() - 1 : std::string_view::npos;
  const size_t ident_end = colon != std::string_view::npos ? colon : bare;
  if (ident_end == std::string_view::npos || ident_end <= host_end + 1) return false;
  std::string_view ident = line.substr(host_end + 1, ident_end - host_end - 1);
  if (ident.find(' ') != std::string_view::npos) return false;
  out->content = ident_end + 2 <= line.size() ? line.substr(ident_end + 2) : std::string_view();
  out->year = EnvelopeYear::kFromClock;
  const int32_t offset = options_.local_utc_offset_s;
  if (options_.mtime_year > 0) {
    out->year = EnvelopeYear::kFromMtime;
    out->time_us = CivilToUnixMicros(t, options_.mtime_year, offset);
  } else if (options_.wall_clock != nullptr) {
    // Live: the year that does not date the line after now (a Dec 31 line
    // read just after New Year keeps its year; a Jan 1 line gets the new one).
    out->time_us = LatestNotAfter(t, options_.wall_clock() + kYearGuessZoneSlackUs, offset);
  } else {
    out->time_us = CivilToUnixMicros(t, options_.current_year, offset);
  }
  out->has_time = true;
  out->zone_offset_s = options_.local_utc_offset_s;
  return true;
}

bool EnvelopeDecoder::DecodeCompose(std::string_view line, EnvelopeRecord* out) {
  size_t i = 0;
  while (i < line.size() && i < 128) {
    const char c = line[i];
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
        c == '.' || c == '-') {
      ++i;
    } else {
      break;
    }
  }
  if (i == 0 || i >= line.size() || line[i] != ' ') return false;
  while (i < line.size() && line[i] == ' ') ++i;
  if (i >= line.size() || line[i] != '|') return false;
  ++i;
  if (i < line.size()) {
    if (line[i] != ' ') return false;
    ++i;
  }
  out->content = line.substr(i);
  return true;
}

bool EnvelopeDecoder::DecodeAs(Envelope envelope, std::string_view line, EnvelopeRecord* out,
                               bool* complete) {
  *complete = true;
  switch (envelope) {
    case Envelope::kCri:
      return DecodeCri(line, out, complete);
    case Envelope::kDocker:
      return DecodeDocker(line, out, complete);
    case Envelope::kJournald:
      return DecodeJournald(line, out);
    case Envelope::kCompose:
      return DecodeCompose(line, out);
    case Envelope::kPlain:
    case Envelope::kAuto:
      break;
  }
  out->content = line;
  return true;
}

bool EnvelopeDecoder::Decode(std::string_view line, uint64_t line_number, uint64_t offset,
                             EnvelopeRecord* out) {
  if (emitted_partial_ >= 0) {
    partials_[emitted_partial_].text.clear();
    emitted_partial_ = -1;
  }
  *out = EnvelopeRecord{};
  out->line_number = line_number;
  out->offset = offset;
  bool complete = true;
  if (envelope_ == Envelope::kAuto) {
    if (!line.empty()) {
      // Cheapest first-byte checks decide which decoders are worth trying.
      const char c = line[0];
      Envelope candidates[2] = {Envelope::kAuto, Envelope::kCompose};
      if (c >= '0' && c <= '9') {
        candidates[0] = Envelope::kCri;
      } else if (c == '{') {
        candidates[0] = Envelope::kDocker;
      } else if (c >= 'A' && c <= 'Z') {
        candidates[0] = Envelope::kJournald;
      }
      for (Envelope candidate : candidates) {
        if (candidate == Envelope::kAuto) continue;
        EnvelopeRecord probe = *out;
        if (DecodeAs(candidate, line, &probe, &complete)) {
          envelope_ = candidate;
          *out = probe;
          return complete;
        }
        complete = true;
      }
      if (++undecided_lines_ >= kDetectLines) envelope_ = Envelope::kPlain;
    }
    out->content = line;
    return true;
  }
  if (envelope_ == Envelope::kPlain) {
    out->content = line;
    return true;
  }
  if (!DecodeAs(envelope_, line, out, &complete)) {
    // An empty physical line carries no envelope at all; not worth counting.
    if (!line.empty()) events_.LineDropped(DropReason::kBadEnvelope);
    *out = EnvelopeRecord{};
    out->line_number = line_number;
    out->offset = offset;
    out->content = line;
    return true;
  }
  return complete;
}

void EnvelopeDecoder::Emit(int stream, EnvelopeRecord* out) {
  Partial& p = partials_[stream];
  *out = p.head;
  out->content = p.text;
  p.active = false;
  emitted_partial_ = stream;
}

bool EnvelopeDecoder::Flush(EnvelopeRecord* out) {
  if (emitted_partial_ >= 0) {
    partials_[emitted_partial_].text.clear();
    emitted_partial_ = -1;
  }
  for (int s = 0; s < 2; ++s) {
    if (!partials_[s].active) continue;
    Emit(s, out);
    return true;
  }
  return false;
}

bool EnvelopeDecoder::FlushStale(int64_t now_us, EnvelopeRecord* out) {
  if (emitted_partial_ >= 0) {
    partials_[emitted_partial_].text.clear();
    emitted_partial_ = -1;
  }
  for (int s = 0; s < 2; ++s) {
    Partial& p = partials_[s];
    if (!p.active) continue;
    if (!p.dated) {
      p.dated = true;
      p.since_us = now_us;
      continue;
    }
    // The difference in unsigned arithmetic: any two int64 times, no overflow.
    const uint64_t age = static_cast<uint64_t>(now_us) - static_cast<uint64_t>(p.since_us);
    if (now_us > p.since_us && age > static_cast<uint64_t>(options_.traceback_timeout_us)) {
      Emit(s, out);
      return true;
    }
  }
  return false;
}

}  // namespace fingerprintd::parse
