#include "parse/paste_wrappers.h"

#include <cstring>

namespace fingerprintd::parse {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

constexpr std::string_view kIsoShape = "dddd-dd-ddTdd:dd:dd";

// True if text[pos + i] breaks kIsoShape for some i with pos + i < text.size().
bool BreaksIsoShape(std::string_view text, size_t pos) {
  for (size_t i = 0; i < kIsoShape.size() && pos + i < text.size(); ++i) {
    const char c = text[pos + i];
    if (kIsoShape[i] == 'd' ? !IsDigit(c) : c != kIsoShape[i]) return true;
  }
  return false;
}

// `YYYY-MM-DDTHH:MM:SS` at text[pos], then an optional fraction and `Z`.
// Returns the length, or 0.
size_t IsoTimestampLength(std::string_view text, size_t pos) {
  if (text.size() < pos + kIsoShape.size() || BreaksIsoShape(text, pos)) return 0;
  size_t end = pos + kIsoShape.size();
  if (end < text.size() && (text[end] == '.' || text[end] == ',')) {
    ++end;
    while (end < text.size() && IsDigit(text[end])) ++end;
  }
  if (end < text.size() && text[end] == 'Z') ++end;
  return end - pos;
}

// One wrapper at the start of `line`: its length, or 0.
size_t WrapperLength(std::string_view line) {
  const char c = line[0];
  if (c == '>') {  // Markdown quote
    return line.size() > 1 && line[1] == ' ' ? 2 : 1;
  }
  if (c == '[') {
    if (IsDigit(line[1])) {  // [2025-11-06T02:10:00.702Z]
      const size_t n = IsoTimestampLength(line, 1);
      if (n == 0 || 1 + n >= line.size() || line[1 + n] != ']') return 0;
      return 1 + n + 1 + (2 + n < line.size() && line[2 + n] == ' ' ? 1 : 0);
    }
    if (StartsWith(line, "[pod/")) {  // kubectl logs --prefix: [pod/NAME/CONTAINER]
      const size_t close = line.find("] ");
      return close == std::string_view::npos || close > 300 ? 0 : close + 2;
    }
    return 0;
  }
  if (!IsDigit(c)) return 0;
  size_t digits = 1;
  while (digits < line.size() && digits < 8 && IsDigit(line[digits])) ++digits;
  if (digits == 4 && line.size() > 19 && line[4] == '-' && line[10] == 'T') {
    const size_t n = IsoTimestampLength(line, 0);
    if (n == 0 || n >= line.size() || line[n] != ' ') return 0;
    std::string_view rest = line.substr(n + 1);
    // A CRI envelope (`<time> stdout F msg`) is the envelope decoder's.
    if (StartsWith(rest, "stdout ") || StartsWith(rest, "stderr ")) return 0;
    // TorchServe: `<time> [INFO ] W-9000-name_1.0-stdout MODEL_LOG - msg`.
    const size_t model_log = rest.substr(0, 200).find(" MODEL_LOG - ");
    if (model_log != std::string_view::npos) return n + 1 + model_log + 13;
    return n + 1;
  }
  // grep -n: `1234:msg` / `1234-msg`.
  if (digits < line.size() - 1 && (line[digits] == ':' || line[digits] == '-') &&
      !IsDigit(line[digits + 1])) {
    return digits + 1;
  }
  return 0;
}

}  // namespace

std::string_view StripPasteWrappers(std::string_view line) {
  for (int depth = 0; depth < 4 && line.size() >= 1; ++depth) {
    const size_t n = WrapperLength(line);
    if (n == 0) break;
    line.remove_prefix(n);
  }
  return line;
}

bool NoWrapperCanStart(std::string_view head) {
  // Mirrors WrapperLength's first steps: a wrapper needs these first bytes.
  if (head.empty()) return false;
  const char c = head[0];
  if (c == '>' || IsDigit(c)) return false;
  if (c != '[') return true;
  if (head.size() < 2) return false;
  if (IsDigit(head[1])) return BreaksIsoShape(head, 1);
  constexpr std::string_view kPod = "[pod/";
  if (head.size() < kPod.size()) return kPod.substr(0, head.size()) != head;
  return !StartsWith(head, kPod);
}

const std::vector<std::string>& ProgressBarTriggers() {
  static const std::vector<std::string> kTriggers = {"it/s]", "s/it]"};
  return kTriggers;
}

std::string_view AfterProgressBar(std::string_view line) {
  if (line.size() < 16 || std::memchr(line.data(), '%', line.size()) == nullptr) return line;
  // tqdm ends a bar with the rate: `1.50it/s]`, `3.2s/it]`, `?it/s]`.
  size_t end = std::string_view::npos;
  for (std::string_view tail : {"it/s]", "s/it]"}) {
    const size_t at = line.rfind(tail);
    if (at != std::string_view::npos && (end == std::string_view::npos || at + 5 > end)) {
      end = at + 5;
    }
  }
  if (end == std::string_view::npos || line.find('|') > end) return line;
  std::string_view rest = line.substr(end);
  while (!rest.empty() && (rest[0] == ' ' || rest[0] == '\r')) rest.remove_prefix(1);
  return rest.empty() ? line : rest;
}

}  // namespace fingerprintd::parse
