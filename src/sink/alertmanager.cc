// AlertmanagerSink: see alertmanager.h for the alert shape and the delivery
// rules. The queue is a list in send order with an index by incident id, so
// a newer state replaces the queued one in place; the POST is HttpPost
// (sink/http_post.h), one connection per POST (at most one a resend interval),
// its TLS context and credentials read from their files for each.
#include "sink/alertmanager.h"

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <list>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <vector>

#include "config/alertmanager_access.h"
#include "fingerprintd/rules.h"
#include "sink/http_post.h"
#include "sink/metrics.h"

namespace fingerprintd::sink {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

namespace {

constexpr char kAlertName[] = "FingerprintdIncident";
constexpr size_t kMaxReplyBytes = 64 << 10;
constexpr size_t kMaxLoggedReply = 300;

std::string Join(const std::vector<std::string>& lines, std::string_view sep) {
  std::string out;
  for (const std::string& line : lines) {
    if (!out.empty()) out += sep;
    out += line;
  }
  return out;
}

std::string WorkersText(const correlate::Incident& incident) {
  std::vector<std::string> ranks;
  for (int32_t rank : incident.ranks) ranks.push_back(std::to_string(rank));
  std::string text =
      std::to_string(incident.affected) + "/" + std::to_string(incident.expected) + " affected";
  if (!ranks.empty()) text += ", ranks " + Join(ranks, ",");
  if (incident.identical) text += ", identical traceback";
  return text;
}

// What the failure provoked (correlate.h, Incident::consequences), one per
// line: "nccl-watchdog-timeout (critical): ranks 0,1,3". "" when nothing.
std::string ConsequencesText(const correlate::Incident& incident) {
  std::vector<std::string> lines;
  for (const correlate::IncidentConsequence& c : incident.consequences) {
    std::vector<std::string> who;
    for (int32_t rank : c.ranks) who.push_back(std::to_string(rank));
    std::string line = c.rule->id + " (" + std::string(rules::SeverityName(c.rule->severity)) + ")";
    if (!who.empty()) {
      line += ": ranks " + Join(who, ",");
    } else if (!c.workers.empty()) {
      line += ": " + Join(c.workers, ", ");
    }
    lines.push_back(line);
  }
  return Join(lines, "\n");
}

// RFC 3986 unreserved characters stay, every other byte is %XX.
std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

int64_t OpenAlertLifetimeUs(int64_t resend_interval_us) {
  return std::max(4 * resend_interval_us, kMinOpenAlertLifetimeUs);
}

std::string DefaultGeneratorUrlBase(std::string_view listen_address, std::string_view host_name) {
  const size_t colon = listen_address.rfind(':');
  std::string_view host = listen_address.substr(0, colon);
  std::string_view port = colon == std::string_view::npos ? "" : listen_address.substr(colon);
  if ((host == "0.0.0.0" || host == "[::]") && !host_name.empty()) host = host_name;
  return "http://" + std::string(host) + std::string(port);
}

std::string IncidentUrl(std::string_view base, const correlate::Incident& incident) {
  return std::string(base) + "/incidents?deployment=" + PercentEncode(incident.deployment);
}

// One queued alert; rendered to JSON when sent, so endsAt is fresh.
struct PendingAlert {
  std::string incident_id;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::string generator_url;  // "" = none
  int64_t starts_at_us = 0;
  int64_t ends_at_us = 0;  // 0 while open
  bool resend = false;     // a resend from the open set (not queued, never evicted)
};

class AlertmanagerSink::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& io, AlertmanagerOptions options, HttpUrl url, PipelineEvents& events)
      : io_(io),
        options_(std::move(options)),
        url_(std::move(url)),
        events_(events),
        resend_timer_(io),
        retry_timer_(io),
        flush_timer_(io) {
    backoff_us_ = options_.backoff_initial_us;
  }

  void Start() {
    started_ = true;
    ScheduleResend();
    Pump();
  }

