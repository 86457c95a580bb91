// CheckpointStore: see checkpoint_store.h. nlohmann-json is called here only;
// its exceptions become DataLossError.
#include "source/checkpoint_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "common/hash.h"
#include "common/state_json.h"
#include "common/utf8.h"

namespace fingerprintd::source {

namespace {

constexpr const char* kFormat = "fingerprintd/checkpoint";
constexpr int kVersion = 1;

std::string Hex(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// A name that is not valid UTF-8 (a path, a shipper's pod name) is kept as
// its bytes in hex beside its escaped, readable form.
std::string HexBytes(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kHex[b >> 4];
    out += kHex[b & 0xF];
  }
  return out;
}

std::optional<std::string> BytesFromHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexDigitValue(hex[i]), lo = HexDigitValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi << 4 | lo);
  }
  return out;
}

Status Errno(const std::string& what) { return InternalError(what + ": " + std::strerror(errno)); }

// Writes all of `text` to fd.
bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string EncodeCheckpoint(const Checkpoint& checkpoint) {
  nlohmann::json sources = nlohmann::json::array();
  for (const SourceCheckpoint& s : checkpoint.sources) {
    nlohmann::json pieces = nlohmann::json::array();
    for (const FilePiece& p : s.pieces) {
      nlohmann::json piece = {{"device", p.identity.device},
                              {"inode", p.identity.inode},
                              {"head_bytes", p.identity.head_bytes},
                              {"head_hash", Hex(p.identity.head_hash)},
                              {"base", p.base}};
      if (p.released > 0) piece["released"] = p.released;
      pieces.push_back(std::move(piece));
    }
    nlohmann::json source = {{"name", EscapeInvalidUtf8(s.name)},
                             {"safe", {{"offset", s.safe.offset}, {"line", s.safe.line}}},
                             {"pieces", std::move(pieces)}};
    if (s.read > 0) source["read"] = s.read;
    if (!IsValidUtf8(s.name)) source["name_hex"] = HexBytes(s.name);
    sources.push_back(std::move(source));
  }
  nlohmann::json doc = {{"format", kFormat},
                        {"version", kVersion},
                        {"sources", std::move(sources)},
                        {"pipeline", checkpoint.pipeline_state}};
  if (checkpoint.audit_bytes >= 0) doc["audit_bytes"] = checkpoint.audit_bytes;
  if (checkpoint.first_run_us > 0) doc["first_run_us"] = checkpoint.first_run_us;
  return DumpState(doc) + "\n";
}

StatusOr<Checkpoint> DecodeCheckpoint(const std::string& text) {
  Checkpoint out;
  try {
    nlohmann::json doc = nlohmann::json::parse(text);
    if (!doc.is_object() || doc.value("format", "") != kFormat) {
      return DataLossError("not a fingerprintd checkpoint (format)");
    }
    if (!doc.contains("version") || !doc["version"].is_number_integer() ||
        doc["version"].get<int>() != kVersion) {
      return DataLossError("checkpoint version is not " + std::to_string(kVersion));
    }
    for (const auto& s : doc.at("sources")) {
      SourceCheckpoint& sc = out.sources.emplace_back();
      sc.name = s.at("name").get<std::string>();
      if (s.contains("name_hex")) {
        std::optional<std::string> raw = BytesFromHex(s["name_hex"].get<std::string>());
        if (!raw) return DataLossError("checkpoint: bad name_hex of " + sc.name);
        sc.name = std::move(*raw);
      }
      sc.safe.offset = s.at("safe").at("offset").get<uint64_t>();
      sc.safe.line = s.at("safe").at("line").get<uint64_t>();
      for (const auto& p : s.at("pieces")) {
        FilePiece& piece = sc.pieces.emplace_back();
        piece.identity.device = p.at("device").get<uint64_t>();
        piece.identity.inode = p.at("inode").get<uint64_t>();
        piece.identity.head_bytes = p.at("head_bytes").get<uint32_t>();
        const std::string hash = p.at("head_hash").get<std::string>();
        size_t used = 0;
        piece.identity.head_hash = std::stoull(hash, &used, 16);
        if (used != hash.size()) return DataLossError("checkpoint: bad head_hash '" + hash + "'");
        piece.base = p.at("base").get<uint64_t>();
        if (p.contains("released")) piece.released = p["released"].get<uint64_t>();
      }
      if (s.contains("read")) sc.read = s["read"].get<uint64_t>();
      if (sc.name.empty()) return DataLossError("checkpoint: a source without a name");
    }
    out.pipeline_state = doc.at("pipeline").get<std::string>();
    if (doc.contains("audit_bytes")) {
      out.audit_bytes = doc["audit_bytes"].get<int64_t>();
      if (out.audit_bytes < 0) return DataLossError("checkpoint: negative audit_bytes");
    }
    if (doc.contains("first_run_us")) out.first_run_us = doc["first_run_us"].get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    return DataLossError("checkpoint: " + StateErrorText(e) + " (" + std::to_string(text.size()) +
                         " bytes)");
  } catch (const std::exception& e) {
    return DataLossError(std::string("checkpoint: ") + e.what());
  }
  return out;
}

CheckpointStore::CheckpointStore(std::string dir) : dir_(std::move(dir)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
}

CheckpointStore::~CheckpointStore() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status CheckpointStore::Lock() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return InternalError(dir_ + ": " + ec.message());
  std::string lock = dir_ + "/checkpoint.lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(lock);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return FailedPreconditionError(lock + ": held by another fingerprintd");
  }
  lock_fd_ = fd;
  return OkStatus();
}

StatusOr<Checkpoint> CheckpointStore::Load() {
  std::ifstream in(path(), std::ios::binary);
  if (!in) return NotFoundError(path() + ": no checkpoint");
  std::ostringstream text;
  text << in.rdbuf();
  StatusOr<Checkpoint> checkpoint = DecodeCheckpoint(text.str());
  if (!checkpoint.ok()) return DataLossError(path() + ": " + checkpoint.status().message());
  struct stat st;
  if (checkpoint->first_run_us == 0 && ::stat(path().c_str(), &st) == 0) {
    checkpoint->first_run_us = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000 +
                               st.st_mtim.tv_nsec / 1000;  // older version: its last save
  }
  last_text_ = text.str();
  return checkpoint;
}

StatusOr<std::string> CheckpointStore::MoveAside(int64_t now_us) {
  const time_t seconds = static_cast<time_t>(now_us / 1'000'000);
  struct tm utc {};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &utc);
  const std::string aside = path() + ".corrupt-" + stamp;
  if (::rename(path().c_str(), aside.c_str()) != 0) return Errno(path());
  last_text_.clear();
  return aside;
}

Status CheckpointStore::Save(const Checkpoint& checkpoint, bool* written) {
  std::string text = EncodeCheckpoint(checkpoint);
  if (written) *written = false;
  if (text == last_text_) {
    ++skipped_;
    return OkStatus();
  }
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  std::string tmp = path() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(tmp);
  bool ok = WriteAll(fd, text) && ::fsync(fd) == 0;
  int saved = errno;
  ::close(fd);
  if (!ok) {
    errno = saved;
    return Errno(tmp);
  }
  if (::rename(tmp.c_str(), path().c_str()) != 0) return Errno(path());
  int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return Errno(dir_);
  ok = ::fsync(dir_fd) == 0;
  ::close(dir_fd);
  if (!ok) return Errno(dir_);
  last_text_ = std::move(text);
  ++writes_;
  if (written) *written = true;
  return OkStatus();
}

}  // namespace fingerprintd::source
