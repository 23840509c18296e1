// Process-level facts about the engine build: versions, Kokkos execution space, whether the
// evaluator is compiled in. Used by the pair styles' log block and by the tests.
#pragma once

#include <string>

namespace edgeframe {

struct BuildInfo {
  std::string edgeframe_version;  // project version from CMake
  std::string kokkos_version;     // e.g. "5.0.2"
  std::string execution_space;    // Kokkos::DefaultExecutionSpace::name()
  std::string torch_version;      // e.g. "2.11.0"
  bool evaluator_available;       // true: Evaluator (evaluator.hpp) is built into the engine
};

BuildInfo build_info();

// Initialises Kokkos if nobody has (the plain pair style in a LAMMPS run without "-k on", the
// tests). Returns true when this call did the initialisation. Never finalises: LAMMPS or the
// test main owns the end of the process.
bool ensure_kokkos_initialized();

// True on CUDA builds: Precision::tf32 (TF32 tensor-core GEMMs) exists only there.
bool tf32_available();

}  // namespace edgeframe
