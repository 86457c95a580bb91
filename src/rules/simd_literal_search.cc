#include "rules/simd_literal_search.h"

#include "common/cpu.h"
#ifdef FINGERPRINTD_AVX2_DISPATCH
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

namespace fingerprintd::rules {
namespace {

// 4-byte windows are probed every 4 bytes, 8-byte windows every 8: an
// occurrence of a literal of L >= stride + w - 1 bytes covers one w-byte
// window at such an offset.
constexpr size_t kMiddleStride = 4;
constexpr size_t kLongStride = 8;
constexpr size_t kMiddleLength = kMiddleStride + 3;  // 4-byte windows from here
constexpr size_t kLongLength = kLongStride + 7;      // 8-byte windows from here
constexpr uint32_t kMultiplier = 0x9E3779B1u;
constexpr uint32_t kMultiplier2 = 0x85EBCA77u;
constexpr int kBitmapBits = 16;  // 8 KiB per probe: both in half of a 32 KiB L1

// How often each ASCII byte occurs in log text, letters in either case, in
// 1/65536 (at least 1): the examples, the golden fixtures and the bench mix.
// Only used to pick rare windows and fingerprints, so it need not be exact.
constexpr uint16_t kByteFrequency[128] = {
    1,    1,    1,    1,    1,    1,    1,   1,   1,   1,    310,  1,   1,    20,   1,    1,
    1,    1,    1,    1,    1,    1,    1,   1,   1,   1,    1,    517, 1,    1,    1,    1,
    5982, 1,    207,  3,    2,    10,   1,   82,  339, 334,  11,   5,   1010, 606,  873,  346,
    2906, 1681, 1304, 1457, 940,  685,  791, 508, 520, 554,  1203, 523, 97,   1005, 103,  1,
    1,    2185, 441,  1452, 1515, 4550, 816, 604, 632, 2056, 1,    642, 1300, 1663, 2599, 2701,
    2545, 211,  2807, 2600, 3286, 1228, 343, 364, 121, 486,  156,  864, 106,  342,  211,  1551,
    8,    2185, 441,  1452, 1515, 4550, 816, 604, 632, 2056, 1,    642, 1300, 1663, 2599, 2701,
    2545, 211,  2807, 2600, 3286, 1228, 343, 364, 121, 486,  156,  11,  190,  10,   1,    1,
};

// Byte classes for kFollowing: 0 control and non-ASCII, 1 space, 2 digits,
// 3-28 'a'-'z' (either case), 29 '_', 30 '.', 31 other punctuation.
int ClassOf(unsigned char c) {
  if (c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c + 32);
  if (c == ' ') return 1;
  if (c >= '0' && c <= '9') return 2;
  if (c >= 'a' && c <= 'z') return 3 + (c - 'a');
  if (c == '_') return 29;
  if (c == '.') return 30;
  return c > ' ' && c < 127 ? 31 : 0;
}

// How often a byte of class `row` is followed by one of class `column`, in
// 1/4096 of the row (at least 1), in the same texts: letters inside words
// follow each other far more often than their frequencies alone say, so
// "ing" and "ker" are common, "xit" and "fig" are not.
constexpr uint16_t kFollowing[32][32] = {
    {863, 6, 543, 1, 1, 1, 1, 1, 1,  5, 1, 3, 1, 1, 14, 1,
     1,   1, 1,   1, 1, 1, 1, 1, 29, 1, 1, 1, 1, 1, 1,  2629},
    {77,  282, 570, 126, 87,  198, 19,  69, 197, 56, 47, 299, 1, 31, 81, 131,
     106, 86,  389, 13,  226, 358, 215, 16, 12,  73, 1,  1,   1, 3,  1,  326},
    {1, 335, 2164, 21, 24, 21, 20, 25, 21, 1, 1, 1, 1,  1, 1,   190,
     1, 1,   4,    1,  1,  1,  41, 1,  1,  1, 1, 1, 41, 1, 202, 984},
    {1,   117, 113, 12, 26,  249, 308, 12, 57, 59, 1,  87, 1, 2,   607, 187,
     264, 1,   402, 1,  449, 225, 648, 33, 38, 1,  62, 7,  1, 120, 7,   5},
    {2, 10, 534, 564, 49,  55,  56, 1022, 51, 1, 1, 17,  2, 1, 527, 1,
     8, 11, 1,   1,   118, 600, 1,  31,   1,  1, 1, 181, 1, 1, 26,  231},
    {1, 4,   169, 455, 16, 65, 46,  573, 18, 1, 745, 183, 1, 206, 201, 181,
     1, 304, 5,   1,   5,  9,  157, 460, 1,  1, 1,   137, 1, 135, 6,   14},
    {29, 464, 186, 168, 13,  49,  234, 530, 14, 1, 1, 63, 1, 1,   4,  1,
     1,  295, 44,  1,   192, 355, 2,   235, 1,  1, 1, 3,  1, 193, 11, 1009},
    {19,  288, 62, 49,  6,   138, 315, 144, 23, 46, 1,  33, 1, 1,   91, 132,
     529, 28,  76, 160, 683, 363, 151, 1,   19, 16, 72, 1,  1, 142, 85, 423},
    {1, 668,  300, 385, 27,  29, 30,  144, 36, 1, 1, 134, 1, 1, 14, 1,
     1, 1408, 111, 1,   456, 1,  101, 188, 1,  1, 1, 3,   1, 7, 38, 15},
    {8,   779, 1,    1, 1,   1,   2, 422, 1, 216, 119, 524, 1, 1,  8, 2,
     221, 1,   1004, 1, 381, 264, 1, 1,   1, 1,   1,   1,   1, 49, 3, 92},
    {1, 702, 4, 1216, 1, 1, 2,   983, 1, 1, 1, 390, 1, 1,  1,  77,
     1, 226, 4, 1,    5, 1, 417, 8,   1, 1, 1, 1,   1, 23, 11, 26},
    {1,    1,   1,   149, 38, 86,  683, 44, 2,  84, 1, 1, 1,  1, 93, 257,
     1349, 249, 140, 1,   5,  539, 219, 1,  65, 1,  2, 1, 87, 2, 1,  3},
    {1, 1, 1, 1, 1, 1,    1, 1741, 1, 1, 1, 410, 1, 1, 1, 1,
     1, 1, 1, 1, 1, 1536, 1, 1,    1, 1, 1, 1,   1, 1, 1, 410},
    {294, 134, 4,  76, 1, 1,   1, 2515, 1,   2,  1, 200, 1, 1,   1, 1,
     4,   1,   21, 1,  1, 214, 1, 122,  161, 18, 1, 1,   1, 121, 1, 207},
    {6, 271, 1, 253, 1, 2,   8,   427, 19, 1, 1, 226, 1, 1,   438, 173,
     1, 664, 1, 1,   4, 227, 365, 164, 1,  1, 1, 8,   1, 501, 68,  268},
    {1, 715, 1,   188, 78, 1,   1, 262, 1, 1, 1, 162, 1, 1,   3,  67,
     1, 221, 896, 1,   1,  223, 1, 53,  1, 1, 1, 1,   1, 404, 75, 742},
    {4,  272, 42, 159, 3, 364, 119, 621, 430, 267, 1, 38, 1, 33,  1, 3,
     70, 562, 2,  1,   5, 407, 117, 3,   30,  4,   1, 1,  1, 353, 2, 182},
    {1,   338, 1,   37, 96,  142, 128, 1,   30, 148, 1, 34, 1, 446, 31, 459,
     712, 35,  245, 1,  678, 118, 63,  271, 1,  3,   1, 1,  1, 2,   2,  75},
    {1, 53,  298, 210, 1,   2, 1,   409, 1, 3, 85, 670, 1, 1,   268, 1,
     1, 142, 35,  1,   493, 4, 299, 188, 1, 1, 1,  414, 1, 254, 2,   263},
    {1, 1, 1, 1, 1, 1, 1, 1,    1, 1,   1, 1, 1, 2, 1, 1,
     2, 1, 1, 1, 1, 4, 1, 3801, 1, 280, 1, 1, 1, 5, 1, 1},
    {2,  425, 1, 440, 1,  10, 78,  1089, 1,   57, 1, 137, 1, 210, 1,   9,
     43, 448, 2, 1,   45, 13, 125, 240,  193, 2,  1, 34,  1, 260, 133, 96},
    {154, 316, 1,   69, 1,  52,  1,    567, 5, 3, 116, 67, 1, 50, 28, 1,
     1,   43,  152, 1,  24, 145, 1243, 33,  1, 1, 1,   49, 1, 59, 8,  910},
    {2, 488, 143, 161, 1,   103, 143, 446, 2, 1,  165, 317, 1, 1,   2,  1,
     3, 665, 309, 1,   276, 53,  64,  85,  1, 39, 1,   120, 1, 171, 25, 312},
    {1,   65, 19, 66, 67,  287, 292, 805, 2, 43, 1, 6, 1, 1,   178, 103,
     367, 1,  53, 1,  232, 492, 903, 1,   4, 1,  1, 1, 1, 105, 1,   6},
    {1, 308, 620, 27, 1, 1, 1, 2146, 1, 2, 1, 433, 1, 1,  327, 8,
     1, 209, 1,   1,  1, 1, 1, 1,    1, 1, 1, 1,   1, 10, 1,   4},
    {1,  203,  12, 348, 1,   1,  1, 790, 1, 1, 226, 237, 1, 1, 1, 1,
     18, 2012, 1,  1,   224, 15, 1, 1,   1, 1, 1,   1,   1, 3, 1, 8},
    {1, 15, 65,  1, 3, 35, 3,    899, 8, 1, 1, 37, 1, 1,    1, 1,
     4, 1,  668, 1, 1, 1,  1157, 1,   1, 1, 1, 1,  1, 1175, 2, 23},
    {4,   490, 1,  1, 1, 2, 1,   18, 1, 1, 1, 1, 1, 1,   1, 7,
     259, 18,  18, 1, 1, 2, 288, 1,  1, 1, 2, 1, 1, 284, 8, 2696},
    {1, 2886, 2, 522, 1, 1, 1, 602, 1, 1, 1, 7, 1, 1, 1, 1,
     1, 1,    1, 1,   1, 1, 1, 1,   1, 1, 1, 1, 1, 1, 1, 76},
    {7, 1,   3,   249, 118, 54,  47,  318, 9, 7,  2, 274, 1, 84, 170, 100,
     5, 169, 557, 1,   312, 519, 945, 8,   3, 99, 1, 1,   1, 30, 6,   2},
    {300, 22, 2607, 1, 1, 6,  4, 3, 3, 5, 5, 1, 1, 1,  8,  10,
     1,   3,  1064, 1, 7, 11, 1, 2, 1, 6, 1, 1, 1, 12, 12, 2},
    {163, 864, 1732, 105, 13, 91, 11, 15, 41, 18, 1, 53, 1, 2, 35, 17,
     173, 1,   40,   8,   7,  20, 38, 29, 35, 76, 1, 1,  1, 1, 1,  507},
};

double Frequency(unsigned char c) { return c < 128 ? kByteFrequency[c] / 65536.0 : 0.0; }

double ClassFrequency(int cls) {
  static const auto* by_class = [] {
    auto* f = new double[32]();
    for (int c = 0; c < 128; ++c) f[ClassOf(static_cast<unsigned char>(c))] += Frequency(c);
    return f;
  }();
  return by_class[cls];
}

// The estimated frequency of `size` bytes at `p` in log text: the first
// byte's, then for each next one the chance its class follows the previous
// byte's, times its share of its class.
double Frequency(const char* p, size_t size) {
  double f = Frequency(static_cast<unsigned char>(p[0]));
  for (size_t i = 1; i < size && f > 0; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    const int cls = ClassOf(c);
    f *= kFollowing[ClassOf(static_cast<unsigned char>(p[i - 1]))][cls] / 4096.0 * Frequency(c) /
         ClassFrequency(cls);
  }
  return f;
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
char Upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; }

// Setting bit 5 of every byte maps 'A'-'Z' onto 'a'-'z' (and some other bytes
// onto others): equal folded words are a superset of case-insensitive equality.
uint32_t FoldedWord(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v | 0x20202020u;
}

// The hash of the folded `width`-byte window at `p`: for 8 bytes, the two
// words' hashes xored, as the AVX2 kernel computes it lane by lane.
uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

uint32_t Hash(const char* p, size_t width) {
  const uint32_t h = FoldedWord(p) * kMultiplier;
  return width == 4 ? h : h ^ FoldedWord(p + 4) * kMultiplier2;
}

// Bit `bit` of a bitmap, in its word: counted from the top, so that the AVX2
// kernel shifts it into a lane's sign bit with one variable shift.
uint32_t BitFor(uint32_t bit) { return uint32_t{1} << (31 - (bit & 31)); }
// The bitmap word of a hash and the two bits of it that a window sets.
uint32_t WordIndex(uint32_t hash) { return hash >> (32 - kBitmapBits + 5); }
uint32_t BitsFor(uint32_t hash) {
  return BitFor(hash >> (32 - kBitmapBits)) | BitFor(hash >> (32 - kBitmapBits - 5));
}

uint64_t Key(const char* p, size_t width) {
  uint64_t key = FoldedWord(p);
  if (width == 8) key |= uint64_t{FoldedWord(p + 4)} << 32;
  return key;
}

}  // namespace

SimdLiteralSearch::SimdLiteralSearch(const std::vector<std::string>& literals) {
  std::vector<uint32_t> short_ids, middle_ids, long_ids;
  for (const std::string& literal : literals) {
    if (literal.empty()) continue;
    std::string lowered = literal;
    for (char& c : lowered) c = Lower(c);
    std::string letters(lowered.size(), '\0');
    for (size_t i = 0; i < lowered.size(); ++i) {
      if (lowered[i] >= 'a' && lowered[i] <= 'z') letters[i] = 0x20;
    }
    letters_.push_back(std::move(letters));
    const uint32_t id = static_cast<uint32_t>(literals_.size());
    (lowered.size() >= kLongLength     ? long_ids
     : lowered.size() >= kMiddleLength ? middle_ids
                                       : short_ids)
        .push_back(id);
    literals_.push_back(std::move(lowered));
  }
  BuildShort(short_ids);
  middle_.width = 4;
  middle_.stride = kMiddleStride;
  BuildProbe(literals_, middle_ids, &middle_);
  long_.width = 8;
  long_.stride = kLongStride;
  BuildProbe(literals_, long_ids, &long_);
}

void SimdLiteralSearch::BuildShort(const std::vector<uint32_t>& ids) {
  width_ = 3;
  for (uint32_t id : ids) width_ = std::min<int>(width_, static_cast<int>(literals_[id].size()));
  const size_t width = static_cast<size_t>(width_);
  // Each literal's rarest fingerprint.
  std::vector<Anchor> anchors;
  for (uint32_t id : ids) {
    const std::string& l = literals_[id];
    Anchor best{id, 0};
    double best_frequency = Frequency(l.data(), width);
    for (size_t o = 1; o + width <= l.size(); ++o) {
      const double f = Frequency(l.data() + o, width);
      if (f < best_frequency) best.offset = static_cast<uint32_t>(o), best_frequency = f;
    }
    anchors.push_back(best);
  }
  // Rarest first, each into the bucket whose estimated false candidates it
  // raises least: the product over positions of the frequencies of all bytes
  // the bucket's nibble masks admit.
  std::stable_sort(anchors.begin(), anchors.end(), [&](const Anchor& a, const Anchor& b) {
    return Frequency(literals_[a.literal].data() + a.offset, width) <
           Frequency(literals_[b.literal].data() + b.offset, width);
  });
  auto admit = [&](uint8_t lo[3][16], uint8_t hi[3][16], const Anchor& a, uint8_t bit) {
    for (size_t j = 0; j < width; ++j) {
      const char c = literals_[a.literal][a.offset + j];
      for (char variant : {c, Upper(c)}) {
        const auto u = static_cast<unsigned char>(variant);
        lo[j][u & 15] |= bit;
        hi[j][u >> 4] |= bit;
      }
    }
  };
  auto estimate = [&](uint8_t lo[3][16], uint8_t hi[3][16], uint8_t bit) {
    double f = 1;
    for (size_t j = 0; j < width; ++j) {
      double admitted = 0;
      for (int c = 0; c < 128; ++c) {
        if ((lo[j][c & 15] & hi[j][c >> 4] & bit) != 0) admitted += Frequency(c);
      }
      f *= admitted;
    }
    return f;
  };
  std::vector<Anchor> by_bucket[kBuckets];
  for (const Anchor& a : anchors) {
    int best = 0;
    double best_cost = 0;
    for (int b = 0; b < kBuckets; ++b) {
      const uint8_t bit = static_cast<uint8_t>(1u << b);
      uint8_t lo[3][16], hi[3][16];
      std::memcpy(lo, lo_, sizeof(lo));
      std::memcpy(hi, hi_, sizeof(hi));
      const double before = by_bucket[b].empty() ? 0 : estimate(lo, hi, bit);
      admit(lo, hi, a, bit);
      const double cost = estimate(lo, hi, bit) - before;
      if (b == 0 || cost < best_cost) best = b, best_cost = cost;
    }
    admit(lo_, hi_, a, static_cast<uint8_t>(1u << best));
    by_bucket[best].push_back(a);
  }
  for (int b = 0; b < kBuckets; ++b) {
    bucket_begin_[b] = static_cast<uint32_t>(anchors_.size());
    anchors_.insert(anchors_.end(), by_bucket[b].begin(), by_bucket[b].end());
  }
  bucket_begin_[kBuckets] = static_cast<uint32_t>(anchors_.size());
}

void SimdLiteralSearch::BuildProbe(const std::vector<std::string>& literals,
                                   const std::vector<uint32_t>& ids, Probe* probe) {
  const size_t width = probe->width;
  const size_t stride = probe->stride;
  probe->bitmap.assign((size_t{1} << kBitmapBits) / 32, 0);
  for (uint32_t id : ids) {
    const std::string& l = literals[id];
    // The `stride` windows from k on, k <= L - (stride + width - 1), least
    // frequent in all.
    std::vector<double> window_frequency(l.size() - width + 1);
    for (size_t j = 0; j < window_frequency.size(); ++j) {
      window_frequency[j] = Frequency(l.data() + j, width);
    }
    auto cost = [&](size_t k) {
      double f = 0;
      for (size_t j = k; j < k + stride; ++j) f += window_frequency[j];
      return f;
    };
    size_t best = 0;
    double best_cost = cost(0);
    for (size_t k = 1; k + stride + width - 1 <= l.size(); ++k) {
      const double c = cost(k);
      if (c < best_cost) best = k, best_cost = c;
    }
    for (size_t j = best; j < best + stride; ++j) {
      const uint32_t hash = Hash(l.data() + j, width);
      probe->bitmap[WordIndex(hash)] |= BitsFor(hash);
      probe->windows.push_back(Window{Key(l.data() + j, width), id, static_cast<uint32_t>(j)});
    }
  }
  std::vector<Window>& windows = probe->windows;
  std::stable_sort(windows.begin(), windows.end());
  int bits = 4;
  while ((size_t{1} << bits) < 2 * windows.size()) ++bits;
  probe->slot_shift = 32 - bits;
  probe->slots.assign(size_t{1} << bits, Slot{});
  for (size_t i = 0; i < windows.size();) {
    size_t j = i;
    while (j < windows.size() && windows[j].key == windows[i].key) ++j;
    const std::string& l = literals[windows[i].literal];
    size_t s = Hash(l.data() + windows[i].offset, width) >> probe->slot_shift;
    while (probe->slots[s].count != 0) s = (s + 1) & (probe->slots.size() - 1);
    probe->slots[s] = Slot{windows[i].key, static_cast<uint32_t>(i), static_cast<uint32_t>(j - i)};
    i = j;
  }
}

// Matches, ConfirmShort and ConfirmWindow are inlined into their callers: as
// calls, their prologues and epilogues were a third of their cost.
__attribute__((always_inline)) inline bool SimdLiteralSearch::Matches(
    const char* data, size_t n, size_t start, uint32_t literal, std::vector<size_t>* ends) const {
  const std::string& l = literals_[literal];
  const size_t size = l.size();
  if (size > n - start) return false;
  const char* p = data + start;
  const char* lit = l.data();
  const char* letters = letters_[literal].data();
  // Eight (or four) bytes at a time: a text byte ORed with 0x20 where the
  // literal has a letter, else with 0, equals the literal's byte exactly when
  // it is that byte in either case.
  if (size >= 8) {
    for (size_t i = 0;; i += 8) {
      if (i + 8 > size) i = size - 8;  // the tail, overlapping
      if ((Load64(p + i) | Load64(letters + i)) != Load64(lit + i)) return false;
      if (i + 8 == size) break;
    }
  } else if (size >= 4) {
    if ((Load32(p) | Load32(letters)) != Load32(lit) ||
        (Load32(p + size - 4) | Load32(letters + size - 4)) != Load32(lit + size - 4)) {
      return false;
    }
  } else {
    for (size_t i = 0; i < size; ++i) {
      if ((p[i] | letters[i]) != lit[i]) return false;
    }
  }
  ends->push_back(start + size);
  return true;
}

__attribute__((always_inline)) inline void SimdLiteralSearch::ConfirmShort(
    const char* data, size_t n, size_t at, unsigned buckets, std::vector<size_t>* ends) const {
  for (; buckets != 0; buckets &= buckets - 1) {
    const int b = __builtin_ctz(buckets);
    for (uint32_t i = bucket_begin_[b]; i < bucket_begin_[b + 1]; ++i) {
      const Anchor& a = anchors_[i];
      if (at >= a.offset) Matches(data, n, at - a.offset, a.literal, ends);
    }
  }
}

__attribute__((always_inline)) inline void SimdLiteralSearch::ConfirmWindow(
    const Probe& probe, const char* data, size_t n, size_t at, std::vector<size_t>* ends) const {
  const uint64_t key = Key(data + at, probe.width);
  const size_t mask = probe.slots.size() - 1;
  for (size_t s = Hash(data + at, probe.width) >> probe.slot_shift; probe.slots[s].count != 0;
       s = (s + 1) & mask) {
    const Slot& slot = probe.slots[s];
    if (slot.key != key) continue;
    for (uint32_t i = slot.begin; i < slot.begin + slot.count; ++i) {
      const Window& w = probe.windows[i];
      if (at >= w.offset) Matches(data, n, at - w.offset, w.literal, ends);
    }
    return;
  }
}

void SimdLiteralSearch::ScanPortable(const char* data, size_t n, size_t from,
                                     std::vector<size_t>* ends) const {
  if (!anchors_.empty()) {
    const size_t width = static_cast<size_t>(width_);
    for (size_t i = from; i + width <= n; ++i) {
      unsigned buckets = 0xff;
      for (size_t j = 0; j < width && buckets != 0; ++j) {
        const auto c = static_cast<unsigned char>(data[i + j]);
        // As pshufb: a byte with its top bit set looks up nothing.
        buckets &= c < 128 ? lo_[j][c & 15] & hi_[j][c >> 4] : 0;
      }
      if (buckets != 0) ConfirmShort(data, n, i, buckets, ends);
    }
  }
  for (const Probe* probe : {&middle_, &long_}) {
    if (probe->windows.empty()) continue;
    // From the first multiple of the stride at or after `from` (the AVX2
    // pass ends at a multiple of 32), so that the windows probed are those
    // at offsets that are multiples of it.
    for (size_t q = (from + probe->stride - 1) / probe->stride * probe->stride;
         q + probe->width <= n; q += probe->stride) {
      const uint32_t hash = Hash(data + q, probe->width);
      if ((probe->bitmap[WordIndex(hash)] & BitsFor(hash)) == BitsFor(hash)) {
        ConfirmWindow(*probe, data, n, q, ends);
      }
    }
  }
}

void SimdLiteralSearch::MarkNonPlain(const char* data, size_t n, size_t from, uint64_t* non_plain) {
  // Word from / 64 keeps its bits below `from`; the words past it are new.
  if (from % 64 != 0) non_plain[from / 64] &= ~(~uint64_t{0} << (from % 64));
  std::fill(non_plain + (from + 63) / 64, non_plain + (n + 63) / 64, 0);
  for (size_t i = from; i < n; ++i) {
    const auto c = static_cast<unsigned char>(data[i]);
    if (c < 0x20 || c > 0x7e) non_plain[i / 64] |= uint64_t{1} << (i % 64);
  }
}

void SimdLiteralSearch::FindNonPlain(std::string_view text, uint64_t* non_plain) {
  MarkNonPlain(text.data(), text.size(), 0, non_plain);
}

#ifdef FINGERPRINTD_AVX2_DISPATCH
namespace {

__attribute__((target("avx2"))) inline __m256i Load(const char* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

__attribute__((target("avx2"))) inline __m256i Table(const uint8_t* t) {
  return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

// The buckets admitting each byte of `v` at one fingerprint position.
__attribute__((target("avx2"))) inline __m256i Lookup(__m256i v, __m256i lo, __m256i hi) {
  const __m256i high = _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
  return _mm256_and_si256(_mm256_shuffle_epi8(lo, v), _mm256_shuffle_epi8(hi, high));
}

// Each lane's hash looked up in `bitmap` (see WordIndex, BitsFor): both bits
// set in the lane's sign bit, other bits garbage.
__attribute__((target("avx2"))) inline __m256i BitmapHits(const int* bitmap, __m256i hash) {
  const __m256i word = _mm256_srli_epi32(hash, 32 - kBitmapBits + 5);
  const __m256i shift = _mm256_srli_epi32(_mm256_slli_epi32(hash, kBitmapBits - 5), 27);
  const __m256i shift2 = _mm256_srli_epi32(_mm256_slli_epi32(hash, kBitmapBits), 27);
  const __m256i words = _mm256_i32gather_epi32(bitmap, word, 4);
  return _mm256_and_si256(_mm256_sllv_epi32(words, shift), _mm256_sllv_epi32(words, shift2));
}

// The bytes that are not printable ASCII (FindEnds) are those with
// (int8_t)(c + 0x60) > -34: 0x20..0x7e map onto -128..-34, the others onto
// -33..127. The constants are built once per pass and hidden from the
// compiler, which would otherwise turn `> -34` into `min(x, -33) == -33`, one
// instruction more in the hot loops.
struct NonPlainTest {
  __attribute__((target("avx2"))) NonPlainTest()
      : shift(_mm256_set1_epi8(0x60)), limit(_mm256_set1_epi8(-34)) {
    asm("" : "+x"(shift), "+x"(limit));
  }
  // The bytes of the 32 at `p` that are marked, 0xff each.
  __attribute__((target("avx2"))) __m256i Marked(const char* p) const {
    return _mm256_cmpgt_epi8(_mm256_add_epi8(Load(p), shift), limit);
  }
  // Those of the 32 at `p`: bit i for p[i].
  __attribute__((target("avx2"))) uint64_t Bits(const char* p) const {
    return static_cast<uint32_t>(_mm256_movemask_epi8(Marked(p)));
  }
  // Of two Marked(): bit i for the first's byte i, 32 + i for the second's.
  __attribute__((target("avx2"))) static uint64_t Bits(__m256i x, __m256i y) {
    return static_cast<uint32_t>(_mm256_movemask_epi8(x)) |
           uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(y))} << 32;
  }

  __m256i shift, limit;
};

}  // namespace

// The buckets of the 32 positions from `p`.
template <int kWidth>
__attribute__((target("avx2"))) inline __m256i Buckets(const char* p, __m256i lo0, __m256i hi0,
                                                       __m256i lo1, __m256i hi1, __m256i lo2,
                                                       __m256i hi2) {
  __m256i buckets = Lookup(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), lo0, hi0);
  if constexpr (kWidth >= 2) {
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 1));
    buckets = _mm256_and_si256(buckets, Lookup(v1, lo1, hi1));
  }
  if constexpr (kWidth >= 3) {
    const __m256i v2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    buckets = _mm256_and_si256(buckets, Lookup(v2, lo2, hi2));
  }
  return buckets;
}

