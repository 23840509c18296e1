// Scratch memory for the per-step Kokkos buffers (edge vectors, band and its derivative, radial
// basis, gradients, forces, virials): one buffer per slot that grows to the largest request
// seen and never shrinks, so a warm step allocates nothing here. With poison on (debug switch,
// or EDGEFRAME_POISON_SCRATCH=1 in the environment) freshly grown memory is filled with NaN, so
// a kernel that reads scratch it did not write shows up as NaN results.
#pragma once

#include <Kokkos_Core.hpp>
#include <array>
#include <cstddef>
#include <limits>

namespace edgeframe {

class Workspace {
 public:
  using Mem = Kokkos::DefaultExecutionSpace::memory_space;
  enum Slot : int {
    kVec,
    kBand,
    kDBand,
    kRbf,
    kDRbf,
    kEnv,
    kDEnv,
    kGradVec,
    kEnergies,
    kForces,
    kVirial,
    kAtomVirial,
    kPartials,
    kSums,
    kNumSlots
  };

  explicit Workspace(bool poison = false) : m_poison(poison) {}

  // Pointer to at least `count` elements of T in slot `slot` (8-byte aligned storage).
  template <class T>
  T* take(Slot slot, std::size_t count) {
    static_assert(alignof(T) <= alignof(double), "workspace storage is double-aligned");
    const std::size_t words = (count * sizeof(T) + sizeof(double) - 1) / sizeof(double);
    auto& buf = m_buffers[slot];
    if (buf.extent(0) < words) {
      // Grow by 1/8 beyond the request so that slowly growing systems do not reallocate often.
      const std::size_t grown = words + words / 8;
      buf = Kokkos::View<double*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "edgeframe::workspace"), grown);
      ++m_allocations;
      if (m_poison) Kokkos::deep_copy(buf, std::numeric_limits<double>::quiet_NaN());
    }
    return reinterpret_cast<T*>(buf.data());
  }

  std::size_t allocations() const { return m_allocations; }
  std::size_t bytes() const {
    std::size_t b = 0;
    for (const auto& v : m_buffers) b += v.extent(0) * sizeof(double);
    return b;
  }
  bool poison() const { return m_poison; }

 private:
  std::array<Kokkos::View<double*, Mem>, kNumSlots> m_buffers;
  std::size_t m_allocations = 0;
  bool m_poison;
};

}  // namespace edgeframe
