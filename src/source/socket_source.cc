// Socket and stdin sources (socket_source.h): an acceptor (tcp or unix) or
// fd 0, and one Session per connection reading into a fixed buffer and
// feeding its streams (SocketStreams): `lines` bytes as they were read,
// `jsonl` records decoded first (JsonlDecoder).
#include "source/socket_source.h"

#include <fcntl.h>
#include <re2/re2.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <type_traits>

#include "common/host_port.h"
#include "common/wall_clock.h"
#include "source/socket_framing.h"
#include "source/socket_streams.h"

namespace fingerprintd::source {

namespace {

namespace asio = boost::asio;
using boost::system::error_code;

constexpr size_t kReadBufferBytes = 64 << 10;
constexpr std::chrono::milliseconds kAcceptRetry{100};

// What every connection of one source shares.
struct Shared {
  Shared(const config::SourceConfig& c, SocketSourceContext ctx, std::string name)
      : config(c), context(std::move(ctx)) {
    if (!config.deployment_from.empty()) {
      deployment_from = config::CompileDeploymentFrom(config.deployment_from);
    }
    streams.source_name = std::move(name);
    streams.labels = config.labels;
    streams.deployment_from = deployment_from.get();
    ParseStreamLabel(config.deployment_field, &streams.deployment_field);
    streams.max_streams = config.max_streams;
    streams.idle_timeout_us = config.idle_timeout_us;
    streams.parser = SocketParserOptions(config, context.clock);
    framing = config.framing == "jsonl" ? Framing::kJsonl : Framing::kLines;
    fields = JsonFields::Defaults();
    if (!config.text_fields.empty()) fields.text = config.text_fields;
    for (const auto& [label, field] : config.label_fields) {
      StreamLabel l;
      if (ParseStreamLabel(label, &l)) fields.labels[static_cast<size_t>(l)] = {field};
    }
  }

  config::SourceConfig config;
  SocketSourceContext context;
  std::unique_ptr<RE2> deployment_from;
  SocketStreamOptions streams;
  JsonFields fields;
  Framing framing = Framing::kLines;
  int64_t last_line_us = 0;  // the wall time a connection last gave a line (the status page)
};

// A regular file as stdin (`run - < file`): epoll cannot wait on it, and
// read() never blocks on it, so each read is done at once and its
// completion posted, the same shape as an asynchronous read.
class PostedFileReader {
 public:
  PostedFileReader(asio::io_context& io, int fd) : io_(io), fd_(fd) {}
  PostedFileReader(PostedFileReader&& other) noexcept : io_(other.io_), fd_(other.fd_) {
    other.fd_ = -1;
  }
  ~PostedFileReader() {
    error_code ec;
    close(ec);
  }
  template <typename Handler>
  void async_read_some(asio::mutable_buffer buffer, Handler&& handler) {
    ssize_t n = fd_ < 0 ? -1 : ::read(fd_, buffer.data(), buffer.size());
    error_code ec;
    if (n == 0) ec = asio::error::eof;
    if (n < 0)
      ec = fd_ < 0 ? asio::error::bad_descriptor
                   : error_code(errno, asio::error::get_system_category());
    asio::post(io_, [handler = std::forward<Handler>(handler), ec, n]() mutable {
      handler(ec, n > 0 ? static_cast<size_t>(n) : 0);
    });
  }
  void close(error_code&) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  asio::io_context& io_;
  int fd_;
};

class Connection {
 public:
  virtual ~Connection() = default;
  virtual void Tick(int64_t now_us) = 0;
  // Ends the connection's streams and closes it; `deliver_partial` decides
  // what happens to a last line without its '\n' (SocketStreams::EndAll).
  virtual void Close(bool deliver_partial) = 0;
  virtual size_t streams() const = 0;
};

// One connection: reads, decodes, feeds its streams. Held by its pending read
// (shared_from_this) and by its source until closed.
template <typename Stream>
class Session final : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, Shared& shared, uint32_t slot, bool is_stdin,
          std::function<void(uint32_t)> on_closed)
      : stream_(std::move(stream)),
        shared_(shared),
        slot_(slot),
        is_stdin_(is_stdin),
        on_closed_(std::move(on_closed)),
        buffer_(std::make_unique<std::array<char, kReadBufferBytes>>()),
        decoder_(shared.config.max_line_bytes, shared.fields, shared.context.events),
        streams_(shared.streams, slot, shared.context.pipeline, shared.context.events),
        feed_([this](std::string_view text, const StreamLabels& labels) {
          shared_.last_line_us = now_us_;
          streams_.Feed(text, labels, now_us_);
        }) {}