// The 4-byte windows' hashes of the eight words from `p` (offsets 0, 4, ...
// 28), and the 8-byte windows' hashes of the words from `p` in the even lanes
// (offsets 0, 8, 16, 24; the odd lanes garbage): one load, two multiplies.
__attribute__((target("avx2"))) inline void WindowHashes(const char* p, __m256i* h4, __m256i* h8) {
  const __m256i v = _mm256_or_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                                    _mm256_set1_epi32(0x20202020));
  *h4 = _mm256_mullo_epi32(v, _mm256_set1_epi32(kMultiplier));
  // Hash(p, 8): the even word times kMultiplier, xor the odd one times kMultiplier2.
  const __m256i m =
      _mm256_mullo_epi32(v, _mm256_set_epi32(kMultiplier2, kMultiplier, kMultiplier2, kMultiplier,
                                             kMultiplier2, kMultiplier, kMultiplier2, kMultiplier));
  *h8 = _mm256_xor_si256(m, _mm256_srli_epi64(m, 32));
}

// The 8-byte windows' hashes of two blocks (WindowHashes), in one vector:
// lane 2i is block x's window at 8i, lane 2i + 1 block y's (LongOffset).
__attribute__((target("avx2"))) inline __m256i Interleave(__m256i x8, __m256i y8) {
  return _mm256_blend_epi32(x8, _mm256_slli_epi64(y8, 32), 0xaa);
}
// The offset in a 64-byte unit of lane `lane` of Interleave(x, y at x + 32).
inline size_t LongOffset(unsigned lane) { return (lane & 1) * 32 + (lane >> 1) * kLongStride; }

