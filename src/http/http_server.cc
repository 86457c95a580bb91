// HttpServer: see http_server.h for the limits and why Beast.
#include "http/http_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <list>
#include <optional>

#include "common/host_port.h"

namespace fingerprintd::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

class Session;

constexpr std::chrono::milliseconds kLingerFor{1000};
constexpr std::chrono::milliseconds kAcceptBackoff{50};

}  // namespace

struct ServerState {
  ServerState(asio::io_context& io, ServerOptions o, Handler h)
      : options(std::move(o)), handler(std::move(h)), acceptor(io), accept_retry(io) {}
  ~ServerState() {
    if (reserve_fd >= 0) ::close(reserve_fd);
  }
  ServerOptions options;
  Handler handler;
  tcp::acceptor acceptor;
  asio::steady_timer accept_retry;  // the pause after running out of descriptors
  int reserve_fd = -1;              // a descriptor held for a probe when they run out
  ServerStats stats;
  std::list<std::weak_ptr<Session>> sessions;  // to close them on Stop or at the cap
  size_t open = 0;                             // sessions holding a slot (not yet closed)
  bool stopped = false;
};

namespace {

// The descriptor held in reserve for when they run out (ServerState): taken
// back as soon as one is free (a session closing), before anything else in
// the daemon can take it.
void HoldReserve(ServerState& state) {
  if (state.reserve_fd < 0) state.reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

// One connection: read a request, answer it, repeat while kept alive.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<ServerState> state)
      : stream_(std::move(socket)),
        state_(std::move(state)),
        buffer_(state_->options.max_request_bytes) {
    ++state_->open;
  }
  ~Session() { ReleaseSlot(); }

  void Start() { ReadRequest(); }

  // Closes the socket; its slot is free at once (pending handlers still run,
  // see the completion with an error and return).
  void Close() {
    ReleaseSlot();
    idle_ = false;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
    HoldReserve(*state_);
  }

  // Idle: waiting for the first byte of a request, or lingering after the
  // last answer. Such a session may be closed to make room for a new one.
  bool idle() const { return idle_; }
  std::chrono::steady_clock::time_point idle_since() const { return idle_since_; }
  // Reading a request whose first byte came at reading_since() (and not
  // answering yet): past ServerOptions::slow_request_after it may be closed
  // to make room too.
  bool reading() const { return reading_; }
  std::chrono::steady_clock::time_point reading_since() const { return reading_since_; }

 private:
  void ReleaseSlot() {
    if (released_) return;
    released_ = true;
    --state_->open;
  }

  void BecomeIdle() {
    idle_ = true;
    idle_since_ = std::chrono::steady_clock::now();
  }

  // Waits for the first byte of the next request while idle (read_some into
  // the parser's buffer), then reads the rest of it. The request timeout set
  // here covers both: it runs from the first byte being awaited.
  void ReadRequest() {
    if (state_->stopped) return;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(state_->options.max_request_bytes));
    parser_->body_limit(0);
    stream_.expires_after(state_->options.request_timeout);
    if (buffer_.size() > 0) {  // a pipelined request is already here
      reading_ = true;
      reading_since_ = std::chrono::steady_clock::now();
      return ReadRest();
    }
    BecomeIdle();
    stream_.async_read_some(buffer_.prepare(buffer_.max_size()),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->idle_ = false;
                              self->reading_ = true;
                              self->reading_since_ = std::chrono::steady_clock::now();
                              self->buffer_.commit(n);
                              if (ec) return self->OnRead(ec);
                              self->ReadRest();
                            });
  }

  void ReadRest() {
    if (state_->stopped || released_) return;
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    reading_ = false;
    if (state_->stopped || released_) return;
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      return Close();
    }
    if (ec == beast::error::timeout) {
      ++state_->stats.timeouts;
      return Close();
    }
    if (ec) {
      ++state_->stats.bad_requests;
      int status = 400;
      if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) status = 431;
      if (ec == bhttp::error::body_limit || ec == bhttp::error::unexpected_body) status = 413;
      return Answer(status, "text/plain; charset=utf-8", std::string(ReasonText(status)) + "\n",
                    /*keep_alive=*/false, /*head=*/false, {});
    }
    const auto& request = parser_->get();
    ++requests_;
    bool keep_alive =
        request.keep_alive() && requests_ < state_->options.max_requests_per_connection;
    bool head = request.method() == bhttp::verb::head;
    if (request.method() != bhttp::verb::get && !head) {
      ++state_->stats.bad_requests;
      return Answer(405, "text/plain; charset=utf-8", "method not allowed: read-only (GET, HEAD)\n",
                    keep_alive, false, "GET, HEAD");
    }
    std::string_view target(request.target().data(), request.target().size());
    size_t q = target.find('?');
    const auto authorization = request[bhttp::field::authorization];
    Request r{head ? "HEAD" : "GET", target.substr(0, q),
              q == std::string_view::npos ? std::string_view() : target.substr(q + 1),
              std::string_view(authorization.data(), authorization.size())};
    Response response = state_->handler(r);
    ++state_->stats.requests;
    Answer(response.status, response.content_type, std::move(response.body), keep_alive, head, {},
           response.www_authenticate);
  }

  static std::string_view ReasonText(int status) {
    auto reason = bhttp::obsolete_reason(static_cast<bhttp::status>(status));
    return std::string_view(reason.data(), reason.size());
  }

  void Answer(int status, std::string_view content_type, std::string body, bool keep_alive,
              bool head, std::string_view allow, std::string_view www_authenticate = {}) {
    response_ = {};
    response_.result(static_cast<unsigned>(status));
    response_.version(11);
    response_.set(bhttp::field::server, "fingerprintd");
    response_.set(bhttp::field::content_type,
                  beast::string_view(content_type.data(), content_type.size()));
    response_.set(bhttp::field::cache_control, "no-store");
    if (!allow.empty()) {
      response_.set(bhttp::field::allow, beast::string_view(allow.data(), allow.size()));
    }
    if (!www_authenticate.empty()) {
      response_.set(bhttp::field::www_authenticate,
                    beast::string_view(www_authenticate.data(), www_authenticate.size()));
    }
    response_.keep_alive(keep_alive);
    response_.body() = std::move(body);
    response_.prepare_payload();
    if (head) response_.body().clear();  // Content-Length stays that of the GET
    stream_.expires_after(state_->options.write_timeout);
    bhttp::async_write(stream_, response_,
                       [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                         self->OnWritten(ec, keep_alive);
                       });
  }

  void OnWritten(beast::error_code ec, bool keep_alive) {
    if (ec == beast::error::timeout) ++state_->stats.timeouts;
    if (ec || state_->stopped || released_) return Close();
    if (!keep_alive) return Linger();
    ReadRequest();
  }

  // A lingering close: send FIN, then read and discard what the client still
  // sends (an oversize header it has not finished writing) for a short while,
  // so closing with unread bytes does not reset the connection and destroy
  // the answer before the client has read it.
  void Linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerFor);
    BecomeIdle();
    Discard();
  }

  void Discard() {
    stream_.async_read_some(asio::buffer(discard_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec || self->state_->stopped || self->released_) {
                                return self->Close();
                              }
                              self->Discard();
                            });
  }

  beast::tcp_stream stream_;
  std::shared_ptr<ServerState> state_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::empty_body>> parser_;
  bhttp::response<bhttp::string_body> response_;
  size_t requests_ = 0;
  std::array<char, 4096> discard_;
  bool released_ = false;  // the slot is free: closed, or closing
  bool idle_ = false;
  std::chrono::steady_clock::time_point idle_since_;
  bool reading_ = false;
  std::chrono::steady_clock::time_point reading_since_;
};

