#include "parse/ansi.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "common/cpu.h"
#include "common/utf8.h"
#ifdef FINGERPRINTD_AVX2_DISPATCH
#include <immintrin.h>
#endif

#include <cstdint>
#include <cstring>

namespace fingerprintd::parse {
namespace {

constexpr uint64_t kHighBits = 0x8080808080808080ULL;
constexpr uint64_t kSpaces = 0x2020202020202020ULL;

// Index of the first byte >= 0x80 or < 0x20 at or after `i`, or text.size().
// Eight bytes at a time: such bytes are rare in ordinary log text.
size_t NextSpecial(std::string_view text, size_t i) {
  const char* p = text.data();
  const size_t n = text.size();
  while (i + 8 <= n) {
    uint64_t x;
    std::memcpy(&x, p + i, 8);
    const uint64_t below_space = (x - kSpaces) & ~x & kHighBits;
    if (((x & kHighBits) | below_space) != 0) break;
    i += 8;
  }
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(p[i]);
    if (c < 0x20 || c >= 0x80) return i;
    ++i;
  }
  return n;
}

}  // namespace

#ifdef FINGERPRINTD_AVX2_DISPATCH
namespace {

// IsPlainAscii for n >= 32 on a CPU with AVX2 (chosen at run time: the build
// targets plain x86-64): 32 bytes per test instead of 16.
__attribute__((target("avx2"))) bool IsPlainAsciiAvx2(const char* p, size_t n) {
  const __m256i low = _mm256_set1_epi8(0x1f);
  const __m256i high = _mm256_set1_epi8(0x7f);
  size_t i = 0;
  while (true) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const __m256i plain = _mm256_and_si256(_mm256_cmpgt_epi8(x, low), _mm256_cmpgt_epi8(high, x));
    if (_mm256_movemask_epi8(plain) != -1) return false;
    if (i + 32 == n) return true;
    i = i + 64 <= n ? i + 32 : n - 32;  // the tail, overlapping
  }
}

}  // namespace
#endif

bool IsPlainAscii(std::string_view text) {
  const char* p = text.data();
  const size_t n = text.size();
  size_t i = 0;
#ifdef FINGERPRINTD_AVX2_DISPATCH
  if (n >= 32 && CpuHasAvx2()) return IsPlainAsciiAvx2(p, n);
#endif
#if defined(__SSE2__)
  if (n >= 16) {
    // As signed bytes, exactly the printable ones are > 0x1f and < 0x7f.
    const __m128i low = _mm_set1_epi8(0x1f);
    const __m128i high = _mm_set1_epi8(0x7f);
    auto plain16 = [&](size_t at) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
      return _mm_and_si128(_mm_cmpgt_epi8(x, low), _mm_cmplt_epi8(x, high));
    };
    for (; i + 32 <= n; i += 32) {
      if (_mm_movemask_epi8(_mm_and_si128(plain16(i), plain16(i + 16))) != 0xFFFF) return false;
    }
    if (i + 16 <= n) {
      if (_mm_movemask_epi8(plain16(i)) != 0xFFFF) return false;
      i += 16;
    }
    return i == n || _mm_movemask_epi8(plain16(n - 16)) == 0xFFFF;  // the tail, overlapping
  }
#endif
  for (; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(p[i]);
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

size_t EscapeSequenceLength(std::string_view text) {
  const size_t n = text.size();
  if (n < 2) return n;
  const unsigned char kind = static_cast<unsigned char>(text[1]);
  size_t i = 2;
  if (kind == '[') {  // CSI: parameters, intermediates, one final byte
    while (i < n && text[i] >= 0x30 && text[i] <= 0x3F) ++i;
    while (i < n && text[i] >= 0x20 && text[i] <= 0x2F) ++i;
    if (i < n && text[i] >= 0x40 && text[i] <= 0x7E) ++i;
    return i;
  }
  if (kind == ']') {  // OSC: up to BEL or ST (ESC \)
    while (i < n) {
      if (text[i] == '\x07') return i + 1;
      if (text[i] == '\x1b' && i + 1 < n && text[i + 1] == '\\') return i + 2;
      ++i;
    }
    return n;
  }
  // Two-byte sequences (ESC 7, ESC M, ...) and charset selection (ESC ( B).
  i = 1;
  while (i < n && text[i] >= 0x20 && text[i] <= 0x2F) ++i;
  if (i < n && text[i] >= 0x30 && text[i] <= 0x7E) ++i;
  return i;
}

std::string_view CleanLine(std::string_view raw, std::string* scratch, CleanFlags* flags) {
  *flags = CleanFlags{};
  if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  size_t i = NextSpecial(raw, 0);
  if (i == raw.size()) return raw;

  // Bytes [pending, i) are unchanged and not yet copied; copying starts at the
  // first byte that has to change, so clean non-ASCII lines are never copied.
  bool copying = false;
  size_t pending = 0;
  auto start_change = [&](size_t at) {
    if (!copying) {
      scratch->assign(raw.data(), at);
      copying = true;
    } else {
      scratch->append(raw.data() + pending, at - pending);
    }
  };
  while (i < raw.size()) {
    const unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c == 0x1b) {
      start_change(i);
      i += EscapeSequenceLength(raw.substr(i));
      pending = i;
    } else if (c >= 0x80) {
      const size_t len = Utf8SequenceLength(raw.substr(i));
      if (len == 0) {
        flags->invalid_utf8 = true;
        start_change(i);
        scratch->append("\xEF\xBF\xBD");
        ++i;
        pending = i;
      } else {
        i += len;
      }
    } else {
      if (c != '\t' && c != '\r') flags->binary = true;
      ++i;
    }
    i = NextSpecial(raw, i);
  }
  if (!copying) return raw;
  scratch->append(raw.data() + pending, raw.size() - pending);
  // A colour reset may have hidden the '\r' before the end of the line.
  std::string_view out = *scratch;
  if (!out.empty() && out.back() == '\r') out.remove_suffix(1);
  return out;
}

size_t RawLengthOf(std::string_view raw, std::string_view clean_prefix) {
  constexpr size_t kNone = std::string_view::npos;
  size_t i = 0, kept = 0;
  while (kept < clean_prefix.size() && i < raw.size()) {
    const unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c == 0x1b) {
      i += EscapeSequenceLength(raw.substr(i));
      continue;
    }
    if (c < 0x20 || c >= 0x7f || raw[i] != clean_prefix[kept]) return kNone;
    ++i;
    ++kept;
  }
  if (kept != clean_prefix.size()) return kNone;
  const std::string_view head = raw.substr(0, i);
  for (size_t j = 0; j < head.size();) {
    if (head[j] != '\x1b') {
      ++j;
      continue;
    }
    const size_t len = EscapeSequenceLength(head.substr(j));
    if (j + len >= head.size()) return kNone;
    j += len;
  }
  std::string scratch;
  CleanFlags flags;
  if (CleanLine(head, &scratch, &flags) != clean_prefix || flags.binary || flags.invalid_utf8) {
    return kNone;
  }
  return i;
}

}  // namespace fingerprintd::parse
