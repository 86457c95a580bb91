// Socket framing (socket_framing.h). `jsonl` records are read with
// nlohmann's SAX parser: no DOM is built, only the strings at the wanted
// paths are kept, so a line costs one pass over its bytes.
#include "source/socket_framing.h"

#include <nlohmann/json.hpp>

namespace fingerprintd::source {

namespace {

constexpr size_t kJsonSlackBytes = 4096;

// Keeps the strings found at the wanted dotted paths, the first path of each
// list winning. Anything inside an array is never wanted.
class FieldCollector {
 public:
  using json = nlohmann::json;

  FieldCollector(const JsonFields& fields, std::string* text, StreamLabels* labels)
      : fields_(fields), text_(text), labels_(labels) {
    text_rank_ = SIZE_MAX;
    label_rank_.fill(SIZE_MAX);
  }

  bool is_object() const { return root_object_; }
  bool has_text() const { return text_rank_ != SIZE_MAX; }

  bool null() { return Scalar(); }
  bool boolean(bool) { return Scalar(); }
  bool number_integer(json::number_integer_t) { return Scalar(); }
  bool number_unsigned(json::number_unsigned_t) { return Scalar(); }
  bool number_float(json::number_float_t, const std::string&) { return Scalar(); }
  bool binary(json::binary_t&) { return Scalar(); }
  bool string(std::string& value) {
    if (!Scalar()) return false;
    if (arrays_ > 0) return true;
    Take(fields_.text, value, &text_rank_, text_);
    for (size_t i = 0; i < kStreamLabelCount; ++i) {
      Take(fields_.labels[i], value, &label_rank_[i], &(*labels_)[i]);
    }
    return true;
  }
  bool start_object(size_t) {
    if (stack_.empty()) root_object_ = true;
    stack_.push_back(path_.size());
    return true;
  }
  bool key(std::string& key) {
    path_.resize(stack_.back());
    if (!path_.empty()) path_ += '.';
    path_ += key;
    return true;
  }
  bool end_object() {
    path_.resize(stack_.back());
    stack_.pop_back();
    return true;
  }
  bool start_array(size_t) {
    if (stack_.empty()) return false;  // the root must be an object
    ++arrays_;
    stack_.push_back(path_.size());
    return true;
  }
  bool end_array() {
    --arrays_;
    path_.resize(stack_.back());
    stack_.pop_back();
    return true;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  bool Scalar() const { return !stack_.empty(); }  // a bare scalar is not a record

  void Take(const std::vector<std::string>& paths, std::string& value, size_t* rank,
            std::string* out) {
    for (size_t i = 0; i < paths.size() && i < *rank; ++i) {
      if (paths[i] == path_) {
        *rank = i;
        *out = value;
        return;
      }
    }
  }

  const JsonFields& fields_;
  std::string* text_;
  StreamLabels* labels_;
  size_t text_rank_;
  std::array<size_t, kStreamLabelCount> label_rank_;
  std::string path_;
  std::vector<size_t> stack_;  // path_ length at each open object or array
  int arrays_ = 0;
  bool root_object_ = false;
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
  FieldCollector collector(fields, text, labels);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(line, &collector);
  } catch (const nlohmann::json::exception&) {
    ok = false;
  }
  if (!ok || !collector.is_object()) return JsonResult::kInvalidJson;
  if (!collector.has_text()) return JsonResult::kNoTextField;
  return JsonResult::kOk;
}

FrameDecoder::FrameDecoder(Framing framing, size_t max_line_bytes, JsonFields fields,
                           PipelineEvents& events)
    : framing_(framing),
      fields_(std::move(fields)),
      events_(events),
      splitter_(framing == Framing::kJsonl ? 2 * max_line_bytes + kJsonSlackBytes : max_line_bytes,
                events) {}

void FrameDecoder::Append(std::string_view bytes, const OnLine& on_line) {
  if (bytes.empty()) return;
  splitter_.Append(bytes, [&](std::string_view line) { OnRawLine(line, on_line); });
  mid_line_ = bytes.back() != '\n';
}

void FrameDecoder::Finish(bool deliver_partial, const OnLine& on_line) {
  if (mid_line_ && deliver_partial) {
    splitter_.Finish([&](std::string_view line) { OnRawLine(line, on_line); });
  } else if (mid_line_) {
    events_.LineDropped(DropReason::kCutAtDisconnect);
  }
  mid_line_ = false;
}

void FrameDecoder::OnRawLine(std::string_view line, const OnLine& on_line) {
  if (framing_ == Framing::kLines) {
    on_line(line, labels_);
    return;
  }
  switch (DecodeJsonLine(line, fields_, &text_, &labels_)) {
    case JsonResult::kInvalidJson:
      events_.LineDropped(DropReason::kInvalidJson);
      return;
    case JsonResult::kNoTextField:
      events_.LineDropped(DropReason::kNoTextField);
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
