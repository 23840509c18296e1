// Host arrays of a test case -> positions and graph in the engine's memory space (tests only).
#pragma once

#include <Kokkos_Core.hpp>
#include <vector>

#include "evaluator.hpp"

namespace edgeframe::test {

struct DeviceGraph {
  kk::Vec3View<double, Exec> x;
  AtomGraph graph;
};

// x [N*3], species [N], directed pairs i <- j with Cartesian shifts [P*3]; edges kept with
// r < cutoff (make_graph).
inline DeviceGraph upload_graph(const std::vector<double>& x, const std::vector<int>& species,
                                const std::vector<int>& pi, const std::vector<int>& pj,
                                const std::vector<double>& shift, int n_local, double cutoff) {
  const int N = int(species.size()), P = int(pi.size());
  DeviceGraph d;
  d.x = kk::Vec3View<double, Exec>("x", N);
  kk::View1<int, Exec> sp("species", N), vi("i", P), vj("j", P);
  kk::Vec3View<double, Exec> sh("shift", P);
  auto hx = Kokkos::create_mirror_view(d.x);
  auto hs = Kokkos::create_mirror_view(sp);
  auto hi = Kokkos::create_mirror_view(vi);
  auto hj = Kokkos::create_mirror_view(vj);
  auto hsh = Kokkos::create_mirror_view(sh);
  for (int a = 0; a < N; ++a) {
    hs(a) = species[a];
    for (int k = 0; k < 3; ++k) hx(a, k) = x[3 * a + k];
  }
  for (int p = 0; p < P; ++p) {
    hi(p) = pi[p];
    hj(p) = pj[p];
    for (int k = 0; k < 3; ++k) hsh(p, k) = shift[3 * p + k];
  }
  Kokkos::deep_copy(d.x, hx);
  Kokkos::deep_copy(sp, hs);
  Kokkos::deep_copy(vi, hi);
  Kokkos::deep_copy(vj, hj);
  Kokkos::deep_copy(sh, hsh);
  d.graph = make_graph(kk::PairList<Exec>{vi, vj, sh, false}, d.x, sp, n_local, cutoff);
  return d;
}

}  // namespace edgeframe::test
