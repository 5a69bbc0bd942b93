#include "core_state.h"

// GCC 12 reports a false -Wmaybe-uninitialized when a std::vector of
// std::variant reallocates (GCC bug 105593 family); the values are set.
// Every command goes through Emit, out of line, so the vector grows only
// here: with push_back inlined at each call site, the warning showed up in
// the files that emit commands (lifecycle.cpp at -O2). Kept here in case
// another GCC version reports it for this instantiation too.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace tailcut::core {

void CoreState::Emit(Command c) { commands.push_back(std::move(c)); }

}  // namespace tailcut::core