// Both probes' hits in the 64 bytes from `p`, in the lanes' sign bits.
__attribute__((target("avx2"))) inline __m256 ProbeHits(const char* p, const int* middle_bitmap,
                                                        const int* long_bitmap) {
  __m256i x4, x8, y4, y8;
  WindowHashes(p, &x4, &x8);
  WindowHashes(p + 32, &y4, &y8);
  return _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_or_si256(BitmapHits(middle_bitmap, x4), BitmapHits(middle_bitmap, y4)),
                      BitmapHits(long_bitmap, Interleave(x8, y8))));
}

// The hot loops below only note the blocks with a candidate, so that they
// call nothing and keep their constants in registers; the blocks are looked
// at again after the loop. kChunk / 32 blocks at most.
constexpr size_t kChunk = 16 << 10;

// The short literals' fingerprints starting in [begin, end), 32 positions
// at a time; the caller keeps end + 36 within the buffer. kNonPlain: and the
// non-plain bytes of [begin, end).
template <int kWidth, bool kNonPlain>
__attribute__((target("avx2"))) void SimdLiteralSearch::ShortPassAvx2(const char* data, size_t n,
                                                                      size_t begin, size_t end,
                                                                      std::vector<size_t>* ends,
                                                                      uint64_t* non_plain) const {
  const __m256i lo0 = Table(lo_[0]), hi0 = Table(hi_[0]);
  const __m256i lo1 = Table(lo_[1]), hi1 = Table(hi_[1]);
  const __m256i lo2 = Table(lo_[2]), hi2 = Table(hi_[2]);
  uint32_t noted[kChunk / 32];
  size_t count = 0;
  const NonPlainTest test;
  size_t b = begin;
  uint64_t* word = kNonPlain ? non_plain + begin / 64 : nullptr;  // the word of b
  for (; b + 64 <= end; b += 64, word += kNonPlain) {             // two blocks, one test
    const __m256i x = Buckets<kWidth>(data + b, lo0, hi0, lo1, hi1, lo2, hi2);
    const __m256i y = Buckets<kWidth>(data + b + 32, lo0, hi0, lo1, hi1, lo2, hi2);
    const __m256i candidates = _mm256_or_si256(x, y);
    if constexpr (kNonPlain) {
      const __m256i marked_x = test.Marked(data + b), marked_y = test.Marked(data + b + 32);
      const __m256i any = _mm256_or_si256(candidates, _mm256_or_si256(marked_x, marked_y));
      *word = 0;
      if (_mm256_testz_si256(any, any)) continue;
      *word = NonPlainTest::Bits(marked_x, marked_y);
    }
    if (_mm256_testz_si256(candidates, candidates)) continue;
    if (!_mm256_testz_si256(x, x)) noted[count++] = static_cast<uint32_t>(b - begin);
    if (!_mm256_testz_si256(y, y)) noted[count++] = static_cast<uint32_t>(b + 32 - begin);
  }
  if (b < end) {
    const __m256i x = Buckets<kWidth>(data + b, lo0, hi0, lo1, hi1, lo2, hi2);
    if (!_mm256_testz_si256(x, x)) noted[count++] = static_cast<uint32_t>(b - begin);
    if constexpr (kNonPlain) *word = test.Bits(data + b);
  }
  for (size_t i = 0; i < count; ++i) {
    const size_t b = begin + noted[i];
    const __m256i buckets = Buckets<kWidth>(data + b, lo0, hi0, lo1, hi1, lo2, hi2);
    unsigned at = ~static_cast<unsigned>(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(buckets, _mm256_setzero_si256())));
    alignas(32) uint8_t bytes[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(bytes), buckets);
    for (; at != 0; at &= at - 1) {
      const int j = __builtin_ctz(at);
      ConfirmShort(data, n, b + j, bytes[j], ends);
    }
  }
}

