// The systemd readiness protocol (sd_notify(3)) without libsystemd: one
// datagram to the AF_UNIX socket systemd names in $NOTIFY_SOCKET, for
// deploy/systemd/fingerprintd.service (Type=notify). Outside systemd (no
// NOTIFY_SOCKET) every call does nothing, so the daemon calls it unconditionally.
//
//   SdNotify("READY=1");       // sources started, checkpoint restored
//   SdNotify("RELOADING=1");   // SIGHUP received (MONOTONIC_USEC is added)
//   SdNotify("READY=1");       // reload done, whether it kept the old config or not
//   SdNotify("STOPPING=1");    // SIGTERM: checkpointing, then exit
//
// Threading: thread-safe (a socket per call; no state).
#pragma once

#include <string>
#include <string_view>

#include "fingerprintd/status.h"

namespace fingerprintd::daemon {

// Sends `state` to $NOTIFY_SOCKET; OkStatus when it was sent or when
// NOTIFY_SOCKET is unset or empty. A failure (no such socket, a full queue)
// is returned for the caller to log: systemd then times the start out, the
// daemon itself carries on.
Status SdNotify(std::string_view state);

// Sends `state` to `socket`: a path, or "@name" for the abstract namespace
// (the leading '@' becomes a NUL byte). "RELOADING=1" gets the
// "MONOTONIC_USEC=<CLOCK_MONOTONIC in µs>" line systemd 253+ asks for.
// InvalidArgumentError for a path longer than sun_path.
Status SdNotifyTo(const std::string& socket, std::string_view state);

}  // namespace fingerprintd::daemon
