// SimdLiteralSearch: finds the end of every occurrence of a fixed set of ASCII
// literals in a whole buffer, case-insensitively. The engine of
// rules::BufferMatcher (buffer_matcher.h), built for buffers that hold almost
// no occurrence: its cost is the first pass, a filter over 32 bytes at a time,
// and the exact check of the few positions the filter lets through.
//
//   SimdLiteralSearch search({"error", "unknown sf transformation"});
//   std::vector<size_t> ends;
//   search.FindEnds(buffer, &ends);   // appends, unordered
//
// Two filters, chosen by a literal's length, each run over 16 KiB of the
// buffer in turn (one loop doing both would not keep its constants in the 16
// vector registers):
//
// - Window probes, for literals of 7 bytes or more. The text's words at
//   offsets 0, 4, 8, ... are case-folded (`| 0x20` on every byte), hashed and
//   tested in a 2^16-bit bitmap (8 KiB, so that both bitmaps stay in the L1
//   cache): a
//   window sets two bits of one 32-bit word, both chosen by its hash, and a
//   text window passes only when both are set. With one bit, a common text
//   window whose hash fell on a literal's bit passed every time; two bits in
//   one word cost the same gather and three more instructions.
//   Windows of w bytes probed every s bytes: an occurrence of a literal of
//   length L covers one window starting at such an offset whenever
//   L >= w + s - 1, and that window is the literal's window at offset k,
//   k+1, ... or k+s-1 for any k <= L - w - s + 1.
//   So each literal registers only those s windows, with k chosen where they
//   are rarest in log text (a byte-and-bigram frequency estimate), not
//   necessarily at its start. Literals of 15 bytes or more use 8-byte
//   windows (two words, hashes xored), which ordinary text rarely repeats,
//   probed every 8 bytes; those of 7 to 14 bytes use 4-byte windows, probed
//   every 4, in a bitmap of their own. With AVX2, 64 bytes cost two loads,
//   four multiplies and three gathers (the gathers are most of its time,
//   which is why 8-byte windows are probed every 8 bytes, not every 4).
// - Nibble masks, for literals shorter than 7 bytes: the "Teddy" idea over F
//   consecutive bytes (F = 3, less when a literal is shorter). Each literal
//   picks its rarest F-byte fingerprint; literals go into 8 buckets (one bit
//   each, few per bucket, chosen to keep the masks' false candidates low);
//   for every fingerprint position two 16-entry tables give, for a byte's
//   low and high nibble, the buckets admitting it, so pshufb looks up 32
//   bytes at once and a position is a candidate for the buckets all F
//   bytes keep. Both cases of a letter are admitted; bytes >= 0x80 admit
//   none.
//
// The same pass can also mark the bytes that are not printable ASCII (below
// 0x20 or above 0x7e, '\n' among them), one bit per byte: what
// parse::IsPlainAscii looks for, so parse::BufferHints answers it for any
// line of the buffer without a second pass over its bytes. In the short
// filter's loop (the probes' when there are no short literals) that costs
// about seven instructions per 64 bytes (both blocks tested at once with the
// candidates, an empty word stored), and about seven more where the 64
// bytes hold such a byte (their 64-bit word).
//
// The hot loops only note the blocks with a candidate; each is looked at
// again after its 16 KiB, and every candidate compared whole,
// case-insensitively, within the buffer (8 bytes at a time). The filters only
// admit more, so the ends are exactly those of a naive search: each
// occurrence once. The last bytes, which do not fill a block, go through the
// same tables one position at a time (FindEndsPortable does the whole buffer
// so, for tests; it is far slower than the AVX2 path, so without AVX2
// BufferMatcher uses the LiteralScanner instead).
//
// Threading: immutable after construction; FindEnds is const and allocates
// nothing but the growth of `ends`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprintd::rules {

class SimdLiteralSearch {
 public:
  SimdLiteralSearch() = default;
  // `literals`: ASCII (a byte >= 0x80 in a short literal's fingerprint is
  // never admitted: BufferMatcher refuses such atoms); empty ones are
  // ignored. Matched in any letter case.
  explicit SimdLiteralSearch(const std::vector<std::string>& literals);