  void Start() {
    now_us_ = last_byte_us_ = shared_.context.clock();
    Read();
  }

  void Tick(int64_t now_us) override {
    if (closed_) return;
    if (!is_stdin_ && now_us - last_byte_us_ >= shared_.config.idle_timeout_us) {
      spdlog::debug("{}#{}: idle for {} s; closed", shared_.streams.source_name, slot_,
                    (now_us - last_byte_us_) / 1'000'000);
      shared_.context.events.StateEvicted(Evicted::kIdleConnection);
      Close(false);
      return;
    }
    streams_.EndIdle(now_us);
  }

  size_t streams() const override { return streams_.size(); }

  void Close(bool deliver_partial) override {
    if (closed_) return;
    closed_ = true;
    now_us_ = shared_.context.clock();
    if (shared_.framing == Framing::kJsonl) decoder_.Finish(deliver_partial, feed_);
    streams_.EndAll(deliver_partial);
    error_code ec;
    stream_.close(ec);
    on_closed_(slot_);  // the caller holds a reference: `this` outlives the call
  }

 private:
  void Read() {
    stream_.async_read_some(
        asio::buffer(*buffer_),
        [self = this->shared_from_this()](const error_code& ec, size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(const error_code& ec, size_t n) {
    if (closed_) return;
    if (n > 0) {
      now_us_ = last_byte_us_ = shared_.context.clock();
      const std::string_view bytes(buffer_->data(), n);
      if (shared_.framing == Framing::kLines) {
        shared_.last_line_us = now_us_;
        streams_.FeedBytes(bytes, now_us_);
      } else {
        decoder_.Append(bytes, feed_);
      }
      shared_.context.on_read();
    }
    if (!ec) {
      Read();
      return;
    }
    if (ec != asio::error::eof) {
      spdlog::debug("{}#{}: {}", shared_.streams.source_name, slot_, ec.message());
    }
    Close(/*deliver_partial=*/is_stdin_);
    if (is_stdin_) shared_.context.on_end();
  }

  Stream stream_;
  Shared& shared_;
  uint32_t slot_;
  bool is_stdin_;
  std::function<void(uint32_t)> on_closed_;
  std::unique_ptr<std::array<char, kReadBufferBytes>> buffer_;
  JsonlDecoder decoder_;  // jsonl
  SocketStreams streams_;
  JsonlDecoder::OnLine feed_;
  int64_t now_us_ = 0;
  int64_t last_byte_us_ = 0;
  bool closed_ = false;
};

// What tcp, unix and stdin sources share: the open connections by slot.
class ConnectionSet : public LiveSource {
 public:
  ConnectionSet(const config::SourceConfig& config, SocketSourceContext context, std::string name)
      : shared_(config, std::move(context), std::move(name)) {}

  void Tick(int64_t now_us) override {
    auto open = connections_;  // a Tick may close (and drop) a connection
    for (auto& [slot, connection] : open) connection->Tick(now_us);
  }
  void Rescan(int64_t) override {}
  void AppendCheckpoint(const Pipeline&, std::vector<SourceCheckpoint>*) const override {}
  std::string_view Type() const override { return config::SourceTypeName(shared_.config.type); }
  size_t OpenStreams() const override {
    size_t n = 0;
    for (const auto& [slot, connection] : connections_) n += connection->streams();
    return n;
  }
  void AppendStatus(std::vector<SourceStatus>* out) const override {
    out->push_back({shared_.streams.source_name, std::string(Type()),
                    State() + "; " + std::to_string(connections_.size()) + " connection(s), " +
                        std::to_string(OpenStreams()) + " stream(s)",
                    shared_.last_line_us, false});
  }
  // "listening on ADDRESS", "open", "ended": what the status page says first.
  virtual std::string State() const = 0;

 protected:
  void CloseAll(bool deliver_partial) {
    auto open = std::move(connections_);
    connections_.clear();
    for (auto& [slot, connection] : open) connection->Close(deliver_partial);
  }

  // The lowest slot no open connection has.
  uint32_t FreeSlot() const {
    uint32_t slot = 0;
    for (const auto& [used, connection] : connections_) {
      if (used != slot) break;
      ++slot;
    }
    return slot;
  }

  template <typename Stream>
  void Open(Stream stream, bool is_stdin) {
    const uint32_t slot = FreeSlot();
    auto session =
        std::make_shared<Session<Stream>>(std::move(stream), shared_, slot, is_stdin,
                                          [this](uint32_t closed) { connections_.erase(closed); });
    connections_[slot] = session;
    session->Start();
  }

  Shared shared_;
  std::map<uint32_t, std::shared_ptr<Connection>> connections_;
};

// `type: tcp` and `type: unix`.
template <typename Protocol>
class Listener final : public ConnectionSet {
 public:
  // `endpoint` resolves the address to bind (and clears a stale unix socket).
  using EndpointFn = std::function<StatusOr<typename Protocol::endpoint>()>;

  Listener(const config::SourceConfig& config, SocketSourceContext context, std::string name,
           EndpointFn endpoint)
      : ConnectionSet(config, context, std::move(name)),
        endpoint_(std::move(endpoint)),
        acceptor_(context.io),
        retry_timer_(context.io) {}

  Status Bind(const typename Protocol::endpoint& endpoint) {
    error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec && std::is_same_v<Protocol, asio::ip::tcp>) {
      acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    }
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return FailedPreconditionError(shared_.streams.source_name + ": " + ec.message());
    return OkStatus();
  }

  std::string LocalAddress() const {
    error_code ec;
    auto endpoint = acceptor_.local_endpoint(ec);
    if constexpr (std::is_same_v<Protocol, asio::ip::tcp>) {
      return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
    } else {
      return endpoint.path();
    }
  }

  Status Start() override {
    auto endpoint = endpoint_();
    if (!endpoint.ok()) return endpoint.status();
    if constexpr (std::is_same_v<Protocol, asio::ip::tcp>) {
      if (Status s = Bind(*endpoint); !s.ok()) return s;
    } else {
      // The socket file is created by bind() with 0777 & ~umask: under a
      // umask of ~mode it never exists with wider rights than the config's,
      // not even between bind() and a chmod(). The daemon is single-threaded.
      mode_t umask_before = ::umask(~static_cast<mode_t>(shared_.config.mode) & 0777);
      Status s = Bind(*endpoint);
      ::umask(umask_before);
      if (!s.ok()) return s;
    }
    spdlog::info("listening on {} ({}), framing {}", shared_.streams.source_name, LocalAddress(),
                 shared_.config.framing);
    Accept();
    return OkStatus();
  }

  std::string State() const override {
    return stopped_ ? "stopped" : "listening on " + LocalAddress();
  }

  // /readyz: connections cannot be taken while accepts keep failing.
  std::vector<std::string> Problems() const override {
    if (accept_failures_ == 0) return {};
    return {shared_.streams.source_name + ": cannot accept connections (" + accept_error_ + "), " +
            std::to_string(accept_failures_) + " failed accept(s)"};
  }

  void Stop() override {
    stopped_ = true;
    error_code ec;
    acceptor_.close(ec);
    retry_timer_.cancel();
    CloseAll(false);
    if constexpr (!std::is_same_v<Protocol, asio::ip::tcp>) {
      if (!shared_.config.path.empty()) ::unlink(shared_.config.path.c_str());
    }
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](const error_code& ec, typename Protocol::socket socket) {
      if (stopped_) return;
      if (ec) {
        // Out of descriptors (EMFILE) and the like: the connection stays
        // queued, so accepting again at once would fail again, a core
        // spinning. Counted, logged once until an accept works, retried
        // after a pause.
        const bool descriptors = ec == asio::error::no_descriptors || ec.value() == ENFILE;
        if (shared_.context.on_accept_failed) {
          shared_.context.on_accept_failed(descriptors ? "descriptors" : "other");
        }
        accept_error_ = ec.message();
        if (accept_failures_++ == 0) {
          spdlog::warn("{}: accept: {}; retrying every {} ms", shared_.streams.source_name,
                       ec.message(), kAcceptRetry.count());
        }
        retry_timer_.expires_after(kAcceptRetry);
        retry_timer_.async_wait([this](const error_code& e) {
          if (!e && !stopped_) Accept();
        });
        return;
      }
      if (accept_failures_ > 0) {
        spdlog::info("{}: accepting again after {} failed accept(s)", shared_.streams.source_name,
                     accept_failures_);
        accept_failures_ = 0;
      }
      if (connections_.size() >= shared_.config.max_connections) {
        shared_.context.events.StateEvicted(Evicted::kConnection);
        if (refused_++ % 1000 == 0) {
          spdlog::warn("{}: {} connections open (max_connections); refusing ({} so far)",
                       shared_.streams.source_name, connections_.size(), refused_);
        }
        error_code ignored;
        socket.close(ignored);
      } else {
        Open(std::move(socket), /*is_stdin=*/false);
      }
      Accept();
    });
  }

