// AlertmanagerSink: pushes incidents to Alertmanager's API (POST
// <url>/api/v2/alerts, a JSON array of alerts) from the daemon's io_context,
// so an operator gets the page with its class and remedy even where nobody
// runs Prometheus rules over fingerprintd's metrics.
//
//   AlertmanagerOptions options;
//   options.url = "http://127.0.0.1:9093";
//   auto sink = AlertmanagerSink::Create(io, options, events);   // InvalidArgument: bad url
//   fanout.Add(sink->get());
//   (*sink)->Start();          // the resend timer
//   ...
//   (*sink)->Stop();           // on shutdown: timers and the POST in flight cancelled
//
// One alert per incident:
//   labels       alertname="FingerprintdIncident", rule, class, severity
//                (SeverityOf, sink/metrics.h: the same as the metrics'),
//                confidence, deployment, incident_id, the deployment's source
//                labels and the configured static labels (these never replace
//                the ones above);
//   annotations  summary (the rule's title), description (the incident's
//                explanation), remediation (its remedies, one per line),
//                workers ("2/2 affected, ranks 0,1, identical traceback");
//   startsAt     the incident's first_seen (never later than now: a guessed
//                log zone must not make Alertmanager reject the alert), so
//                the same after a restart that resumed it from a checkpoint;
//   endsAt       while open: now + OpenAlertLifetimeUs(resend_interval), the
//                larger of 4 resend intervals and kMinOpenAlertLifetimeUs,
//                recomputed at every send. Alertmanager keeps the alert
//                firing between resends and across a restart of the daemon
//                (stopped, started again with its checkpoint, which re-sends
//                every open incident at once), and resolves it by itself only
//                if the daemon stays away that long. Once closed: the close
//                time (never before startsAt, never in the future), which
//                resolves it. No endsAt at or before now is sent otherwise:
//                not at shutdown either (Flush sends what is queued with the
//                open lifetime; a stop is not a recovery);
//   generatorURL where the incident is on the daemon:
//                <generator_url_base>/incidents?deployment=<deployment> (the
//                deployment's incidents, this one among them; omitted when
//                generator_url_base is empty).
// An open incident is sent when opened or updated and again every
// resend_interval, however long it stays open (a crash loop's occurrences
// are updates of one alert); a closed one once more with its endsAt (the
// close's time), then forgotten. An incident that opened and closed while
// Alertmanager was unreachable is still delivered, resolved, with its real
// startsAt: its close waits in the queue, and at the cap the changes of open
// incidents (resent anyway) are dropped before any close.
// After a restart, the daemon hands the sink every open incident its
// checkpoint resumed (Pipeline::ReportOpenIncidents, as updates): each is sent
// at once with its original startsAt and labels, so Alertmanager takes it for
// the alert it still holds (same labels), which never resolved in between.
// A close of an incident this sink never saw opened (one restored from a
// checkpoint) is sent too.
//
// Delivery: changes (opened, updated, closed) wait in a queue of at most
// queue_size entries, one per incident (a newer state of the same incident
// replaces the queued one); resends are not queued: after the queue, the open
// incidents are taken in id order, so any number of them is resent without
// filling the queue. One POST at a time carries up to max_batch alerts, with
// a deadline of `timeout` over resolve, connect, write and read. A 2xx empties
// the batch; a connection error, a timeout, a 5xx or a 429 puts its changes
// back at the head of the queue (its resends are taken again) and retries
// after a backoff that doubles from backoff_initial to backoff_max and resets
// on the next success; any other status (Alertmanager says the alerts are
// invalid) drops the batch, counted in stats().rejected and logged with the
// reply. When the queue is full, the oldest change is dropped:
// PipelineEvents::StateEvicted(Evicted::kAlert)
// (fingerprintd_evictions_total{what="alert"}); an open incident's alert is
// still resent at the next interval. Nothing here ever blocks the caller:
// OnIncident only queues.
//
// Transport (sink/http_post.h): http:// or https://, the peer verified
// against options.tls's CA file (the system's CAs by default), a client
// certificate presented when configured; basic auth or a bearer token from
// options.auth's files, read for each POST so a rotated Secret is taken up.
// A 401 or 403 refuses the credentials, not the alerts: retried like a 5xx,
// and the log line says which keys to check. Failures are logged through
// options.log once per outage ("unreachable (TLS handshake: certificate
// verify failed ...); retrying") and once at recovery, not once per retry.
//
// Threading: everything runs on the io_context's one thread (OnIncident is
// called by the pipeline on that thread). Like src/http, it owns real timers
// (outside parse/rules/correlate, whose time comes from the lines).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/http_url.h"
#include "fingerprintd/correlate.h"
#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/status.h"

namespace boost::asio {
class io_context;
}

