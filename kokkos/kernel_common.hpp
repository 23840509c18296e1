// Shared pieces of the kernel headers: pass tags, view aliases, launch helpers.
#pragma once

#include <Kokkos_Core.hpp>

namespace edgeframe::kk {

// One tag per pass over the same data (STYLE.md §3).
struct TagForward {};
struct TagBackward {};
struct TagValue {};
struct TagValueAndGrad {};

// Range policy on an execution-space instance, with a pass tag.
template <class Exec, class Tag = void>
using Range = std::conditional_t<std::is_void_v<Tag>, Kokkos::RangePolicy<Exec, Kokkos::IndexType<int>>,
                                 Kokkos::RangePolicy<Exec, Tag, Kokkos::IndexType<int>>>;

template <class T, class Exec>
using View1 = Kokkos::View<T*, Kokkos::LayoutRight, typename Exec::memory_space>;
template <class T, class Exec>
using View2 = Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space>;
template <class T, class Exec>
using View3 = Kokkos::View<T***, Kokkos::LayoutRight, typename Exec::memory_space>;
// [n, 3] Cartesian vectors.
template <class T, class Exec>
using Vec3View = Kokkos::View<T* [3], Kokkos::LayoutRight, typename Exec::memory_space>;

}  // namespace edgeframe::kk
