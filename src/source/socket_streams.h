// SocketStreams: the streams of one socket connection (or of stdin), each a
// Pipeline source. A shipper multiplexes many pods over one connection;
// traceback assembly and worker identity are per stream, so every
// (connection, namespace, pod, container, file) is its own source. `lines`
// framing has one stream: the connection, whose bytes go to Pipeline::Feed as
// they were read (the pipeline cuts them into lines and searches each buffer
// whole).
//
//   SocketStreams streams(options, /*slot=*/3, pipeline, events);
//   streams.FeedBytes(bytes, now_us);                    // lines
//   decoder.Append(bytes, [&](std::string_view text, const StreamLabels& labels) {
//     streams.Feed(text, labels, now_us);                // jsonl: one decoded line
//   });
//   streams.EndIdle(now_us);                  // on a timer
//   streams.EndAll(/*deliver_partial=*/false);  // the connection closed
//
// Names. A stream's source is named `<source>#<slot>[/<ns>/<pod>/<container>][:<file>]`
// (e.g. `tcp:127.0.0.1:5170#3/inference/qwen3-7d9f-x2x9k/vllm`), where the
// slot is the connection's index among the source's open connections: a
// later connection reuses a closed one's slot, so the names (and what the
// pipeline and correlator remember per name) stay bounded by the connections
// open at once times the streams they carry, not by every connection ever
// made. Sources are added with SourceSpec::transient: once ended, the
// pipeline forgets them.
//
// Deployment of a stream, decided when it is first seen: its `deployment`
// label; else the captures of deployment_from over the label named by
// deployment_field (source::DeploymentForPath, the same rule as files); else
// the source's static `deployment` label; else `<namespace>/<pod>` when the
// pod is known; else the source's name. So one deployment arriving over
// several connections, or from several nodes' shippers, is one deployment.
//
// Limits: at max_streams, the stream silent the longest is ended first
// (Evicted::kSocketStream); a stream without a line for idle_timeout is
// ended by EndIdle (a later line starts it again).
//
// Threading: single-threaded, on the thread that owns the Pipeline.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fingerprintd/pipeline.h"
#include "source/socket_framing.h"

namespace re2 {
class RE2;
}

namespace fingerprintd::source {

struct SocketStreamOptions {
  std::string source_name;                    // "tcp:127.0.0.1:5170", "unix:/run/x.sock", "stdin"
  std::map<std::string, std::string> labels;  // static labels (`deployment` names it)
  const re2::RE2* deployment_from = nullptr;  // may be null; must outlive the streams
  StreamLabel deployment_field = StreamLabel::kPod;
  size_t max_streams = 1024;
  int64_t idle_timeout_us = 300'000'000;
  parse::ParserOptions parser;
};

class SocketStreams {
 public:
  // `options`, `pipeline` and `events` must outlive this object.
  SocketStreams(const SocketStreamOptions& options, uint32_t slot, Pipeline& pipeline,
                PipelineEvents& events);
  SocketStreams(const SocketStreams&) = delete;
  SocketStreams& operator=(const SocketStreams&) = delete;

  // `jsonl`: feeds one log line to its stream, adding the stream when first seen.
  void Feed(std::string_view text, const StreamLabels& labels, int64_t now_us);
  // `lines`: feeds bytes of the connection, cut anywhere, to its one stream.
  void FeedBytes(std::string_view bytes, int64_t now_us);
  // Ends the streams without a line since now_us - idle_timeout.
  void EndIdle(int64_t now_us);
  // Ends every stream (the connection closed). A last line without its '\n'
  // is handed on when deliver_partial (stdin: the end of a pipe ends the
  // line), else dropped and counted as kCutAtDisconnect (a client killed
  // mid-line).
  void EndAll(bool deliver_partial);

  size_t size() const { return streams_.size(); }
  // The source name and deployment a stream with these labels gets.
  std::string StreamName(const StreamLabels& labels) const;
  std::string DeploymentOf(const StreamLabels& labels) const;

 private:
  struct Stream {
    Pipeline::SourceId id = 0;
    uint64_t offset = 0;
    int64_t last_us = 0;
  };
  // The stream of these labels, opened (Open) when first seen.
  Stream& StreamFor(const StreamLabels& labels, int64_t now_us);
  Stream& Open(const std::string& key, const StreamLabels& labels, int64_t now_us);
  void EvictOldest();

  const SocketStreamOptions& options_;
  uint32_t slot_;
  Pipeline& pipeline_;
  PipelineEvents& events_;
  std::map<std::string, Stream> streams_;  // by identity key
  std::string key_;                        // scratch
};

}  // namespace fingerprintd::source
