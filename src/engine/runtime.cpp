#include "runtime.hpp"

#include <Kokkos_Core.hpp>
#include <torch/version.h>

#ifndef EDGEFRAME_VERSION
#error "EDGEFRAME_VERSION must be defined by the build"
#endif

namespace edgeframe {

BuildInfo build_info() {
  BuildInfo info;
  info.edgeframe_version = EDGEFRAME_VERSION;
  info.kokkos_version = std::to_string(KOKKOS_VERSION_MAJOR) + "." + std::to_string(KOKKOS_VERSION_MINOR) + "." +
                        std::to_string(KOKKOS_VERSION_PATCH);
  info.execution_space = Kokkos::DefaultExecutionSpace::name();
  info.torch_version = TORCH_VERSION;
  info.evaluator_available = true;  // evaluator.hpp is part of this library
  return info;
}

bool ensure_kokkos_initialized() {
  if (Kokkos::is_initialized()) return false;
  if (Kokkos::is_finalized())
    throw std::runtime_error("edgeframe: Kokkos was already finalized in this process; cannot run the engine");
  Kokkos::initialize();
  return true;
}

bool tf32_available() {
#ifdef KOKKOS_ENABLE_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace edgeframe
