// The `alertmanager:` section's checks that need no network and no file:
// `config check` reports them, and sink::AlertmanagerSink::Create makes them
// again before it reads the files and builds the TLS context.
#pragma once

#include <string>
#include <string_view>

#include "common/http_url.h"
#include "fingerprintd/status.h"

namespace fingerprintd::config {

// Checks a generatorURL base (`alertmanager.generator_url_base`):
// http(s)://host[:port][/path], no query, fragment or space; returns it
// without a trailing '/'. InvalidArgumentError naming what is wrong.
StatusOr<std::string> ParseGeneratorUrlBase(std::string_view url);

// Checks the shape of what reaching Alertmanager needs, as `config check`
// reports it: tls only with an https url, basic auth or a bearer token (not
// both; a username with its password file). InvalidArgument naming the key.
// sink::AlertmanagerSink::Create checks this and then the files themselves
// (the TLS context built, the secrets read once): a daemon started without
// them fails at once, naming the key and the file; `config check` does not
// read them, so a config can be checked where its Secrets are not mounted.
Status CheckAlertmanagerAccess(const HttpUrl& url, const HttpClientTls& tls,
                               const HttpClientAuth& auth);

}  // namespace fingerprintd::config
