// Socket framing (socket_framing.h). `jsonl` records are read by a scanner of
// our own: no DOM, one pass over the bytes, only the wanted strings copied
// (nlohmann's SAX parser took 4 µs for a 400-byte Vector event; the socket
// target is 250k records/s on one core). tests/source/socket_framing_test.cc
// checks it against nlohmann's DOM on seeded random and mutated records.
#include "source/socket_framing.h"

#include <array>
#include <cstdint>

namespace fingerprintd::source {

namespace {

constexpr size_t kJsonSlackBytes = 4096;

// One pass over a JSON text that must be an object: validates it (RFC 8259
// grammar; strings are taken as bytes, so invalid UTF-8 inside a string is
// passed on to the parser, which counts it) and keeps the strings found at the
// wanted dotted paths, the first path of each list winning and, for one path
// given twice, the last value. Nothing inside an array is wanted. Iterative:
// nesting depth costs heap, never stack. Only wanted strings are unescaped.
class JsonScanner {
 public:
  JsonScanner(const JsonFields& fields, std::string* text, StreamLabels* labels)
      : fields_(fields), text_(text), labels_(labels) {}

  bool has_text() const { return text_rank_ != kNone; }

  bool Scan(std::string_view in) {
    p_ = in.data();
    end_ = p_ + in.size();
    SkipSpace();
    if (p_ == end_ || *p_ != '{') return false;
    bool want_value = true;
    while (true) {
      SkipSpace();
      if (want_value) {
        if (p_ == end_) return false;
        const char c = *p_;
        if (c == '{' || c == '[') {
          ++p_;
          Push(c);
          SkipSpace();
          if (p_ < end_ && *p_ == (c == '{' ? '}' : ']')) {
            ++p_;
            Pop();
            want_value = false;
          } else if (c == '{' && !Key()) {
            return false;
          }
        } else if (c == '"') {
          if (!StringValue()) return false;
          want_value = false;
        } else {
          if (!Scalar()) return false;
          want_value = false;
        }
        continue;
      }
      if (stack_.empty()) return p_ == end_;  // the root object closed: nothing may follow
      if (p_ == end_) return false;
      const char c = *p_++;
      if (c == ',') {
        want_value = true;
        if (stack_.back() == '{') {
          SkipSpace();
          if (!Key()) return false;
        }
      } else if (c == (stack_.back() == '{' ? '}' : ']')) {
        Pop();
      } else {
        return false;
      }
    }
  }

 private:
  static constexpr size_t kNone = SIZE_MAX;

  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  void Push(char c) {
    stack_.push_back(c);
    path_len_.push_back(path_.size());
    if (c == '[') ++arrays_;
  }
  void Pop() {
    path_.resize(path_len_.back());
    path_len_.pop_back();
    if (stack_.back() == '[') --arrays_;
    stack_.pop_back();
  }

  // `"key"` then `:`; the path becomes the enclosing object's path + key.
  bool Key() {
    if (p_ == end_ || *p_ != '"' || !String(&key_)) return false;
    SkipSpace();
    if (p_ == end_ || *p_ != ':') return false;
    ++p_;
    path_.resize(path_len_.back());
    if (path_len_.size() > 1) path_ += '.';  // nested, even under an empty key
    path_ += key_;
    return true;
  }

  // The rank of path_ in `paths`, kNone when absent.
  size_t RankOf(const std::vector<std::string>& paths) const {
    for (size_t i = 0; i < paths.size(); ++i) {
      if (paths[i] == path_) return i;
    }
    return kNone;
  }

  bool StringValue() {
    if (arrays_ > 0 || stack_.back() != '{') return String(nullptr);
    const size_t text_rank = RankOf(fields_.text);
    std::array<size_t, kStreamLabelCount> label_rank;
    bool wanted = text_rank != kNone && text_rank <= text_rank_;
    for (size_t i = 0; i < kStreamLabelCount; ++i) {
      label_rank[i] = RankOf(fields_.labels[i]);
      wanted |= label_rank[i] != kNone && label_rank[i] <= label_rank_[i];
    }
    if (!wanted) return String(nullptr);
    if (!String(&value_)) return false;
    if (text_rank != kNone && text_rank <= text_rank_) {
      text_rank_ = text_rank;
      *text_ = value_;
    }
    for (size_t i = 0; i < kStreamLabelCount; ++i) {
      if (label_rank[i] != kNone && label_rank[i] <= label_rank_[i]) {
        label_rank_[i] = label_rank[i];
        (*labels_)[i] = value_;
      }
    }
    return true;
  }