// Makes room for a new connection at max_connections, so a probe is served
// even when every slot is held: closes the session idle the longest (an idle
// keep-alive client), else the one sending its request the longest once that
// is past slow_request_after (a slowloris client). False when every session
// is answering or quickly reading a request.
bool MakeRoom(ServerState& state) {
  std::shared_ptr<Session> idle, slow;
  const auto slow_before = std::chrono::steady_clock::now() - state.options.slow_request_after;
  for (auto it = state.sessions.begin(); it != state.sessions.end();) {
    std::shared_ptr<Session> session = it->lock();
    if (!session) {
      it = state.sessions.erase(it);
      continue;
    }
    if (session->idle() && (!idle || session->idle_since() < idle->idle_since())) idle = session;
    if (session->reading() && session->reading_since() < slow_before &&
        (!slow || session->reading_since() < slow->reading_since())) {
      slow = session;
    }
    ++it;
  }
  if (idle) {
    idle->Close();
    ++state.stats.evicted_idle;
    return true;
  }
  if (slow) {
    slow->Close();
    ++state.stats.evicted_slow;
    return true;
  }
  return false;
}

void Serve(const std::shared_ptr<ServerState>& state, tcp::socket socket) {
  if (state->open >= state->options.max_connections) MakeRoom(*state);
  if (state->open >= state->options.max_connections) {
    ++state->stats.refused;
    beast::error_code ignored;
    socket.close(ignored);
    return;
  }
  auto session = std::make_shared<Session>(std::move(socket), state);
  state->sessions.remove_if([](const std::weak_ptr<Session>& s) { return s.expired(); });
  state->sessions.push_back(session);
  session->Start();
}

