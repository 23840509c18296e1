// Execution spaces the kernel tests are typed over: every host backend this Kokkos has.
#pragma once

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

namespace edgeframe::test {

using ExecSpaces = ::testing::Types<
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