// The window probes at the eight words of each block in [begin, end).
// kNonPlain: and the non-plain bytes of [begin, end) (when there are no
// short literals).
__attribute__((always_inline)) inline void SimdLiteralSearch::ConfirmUnit(
    const char* data, size_t n, size_t b, unsigned middle_at, unsigned long_at,
    std::vector<size_t>* ends) const {
  for (unsigned at = middle_at; at != 0; at &= at - 1) {
    ConfirmWindow(middle_, data, n, b + kMiddleStride * __builtin_ctz(at), ends);
  }
  for (unsigned at = long_at; at != 0; at &= at - 1) {
    ConfirmWindow(long_, data, n, b + LongOffset(__builtin_ctz(at)), ends);
  }
}

template <bool kNonPlain>
__attribute__((target("avx2"))) void SimdLiteralSearch::ProbePassAvx2(const char* data, size_t n,
                                                                      size_t begin, size_t end,
                                                                      std::vector<size_t>* ends,
                                                                      uint64_t* non_plain) const {
  const int* middle_bitmap = reinterpret_cast<const int*>(middle_.bitmap.data());
  const int* long_bitmap = reinterpret_cast<const int*>(long_.bitmap.data());
  uint32_t noted[kChunk / 64];  // the 64-byte units with a candidate
  size_t count = 0;
  const NonPlainTest test;
  size_t b = begin;
  uint64_t* word = kNonPlain ? non_plain + begin / 64 : nullptr;  // the word of b
  for (; b + 64 <= end; b += 64, word += kNonPlain) {
    const __m256 any = ProbeHits(data + b, middle_bitmap, long_bitmap);
    if constexpr (kNonPlain) {
      // The hits are in the lanes' sign bits only, `marked` in any byte.
      const __m256i marked_x = test.Marked(data + b), marked_y = test.Marked(data + b + 32);
      const __m256i marked = _mm256_or_si256(marked_x, marked_y);
      *word = 0;
      if (_mm256_testz_ps(any, any) && _mm256_testz_si256(marked, marked)) continue;
      *word = NonPlainTest::Bits(marked_x, marked_y);
    } else if (_mm256_testz_ps(any, any)) {
      continue;
    }
    if (!_mm256_testz_ps(any, any)) noted[count++] = static_cast<uint32_t>(b - begin);
  }
  for (size_t i = 0; i < count; ++i) {
    const size_t b = begin + noted[i];
    __m256i x4, x8, y4, y8;
    WindowHashes(data + b, &x4, &x8);
    WindowHashes(data + b + 32, &y4, &y8);
    const unsigned middle_at =
        _mm256_movemask_ps(_mm256_castsi256_ps(BitmapHits(middle_bitmap, x4))) |
        _mm256_movemask_ps(_mm256_castsi256_ps(BitmapHits(middle_bitmap, y4))) << 8;
    const unsigned long_at =
        _mm256_movemask_ps(_mm256_castsi256_ps(BitmapHits(long_bitmap, Interleave(x8, y8))));
    ConfirmUnit(data, n, b, middle_at, long_at, ends);
  }
  if (b < end) {  // one 32-byte block left (the buffer's last): a unit's first half
    __m256i x4, x8;
    WindowHashes(data + b, &x4, &x8);
    const unsigned middle_at =
        _mm256_movemask_ps(_mm256_castsi256_ps(BitmapHits(middle_bitmap, x4)));
    // x8's even lanes are where Interleave puts them (LongOffset); the odd ones garbage.
    const unsigned long_at =
        _mm256_movemask_ps(_mm256_castsi256_ps(BitmapHits(long_bitmap, x8))) & 0x55;
    ConfirmUnit(data, n, b, middle_at, long_at, ends);
    if constexpr (kNonPlain) *word = test.Bits(data + b);
  }
}

