#include "parse/line_templates.h"

#include <algorithm>
#include <cstring>

#include "parse/ansi.h"
#include "parse/paste_wrappers.h"
#include "parse/prefix.h"
#include "parse/rank_learning.h"
#include "parse/traceback_lines.h"

namespace fingerprintd::parse {
namespace {

uint64_t Word(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// `a` and `b` (at least `size` bytes each) are equal outside [begin, end).
bool SameOutside(const char* a, const char* b, size_t size, size_t begin, size_t end) {
  return std::memcmp(a, b, begin) == 0 && std::memcmp(a + end, b + end, size - end) == 0;
}

}  // namespace

const std::vector<std::string>& QuietLineTriggers() {
  static const std::vector<std::string> kTriggers = [] {
    std::vector<std::string> out;
    for (const auto* owner :
         {&TracebackTriggers(), &RankLearningTriggers(), &ProgressBarTriggers()}) {
      out.insert(out.end(), owner->begin(), owner->end());
    }
    return out;
  }();
  return kTriggers;
}

std::vector<std::string> WithQuietLineTriggers(const std::vector<std::string>& atoms) {
  std::vector<std::string> out = atoms;
  out.insert(out.end(), QuietLineTriggers().begin(), QuietLineTriggers().end());
  return out;
}

uint64_t LineTemplates::KeyOf(const char* p) {
  // Four words folded by multiplication; the top bits pick the index slot.
  return (Word(p) * 0x9E3779B97F4A7C15ULL) ^ (Word(p + 8) * 0xC2B2AE3D27D4EB4FULL) ^
         (Word(p + 16) * 0x165667B19E3779F9ULL) ^ (Word(p + 24) * 0xD6E8FEB86659FD93ULL);
}

char LineTemplates::FirstClass(char c) {
  if (c >= 'a' && c <= 'z') return 'a';
  if (c >= 'A' && c <= 'Z') return 'A';
  if (c >= '0' && c <= '9') return '0';
  return c;
}

void LineTemplates::SetProbes(Entry* e) {
  const std::string& head = e->t.head;
  if (head.size() < 8) return;
  // The time's last bytes tell one second from another, the chain's last
  // visible ones (before its colour reset and space) one process from another.
  size_t at = e->t.time_end;
  if (at < 8) {
    at = 0;
    for (size_t i = 0; i < e->t.chain_end;) {
      if (head[i] == '\x1b') {
        i += EscapeSequenceLength(std::string_view(head).substr(i));
        continue;
      }
      if (head[i] != ' ') at = i + 1;
      ++i;
    }
  }
  e->probe_at[0] = at >= 8 ? at - 8 : 0;
  e->probe_at[1] = head.size() - 8;
  for (int i = 0; i < 2; ++i) e->probe[i] = Word(head.data() + e->probe_at[i]);
}

bool LineTemplates::Fits(const Entry& e, std::string_view content, const BufferHints& hints) const {
  const std::string& head = e.t.head;
  if (head.empty() || content.size() < head.size()) return false;
  if (head.size() >= 8 && (Word(content.data() + e.probe_at[0]) != e.probe[0] ||
                           Word(content.data() + e.probe_at[1]) != e.probe[1])) {
    return false;
  }
  return std::memcmp(content.data(), head.data(), head.size()) == 0 &&
         hints.PlainAscii(content.substr(head.size()));
}

// True if `content` starts with e's head but for the bytes of its time.
bool LineTemplates::AlikeButTime(const Entry& e, std::string_view content) {
  const LineTemplate& t = e.t;
  const size_t n = t.head.size();
  if (t.time_end == 0 || content.size() < n || content[n - 1] != t.head[n - 1]) return false;
  if (n - t.time_end >= 8 &&
      Word(content.data() + t.time_end) != Word(t.head.data() + t.time_end)) {
    return false;
  }
  return SameOutside(content.data(), t.head.data(), n, t.time_begin, t.time_end);
}

const LineTemplate* LineTemplates::Find(std::string_view content, const BufferHints& hints) {
  if (entries_.empty()) return nullptr;
  // At most one entry has `content`'s head but for the time: two such would
  // be of one shape, which Learn keeps in one place.
  if (content.size() >= kKeyBytes) {
    // Keyed entries of `content`'s key: its first kKeyBytes, the same in every second.
    const uint64_t key = KeyOf(content.data());
    for (size_t i = key >> 57; index_[i] != 0; i = (i + 1) % kIndexSlots) {
      const Entry& e = entries_[index_[i] - 1];
      if (e.key != key) continue;
      if (Fits(e, content, hints)) return &e.t;
      if (AlikeButTime(e, content)) return Retime(index_[i] - 1, content, hints);
    }
  }
  for (size_t k = 0; k < order_.size(); ++k) {
    const uint8_t i = order_[k];
    const bool fits = Fits(entries_[i], content, hints);
    if (!fits && !AlikeButTime(entries_[i], content)) continue;
    for (size_t j = k; j > 0; --j) order_[j] = order_[j - 1];  // to the front
    order_[0] = i;
    return fits ? &entries_[i].t : Retime(i, content, hints);
  }
  return headless_ > 0 ? WithoutHead(content, hints) : nullptr;
}

// Entry i re-timed by the header `content` starts with, when that has the
// template's shape: the chain is the template's (its bytes and the byte
// after it), and so are the header's bytes but for the time, which
// ParseHeader reads again.
const LineTemplate* LineTemplates::Retime(size_t i, std::string_view content,
                                          const BufferHints& hints) {
  Entry& e = entries_[i];
  LineTemplate& t = e.t;
  const size_t n = t.head.size();
  const std::string_view rest = content.substr(t.chain_end);
  const std::string_view new_head = content.substr(0, n);
  if (!hints.PlainAscii(rest) ||
      (t.chain_end == 0 && (!NoWrapperCanStart(new_head) || MayStartPrefixChain(new_head)))) {
    return nullptr;
  }
  Header h;
  if (!ParseHeader(rest, &h) || !h.has_time || h.kind != t.kind || h.level != t.level ||
      h.has_worker != t.names_worker || t.chain_end + h.fixed_size != n ||
      t.chain_end + h.time_begin != t.time_begin || t.chain_end + h.time_end != t.time_end) {
    return nullptr;
  }
  // In place: the head keeps its size, its key (keyed heads hold no time in
  // the keyed bytes) and its place in order_.
  t.head.assign(new_head.data(), n);
  t.time = h.time;
  SetProbes(&e);
  return &t;
}

// A template with an empty head whose kind and level ParseHeader gives `content`.
const LineTemplate* LineTemplates::WithoutHead(std::string_view content,
                                               const BufferHints& hints) const {
  if (content.empty()) return nullptr;
  const char first = FirstClass(content[0]);
  bool parsed = false;
  Header h;
  for (const Entry& e : entries_) {
    if (!e.t.head.empty() || e.first_class != first) continue;
    if (!parsed) {
      if (!hints.PlainAscii(content) || !NoWrapperCanStart(content) ||
          MayStartPrefixChain(content) || !ParseHeader(content, &h) || h.has_time || h.has_worker ||
          h.fixed_size != 0) {
        return nullptr;
      }
      parsed = true;
    }
    if (h.kind == e.t.kind && h.level == e.t.level) return &e.t;
  }
  return nullptr;
}

void LineTemplates::Learn(LineTemplate t, char first_byte) {
  Entry e;
  e.t = std::move(t);
  e.first_class = FirstClass(first_byte);
  SetProbes(&e);
  // The same process's template of the same shape is replaced (its second
  // is over): its head alike but for the time.
  size_t slot = entries_.size();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const LineTemplate& o = entries_[i].t;
    if (o.worker == e.t.worker && o.kind == e.t.kind && o.level == e.t.level &&
        o.head.size() == e.t.head.size() && o.chain_end == e.t.chain_end &&
        o.time_begin == e.t.time_begin && o.time_end == e.t.time_end &&
        entries_[i].first_class == e.first_class &&
        SameOutside(o.head.data(), e.t.head.data(), o.head.size(), o.time_begin, o.time_end)) {
      slot = i;
      break;
    }
  }
  if (slot == entries_.size() && entries_.size() == kCapacity) {
    slot = next_victim_;
    next_victim_ = (next_victim_ + 1) % kCapacity;
  }
  Place(slot, std::move(e));
}

void LineTemplates::Place(size_t slot, Entry e) {
  // Keyed by bytes that stay from second to second.
  e.keyed = e.t.head.size() >= kKeyBytes && (e.t.time_end == 0 || e.t.time_begin >= kKeyBytes);
  e.key = e.keyed ? KeyOf(e.t.head.data()) : 0;
  bool reindex = e.keyed;
  if (slot == entries_.size()) {
    if (e.t.head.empty()) ++headless_;
    entries_.push_back(std::move(e));
  } else {
    const Entry& old = entries_[slot];
    reindex = old.keyed != e.keyed || old.key != e.key;
    headless_ += static_cast<size_t>(e.t.head.empty()) - static_cast<size_t>(old.t.head.empty());
    entries_[slot] = std::move(e);
  }
  if (reindex) Reindex();
  const Entry& placed = entries_[slot];
  if (placed.keyed || placed.t.head.empty()) {
    std::erase(order_, static_cast<uint8_t>(slot));
  } else if (std::find(order_.begin(), order_.end(), slot) == order_.end()) {
    order_.insert(order_.begin(), static_cast<uint8_t>(slot));
  }
}

void LineTemplates::Reindex() {
  std::fill(std::begin(index_), std::end(index_), 0);
  for (size_t n = 0; n < entries_.size(); ++n) {
    if (!entries_[n].keyed) continue;
    size_t i = entries_[n].key >> 57;
    while (index_[i] != 0) i = (i + 1) % kIndexSlots;
    index_[i] = static_cast<uint8_t>(n + 1);
  }
}

void LineTemplates::Forget() {
  entries_.clear();
  order_.clear();
  Reindex();
  headless_ = 0;
  next_victim_ = 0;
}

}  // namespace fingerprintd::parse
