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
//                log zone must not make Alertmanager reject the alert);
//   endsAt       while open: now + 4 resend intervals, recomputed at every
//                send, so Alertmanager keeps it firing between resends and
//                resolves it by itself if the daemon disappears (what
//                Prometheus does for its own alerts); once closed: the close
//                time (never before startsAt, never in the future), which
//                resolves it. No endsAt at or before now is sent otherwise.
// An open incident is sent when opened or updated and again every
// resend_interval, however long it stays open (a crash loop's occurrences
// are updates of one alert); a closed one once more with its endsAt (the
// close's time), then forgotten. An incident that opened and closed while
// Alertmanager was unreachable is still delivered, resolved, with its real
// startsAt: its close waits in the queue, and at the cap the changes of open
// incidents (resent anyway) are dropped before any close.
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
// Only http:// (no TLS client here: put a TLS proxy in front of an https
// Alertmanager). Failures are logged through options.log once per outage
// ("unreachable ..., retrying") and once at recovery, not once per retry.
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

struct AlertmanagerOptions {
  std::string url;                            // http://host[:port][/prefix]
  std::map<std::string, std::string> labels;  // static labels on every alert
  int64_t resend_interval_us = 60'000'000;
  int64_t timeout_us = 10'000'000;  // one POST, resolve to reply
  size_t queue_size = 1000;         // alerts waiting; beyond: the oldest dropped
  size_t max_batch = 64;            // alerts per POST
  int64_t backoff_initial_us = 500'000;
  int64_t backoff_max_us = 30'000'000;
  // Wall clock for startsAt/endsAt (microseconds since the epoch): the
  // daemon's (daemon/clock.h), a test's. Required.
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

  // Fails on a url ParseHttpUrl (common/http_url.h) rejects, or a zero queue_size,
  // resend_interval or timeout. `io` and `events` must outlive the sink.
  static StatusOr<std::unique_ptr<AlertmanagerSink>> Create(boost::asio::io_context& io,
                                                            AlertmanagerOptions options,
                                                            PipelineEvents& events);
  ~AlertmanagerSink() override;  // Stop()
  AlertmanagerSink(const AlertmanagerSink&) = delete;
  AlertmanagerSink& operator=(const AlertmanagerSink&) = delete;

  // Arms the resend timer. Alerts queued before Start() wait for it.
  void Start();
  // Cancels the timers and the POST in flight; no callback runs after it and
  // nothing more is sent (what is queued is abandoned: endsAt resolves it).
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
