#include "parse/quiet_line.h"

#include <cstdint>
#include <cstring>

#include "parse/ansi.h"
#include "parse/paste_wrappers.h"
#include "parse/prefix.h"

namespace fingerprintd::parse {
namespace {

// The header of an unprefixed plain-ASCII line, when it can have a bare shape.
bool ParseBareHeader(std::string_view content, Header* header) {
  return !content.empty() && content[0] >= 'a' && content[0] <= 'z' && IsPlainAscii(content) &&
         ParseHeader(content, header) && !header->has_time && !header->has_worker &&
         header->kind == HeaderKind::kNccl;
}

// A header a shape can stand for: vLLM or uvicorn, naming no worker; SGLang
// (its rank tags may name one) when the line starts as an SGLang header.
bool ShapeableKind(const Header& header, bool sglang) {
  if (sglang) return header.kind == HeaderKind::kSglang;
  return (header.kind == HeaderKind::kVllm || header.kind == HeaderKind::kUvicorn) &&
         !header.has_worker;
}

}  // namespace

const std::vector<std::string>& QuietLineTriggers() {
  static const std::vector<std::string> kTriggers = {
      // The traceback assembler's idle state (traceback_lines.cc).
      "traceback (most recent call last)",
      "file \"",
      "error",
      "exception",
      "warning",
      "interrupt",
      "exit",
      // Rank learning (SourceParser: a `parallel_state` location).
      "parallel_state",
      // A tqdm bar glued before a header (AfterProgressBar).
      "it/s]",
      "s/it]",
  };
  return kTriggers;
}

bool HoldsQuietTrigger(std::string_view text) {
  auto fold = [](char c) -> unsigned {
    const unsigned u = static_cast<unsigned char>(c);
    return u >= 'A' && u <= 'Z' ? u | 0x20 : u;
  };
  // The triggers' first two bytes, folded, as a 64 Ki-bit set: one probe per
  // byte, and the triggers compared only where a pair starts one.
  static const std::vector<uint64_t> kPairs = [&] {
    std::vector<uint64_t> bits(1024, 0);
    for (const std::string& t : QuietLineTriggers()) {
      const unsigned key = fold(t[0]) << 8 | fold(t[1]);
      bits[key >> 6] |= uint64_t{1} << (key & 63);
    }
    return bits;
  }();
  for (size_t at = 0; at + 1 < text.size(); ++at) {
    const unsigned key = fold(text[at]) << 8 | fold(text[at + 1]);
    if ((kPairs[key >> 6] >> (key & 63) & 1) == 0) continue;
    for (const std::string& t : QuietLineTriggers()) {
      if (at + t.size() > text.size()) continue;
      size_t i = 0;
      while (i < t.size() && fold(text[at + i]) == static_cast<unsigned char>(t[i])) ++i;
      if (i == t.size()) return true;
    }
  }
  return false;
}

std::vector<std::string> WithQuietLineTriggers(const std::vector<std::string>& atoms) {
  std::vector<std::string> out = atoms;
  out.insert(out.end(), QuietLineTriggers().begin(), QuietLineTriggers().end());
  return out;
}

bool LearnLineShape(std::string_view content, const LogRecord& record, LineShape* out,
                    std::string* scratch) {
  if (record.kind != LineKind::kMessage || !record.headered || record.worker == nullptr) {
    return false;
  }
  CleanFlags flags;
  const std::string_view clean = CleanLine(content, scratch, &flags);
  if (flags.binary || flags.invalid_utf8 || clean.empty()) return false;
  const char first = clean[0];
  const bool sglang = IsSglangStart(clean);
  if (first == '>' || (first == '[' && !sglang) || (first >= '0' && first <= '9')) return false;
  if (StripPasteWrappers(clean).size() != clean.size()) return false;
  ProcessId id;
  std::string_view key;
  const size_t chain = sglang ? 0 : ParsePrefixes(clean, &id, &key);
  const std::string_view rest = clean.substr(chain);
  if (rest.empty() || AfterProgressBar(rest).data() != rest.data()) return false;
  // A bare (NCCL) header starts with its lowercase host name; a vLLM or
  // uvicorn header with its uppercase level; an SGLang header with `[`.
  Header header;
  const bool bare = chain == 0 && !sglang && ParseBareHeader(content, &header);
  if (!bare && ((!sglang && (rest[0] < 'A' || rest[0] > 'Z')) || !ParseHeader(rest, &header) ||
                header.fixed_size == 0 || !ShapeableKind(header, sglang))) {
    return false;
  }
  // INFO or DEBUG; an SGLang line without an inner level word has none.
  if (record.level != Level::kInfo && record.level != Level::kDebug &&
      !(header.kind == HeaderKind::kSglang && record.level == Level::kUnknown)) {
    return false;
  }
  // The record must be what these steps give, or they are not the parser's.
  if (header.level != record.level || header.message != record.message ||
      header.location != record.location) {
    return false;
  }
  if (bare) {
    out->bare = true;
    out->head.clear();
    out->chain_end = 0;
    out->kind = header.kind;
    out->level = header.level;
    out->header_time = false;
    out->names_worker = false;
    out->worker = record.worker;
    return true;
  }
  // The raw bytes of clean[0, want): escape sequences may sit in the chain
  // only; from the header on, the bytes are the cleaned ones.
  const size_t want = chain + header.fixed_size;
  size_t i = 0, kept = 0, chain_end = 0;
  while (kept < want && i < content.size()) {
    const unsigned char c = static_cast<unsigned char>(content[i]);
    if (c == 0x1b) {
      if (kept >= chain) return false;
      i += EscapeSequenceLength(content.substr(i));
      continue;
    }
    if (c < 0x20 || c >= 0x7f || content[i] != clean[kept]) return false;
    ++i;
    if (++kept == chain) chain_end = i;
  }
  if (kept != want || !IsPlainAscii(content.substr(i))) return false;
  const std::string_view head = content.substr(0, i);
  // Each escape sequence, measured on the head alone, ends before its last
  // byte, so what follows the head cannot change its length.
  for (size_t j = 0; j < head.size();) {
    if (head[j] != '\x1b') {
      ++j;
      continue;
    }
    const size_t len = EscapeSequenceLength(head.substr(j));
    if (j + len >= head.size()) return false;
    j += len;
  }
  std::string head_scratch;
  CleanFlags head_flags;
  if (CleanLine(head, &head_scratch, &head_flags) != clean.substr(0, want) || head_flags.binary ||
      head_flags.invalid_utf8) {
    return false;
  }
  out->bare = false;
  out->head.assign(head.data(), head.size());
  out->chain_end = chain > 0 ? chain_end : 0;
  out->kind = header.kind;
  out->level = header.level;
  out->header_time = header.has_time;
  out->names_worker = header.has_worker;
  out->worker = record.worker;
  return true;
}

bool IsSglangStart(std::string_view line) {
  // `[YYYY-MM-DD HH:MM:SS`: the space at 11 is what tells it from a
  // `[YYYY-MM-DDTHH:MM:SS` paste wrapper (paste_wrappers.cc).
  return line.size() > 21 && line[0] == '[' && line[5] == '-' && line[8] == '-' &&
         line[11] == ' ' && line[14] == ':' && line[17] == ':' && line[1] >= '0' && line[1] <= '9';
}

bool HasBareHeader(std::string_view content) {
  Header header;
  return ParseBareHeader(content, &header);
}

bool HasLineShape(std::string_view content, const LineShape& shape) {
  if (shape.bare) {
    Header header;
    return ParseBareHeader(content, &header) && header.kind == shape.kind &&
           header.level == shape.level;
  }
  const size_t n = shape.head.size();
  return content.size() >= n && std::memcmp(content.data(), shape.head.data(), n) == 0 &&
         IsPlainAscii(content.substr(n));
}

}  // namespace fingerprintd::parse
