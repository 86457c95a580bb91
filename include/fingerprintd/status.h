// Status and StatusOr<T>: the error type of every recoverable failure.
//
// Modelled on absl::Status (gcc 12 has no std::expected). Library exceptions
// (yaml-cpp, nlohmann-json, filesystem) are caught at the one adapter that
// calls them and turned into a Status whose message names file, line and field.
//
//   StatusOr<std::shared_ptr<const rules::RuleSet>> pack = rules::LoadRuleDir("rules/");
//   if (!pack.ok()) { std::cerr << pack.status().message() << "\n"; return 2; }
//   const rules::RuleSet& rule_set = **pack;
//
// Thread-safety: values; no shared state.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace fingerprintd {

enum class StatusCode {
  kOk,
  kInvalidArgument,
  kNotFound,
  kDataLoss,
  kFailedPrecondition,
  kInternal
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status DataLossError(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

// Holds either a T or a non-OK Status. Accessing value() of an error is a bug.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit like absl
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace fingerprintd