  // Appends to `ends` the end offset (exclusive) in `text` of every
  // occurrence of every literal, unordered. With `non_plain`, writes the
  // (text.size() + 63) / 64 words there, all of them: bit i % 64 of word
  // i / 64 is set exactly when text[i] is not printable ASCII (c < 0x20 ||
  // c > 0x7e, '\n' too), in the same pass (also when there are no literals).
  void FindEnds(std::string_view text, std::vector<size_t>* ends,
                uint64_t* non_plain = nullptr) const;
  // The same without SIMD, with the same tables and candidates (what FindEnds
  // does on a CPU without AVX2, and for a buffer's last bytes).
  void FindEndsPortable(std::string_view text, std::vector<size_t>* ends,
                        uint64_t* non_plain = nullptr) const;
  // Writes `non_plain` as FindEnds does, one byte at a time (for the
  // engines without this pass: the LiteralScanner, Hyperscan).
  static void FindNonPlain(std::string_view text, uint64_t* non_plain);
  // True if FindEnds uses AVX2 on this CPU.
  static bool UsesAvx2();

  size_t size() const { return literals_.size(); }

 private:
  static constexpr int kBuckets = 8;

  struct Anchor {  // a short literal and where its fingerprint starts in it
    uint32_t literal;
    uint32_t offset;
  };
  struct Window {  // a literal's folded window at `offset`
    uint64_t key;
    uint32_t literal;
    uint32_t offset;
    bool operator<(const Window& o) const { return key < o.key; }
  };
  struct Slot {  // windows[begin, begin + count) have `key`; count 0: empty
    uint64_t key = 0;
    uint32_t begin = 0;
    uint32_t count = 0;
  };
  // The windows of one width (4 or 8 bytes), probed every `stride` bytes.
  struct Probe {
    size_t width = 4;
    size_t stride = 4;             // windows probed at offsets that are multiples of it
    std::vector<uint32_t> bitmap;  // 2^kBitmapBits bits by Hash()
    std::vector<Window> windows;   // sorted by key
    std::vector<Slot> slots;       // open addressing over distinct keys
    int slot_shift = 32;
  };

  void BuildShort(const std::vector<uint32_t>& ids);
  static void BuildProbe(const std::vector<std::string>& literals, const std::vector<uint32_t>& ids,
                         Probe* probe);

  // Positions from `from` (a multiple of 4) to the end, one at a time.
  void ScanPortable(const char* data, size_t n, size_t from, std::vector<size_t>* ends) const;
  // The words of `non_plain` (FindEnds) for the bytes from `from` to `n`, one
  // byte at a time; the bits of the bytes before `from` are kept.
  static void MarkNonPlain(const char* data, size_t n, size_t from, uint64_t* non_plain);
#if defined(__x86_64__) && defined(__GNUC__)
  template <int kWidth>
  void ScanAvx2(const char* data, size_t n, std::vector<size_t>* ends, uint64_t* non_plain) const;
  // kNonPlain: also write the words of `non_plain` for [begin, end), the
  // last one's upper half 0 when end - begin is not a multiple of 64.
  template <int kWidth, bool kNonPlain>
  void ShortPassAvx2(const char* data, size_t n, size_t begin, size_t end,
                     std::vector<size_t>* ends, uint64_t* non_plain) const;
  // The windows of the 64-byte unit at `b` that the probes let through:
  // bit i of `middle_at` for the 4-byte window at b + 4i, bit i of `long_at`
  // for the 8-byte window at b + LongOffset(i) (lanes of both halves alternate).
  void ConfirmUnit(const char* data, size_t n, size_t b, unsigned middle_at, unsigned long_at,
                   std::vector<size_t>* ends) const;
  template <bool kNonPlain>
  void ProbePassAvx2(const char* data, size_t n, size_t begin, size_t end,
                     std::vector<size_t>* ends, uint64_t* non_plain) const;
#endif
  // The short literals whose fingerprint may start at `at` (bucket bits `buckets`).
  void ConfirmShort(const char* data, size_t n, size_t at, unsigned buckets,
                    std::vector<size_t>* ends) const;
  // The literals of `probe` one of whose windows may start at `at`.
  void ConfirmWindow(const Probe& probe, const char* data, size_t n, size_t at,
                     std::vector<size_t>* ends) const;
  bool Matches(const char* data, size_t n, size_t start, uint32_t literal,
               std::vector<size_t>* ends) const;

  std::vector<std::string> literals_;  // ASCII-lowercased
  std::vector<std::string> letters_;   // per literal byte: 0x20 for a letter, else 0

  // Short literals.
  int width_ = 1;                       // F, fingerprint bytes (1 to 3)
  alignas(16) uint8_t lo_[3][16] = {};  // bucket bits admitted by a low nibble
  alignas(16) uint8_t hi_[3][16] = {};  // ... by a high nibble
  std::vector<Anchor> anchors_;         // by bucket
  uint32_t bucket_begin_[kBuckets + 1] = {};

  Probe middle_;  // 4-byte windows every 4 bytes: literals of 7 to 14 bytes
  Probe long_;    // 8-byte windows every 8 bytes: literals of 15 bytes or more
};

}  // namespace fingerprintd::rules
