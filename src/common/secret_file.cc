#include "common/secret_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace fingerprintd {

namespace {
constexpr size_t kMaxSecretBytes = 64 << 10;  // a token or a password, never a file's worth
}  // namespace

StatusOr<std::string> ReadSecretFile(const std::string& key, const std::string& path,
                                     SecretShape shape) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    return NotFoundError(key + ": " + path + ": cannot be read: " + std::strerror(errno));
  }
  std::string text;
  text.resize(kMaxSecretBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return NotFoundError(key + ": " + path + ": cannot be read");
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxSecretBytes) {
    return InvalidArgumentError(key + ": " + path + ": larger than 64 KiB, not a secret");
  }
  const size_t first = text.find_first_not_of(" \t\r\n");
  const size_t last = text.find_last_not_of(" \t\r\n");
  text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  if (text.empty()) {
    return InvalidArgumentError(key + ": " + path + ": nothing in it (missing or empty)");
  }
  const char* inner = shape == SecretShape::kToken ? " \t\r\n" : "\r\n";
  if (text.find_first_of(inner) != std::string::npos) {
    return InvalidArgumentError(
        key + ": " + path + ": " +
        (shape == SecretShape::kToken ? "the token holds white space" : "more than one line"));
  }
  return text;
}

}  // namespace fingerprintd