  static int Hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool Hex4(uint32_t* out) {
    if (end_ - p_ < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = Hex(p_[i]);
      if (h < 0) return false;
      v = v << 4 | static_cast<uint32_t>(h);
    }
    p_ += 4;
    *out = v;
    return true;
  }
  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | cp >> 6));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | cp >> 12));
      out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | cp >> 18));
      out->push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // A string at p_ (its opening quote); its unescaped bytes to *out when not null.
  bool String(std::string* out) {
    ++p_;
    if (out != nullptr) out->clear();
    while (true) {
      const char* run = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) {
        ++p_;
      }
      if (out != nullptr) out->append(run, p_);
      if (p_ == end_ || static_cast<unsigned char>(*p_) < 0x20) return false;
      if (*p_++ == '"') return true;
      if (p_ == end_) return false;
      const char e = *p_++;
      char plain = 0;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          plain = e;
          break;
        case 'b':
          plain = '\b';
          break;
        case 'f':
          plain = '\f';
          break;
        case 'n':
          plain = '\n';
          break;
        case 'r':
          plain = '\r';
          break;
        case 't':
          plain = '\t';
          break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a lone low surrogate
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!Hex4(&low) || low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          if (out != nullptr) AppendUtf8(cp, out);
          continue;
        }
        default:
          return false;
      }
      if (out != nullptr) out->push_back(plain);
    }
  }

  bool Digits() {
    const char* start = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ > start;
  }
  bool Literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }
  // true, false, null or a number.
  bool Scalar() {
    switch (*p_) {
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        break;
    }
    if (*p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (!Digits()) {
      return false;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!Digits()) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!Digits()) return false;
    }
    return true;
  }

  const JsonFields& fields_;
  std::string* text_;
  StreamLabels* labels_;
  size_t text_rank_ = kNone;
  std::array<size_t, kStreamLabelCount> label_rank_ = MakeNoRanks();
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  std::string path_, key_, value_;
  std::vector<char> stack_;       // '{' or '[' per open container
  std::vector<size_t> path_len_;  // path_ length where each open container began
  int arrays_ = 0;

  static std::array<size_t, kStreamLabelCount> MakeNoRanks() {
    std::array<size_t, kStreamLabelCount> r;
    r.fill(kNone);
    return r;
  }
};

}  // namespace

std::string_view StreamLabelName(StreamLabel label) {
  switch (label) {
    case StreamLabel::kDeployment:
      return "deployment";
    case StreamLabel::kNamespace:
      return "namespace";
    case StreamLabel::kPod:
      return "pod";
    case StreamLabel::kContainer:
      return "container";
    case StreamLabel::kFile:
      return "file";
    case StreamLabel::kStream:
      return "stream";
    case StreamLabel::kCount:
      break;
  }
  return "?";
}

bool ParseStreamLabel(std::string_view name, StreamLabel* out) {
  for (size_t i = 0; i < kStreamLabelCount; ++i) {
    if (StreamLabelName(static_cast<StreamLabel>(i)) == name) {
      *out = static_cast<StreamLabel>(i);
      return true;
    }
  }
  return false;
}

JsonFields JsonFields::Defaults() {
  JsonFields f;
  f.text = {"log", "message"};
  auto at = [&f](StreamLabel l) -> std::vector<std::string>& {
    return f.labels[static_cast<size_t>(l)];
  };
  at(StreamLabel::kDeployment) = {"deployment"};
  at(StreamLabel::kNamespace) = {"namespace", "kubernetes.pod_namespace",
                                 "kubernetes.namespace_name"};
  at(StreamLabel::kPod) = {"pod", "kubernetes.pod_name"};
  at(StreamLabel::kContainer) = {"container", "kubernetes.container_name"};
  at(StreamLabel::kFile) = {"file", "filename"};
  at(StreamLabel::kStream) = {"stream"};
  return f;
}

JsonResult DecodeJsonLine(std::string_view line, const JsonFields& fields, std::string* text,
                          StreamLabels* labels) {
  text->clear();
  for (std::string& l : *labels) l.clear();
  JsonScanner scanner(fields, text, labels);
  if (!scanner.Scan(line)) return JsonResult::kInvalidJson;
  if (!scanner.has_text()) return JsonResult::kNoTextField;
  return JsonResult::kOk;
}

FrameDecoder::FrameDecoder(Framing framing, size_t max_line_bytes, JsonFields fields,
                           PipelineEvents& events)
    : framing_(framing),
      fields_(std::move(fields)),
      events_(events),
      splitter_(max_line_bytes, events),
      max_string_(max_line_bytes > 64 ? max_line_bytes - 8 : max_line_bytes),
      max_record_(2 * max_line_bytes + kJsonSlackBytes) {}

void FrameDecoder::Append(std::string_view bytes, const OnLine& on_line) {
  if (bytes.empty()) return;
  if (framing_ == Framing::kJsonl) {
    AppendJsonl(bytes, on_line);
  } else {
    splitter_.Append(bytes, [&](std::string_view line) { on_line(line, labels_); });
  }
  mid_line_ = bytes.back() != '\n';
}

