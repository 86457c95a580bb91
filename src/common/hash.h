// FNV-1a 64: the one hash for values that must not change between builds,
// platforms or runs (incident ids, traceback fingerprints), which std::hash
// does not promise. Not for security, and not for hash tables.
//
//   uint64_t id = Fnv1a64({deployment, rule_id, bucket});   // fields separated
//   std::string text = Hex64(id);                            // "2b45d74f6dde2461"
//
// Every part is followed by a separator byte, so ("ab", "c") and ("a", "bc")
// differ. Threading: pure functions and a value type.
#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>

namespace fingerprintd {

inline constexpr uint8_t kFnvFieldSeparator = 0x1f;  // ASCII unit separator

// The incremental form, for a number of parts known only at run time.
class Fnv1a64Hasher {
 public:
  // Mixes `part`, then `separator`.
  void Add(std::string_view part, uint8_t separator = kFnvFieldSeparator) {
    for (unsigned char c : part) Mix(c);
    Mix(separator);
  }
  // Mixes `bytes` alone (no separator): the hash of raw content, such as a
  // file's first bytes (source/file_identity.h).
  void AddBytes(std::string_view bytes) {
    for (unsigned char c : bytes) Mix(c);
  }
  uint64_t value() const { return hash_; }

 private:
  void Mix(unsigned char c) {
    hash_ ^= c;
    hash_ *= 1099511628211ULL;
  }
  uint64_t hash_ = 1469598103934665603ULL;
};

// The hash of `parts`, each followed by kFnvFieldSeparator.
inline uint64_t Fnv1a64(std::initializer_list<std::string_view> parts) {
  Fnv1a64Hasher hasher;
  for (std::string_view part : parts) hasher.Add(part);
  return hasher.value();
}

// 16 lowercase hex digits.
inline std::string Hex64(uint64_t value) {
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(value));
  return out;
}

// The value of one hex digit (either case), -1 for any other character.
inline int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace fingerprintd
