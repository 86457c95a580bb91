// The daemon's own log with the incidents' redaction (common/redact.h): a
// line that quotes a log line, an error from a library or a URL passes
// through the same patterns as every other output before it reaches stderr.
//
//   auto sink = std::make_shared<RedactingStderrSink>();
//   sink->SetRedactor(redactor);           // again after a reload
//   spdlog::set_default_logger(std::make_shared<spdlog::logger>("fingerprintd", sink));
//
// What is masked here is not counted (the metrics count what incidents and
// alerts carried). Threading: the daemon logs from its one thread.
#pragma once

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "common/redact.h"

namespace fingerprintd::sink {

class RedactingStderrSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  void SetRedactor(std::shared_ptr<const Redactor> redactor) { redactor_ = std::move(redactor); }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    if (redactor_) {
      std::string text(msg.payload.data(), msg.payload.size());
      redactor_->Redact(&text);
      spdlog::details::log_msg masked = msg;
      masked.payload = spdlog::string_view_t(text.data(), text.size());
      formatter_->format(masked, formatted);
    } else {
      formatter_->format(msg, formatted);
    }
    std::fwrite(formatted.data(), 1, formatted.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }

 private:
  std::shared_ptr<const Redactor> redactor_;
};

// The daemon's log sink, redacting (SetUpLogging; the Daemon sets its redactor).
inline std::shared_ptr<RedactingStderrSink>& LogSink() {
  static std::shared_ptr<RedactingStderrSink> sink;
  return sink;
}

}  // namespace fingerprintd::sink
