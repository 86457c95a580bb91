// libFuzzer target: `jsonl` socket framing as a client's bytes arrive in
// chunks (`lines` bytes go to Pipeline::Feed as they are: pipeline_fuzz).
// The first byte picks the line cap and the chunk size. Invariants: a text
// holds no '\n' and its labels are at most the raw line cap; the same bytes
// cut in other chunks give the same lines.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "source/socket_framing.h"

namespace {

using fingerprintd::source::JsonlDecoder;
using fingerprintd::source::StreamLabels;

std::vector<std::string> Decode(size_t cap, size_t chunk, std::string_view bytes,
                                bool deliver_partial) {
  fingerprintd::NullPipelineEvents events;
  JsonlDecoder decoder(cap, fingerprintd::source::JsonFields::Defaults(), events);
  std::vector<std::string> lines;
  auto on_line = [&](std::string_view text, const StreamLabels& labels) {
    FUZZ_CHECK(text.find('\n') == std::string_view::npos);
    for (const std::string& label : labels) FUZZ_CHECK(label.size() <= 2 * cap + 4096);
    std::string line(text);
    for (const std::string& label : labels) line += "\x1f" + label;
    lines.push_back(std::move(line));
  };
  for (size_t at = 0; at < bytes.size(); at += chunk)
    decoder.Append(bytes.substr(at, chunk), on_line);
  decoder.Finish(deliver_partial, on_line);
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fingerprintd::fuzz::Input in(data, size);
  uint8_t options = in.Byte();
  size_t cap = 16 + ((options >> 1) & 7) * 32;
  size_t chunk = 1 + (options >> 4);
  bool deliver_partial = in.Byte() & 1;
  std::string_view bytes = in.Rest();
  std::vector<std::string> whole = Decode(cap, bytes.size() + 1, bytes, deliver_partial);
  std::vector<std::string> chunked = Decode(cap, chunk, bytes, deliver_partial);
  FUZZ_CHECK(whole == chunked);
  return 0;
}
