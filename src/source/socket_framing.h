// Socket framing: how the bytes a client sends to a `tcp`, `unix` or `stdin`
// source are read. Pure code: no sockets, no clock; source/socket_source.cc
// feeds it bytes.
//
// `lines`: the bytes are a log, as a file holds it. They go to Pipeline::Feed
// as they were read (SocketStreams::FeedBytes), which cuts them into lines
// with the one LineSplitter, its line cap included.
//
// `jsonl`: JsonlDecoder decodes the records into the log text and the labels
// that say which stream (pod, container, file) it belongs to.
//
//   JsonlDecoder decoder(1 << 20, JsonFields::Defaults(), events);
//   decoder.Append(bytes_read, [&](std::string_view text, const StreamLabels& labels) {
//     streams.Feed(text, labels, now);   // one call per physical log line
//   });
//   decoder.Finish(/*deliver_partial=*/false, on_line);   // the client went away
//
// Every line is one JSON object. The log text is the first of
// JsonFields::text present as a string (dotted paths into nested objects:
// `kubernetes.pod_name`); a trailing "\n" (Docker, Fluent Bit) is removed and
// a text holding several lines gives one log line each. Each label of
// StreamLabel is the first of its paths present as a string, else "". A line
// that is not a JSON object is counted as kInvalidJson, one without a text as
// kNoTextField, and skipped: the next line is decoded as usual. A record
// longer than max_line_bytes is truncated as a `lines` line is, and still
// decoded: each JSON string in it keeps its first max_line_bytes - 8 bytes
// (cut between characters, never inside an escape or a surrogate pair; the
// rest skipped up to its closing quote), so an over-long log text is cut
// there and the labels after it are kept; counted once as kLineTooLong. A
// record still over 2 * max_line_bytes + 4 KiB (thousands of fields) is cut
// there too, counted once as kLineTooLong, and dropped when it then no longer
// decodes.
//
// Finish(): a last record without its '\n' is decoded when deliver_partial
// (stdin: the end of a pipe ends the line), else dropped and counted as
// kCutAtDisconnect (a socket client killed mid-record).
//
// Memory: the partial record (at most the raw cap) and the labels of one record.
// Threading: one decoder per connection, used on one thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_object.h"
#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/source.h"

namespace fingerprintd::source {

enum class Framing : uint8_t { kLines = 0, kJsonl };

// The labels a `jsonl` record may carry. namespace/pod/container/file name
// the stream; deployment names its deployment; stream (stdout/stderr) is
// read but not part of the identity: a container's two streams are one log,
// as in its CRI file.
enum class StreamLabel : uint8_t {
  kDeployment = 0,
  kNamespace,
  kPod,
  kContainer,
  kFile,
  kStream,
  kCount
};
inline constexpr size_t kStreamLabelCount = static_cast<size_t>(StreamLabel::kCount);
std::string_view StreamLabelName(StreamLabel label);  // "deployment", "namespace", ...
// The label named `name`; false when there is none.
bool ParseStreamLabel(std::string_view name, StreamLabel* out);

using StreamLabels = std::array<std::string, kStreamLabelCount>;

// Where a `jsonl` record keeps its text and labels (dotted paths).
struct JsonFields {
  std::vector<std::string> text;
  std::array<std::vector<std::string>, kStreamLabelCount> labels;
  // text: log, message. The labels: a top-level field of the label's name,
  // then Vector's kubernetes_logs fields (kubernetes.pod_namespace,
  // kubernetes.pod_name, kubernetes.container_name, file) and Fluent Bit's
  // kubernetes filter fields (kubernetes.namespace_name, ...).
  static JsonFields Defaults();
};

enum class JsonResult : uint8_t { kOk = 0, kInvalidJson, kNoTextField };

// Decodes one `jsonl` line into *text and *labels (both overwritten) with
// `scanner` (reused from line to line: its buffers grow once). A lone
// surrogate escape becomes U+FFFD (common/json_object.h).
JsonResult DecodeJsonLine(std::string_view line, const JsonFields& fields,
                          JsonObjectScanner& scanner, std::string* text, StreamLabels* labels);

// `jsonl` bytes -> log lines with their labels.
class JsonlDecoder {
 public:
  using OnLine = std::function<void(std::string_view text, const StreamLabels& labels)>;

  // `fields` is copied; `events` must outlive the decoder.
  JsonlDecoder(size_t max_line_bytes, JsonFields fields, PipelineEvents& events);

  // Calls on_line for every complete log line in `bytes`.
  void Append(std::string_view bytes, const OnLine& on_line);
  // End of the byte stream (see the header comment).
  void Finish(bool deliver_partial, const OnLine& on_line);

 private:
  void KeepRecordBytes(std::string_view piece);
  void StoreStringByte(char c);
  void EndRecord(const OnLine& on_line);
  void DecodeRecord(std::string_view record, bool cut, const OnLine& on_line);

  JsonFields fields_;
  PipelineEvents& events_;
  JsonObjectScanner json_;
  std::string text_;
  StreamLabels labels_;
  bool mid_line_ = false;
  // The record being read, and where the scan of it is.
  size_t max_string_;
  size_t max_record_;
  std::string record_;
  bool cut_ = false;  // a string of it was shortened, or the record cut
  bool in_string_ = false;
  bool skipping_ = false;      // in the skipped rest of a long string
  bool escaped_ = false;       // skipping: the byte after a backslash
  size_t string_bytes_ = 0;    // the string's bytes kept so far
  int escape_left_ = 0;        // bytes of an escape still to come (\n: 1, \uXXXX: 5)
  bool escape_start_ = false;  // the next byte says which escape it is
  uint32_t escape_hex_ = 0;    // a \uXXXX escape's code unit, read so far
  bool after_high_ = false;    // the last character was a \uD800-\uDBFF: its pair follows
};

}  // namespace fingerprintd::source
