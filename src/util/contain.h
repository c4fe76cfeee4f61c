// Contains a failure to the one target it happened in.
//
// Why: a capture reads untrusted data (another process's memory, a core, /proc files written
// while the process changes) through libraries that may throw (std::regex, std::vector growth,
// libstdc++ conversions). One odd target must become that target's diagnostic, never end the
// run and lose every other target's report (a single `python3.99999999999` once did).
#pragma once

#include <exception>
#include <new>
#include <optional>
#include <string>
#include "util/hints.h"

namespace hangscan {

// Runs `work`; nullopt when it returned, else what went wrong, in one line.
template <class F>
std::optional<std::string> failure_of(F&& work) noexcept {
  try {
    work();
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    return std::string("out of memory");
  } catch (const std::exception& e) {
    return std::string("internal error: ") + e.what();
  } catch (...) {
    return std::string("internal error");
  }
}

// The hint that goes with an internal error: it is hangscan's bug, not the user's
// (hints::internal_error(); this name stays for its callers).
inline const char* internal_error_hint() { return hints::internal_error(); }

}  // namespace hangscan
