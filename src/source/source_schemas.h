// The config sections of the built-in source types: each type's keys, their
// defaults and their checks (config/source_types.h says how a schema reads
// its section). The config loader knows none of them; the daemon registers
// them by type:
//
//   auto config = config::LoadConfigFile(path, source::BuiltInSourceTypes());
//
//   file   file_source_schema.cc    paths, exclude, ignore_older, format, start_at,
//                                   release_read_bytes, max_retained_bytes
//   tcp    socket_source_schema.cc  listen, allow_remote, and the stream keys:
//   unix   socket_source_schema.cc  path, mode, and the stream keys:
//   stdin  socket_source_schema.cc  format, and the stream keys: framing,
//                                   max_line_bytes, text_fields, label_fields,
//                                   deployment_field (+ max_connections,
//                                   idle_timeout, max_streams for sockets)
//
// Every type also takes labels and deployment_from.
#pragma once

#include "config/source_types.h"

namespace fingerprintd::source {

// file, tcp, unix and stdin, in that order (the order an unknown type's error
// offers them in).
const config::SourceTypes& BuiltInSourceTypes();

void ReadFileSourceSection(config::SourceSection& section, config::SourceConfig* out);
void ReadTcpSourceSection(config::SourceSection& section, config::SourceConfig* out);
void ReadUnixSourceSection(config::SourceSection& section, config::SourceConfig* out);
void ReadStdinSourceSection(config::SourceSection& section, config::SourceConfig* out);

}  // namespace fingerprintd::source
