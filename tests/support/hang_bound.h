// Wall-clock bounds of the hostile-input tests, scaled under the sanitizers.
#pragma once
#include <chrono>

namespace hfstatic::test {

// A wall-clock bound on hostile work (a hang guard, not a speed claim): `seconds` in a plain
// build, ten times that under a sanitizer, which slows the interpreter loops it guards.
inline std::chrono::seconds hang_bound(int seconds) {
#if defined(HFSTATIC_TEST_UNDER_SANITIZER)
  return std::chrono::seconds(seconds * 10);
#endif
  return std::chrono::seconds(seconds);
}

}  // namespace hfstatic::test
