// The HFSTATIC_*=0 switches: only the value "0" turns one off.
#include <gtest/gtest.h>

#include <cstdlib>

#include "util/env.h"

namespace hfstatic {
namespace {

TEST(EnvSwitch, OnlyZeroTurnsItOff) {
  const char* name = "HFSTATIC_TEST_SWITCH";
  ::unsetenv(name);
  EXPECT_TRUE(env_switch_on(name));
  for (const char* on : {"1", "", "00", "off", "0 "}) {
    ::setenv(name, on, 1);
    EXPECT_TRUE(env_switch_on(name)) << '"' << on << '"';
  }
  ::setenv(name, "0", 1);
  EXPECT_FALSE(env_switch_on(name));
  ::unsetenv(name);
}

}  // namespace
}  // namespace hfstatic
