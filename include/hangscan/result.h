// Result<T> and Error: the error model of hangscan.
//
// Why: a hang tool degrades instead of dying. Anything that can fail per item (a read, a
// thread, a module, a rank, a node) returns a Result, so the caller can record a diagnostic
// and go on. Exceptions are reserved for fatal setup problems and are caught in main().
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hangscan {

// Why: the CLI maps error codes to hints and exit codes without parsing messages.
enum class Errc {
  not_found,        // pid, file, symbol absent
  permission,       // ptrace or file access refused
  no_such_process,  // process vanished
  zombie,
  kernel_thread,
  already_traced,
  timeout,
  io,
  bad_data,     // corrupt core, torn read, hostile JSON
  unsupported,  // a version or architecture we cannot read
  usage,
  internal,
  out_of_memory,  // an allocation failed: a limit (ulimit -v, cgroup) or the machine
};

// Why: one value carries what went wrong, the errno, how to fix it, and where (context
// chain added while the error propagates up).
struct Error {
  Errc code = Errc::internal;
  std::string message;
  int sys_errno = 0;
  std::string hint;
  std::vector<std::string> context;

  Error() = default;
  Error(Errc c, std::string msg, int err = 0, std::string h = {})
      : code(c), message(std::move(msg)), sys_errno(err), hint(std::move(h)) {}

  // Adds an outer context ("reading thread 42") and returns *this for chaining.
  Error& with_context(std::string ctx) {
    context.push_back(std::move(ctx));
    return *this;
  }

  // The one-line message: outermost context first.
  std::string what() const {
    std::string out;
    for (auto it = context.rbegin(); it != context.rend(); ++it) {
      out += *it;
      out += ": ";
    }
    out += message;
    return out;
  }
};

// Why: std::expected needs C++23; this is the small subset hangscan uses.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(implicit)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(implicit)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error& error() & { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

  template <class U>
  T value_or(U&& fallback) const& {
    return ok() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
// Why: operations that return nothing but can fail.
using Status = Result<Ok>;

inline Error errno_error(Errc code, std::string msg, int err = errno) {
  return Error(code, std::move(msg), err);
}

}  // namespace hangscan
