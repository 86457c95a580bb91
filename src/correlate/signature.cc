// The failure signature: see signature.h.
#include "correlate/signature.h"

#include <re2/re2.h>

#include "common/hash.h"

namespace fingerprintd::correlate {

namespace {

// The exception type of a Python or C++ exception line ("torch.OutOfMemoryError",
// "c10::DistBackendError"), else "".
std::string_view ExceptionType(std::string_view line, std::string_view* message) {
  static const RE2 kType(
      R"(((?:[A-Za-z_][\w]*(?:\.|::))*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Warning|Failure|Timeout)\w*):\s?)");
  re2::StringPiece input(line.data(), line.size());
  re2::StringPiece type;
  if (RE2::Consume(&input, kType, &type)) {
    *message = std::string_view(input.data(), input.size());
    return std::string_view(type.data(), type.size());
  }
  *message = line;
  return {};
}

}  // namespace

std::string MaskValues(std::string_view text) {
  // Order matters: a value is masked before a shorter pattern could take a
  // piece of it (a path before its numbers, a size before its number).
  static const RE2 kQuotedPath(R"(['"][^'"\s]*[/\\][^'"]*['"])");
  static const RE2 kUrl(R"(\b[a-z][a-z0-9+.-]*://\S+)");
  static const RE2 kPath(R"((?:[A-Za-z]:)?(?:[/\\][\w.@+~-]+){2,}[/\\]?)");
  static const RE2 kName(R"(\b[\w.-]+/[\w.-]+\b)");
  static const RE2 kHex(R"(\b0x[0-9a-fA-F]+\b)");
  static const RE2 kHash(R"(\b[0-9a-fA-F]{8,}(?:-[0-9a-fA-F]{4,})*\b)");
  static const RE2 kSize(R"(\b\d+(?:\.\d+)?\s*(?:[KMGTP]i?B|bytes|[KMGT])\b)");
  static const RE2 kNumber(R"(-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b)");
  static const RE2 kQuoted(R"('[^'\n]*'|"[^"\n]*")");
  static const RE2 kSpace(R"(\s+)");
  std::string out(text);
  RE2::GlobalReplace(&out, kUrl, "<url>");
  RE2::GlobalReplace(&out, kQuotedPath, "<path>");
  RE2::GlobalReplace(&out, kPath, "<path>");
  RE2::GlobalReplace(&out, kName, "<name>");
  RE2::GlobalReplace(&out, kHex, "<hex>");
  RE2::GlobalReplace(&out, kHash, "<hash>");
  RE2::GlobalReplace(&out, kSize, "<size>");
  RE2::GlobalReplace(&out, kNumber, "<n>");
  RE2::GlobalReplace(&out, kQuoted, "<str>");
  RE2::GlobalReplace(&out, kSpace, " ");
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (!out.empty() && out.front() == ' ') out.erase(0, 1);
  return out;
}

std::string MaskedCause(std::string_view rule_class, std::string_view exception_line,
                        std::string_view symptom_line, std::string_view raised_in) {
  std::string_view message;
  std::string_view type;
  if (!exception_line.empty()) {
    type = ExceptionType(exception_line, &message);
  } else {
    message = symptom_line;
  }
  return std::string(rule_class) + "\n" + std::string(type) + "\n" + MaskValues(message) + "\n" +
         std::string(raised_in);
}

std::string Signature(std::string_view rule_class, std::string_view exception_line,
                      std::string_view symptom_line, std::string_view raised_in) {
  return "sig-" +
         Hex64(Fnv1a64({MaskedCause(rule_class, exception_line, symptom_line, raised_in)}));
}

}  // namespace fingerprintd::correlate
