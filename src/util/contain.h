// Contains a failure to the one target it happened in.
//
// Why: a capture reads untrusted data (another process's memory, a core, /proc files written
// while the process changes) through libraries that may throw (std::regex, std::vector growth,
// libstdc++ conversions). One odd target must become that target's diagnostic, never end the
// run and lose every other target's report (a single `python3.99999999999` once did).
// Running out of memory is kept apart from a bug: it is the machine's limit, not hangscan's
// fault, and its fix (raise the limit) is the user's.
#pragma once

#include <exception>
#include <new>
#include <optional>
#include <string>
#include <system_error>

#include "hangscan/result.h"
#include "util/hints.h"

namespace hangscan {

// What went wrong inside a contained piece of work.
struct Failure {
  std::string message;  // one line: "out of memory", "internal error: ..."
  bool out_of_memory = false;

  Errc code() const { return out_of_memory ? Errc::out_of_memory : Errc::internal; }
  const char* hint() const {
    return out_of_memory ? hints::out_of_memory() : hints::internal_error();
  }
};

// A thread or a mapping that could not be had (EAGAIN, ENOMEM): a limit, not a bug.
inline bool is_resource_limit(const std::system_error& e) {
  return e.code() == std::errc::resource_unavailable_try_again ||
         e.code() == std::errc::not_enough_memory;
}

// Runs `work`; nullopt when it returned, else what went wrong.
template <class F>
std::optional<Failure> failure_of(F&& work) noexcept {
  try {
    work();
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    return Failure{"out of memory", true};
  } catch (const std::system_error& e) {
    bool limit = is_resource_limit(e);
    return Failure{std::string(limit ? "out of memory: " : "internal error: ") + e.what(), limit};
  } catch (const std::exception& e) {
    return Failure{std::string("internal error: ") + e.what(), false};
  } catch (...) {
    return Failure{"internal error", false};
  }
}

}  // namespace hangscan
