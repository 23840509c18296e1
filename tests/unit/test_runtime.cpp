#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include "runtime.hpp"

TEST(Runtime, BuildInfoNamesTheLibrariesThisBinaryWasBuiltWith) {
  const auto info = edgeframe::build_info();
  // DESIGN.md §5 pins Kokkos 5.0.2 and torch 2.11.0; a different one means the wrong prefix.
  EXPECT_EQ(info.kokkos_version, "5.0.2");
  EXPECT_EQ(info.torch_version.rfind("2.11.0", 0), 0u) << info.torch_version;
  EXPECT_EQ(info.execution_space, std::string(Kokkos::DefaultExecutionSpace::name()));
  EXPECT_TRUE(info.evaluator_available);
}

TEST(Runtime, EnsureKokkosInitializedLeavesAnInitializedKokkosAlone) {
  ASSERT_TRUE(Kokkos::is_initialized());
  EXPECT_FALSE(edgeframe::ensure_kokkos_initialized());
  EXPECT_TRUE(Kokkos::is_initialized());
}
