// On/off switches read from the environment. Only the front ends read the HFSTATIC_* variables
// (frontend/runtime_env.cpp, into RuntimeOptions); no library reads the environment.
#pragma once
#include <cstdlib>
#include <string_view>

namespace hfstatic {

// False when the variable `name` is set to "0"; true when it is unset or holds anything else.
inline bool env_switch_on(const char* name) {
  const char* value = std::getenv(name);
  return !(value && std::string_view(value) == "0");
}

}  // namespace hfstatic