// Blocks of 32 positions while the fingerprints' bytes and the eight 8-byte
// windows lie inside the buffer, the two filters in turn over 16 KiB (kept in
// L1 for the second; one loop with both would not keep its constants in the
// 16 registers); the rest through ScanPortable.
// The non-plain bytes are taken by the first pass that runs, in the blocks
// of each chunk in order, then in the last bytes: in increasing order.
template <int kWidth>
void SimdLiteralSearch::ScanAvx2(const char* data, size_t n, std::vector<size_t>* ends,
                                 uint64_t* non_plain) const {
  const size_t blocks_end = n >= 36 ? (n - 36) / 32 * 32 + 32 : 0;
  const bool probes = !middle_.windows.empty() || !long_.windows.empty();
  for (size_t begin = 0; begin < blocks_end; begin += kChunk) {
    const size_t end = std::min(begin + kChunk, blocks_end);
    if (!anchors_.empty()) {
      if (non_plain != nullptr) {
        ShortPassAvx2<kWidth, true>(data, n, begin, end, ends, non_plain);
      } else {
        ShortPassAvx2<kWidth, false>(data, n, begin, end, ends, nullptr);
      }
    }
    if (probes) {
      if (non_plain != nullptr && anchors_.empty()) {
        ProbePassAvx2<true>(data, n, begin, end, ends, non_plain);
      } else {
        ProbePassAvx2<false>(data, n, begin, end, ends, nullptr);
      }
    }
  }
  ScanPortable(data, n, blocks_end, ends);
  if (non_plain != nullptr) MarkNonPlain(data, n, blocks_end, non_plain);
}

