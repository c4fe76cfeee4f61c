// Constructors of the two unwinder backends, used by make_unwinder().
#pragma once

#include <memory>

#include "hangscan/result.h"
#include "target/target.h"
#include "unwind/unwinder.h"

namespace hangscan {

class DwflSession;

std::unique_ptr<Unwinder> make_libdw_unwinder(DwflSession& session);
Result<std::unique_ptr<Unwinder>> make_libunwind_unwinder(ModuleSource& source);

}  // namespace hangscan
