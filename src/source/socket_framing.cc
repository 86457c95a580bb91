// Socket framing (socket_framing.h). `jsonl` records are read by the one JSON
// decoder of log records (common/json_object.h: no DOM, one pass, only the
// wanted strings copied; nlohmann's SAX parser took 4 µs for a 400-byte
// Vector event, the socket target is 250k records/s on one core), which
// tests/source/socket_framing_test.cc checks against nlohmann's DOM on seeded
// random and mutated records.
#include "source/socket_framing.h"

#include <array>
#include <cstdint>

namespace fingerprintd::source {

namespace {

constexpr size_t kJsonSlackBytes = 4096;

// The rank of `path` in `paths` (the first listed wins), kNone when absent.
constexpr size_t kNone = SIZE_MAX;
size_t RankOf(const std::vector<std::string>& paths, std::string_view path) {
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i] == path) return i;
  }
  return kNone;
}

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

JsonResult DecodeJsonLine(std::string_view line, const JsonFields& fields,
                          JsonObjectScanner& scanner, std::string* text, StreamLabels* labels) {
  text->clear();
  for (std::string& l : *labels) l.clear();
  struct Found {
    const JsonFields& fields;
    std::string* text;
    StreamLabels* labels;
    size_t text_rank = kNone;
    std::array<size_t, kStreamLabelCount> label_rank = {};  // all kNone, below
  } found{fields, text, labels};
  found.label_rank.fill(kNone);
  // One pointer captured: the callback fits std::function's inline storage.
  const bool ok = scanner.Scan(line, [f = &found](std::string_view path, const JsonString& value) {
    if (const size_t rank = RankOf(f->fields.text, path); rank != kNone && rank <= f->text_rank) {
      f->text_rank = rank;
      f->text->clear();
      value.AppendTo(f->text);
    }
    for (size_t i = 0; i < kStreamLabelCount; ++i) {
      const size_t rank = RankOf(f->fields.labels[i], path);
      if (rank != kNone && rank <= f->label_rank[i]) {
        f->label_rank[i] = rank;
        (*f->labels)[i].clear();
        value.AppendTo(&(*f->labels)[i]);
      }
    }
  });
  if (!ok) return JsonResult::kInvalidJson;
  if (found.text_rank == kNone) return JsonResult::kNoTextField;
  return JsonResult::kOk;
}

JsonlDecoder::JsonlDecoder(size_t max_line_bytes, JsonFields fields, PipelineEvents& events)
    : fields_(std::move(fields)),
      events_(events),
      max_string_(max_line_bytes > 64 ? max_line_bytes - 8 : max_line_bytes),
      max_record_(2 * max_line_bytes + kJsonSlackBytes) {}

void JsonlDecoder::Finish(bool deliver_partial, const OnLine& on_line) {
  if (mid_line_ && deliver_partial) {
    EndRecord(on_line);
  } else if (mid_line_) {
    events_.LineDropped(DropReason::kCutAtDisconnect);
    record_.clear();
    cut_ = in_string_ = skipping_ = escaped_ = escape_start_ = after_high_ = false;
    escape_left_ = 0;
  }
  mid_line_ = false;
}

void JsonlDecoder::Append(std::string_view bytes, const OnLine& on_line) {
  if (bytes.empty()) return;
  mid_line_ = bytes.back() != '\n';
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
void JsonlDecoder::KeepRecordBytes(std::string_view piece) {
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

void JsonlDecoder::StoreStringByte(char c) {
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

void JsonlDecoder::EndRecord(const OnLine& on_line) {
  std::string record = std::move(record_);
  const bool cut = cut_;
  record_.clear();
  cut_ = in_string_ = skipping_ = escaped_ = escape_start_ = after_high_ = false;
  escape_left_ = 0;
  DecodeRecord(record, cut, on_line);
  record_.swap(record);  // keep its capacity for the next long record
  record_.clear();
}

void JsonlDecoder::DecodeRecord(std::string_view record, bool cut, const OnLine& on_line) {
  if (cut) events_.LineDropped(DropReason::kLineTooLong);  // once, whatever follows
  switch (DecodeJsonLine(record, fields_, json_, &text_, &labels_)) {
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
