// A secret kept in a file, as a Kubernetes Secret mounts it: the HTTP API's
// bearer token (http.auth_token_file), the Alertmanager push's password or
// token (alertmanager.basic_auth.password_file, bearer_token_file). Read at
// each use, so a rotated Secret is taken up without a restart. The secret
// itself never appears in an error: only the key and the file do.
#pragma once

#include <string>

#include "fingerprintd/status.h"

namespace fingerprintd {

enum class SecretShape {
  kToken,     // one word: white space inside it is an error
  kPassword,  // any text on its first line; inner spaces kept
};

// The file's content without surrounding white space (a trailing newline is
// the rule in Secrets). Errors name `key` and `path`: NotFound when the file
// cannot be read (with the system's reason), InvalidArgument when it holds
// nothing, or a token with white space in it.
StatusOr<std::string> ReadSecretFile(const std::string& key, const std::string& path,
                                     SecretShape shape);

}  // namespace fingerprintd
