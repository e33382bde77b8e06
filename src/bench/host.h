// What a benchmark line says of the machine it ran on.
#pragma once

#include <string>

namespace ember::bench {

// /proc/cpuinfo's first "model name" ("unknown CPU" where there is none).
std::string cpu_model();

}  // namespace ember::bench
