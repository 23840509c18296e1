#include "debug_switches.hpp"

#include <cstdlib>
#include <cstring>

namespace edgeframe {
namespace {
bool switch_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "1") == 0;
}
}  // namespace

bool debug_poison_scratch() { return switch_on("EDGEFRAME_POISON_SCRATCH"); }

}  // namespace edgeframe