  EndpointFn endpoint_;
  typename Protocol::acceptor acceptor_;
  asio::steady_timer retry_timer_;
  uint64_t refused_ = 0;
  uint64_t accept_failures_ = 0;  // in a row, since the last accept that worked
  std::string accept_error_;      // the last one's
  bool stopped_ = false;
};

// `type: stdin` and `fingerprintd run -`: one connection over fd 0.
class StdinSource final : public ConnectionSet {
 public:
  StdinSource(const config::SourceConfig& config, SocketSourceContext context)
      : ConnectionSet(config, context, SocketSourceName(config)), io_(context.io) {}

  Status Start() override {
    int fd = ::dup(STDIN_FILENO);
    if (fd < 0) return FailedPreconditionError("stdin: " + std::string(std::strerror(errno)));
    asio::posix::stream_descriptor descriptor(io_);
    error_code ec;
    descriptor.assign(fd, ec);
    if (ec) {
      Open(PostedFileReader(io_, fd), /*is_stdin=*/true);  // a regular file (or /dev/null)
    } else {
      Open(std::move(descriptor), /*is_stdin=*/true);
    }
    spdlog::info("reading stdin, framing {}", shared_.config.framing);
    return OkStatus();
  }

  void Stop() override { CloseAll(/*deliver_partial=*/true); }
  std::string State() const override { return connections_.empty() ? "ended" : "open"; }