bool SimdLiteralSearch::UsesAvx2() { return CpuHasAvx2(); }

void SimdLiteralSearch::FindEnds(std::string_view text, std::vector<size_t>* ends,
                                 uint64_t* non_plain) const {
  // Without literals (nothing to scan) or AVX2: one byte at a time.
  if (literals_.empty() || !UsesAvx2()) return FindEndsPortable(text, ends, non_plain);
  switch (width_) {
    case 1:
      return ScanAvx2<1>(text.data(), text.size(), ends, non_plain);
    case 2:
      return ScanAvx2<2>(text.data(), text.size(), ends, non_plain);
    default:
      return ScanAvx2<3>(text.data(), text.size(), ends, non_plain);
  }
}

#else

bool SimdLiteralSearch::UsesAvx2() { return false; }

void SimdLiteralSearch::FindEnds(std::string_view text, std::vector<size_t>* ends,
                                 uint64_t* non_plain) const {
  FindEndsPortable(text, ends, non_plain);
}

#endif

void SimdLiteralSearch::FindEndsPortable(std::string_view text, std::vector<size_t>* ends,
                                         uint64_t* non_plain) const {
  if (!literals_.empty()) ScanPortable(text.data(), text.size(), 0, ends);
  if (non_plain != nullptr) MarkNonPlain(text.data(), text.size(), 0, non_plain);
}

}  // namespace fingerprintd::rules
