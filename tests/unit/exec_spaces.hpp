// Execution spaces the kernel tests are typed over: every backend this Kokkos has. On a CUDA
// build the kernels run on the GPU against the same plain-loop host references (the
// device-vs-host tests of issue #7).
#pragma once

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

namespace edgeframe::test {

using ExecSpaces = ::testing::Types<
#ifdef KOKKOS_ENABLE_CUDA
    Kokkos::Cuda,
#endif
#ifdef KOKKOS_ENABLE_OPENMP
    Kokkos::OpenMP,
#endif
    Kokkos::Serial>;

// Host mirror of any view, deep-copied (tests only).
template <class V>
auto to_host(const V& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
}

}  // namespace edgeframe::test
