// SocketStreams (socket_streams.h).
#include "source/socket_streams.h"

#include <re2/re2.h>

namespace fingerprintd::source {

namespace {

const std::string& Label(const StreamLabels& labels, StreamLabel l) {
  return labels[static_cast<size_t>(l)];
}

// The identity of a stream inside its connection: namespace, pod, container, file.
void IdentityKey(const StreamLabels& labels, std::string* key) {
  key->clear();
  for (StreamLabel l :
       {StreamLabel::kNamespace, StreamLabel::kPod, StreamLabel::kContainer, StreamLabel::kFile}) {
    *key += Label(labels, l);
    *key += '\x1f';
  }
}

}  // namespace

SocketStreams::SocketStreams(const SocketStreamOptions& options, uint32_t slot, Pipeline& pipeline,
                             PipelineEvents& events)
    : options_(options), slot_(slot), pipeline_(pipeline), events_(events) {}

std::string SocketStreams::StreamName(const StreamLabels& labels) const {
  std::string name = options_.source_name + "#" + std::to_string(slot_);
  std::string path;
  for (StreamLabel l : {StreamLabel::kNamespace, StreamLabel::kPod, StreamLabel::kContainer}) {
    if (Label(labels, l).empty()) continue;
    path += "/";
    path += Label(labels, l);
  }
  name += path;
  if (!Label(labels, StreamLabel::kFile).empty()) name += ":" + Label(labels, StreamLabel::kFile);
  return name;
}

std::string SocketStreams::DeploymentOf(const StreamLabels& labels) const {
  if (const std::string& d = Label(labels, StreamLabel::kDeployment); !d.empty()) return d;
  std::string fallback;
  if (auto it = options_.labels.find("deployment"); it != options_.labels.end()) {
    fallback = it->second;
  } else if (const std::string& pod = Label(labels, StreamLabel::kPod); !pod.empty()) {
    const std::string& ns = Label(labels, StreamLabel::kNamespace);
    fallback = ns.empty() ? pod : ns + "/" + pod;
  } else {
    fallback = options_.source_name;
  }
  if (options_.deployment_from == nullptr) return fallback;
  return DeploymentForPath({}, options_.deployment_from, Label(labels, options_.deployment_field),
                           fallback);
}

SocketStreams::Stream& SocketStreams::Open(const std::string& key, const StreamLabels& labels,
                                           int64_t now_us) {
  if (streams_.size() >= options_.max_streams) EvictOldest();
  SourceSpec spec;
  spec.name = StreamName(labels);
  spec.deployment = DeploymentOf(labels);
  spec.labels = options_.labels;
  spec.labels.erase("deployment");
  if (const std::string& ns = Label(labels, StreamLabel::kNamespace); !ns.empty()) {
    spec.labels.emplace("namespace", ns);
  }
  spec.parser = options_.parser;
  spec.parser.now_us = now_us;
  spec.transient = true;
  Stream stream;
  stream.id = pipeline_.AddSource(spec);
  stream.offset = pipeline_.NextPosition(stream.id).offset;
  stream.last_us = now_us;
  return streams_.emplace(key, stream).first->second;
}

void SocketStreams::EvictOldest() {
  auto oldest = streams_.begin();
  for (auto it = streams_.begin(); it != streams_.end(); ++it) {
    if (it->second.last_us < oldest->second.last_us) oldest = it;
  }
  if (oldest == streams_.end()) return;
  pipeline_.EndSource(oldest->second.id);
  streams_.erase(oldest);
  events_.StateEvicted(Evicted::kSocketStream);
}

SocketStreams::Stream& SocketStreams::StreamFor(const StreamLabels& labels, int64_t now_us) {
  IdentityKey(labels, &key_);
  auto it = streams_.find(key_);
  return it != streams_.end() ? it->second : Open(key_, labels, now_us);
}

void SocketStreams::Feed(std::string_view text, const StreamLabels& labels, int64_t now_us) {
  Stream& stream = StreamFor(labels, now_us);
  pipeline_.Feed(stream.id, text, stream.offset);
  pipeline_.EndLine(stream.id);  // a frame is a whole line
  stream.offset += text.size() + 1;
  stream.last_us = now_us;
}

void SocketStreams::FeedBytes(std::string_view bytes, int64_t now_us) {
  static const StreamLabels kConnection;  // `lines`: the connection is the stream
  Stream& stream = StreamFor(kConnection, now_us);
  pipeline_.Feed(stream.id, bytes, stream.offset);
  stream.offset += bytes.size();
  stream.last_us = now_us;
}

void SocketStreams::EndIdle(int64_t now_us) {
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (now_us - it->second.last_us >= options_.idle_timeout_us) {
      pipeline_.EndSource(it->second.id);
      it = streams_.erase(it);
    } else {
      ++it;
    }
  }
}

void SocketStreams::EndAll(bool deliver_partial) {
  for (auto& [key, stream] : streams_) {
    if (!deliver_partial) pipeline_.DropUnfinishedLine(stream.id);
    pipeline_.EndSource(stream.id);
  }
  streams_.clear();
}

}  // namespace fingerprintd::source
