// NaiveNonPlain: the bitmap of a text's bytes that are not printable ASCII,
// byte by byte, as the oracle for the whole-buffer search's bitmap
// (rules::SimdLiteralSearch::FindEnds, rules::BufferMatcher::Search): bit
// i % 64 of word i / 64 set for text[i] < 0x20 or > 0x7e.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace fingerprintd::testing {

inline std::vector<uint64_t> NaiveNonPlain(std::string_view text) {
  std::vector<uint64_t> words((text.size() + 63) / 64, 0);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c > 0x7e) words[i / 64] |= uint64_t{1} << (i % 64);
  }
  return words;
}

}  // namespace fingerprintd::testing