void Accept(const std::shared_ptr<ServerState>& state) {
  state->acceptor.async_accept([state](beast::error_code ec, tcp::socket socket) {
    if (state->stopped || ec == asio::error::operation_aborted) return;
    if (ec == asio::error::no_descriptors || ec.value() == ENFILE) {
      // The connection stays queued and the listener readable: accepting
      // again at once would fail again, a core spinning. The one waiting (a
      // probe, likely) is served with the reserve; then a pause.
      ++state->stats.descriptors_exhausted;
      state->stats.last_exhausted = std::chrono::steady_clock::now();
      if (state->options.on_descriptors_exhausted) state->options.on_descriptors_exhausted();
      if (state->reserve_fd >= 0) {
        ::close(state->reserve_fd);
        state->reserve_fd = -1;
        tcp::socket waiting(state->acceptor.get_executor());
        beast::error_code accept_ec;
        state->acceptor.accept(waiting, accept_ec);
        if (!accept_ec) Serve(state, std::move(waiting));
      }
      state->accept_retry.expires_after(kAcceptBackoff);
      state->accept_retry.async_wait([state](beast::error_code wait_ec) {
        if (wait_ec || state->stopped) return;
        HoldReserve(*state);
        Accept(state);
      });
      return;
    }
    if (!ec) Serve(state, std::move(socket));
    HoldReserve(*state);
    Accept(state);
  });
}

}  // namespace

HttpServer::HttpServer(asio::io_context& io, ServerOptions options, Handler handler)
    : state_(std::make_shared<ServerState>(io, std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(state_->options.listen, &host, &port)) {
    return InvalidArgumentError("http listen '" + state_->options.listen +
                                "': not host:port (e.g. 127.0.0.1:9464)");
  }
  beast::error_code ec;
  auto address = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) {
    return InvalidArgumentError("http listen '" + state_->options.listen +
                                "': not an IP address: " + ec.message());
  }
  tcp::endpoint endpoint(address, port);
  tcp::acceptor& acceptor = state_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    beast::error_code ignored;
    acceptor.close(ignored);
    return InternalError("http listen " + state_->options.listen + ": " + ec.message());
  }
  HoldReserve(*state_);
  Accept(state_);
  return OkStatus();
}

void HttpServer::Stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  beast::error_code ec;
  state_->acceptor.close(ec);
  state_->accept_retry.cancel();
  for (auto& weak : state_->sessions) {
    if (auto session = weak.lock()) session->Close();
  }
  state_->sessions.clear();
}

uint16_t HttpServer::local_port() const {
  beast::error_code ec;
  auto endpoint = state_->acceptor.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

std::string HttpServer::local_address() const {
  beast::error_code ec;
  auto endpoint = state_->acceptor.local_endpoint(ec);
  if (ec) return state_->options.listen;
  std::string host = endpoint.address().to_string();
  if (endpoint.address().is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(endpoint.port());
}

const ServerStats& HttpServer::stats() const { return state_->stats; }
size_t HttpServer::open_connections() const { return state_->open; }

size_t HttpServer::idle_connections() const {
  size_t idle = 0;
  for (const auto& weak : state_->sessions) {
    auto session = weak.lock();
    if (session && session->idle()) ++idle;
  }
  return idle;
}

}  // namespace fingerprintd::http