namespace fingerprintd::sink {

// The shortest time an open incident's alert stays firing after its last send:
// longer than a restart of the daemon (a pod rescheduled, its image pulled,
// its checkpoint read again) and than FingerprintdDown's `for: 5m`
// (deploy/prometheus/alerts.yml), so a daemon that stays away is paged about
// before its alerts resolve by themselves; the same 10 minutes as the
// `keep_firing_for` of the Prometheus alerts over its metrics.
inline constexpr int64_t kMinOpenAlertLifetimeUs = 10 * 60'000'000LL;

// endsAt - now for an open incident's alert: 4 resend intervals (three
// resends may be lost, as Prometheus reckons for its own alerts), at least
// kMinOpenAlertLifetimeUs.
int64_t OpenAlertLifetimeUs(int64_t resend_interval_us);

// The base when none is configured: http://<listen address> as the HTTP
// server bound it ("127.0.0.1:9464", "[::1]:9464"), a wildcard host
// ("0.0.0.0", "[::]") replaced by `host_name` (the machine's, or the pod's),
// which receivers of the alert can at least read.
std::string DefaultGeneratorUrlBase(std::string_view listen_address, std::string_view host_name);

// The daemon's page of the incident's deployment on `base`:
// <base>/incidents?deployment=<deployment, percent-encoded>.
std::string IncidentUrl(std::string_view base, const correlate::Incident& incident);

struct AlertmanagerOptions {
  std::string url;                            // http(s)://host[:port][/prefix]
  HttpClientTls tls;                          // https only: CA, client certificate, server name
  HttpClientAuth auth;                        // basic auth or a bearer token, from files
  std::map<std::string, std::string> labels;  // static labels on every alert
  // ParseGeneratorUrlBase's form; "" = no generatorURL.
  std::string generator_url_base;
  int64_t resend_interval_us = 60'000'000;
  int64_t timeout_us = 10'000'000;  // one POST, resolve to reply
  size_t queue_size = 1000;         // alerts waiting; beyond: the oldest dropped
  size_t max_batch = 64;            // alerts per POST
  int64_t backoff_initial_us = 500'000;
  int64_t backoff_max_us = 30'000'000;
  // Wall clock for startsAt/endsAt (microseconds since the epoch): the
  // daemon's (common/wall_clock.h), a test's. Required.
  std::function<int64_t()> now_us;
  // Where outages, recoveries and rejected alerts are reported (the daemon's log).
  std::function<void(std::string_view)> log;
};

class AlertmanagerSink final : public correlate::IncidentSink {
 public:
  struct Stats {
    uint64_t posts_ok = 0;      // 2xx replies
    uint64_t posts_failed = 0;  // connection errors, timeouts, 5xx, 429 (retried)
    uint64_t sent = 0;          // alerts in 2xx-acknowledged POSTs
    uint64_t rejected = 0;      // alerts in POSTs answered with another status (dropped)
    uint64_t evicted = 0;       // alerts dropped at the queue cap
    size_t queued = 0;          // waiting now (not counting a POST in flight)
    size_t open = 0;            // open incidents being resent
  };

  // Fails on a url ParseHttpUrl (common/http_url.h) rejects, what
  // CheckAlertmanagerAccess rejects, TLS or secret files that cannot be
  // used (MakeClientTlsContext, AuthorizationValue), a generator_url_base
  // ParseGeneratorUrlBase rejects, or a zero queue_size, resend_interval or
  // timeout. `io` and `events` must outlive the sink.
  static StatusOr<std::unique_ptr<AlertmanagerSink>> Create(boost::asio::io_context& io,
                                                            AlertmanagerOptions options,
                                                            PipelineEvents& events);
  ~AlertmanagerSink() override;  // Stop()
  AlertmanagerSink(const AlertmanagerSink&) = delete;
  AlertmanagerSink& operator=(const AlertmanagerSink&) = delete;

  // Arms the resend timer. Alerts queued before Start() wait for it.
  void Start();
  // Cancels the timers and the POST in flight; no callback runs after it and
  // nothing more is sent (what is queued is abandoned: the open incidents'
  // alerts keep the endsAt last sent).
  void Stop();
  // On shutdown (SIGTERM), before Stop(): no more resends, the queued changes
  // (a close above all) are sent, retried with backoff, and `done(left)` runs
  // once nothing is queued or in flight, or when the push timeout has passed
  // (`left` alerts abandoned); the sink is stopped then. The io_context must
  // run until `done` is called.
  void Flush(std::function<void(size_t left)> done);

  // Queues the incident's alert; never blocks.
  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) override;

  Stats stats() const;

 private:
  class Impl;
  explicit AlertmanagerSink(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;  // shared with the handlers in flight
};

}  // namespace fingerprintd::sink
