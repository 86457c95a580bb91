#include "rules/literal_scanner.h"

#include <algorithm>
#include <cstring>

namespace fingerprintd::rules {
namespace {

constexpr int kBits = 18;

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// Setting bit 5 of every byte maps 'A'-'Z' onto 'a'-'z' (and a few
// punctuation bytes onto others): the same folding on literals and text makes
// the key test a superset of case-insensitive equality; whole literals are
// then compared exactly with Lower().
uint32_t FoldedKey(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v | 0x20202020u;
}

uint32_t Slot(uint32_t key) { return (key * 0x9E3779B1u) >> (32 - kBits); }

bool EqualsLowered(const char* text, const std::string& literal) {
  for (size_t i = 0; i < literal.size(); ++i) {
    if (Lower(text[i]) != literal[i]) return false;
  }
  return true;
}

}  // namespace

LiteralScanner::LiteralScanner(const std::vector<std::string>& literals)
    : bitmap_((size_t{1} << kBits) / 64, 0) {
  size_t shortest = 0;
  for (const std::string& literal : literals) {
    std::string lowered = literal;
    for (char& c : lowered) c = Lower(c);
    literals_.push_back(std::move(lowered));
    size_t n = literals_.back().size();
    if (n >= 4 && (shortest == 0 || n < shortest)) shortest = n;
  }
  stride_ = shortest >= 4 ? shortest - 3 : 1;
  for (size_t id = 0; id < literals_.size(); ++id) {
    const std::string& l = literals_[id];
    if (l.empty()) continue;  // never reported: FilteredRE2 gives no empty atoms
    if (l.size() < 4) {
      short_literals_.push_back(static_cast<int>(id));
      continue;
    }
    for (size_t offset = 0; offset < stride_; ++offset) {
      uint32_t key = FoldedKey(l.data() + offset);
      uint32_t slot = Slot(key);
      bitmap_[slot >> 6] |= uint64_t{1} << (slot & 63);
      windows_.push_back(Window{key, static_cast<int>(id), static_cast<uint32_t>(offset)});
    }
  }
  std::stable_sort(windows_.begin(), windows_.end());
}

template <typename OnMatch>
void LiteralScanner::Scan(std::string_view text, OnMatch on_match) const {
  const char* data = text.data();
  const size_t n = text.size();
  if (n >= 4 && !windows_.empty()) {
    const uint64_t* bitmap = bitmap_.data();
    for (size_t i = 0; i + 4 <= n; i += stride_) {
      const uint32_t key = FoldedKey(data + i);
      const uint32_t slot = Slot(key);
      if ((bitmap[slot >> 6] >> (slot & 63) & 1) == 0) continue;
      auto it = std::lower_bound(windows_.begin(), windows_.end(), Window{key, 0, 0});
      for (; it != windows_.end() && it->key == key; ++it) {
        if (i < it->offset) continue;
        const size_t start = i - it->offset;
        const std::string& literal = literals_[it->literal];
        if (literal.size() > n - start || !EqualsLowered(data + start, literal)) continue;
        if (!on_match(it->literal, start)) return;
      }
    }
  }
  for (int id : short_literals_) {
    const std::string& literal = literals_[id];
    for (size_t i = 0; i + literal.size() <= n; ++i) {
      if (EqualsLowered(data + i, literal) && !on_match(id, i)) return;
    }
  }
}

bool LiteralScanner::FindAll(std::string_view text, std::vector<int>* out) const {
  out->clear();
  Scan(text, [&](int literal, size_t) {
    out->push_back(literal);
    return true;
  });
  if (out->empty()) return false;
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return true;
}

bool LiteralScanner::Any(std::string_view text) const {
  bool found = false;
  Scan(text, [&](int, size_t) {
    found = true;
    return false;
  });
  return found;
}

void LiteralScanner::FindEnds(std::string_view text, std::vector<size_t>* ends) const {
  Scan(text, [&](int literal, size_t start) {
    ends->push_back(start + literals_[literal].size());
    return true;
  });
}

}  // namespace fingerprintd::rules
