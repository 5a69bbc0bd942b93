// Status and StatusOr: how the core reports failure without exceptions
// (LevelDB habit). A Status is cheap when ok (no allocation).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace tailcut {

// [[nodiscard]]: an ignored Status is a bug (cast to void where ignoring
// is the decision, with a comment saying why).
class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,
    kNotFound,
    kFailedPrecondition,  // e.g. no executor can ever run the task
    kResourceExhausted,   // a budget or limit was hit
    kUnavailable,         // peer gone, try again later
    kPermissionDenied,    // not trusted, or not the owner
    kIoError,
    kInternal,
    kTooLarge,            // beyond a hard limit: retrying cannot help
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status FailedPrecondition(std::string m) { return {Code::kFailedPrecondition, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
  static Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status TooLarge(std::string m) { return {Code::kTooLarge, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>", or "ok".
  std::string ToString() const;

 private:
  Status(Code c, std::string m) : code_(c), message_(std::move(m)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

namespace internal {
// value() / operator* of a StatusOr holding an error: a bug in the caller,
// reported with the error rather than undefined behaviour. Inline, so that
// header-only external plugins need no tailcut symbol for it.
[[noreturn]] inline void DieOnBadAccess(const Status& s) {
  std::fprintf(stderr, "tailcut: StatusOr value read on an error: %s\n", s.message().c_str());
  std::abort();
}
}  // namespace internal

// A value or the Status that explains why there is none. Reading the value
// of an error aborts with the error's text (check ok() first).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status::Internal("StatusOr made from an ok Status without a value");
  }
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return Checked(); }
  const T& value() const& { return Checked(); }
  T&& value() && { return std::move(Checked()); }
  T* operator->() { return &Checked(); }
  const T* operator->() const { return &Checked(); }
  T& operator*() & { return Checked(); }
  const T& operator*() const& { return Checked(); }
  T&& operator*() && { return std::move(Checked()); }

 private:
  T& Checked() {
    if (!value_) internal::DieOnBadAccess(status_);
    return *value_;
  }
  const T& Checked() const {
    if (!value_) internal::DieOnBadAccess(status_);
    return *value_;
  }
  Status status_;
  std::optional<T> value_;
};

}  // namespace tailcut
