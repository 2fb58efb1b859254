// Temporary files that must not outlive the process when it is stopped by a signal: a file
// registered here is removed on SIGINT, SIGTERM or SIGHUP (whose default action is to end the
// process), before the signal takes its default course.
#pragma once
#include <string>

namespace hfstatic {

// Returns a handle for unregister_temp_file, or -1 when every slot is taken (the file is then
// only removed by its owner, as before).
int register_temp_file(const std::string& path);
void unregister_temp_file(int handle);

}  // namespace hfstatic