  void Stop() {
    stopped_ = true;
    resend_timer_.cancel();
    retry_timer_.cancel();
    flush_timer_.cancel();
    if (attempt_) attempt_->Abort();
    if (flush_done_) {
      auto done = std::move(flush_done_);
      flush_done_ = nullptr;
      done(queue_.size() + in_flight_.size());
    }
  }

  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) {
    if (stopped_) return;
    PendingAlert alert = AlertOf(incident);
    if (change == correlate::IncidentChange::kClosed) {
      open_.erase(incident.incident_id);
      // The close's own time, never before startsAt nor in the future (a log
      // clock off by hours must not keep it firing or reject it).
      const int64_t now = options_.now_us();
      const int64_t closed = incident.closed_us != 0 ? std::min(incident.closed_us, now) : now;
      alert.ends_at_us = std::max(closed, alert.starts_at_us);
    } else {
      open_[incident.incident_id] = alert;
    }
    Enqueue(std::move(alert));
    Pump();
  }

  Stats stats() const {
    Stats s = stats_;
    s.queued = queue_.size();
    s.open = open_.size();
    return s;
  }

 private:
  PendingAlert AlertOf(const correlate::Incident& incident) const {
    PendingAlert alert;
    alert.incident_id = incident.incident_id;
    alert.labels = options_.labels;
    for (const auto& [key, value] : incident.labels) alert.labels[key] = value;
    alert.labels["alertname"] = kAlertName;
    alert.labels["rule"] = incident.rule->id;
    alert.labels["class"] = incident.rule->rule_class;
    alert.labels["severity"] = std::string(SeverityOf(incident));
    alert.labels["confidence"] = std::string(rules::ConfidenceName(incident.confidence));
    alert.labels["deployment"] = incident.deployment;
    alert.labels["incident_id"] = incident.incident_id;
    alert.annotations["summary"] = incident.rule->title;
    alert.annotations["description"] = incident.explanation;
    alert.annotations["remediation"] = Join(incident.remediation, "\n");
    alert.annotations["workers"] = WorkersText(incident);
    // What it provoked pages with it, never on its own.
    if (!incident.consequences.empty()) {
      alert.annotations["consequences"] = ConsequencesText(incident);
    }
    if (!options_.generator_url_base.empty()) {
      alert.generator_url = IncidentUrl(options_.generator_url_base, incident);
    }
    alert.starts_at_us = std::min(incident.first_seen_us, options_.now_us());
    if (alert.starts_at_us <= 0) alert.starts_at_us = options_.now_us();
    return alert;
  }

  // Newest state of an incident replaces its queued one; at the cap the
  // oldest entry goes.
  void Enqueue(PendingAlert alert) {
    if (auto it = index_.find(alert.incident_id); it != index_.end()) {
      *it->second = std::move(alert);
      return;
    }
    std::string id = alert.incident_id;
    queue_.push_back(std::move(alert));
    index_[id] = std::prev(queue_.end());
    TrimToCap();
  }

  // At the cap the oldest change of an open incident goes first (it is
  // resent at the next interval anyway); a close (the only message that
  // resolves its alert) goes only when the queue holds nothing else.
  void TrimToCap() {
    while (queue_.size() > options_.queue_size) {
      auto victim = std::find_if(queue_.begin(), queue_.end(),
                                 [](const PendingAlert& a) { return a.ends_at_us == 0; });
      if (victim == queue_.end()) victim = queue_.begin();
      index_.erase(victim->incident_id);
      queue_.erase(victim);
      ++stats_.evicted;
      events_.StateEvicted(Evicted::kAlert);
    }
  }

 public:
  // Shutdown: no more resends; what is queued is sent, and `done(left)` is
  // called once nothing is queued or in flight, or after the push timeout
  // with the alerts left unsent (then abandoned: endsAt resolves the open ones).
  void Flush(std::function<void(size_t)> done) {
    if (stopped_) {
      done(queue_.size());
      return;
    }
    flush_done_ = std::move(done);
    resend_timer_.cancel();
    resend_due_ = false;
    flush_timer_.expires_after(std::chrono::microseconds(options_.timeout_us));
    flush_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->FlushOver();
    });
    if (!started_) started_ = true;
    Pump();
    if (!attempt_ && queue_.empty()) FlushOver();
  }

 private:
  void FlushOver() {
    if (flush_done_) Stop();  // calls done with what is left
  }

  std::string Render(const std::vector<PendingAlert>& batch) const {
    int64_t now = options_.now_us();
    nlohmann::json alerts = nlohmann::json::array();
    for (const PendingAlert& alert : batch) {
      int64_t ends = alert.ends_at_us != 0 ? alert.ends_at_us
                                           : now + OpenAlertLifetimeUs(options_.resend_interval_us);
      nlohmann::json json = {{"labels", alert.labels},
                             {"annotations", alert.annotations},
                             {"startsAt", correlate::FormatRfc3339(alert.starts_at_us)},
                             {"endsAt", correlate::FormatRfc3339(ends)}};
      if (!alert.generator_url.empty()) json["generatorURL"] = alert.generator_url;
      alerts.push_back(std::move(json));
    }
    return alerts.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  void ScheduleResend() {
    resend_timer_.expires_after(std::chrono::microseconds(options_.resend_interval_us));
    resend_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->stopped_) return;
      self->resend_due_ = true;
      self->resend_cursor_.clear();
      self->Pump();
      self->ScheduleResend();
    });
  }

  // Starts the next POST unless one is in flight or a retry is pending:
  // queued changes first, then resends taken straight from the open set in id
  // order (so resending many open incidents never fills the queue).
  void Pump() {
    if (!started_ || stopped_ || attempt_ || waiting_retry_) return;
    in_flight_.clear();
    std::set<std::string> ids;
    while (!queue_.empty() && in_flight_.size() < options_.max_batch) {
      index_.erase(queue_.front().incident_id);
      ids.insert(queue_.front().incident_id);
      in_flight_.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    batch_resend_cursor_ = resend_cursor_;
    if (resend_due_) {
      auto it = open_.upper_bound(resend_cursor_);
      for (; it != open_.end() && in_flight_.size() < options_.max_batch; ++it) {
        resend_cursor_ = it->first;
        if (ids.count(it->first)) continue;  // its newer change is in this batch
        in_flight_.push_back(it->second);
        in_flight_.back().resend = true;
      }
      if (it == open_.end()) resend_due_ = false;
    }
    if (in_flight_.empty()) return;
    http::request<http::string_body> request{http::verb::post, url_.prefix + "/api/v2/alerts", 11};
    request.set(http::field::host, url_.host + ":" + url_.port);
    request.set(http::field::user_agent, "fingerprintd/" FINGERPRINTD_VERSION);
    request.set(http::field::content_type, "application/json");
    request.keep_alive(false);
    request.body() = Render(in_flight_);
    request.prepare_payload();
    // Read for each POST: a rotated Secret or certificate is taken up.
    auto authorization = AuthorizationValue(options_.auth, "alertmanager");
    if (!authorization.ok()) return OnFailure(authorization.status().message());
    if (!authorization->empty()) request.set(http::field::authorization, *authorization);
    std::shared_ptr<asio::ssl::context> tls;
    if (url_.tls) {
      auto context = MakeClientTlsContext(options_.tls, "alertmanager.tls_config");
      if (!context.ok()) return OnFailure(context.status().message());
      tls = std::move(*context);
    }
    attempt_ = std::make_shared<HttpPost>(
        io_, url_, std::move(tls), options_.tls.server_name, std::move(request), kMaxReplyBytes,
        [self = shared_from_this()](beast::error_code ec, const std::string& step, unsigned status,
                                    const std::string& reply) {
          self->OnReply(ec, step, status, reply);
        });
    attempt_->Run(options_.timeout_us);
  }

  // 401 and 403 refuse the credentials, not the alerts: retried (a fixed
  // Secret is read at the next POST), as is a server's error or a 429.
  static bool Retried(unsigned status) {
    return status == 401 || status == 403 || status == 429 || status >= 500;
  }

  void OnReply(beast::error_code ec, const std::string& step, unsigned status,
               const std::string& reply) {
    attempt_.reset();
    if (stopped_) return;
    if (ec) {
      return OnFailure("unreachable (" + (step.empty() ? "" : step + ": ") + ec.message() + ")");
    }
    if (Retried(status)) {
      std::string why = "HTTP " + std::to_string(status);
      if (status == 401 || status == 403) {
        why += ": the credentials were refused (alertmanager.basic_auth, bearer_token_file)";
      }
      return OnFailure(why);
    }
    if (status >= 200 && status < 300) {
      stats_.posts_ok++;
      stats_.sent += in_flight_.size();
      if (failing_ && options_.log) {
        options_.log(Where() + ": reachable again after " + std::to_string(failures_) +
                     " failed attempt(s)");
      }
      failing_ = false;
      failures_ = 0;
      backoff_us_ = options_.backoff_initial_us;
    } else {
      stats_.rejected += in_flight_.size();
      if (options_.log) {
        options_.log(Where() + ": " + std::to_string(in_flight_.size()) +
                     " alert(s) rejected with HTTP " + std::to_string(status) + ": " +
                     reply.substr(0, kMaxLoggedReply));
      }
    }
    in_flight_.clear();
    Pump();
    if (flush_done_ && !attempt_ && queue_.empty()) FlushOver();
  }

  // The batch in flight could not be delivered (`why`): requeued, retried
  // after the backoff, logged once per outage and again when the reason
  // changes (a fixed CA file that uncovers a refused password).
  void OnFailure(const std::string& why) {
    stats_.posts_failed++;
    Requeue();
    if ((!failing_ || why != last_failure_) && options_.log) {
      options_.log(Where() + ": " + why + "; retrying with backoff, " +
                   std::to_string(queue_.size()) + " alert(s) queued");
    }
    failing_ = true;
    last_failure_ = why;
    ++failures_;
    RetryLater();
  }

  std::string Where() const { return "alertmanager " + url_.ToString(); }

  // The failed batch's changes go back to the head, unless a newer state of
  // the same incident was queued meanwhile; its resends are taken again from
  // where this batch started.
  void Requeue() {
    for (auto it = in_flight_.rbegin(); it != in_flight_.rend(); ++it) {
      if (it->resend) {
        resend_due_ = true;
        resend_cursor_ = batch_resend_cursor_;
        continue;
      }
      if (index_.count(it->incident_id)) continue;
      queue_.push_front(std::move(*it));
      index_[queue_.front().incident_id] = queue_.begin();
    }
    in_flight_.clear();
    TrimToCap();
  }

  void RetryLater() {
    waiting_retry_ = true;
    retry_timer_.expires_after(std::chrono::microseconds(backoff_us_));
    backoff_us_ = std::min(backoff_us_ * 2, options_.backoff_max_us);
    retry_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      self->waiting_retry_ = false;
      if (ec || self->stopped_) return;
      self->Pump();
    });
  }

  asio::io_context& io_;
  AlertmanagerOptions options_;
  HttpUrl url_;
  PipelineEvents& events_;
  asio::steady_timer resend_timer_;
  asio::steady_timer retry_timer_;
  asio::steady_timer flush_timer_;
  std::function<void(size_t)> flush_done_;    // set while flushing at shutdown
  std::map<std::string, PendingAlert> open_;  // open incidents, resent
  std::list<PendingAlert> queue_;
  std::unordered_map<std::string, std::list<PendingAlert>::iterator> index_;
  std::vector<PendingAlert> in_flight_;
  bool resend_due_ = false;          // open_ is being resent, after resend_cursor_
  std::string resend_cursor_;        // last id resent ("" = none yet; ids are non-empty)
  std::string batch_resend_cursor_;  // resend_cursor_ when the batch in flight began
  std::shared_ptr<HttpPost> attempt_;
  int64_t backoff_us_ = 0;
  uint64_t failures_ = 0;
  bool failing_ = false;
  std::string last_failure_;  // the reason last logged while failing_
  bool waiting_retry_ = false;
  bool started_ = false;
  bool stopped_ = false;
  Stats stats_;
};

