// Host arrays of a test case -> positions, pairs and graph in the engine's memory space (tests only).
#pragma once

#include <Kokkos_Core.hpp>
#include <vector>

#include "evaluator.hpp"

namespace edgeframe::test {

struct DeviceGraph {
  kk::Vec3View<double, Exec> x;
  AtomGraph graph;
};

// Host arrays in the engine's memory space: positions, species and directed pairs i <- j.
struct DevicePairs {
  kk::Vec3View<double, Exec> x;
  kk::View1<int, Exec> species;
  kk::PairList<Exec> pairs;
};

// x [N*3], species [N], directed pairs i <- j with Cartesian shifts [P*3].
inline DevicePairs upload_pairs(const std::vector<double>& x, const std::vector<int>& species,
                                const std::vector<int>& pi, const std::vector<int>& pj,
                                const std::vector<double>& shift) {
  const int N = int(species.size()), P = int(pi.size());
  DevicePairs d;
  d.x = kk::Vec3View<double, Exec>("x", N);
  d.species = kk::View1<int, Exec>("species", N);
  kk::View1<int, Exec> vi("i", P), vj("j", P);
  kk::Vec3View<double, Exec> sh("shift", P);
  auto hx = Kokkos::create_mirror_view(d.x);
  auto hs = Kokkos::create_mirror_view(d.species);
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
  Kokkos::deep_copy(d.species, hs);
  Kokkos::deep_copy(vi, hi);
  Kokkos::deep_copy(vj, hj);
  Kokkos::deep_copy(sh, hsh);
  d.pairs = kk::PairList<Exec>{vi, vj, sh, false};
  return d;
}

// The same with the edges kept with r < cutoff (make_graph).
inline DeviceGraph upload_graph(const std::vector<double>& x, const std::vector<int>& species,
                                const std::vector<int>& pi, const std::vector<int>& pj,
                                const std::vector<double>& shift, int n_local, double cutoff) {
  const DevicePairs p = upload_pairs(x, species, pi, pj, shift);
  return {p.x, make_graph(p.pairs, p.x, p.species, n_local, cutoff)};
}

}  // namespace edgeframe::test
