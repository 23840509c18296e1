/* -*- c++ -*- ----------------------------------------------------------
   The closest candidate pair of a step (pair_style edgeframe's
   min_distance check), as a min-loc reduction where the pairs and
   positions live (the GPU in CUDA builds). Both styles use it:
   edgeframe/kk's device path on LAMMPS' device positions, the host-data
   path on the engine's node positions. Only a violation goes to the host.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_MIN_DISTANCE_H
#define LMP_EDGEFRAME_MIN_DISTANCE_H

#include <Kokkos_Core.hpp>

namespace LAMMPS_NS {
namespace edgeframe_glue {

  using ClosestPair = Kokkos::MinLoc<double, int>::value_type;    // .val: r^2, .loc: pair index

  // r2(p): the squared distance of pair p, or a value >= the threshold for pairs not checked.
  // result: a ClosestPair on the host (the call then waits for it) or a rank-0 view of one that
  // the device can write (host-pinned memory: the call returns at once and the host reads it
  // after a later fence). A free function: CUDA lambdas may not sit in private or protected
  // member functions.
  template <class Exec, class PairR2, class Result>
  void closest_pair_into(const char *label, int n_pairs, const PairR2 &r2, Result &result)
  {
    using MinLoc = Kokkos::MinLoc<double, int>;
    Kokkos::parallel_reduce(
        label, Kokkos::RangePolicy<Exec>(0, n_pairs),
        KOKKOS_LAMBDA(int p, ClosestPair &best) {
          const double d = r2(p);
          if (d < best.val) {
            best.val = d;
            best.loc = p;
          }
        },
        MinLoc(result));
  }

  template <class Exec, class PairR2>
  ClosestPair closest_pair(const char *label, int n_pairs, const PairR2 &r2)
  {
    ClosestPair closest;
    closest_pair_into<Exec>(label, n_pairs, r2, closest);
    return closest;
  }

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