void FrameDecoder::Finish(bool deliver_partial, const OnLine& on_line) {
  if (mid_line_ && deliver_partial) {
    if (framing_ == Framing::kJsonl) {
      EndRecord(on_line);
    } else {
      splitter_.Finish([&](std::string_view line) { on_line(line, labels_); });
    }
  } else if (mid_line_) {
    events_.LineDropped(DropReason::kCutAtDisconnect);
    record_.clear();
    cut_ = in_string_ = skipping_ = escaped_ = escape_start_ = after_high_ = false;
    escape_left_ = 0;
  }
  mid_line_ = false;
}

void FrameDecoder::AppendJsonl(std::string_view bytes, const OnLine& on_line) {
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    std::string_view piece = nl == std::string_view::npos ? bytes : bytes.substr(0, nl);
    // Common case: a whole record inside this chunk, too short to need a cut:
    // decoded from the chunk, no copy, no scan.
    const bool direct =
        record_.empty() && !cut_ && nl != std::string_view::npos && piece.size() <= max_string_;
    if (direct) {
      DecodeRecord(piece, /*cut=*/false, on_line);
    } else {
      KeepRecordBytes(piece);
    }
    if (nl == std::string_view::npos) break;
    if (!direct) EndRecord(on_line);
    bytes.remove_prefix(nl + 1);
  }
}

// Keeps the bytes of a record that need the scan: every byte outside strings,
// each string's first max_string_ bytes and its closing quote.
void FrameDecoder::KeepRecordBytes(std::string_view piece) {
  for (char c : piece) {
    if (record_.size() >= max_record_) {
      cut_ = true;  // the rest of the record is skipped
      return;
    }
    if (!in_string_) {
      record_.push_back(c);
      if (c == '"') {
        in_string_ = true;
        skipping_ = escaped_ = escape_start_ = after_high_ = false;
        string_bytes_ = 0;
        escape_left_ = 0;
      }
    } else if (skipping_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        record_.push_back(c);
        in_string_ = false;
      }
    } else {
      StoreStringByte(c);
    }
  }
}

void FrameDecoder::StoreStringByte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  // A character starts here (not an escape's tail, not a UTF-8 continuation
  // byte, not the low half of a surrogate pair): the string may be cut here.
  const bool boundary = escape_left_ == 0 && (byte & 0xC0) != 0x80 && !after_high_;
  if (boundary && string_bytes_ >= max_string_ && c != '"') {
    skipping_ = true;
    cut_ = true;
    escaped_ = c == '\\';
    return;
  }
  record_.push_back(c);
  ++string_bytes_;
  if (escape_left_ > 0) {
    --escape_left_;
    if (escape_start_) {
      escape_start_ = false;
      after_high_ = false;
      if (c == 'u') {
        escape_left_ = 4;
        escape_hex_ = 0;
      }
      return;
    }
    int digit = byte <= '9' ? byte - '0' : (byte | 0x20) - 'a' + 10;
    escape_hex_ = escape_hex_ << 4 | static_cast<uint32_t>(digit & 0xF);
    if (escape_left_ == 0) after_high_ = escape_hex_ >= 0xD800 && escape_hex_ <= 0xDBFF;
    return;
  }
  if (c == '\\') {
    escape_left_ = 1;
    escape_start_ = true;
    return;
  }
  after_high_ = false;
  if (c == '"') in_string_ = false;
}

void FrameDecoder::EndRecord(const OnLine& on_line) {
  std::string record = std::move(record_);
  const bool cut = cut_;
  record_.clear();
  cut_ = in_string_ = skipping_ = escaped_ = escape_start_ = after_high_ = false;
  escape_left_ = 0;
  DecodeRecord(record, cut, on_line);
  record_.swap(record);  // keep its capacity for the next long record
  record_.clear();
}

void FrameDecoder::DecodeRecord(std::string_view record, bool cut, const OnLine& on_line) {
  if (cut) events_.LineDropped(DropReason::kLineTooLong);  // once, whatever follows
  switch (DecodeJsonLine(record, fields_, &text_, &labels_)) {
    case JsonResult::kInvalidJson:
      if (!cut) events_.LineDropped(DropReason::kInvalidJson);
      return;
    case JsonResult::kNoTextField:
      if (!cut) events_.LineDropped(DropReason::kNoTextField);
      return;
    case JsonResult::kOk:
      break;
  }
  std::string_view text = text_;
  if (text.ends_with('\n')) text.remove_suffix(1);
  while (true) {
    size_t nl = text.find('\n');
    on_line(text.substr(0, nl), labels_);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

}  // namespace fingerprintd::source
