// `fingerprintd rules draft INCIDENT_ID --from FILE`: a rule skeleton drafted
// from an incident, so that a failure that keeps coming out `unknown` (the
// same signature in many deployments: fingerprintd_signature_deployments)
// becomes a rule of its own. The draft matches the failure's fixed words (its
// exception's type and the longest run of its message that holds no value)
// and embeds the incident's evidence as its positive test; its class,
// severity, title, explanation and remedies are the author's to write
// (rules/README.md, "From a signature to a rule"). `rules test` passes on a
// copy of the pack with the draft in it.
//
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "fingerprintd/status.h"

namespace fingerprintd::source {

// The rule file (YAML) drafted from `incident_json`: one incident object as
// the incident log, `replay --format jsonl` and GET /incidents carry it.
// InvalidArgument when it is not one, or has neither exception nor evidence.
StatusOr<std::string> DraftRule(std::string_view incident_json);

// The latest revision of incident `id` in `text`: a JSONL incident log (or
// `replay --format jsonl` output) or a GET /incidents JSON array. NotFound
// naming the id when it is not there.
StatusOr<std::string> FindIncident(std::string_view text, std::string_view id);

}  // namespace fingerprintd::source
