// Socket and stdin sources of `fingerprintd run` (config `type: tcp`,
// `type: unix`, `type: stdin`, and `fingerprintd run -`): log shippers
// (Vector, Fluent Bit), socat and pipes send lines or JSON lines; every
// stream inside a connection becomes a Pipeline source (source/socket_streams.h),
// decoded by source/socket_framing.h.
//
//   SocketSourceContext context{io, pipeline, events, [&] { Wake(); }, [&] { EndOfInput(); }};
//   auto source = MakeSocketSource(config, context);
//   Status s = source->Start();   // binds; an error names the address or path
//
// tcp: listens on `listen` (default 127.0.0.1:5170; a non-loopback address
// only with allow_remote, checked by the config). unix: `path`, created with
// `mode` (default 0660); a stale socket file (nobody listening) is replaced, a
// live one or any other file is an error; the file is removed on Stop. stdin:
// one connection over fd 0; its end flushes the last unterminated line and
// calls on_end (the daemon stops when stdin was its only source).
//
// Limits, each counted: a connection beyond max_connections is accepted and
// closed at once (Evicted::kConnection); a connection without a byte for
// idle_timeout is closed (Evicted::kIdleConnection); a stream without a line
// for idle_timeout ends; streams beyond max_streams end the oldest
// (Evicted::kSocketStream). Backpressure: a connection is read into a fixed
// 64 KiB buffer and the next read is issued only after those bytes went
// through the pipeline, so a client faster than the daemon fills its kernel
// socket buffer and blocks; per connection the daemon holds at most the read
// buffer, one partial line (max_line_bytes, 2x + 4 KiB for jsonl) and its
// streams' parser state.
//
// A closed connection ends its streams (EndSource), a line cut by the client
// disconnecting is dropped and counted (DropReason::kCutAtDisconnect). Stop
// (SIGTERM, reload) closes the acceptor and every connection, ending their
// streams; shippers reconnect after a reload. Nothing is checkpointed: bytes
// in flight when the daemon stops are the shipper's to resend.
//
// Threading: everything on the io_context's one thread. Sessions are held by
// shared_from_this in their pending read; the source keeps one reference per
// open connection and drops it when the connection closes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/wall_clock.h"
#include "config/config.h"
#include "fingerprintd/parse.h"
#include "source/live_source.h"

namespace fingerprintd::source {

struct SocketSourceContext {
  boost::asio::io_context& io;
  Pipeline& pipeline;
  PipelineEvents& events;
  std::function<void()> on_read;  // after each read (Daemon::Wake)
  std::function<void()> on_end;   // stdin reached its end
  // Optional: an accept that failed, by reason ("descriptors": EMFILE/ENFILE;
  // "other"), for fingerprintd_accept_failures_total.
  std::function<void(std::string_view reason)> on_accept_failed = {};
  // The time of each read and idle check, and of year-less lines; tests give
  // a clock they step (with Tick's now) instead.
  WallClock clock = &CoarseWallNowMicros;
};

// A LiveSource for a `tcp`, `unix` or `stdin` source config. `context`'s
// references must outlive it.
std::unique_ptr<LiveSource> MakeSocketSource(const config::SourceConfig& config,
                                             SocketSourceContext context);

// What the names of a socket source's streams start with, before '#' and the
// connection's slot: "tcp:127.0.0.1:5170", "unix:/run/x.sock", "stdin".
std::string SocketSourceName(const config::SourceConfig& config);
// The parser options of a socket source's streams (now_us is set as each
// opens); `clock` dates year-less lines.
parse::ParserOptions SocketParserOptions(const config::SourceConfig& config,
                                         WallClock clock = &CoarseWallNowMicros);

}  // namespace fingerprintd::source