StatusOr<std::unique_ptr<AlertmanagerSink>> AlertmanagerSink::Create(asio::io_context& io,
                                                                     AlertmanagerOptions options,
                                                                     PipelineEvents& events) {
  auto url = ParseHttpUrl(options.url);
  if (!url.ok()) return url.status();
  if (!options.generator_url_base.empty()) {
    auto base = config::ParseGeneratorUrlBase(options.generator_url_base);
    if (!base.ok()) {
      return InvalidArgumentError("alertmanager: generator_url_base: " + base.status().message());
    }
    options.generator_url_base = std::move(*base);
  }
  if (!options.now_us) return InvalidArgumentError("alertmanager: no wall clock (now_us)");
  if (Status s = config::CheckAlertmanagerAccess(*url, options.tls, options.auth); !s.ok())
    return s;
  // The files, once now, so a daemon started without them says so at once.
  if (url->tls) {
    auto context = MakeClientTlsContext(options.tls, "alertmanager.tls_config");
    if (!context.ok()) return context.status();
  }
  if (auto authorization = AuthorizationValue(options.auth, "alertmanager"); !authorization.ok()) {
    return authorization.status();
  }
  if (options.queue_size == 0 || options.max_batch == 0) {
    return InvalidArgumentError("alertmanager: queue_size and max_batch must be > 0");
  }
  if (options.resend_interval_us <= 0 || options.timeout_us <= 0 ||
      options.backoff_initial_us <= 0 || options.backoff_max_us < options.backoff_initial_us) {
    return InvalidArgumentError("alertmanager: resend_interval, timeout and backoff must be > 0");
  }
  auto impl = std::make_shared<Impl>(io, std::move(options), std::move(*url), events);
  return std::unique_ptr<AlertmanagerSink>(new AlertmanagerSink(std::move(impl)));
}

AlertmanagerSink::AlertmanagerSink(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
AlertmanagerSink::~AlertmanagerSink() { impl_->Stop(); }

void AlertmanagerSink::Start() { impl_->Start(); }
void AlertmanagerSink::Stop() { impl_->Stop(); }
void AlertmanagerSink::Flush(std::function<void(size_t)> done) { impl_->Flush(std::move(done)); }

void AlertmanagerSink::OnIncident(correlate::IncidentChange change,
                                  const correlate::Incident& incident) {
  impl_->OnIncident(change, incident);
}

AlertmanagerSink::Stats AlertmanagerSink::stats() const { return impl_->stats(); }

}  // namespace fingerprintd::sink