 private:
  asio::io_context& io_;
};

// A stale socket file (nobody accepts on it) is removed; a live one, or a
// file that is not a socket, is an error.
Status ClearUnixPath(asio::io_context& io, const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return OkStatus();
  if (!S_ISSOCK(st.st_mode)) {
    return FailedPreconditionError("unix:" + path + ": exists and is not a socket");
  }
  asio::local::stream_protocol::socket probe(io);
  error_code ec;
  probe.connect(asio::local::stream_protocol::endpoint(path), ec);
  if (!ec) return FailedPreconditionError("unix:" + path + ": another process listens on it");
  if (::unlink(path.c_str()) != 0) {
    return FailedPreconditionError("unix:" + path +
                                   ": stale socket not removed: " + std::strerror(errno));
  }
  spdlog::info("unix:{}: removed a stale socket file", path);
  return OkStatus();
}

}  // namespace

std::string SocketSourceName(const config::SourceConfig& config) {
  switch (config.type) {
    case config::SourceType::kTcp:
      return "tcp:" + config.listen;
    case config::SourceType::kUnix:
      return "unix:" + config.path;
    case config::SourceType::kStdin:
    case config::SourceType::kFile:
      break;
  }
  return "stdin";
}

parse::ParserOptions SocketParserOptions(const config::SourceConfig& config, WallClock clock) {
  parse::ParserOptions options;
  options.envelope = config.framing == "jsonl" ? parse::Envelope::kPlain : config.format;
  options.max_line_bytes = config.max_line_bytes;
  options.wall_clock = clock;  // the year of year-less lines, as they are read
  return options;
}

std::unique_ptr<LiveSource> MakeSocketSource(const config::SourceConfig& config,
                                             SocketSourceContext context) {
  asio::io_context& io = context.io;
  switch (config.type) {
    case config::SourceType::kTcp: {
      using Tcp = asio::ip::tcp;
      auto endpoint = [&io, listen = config.listen]() -> StatusOr<Tcp::endpoint> {
        std::string host;
        uint16_t port = 0;
        if (!SplitHostPort(listen, &host, &port)) {
          return InvalidArgumentError("tcp:" + listen + ": expected host:port");
        }
        error_code ec;
        Tcp::resolver resolver(io);
        auto results = resolver.resolve(host, std::to_string(port), Tcp::resolver::passive, ec);
        if (ec || results.empty())
          return FailedPreconditionError("tcp:" + listen + ": " + ec.message());
        return results.begin()->endpoint();
      };
      return std::make_unique<Listener<Tcp>>(config, context, SocketSourceName(config), endpoint);
    }
    case config::SourceType::kUnix: {
      using Unix = asio::local::stream_protocol;
      auto endpoint = [&io, path = config.path]() -> StatusOr<Unix::endpoint> {
        if (Status s = ClearUnixPath(io, path); !s.ok()) return s;
        return Unix::endpoint(path);
      };
      return std::make_unique<Listener<Unix>>(config, context, SocketSourceName(config), endpoint);
    }
    case config::SourceType::kStdin:
      return std::make_unique<StdinSource>(config, context);
    case config::SourceType::kFile:
      break;
  }
  return nullptr;
}

}  // namespace fingerprintd::source
