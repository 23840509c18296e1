// Evaluator (the whole model) against the PyTorch reference goldens, plus invariances, repeat-run
// determinism and the warm-step workspace rule.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdio>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "evaluator.hpp"
#include "potential.hpp"

namespace {

using namespace edgeframe;
using json = nlohmann::json;

// fp64 against the float64 reference: same formulas, different summation orders (GEMMs, CSR
// sums), ~1e-14 relative per op over a few hundred ops. Issue #4 asks for <= 1e-10.
constexpr double kFp64EnergyRelTol = 1e-10;  // relative to |E|
constexpr double kFp64ForceRelTol = 1e-10;   // relative to max |F| (absolute floor: that scale)

struct Golden {
  json j;
  std::vector<double> x;           // [N*3]
  std::vector<int> species, pi, pj;
  std::vector<double> shift;       // [E*3] Cartesian, S @ cell
  double r_cut = 0;
  std::string model_file;
};

Golden load_golden(const std::string& name) {
  std::ifstream in(std::string(EDGEFRAME_GOLDENS_DIR) + "/" + name + ".json");
  if (!in) throw std::runtime_error("missing golden " + name);
  Golden g;
  g.j = json::parse(in);
  const auto& s = g.j["structure"];
  for (const auto& p : s["positions"])
    for (int k = 0; k < 3; ++k) g.x.push_back(p[k].get<double>());
  for (const auto& v : s["species_index"]) g.species.push_back(v.get<int>());
  const auto& cell = s["cell"];
  const auto& e = g.j["edges"];
  for (size_t q = 0; q < e["i"].size(); ++q) {
    g.pi.push_back(e["i"][q].get<int>());
    g.pj.push_back(e["j"][q].get<int>());
    const auto& S = e["shift"][q];
    for (int k = 0; k < 3; ++k) {
      double v = 0.0;  // S @ cell in the reference's order: sum over the three lattice vectors
      for (int a = 0; a < 3; ++a) v += S[a].get<double>() * cell[a][k].get<double>();
      g.shift.push_back(v);
    }
  }
  g.r_cut = g.j["model"]["r_cut"].get<double>();
  g.model_file = std::string(EDGEFRAME_GOLDENS_DIR) + "/" + g.j["model_file"].get<std::string>();
  return g;
}

struct DeviceInput {
  kk::Vec3View<double, Exec> x;
  AtomGraph graph;
};

DeviceInput upload(const Golden& g, const std::vector<double>& x) {
  const int N = int(g.species.size()), P = int(g.pi.size());
  DeviceInput d;
  d.x = kk::Vec3View<double, Exec>("x", N);
  kk::View1<int, Exec> sp("species", N), pi("i", P), pj("j", P);
  kk::Vec3View<double, Exec> sh("shift", P);
  auto hx = Kokkos::create_mirror_view(d.x);
  auto hs = Kokkos::create_mirror_view(sp);
  auto hi = Kokkos::create_mirror_view(pi);
  auto hj = Kokkos::create_mirror_view(pj);
  auto hsh = Kokkos::create_mirror_view(sh);
  for (int a = 0; a < N; ++a) {
    hs(a) = g.species[a];
    for (int k = 0; k < 3; ++k) hx(a, k) = x[3 * a + k];
  }
  for (int p = 0; p < P; ++p) {
    hi(p) = g.pi[p];
    hj(p) = g.pj[p];
    for (int k = 0; k < 3; ++k) hsh(p, k) = g.shift[3 * p + k];
  }
  Kokkos::deep_copy(d.x, hx);
  Kokkos::deep_copy(sp, hs);
  Kokkos::deep_copy(pi, hi);
  Kokkos::deep_copy(pj, hj);
  Kokkos::deep_copy(sh, hsh);
  kk::PairList<Exec> pairs{pi, pj, sh, false};
  // The golden's edges are exactly those with r < r_cut; a slightly larger build cutoff keeps an
  // edge at r_cut - 1 ulp from being lost to rounding (edges past r_cut contribute zero).
  d.graph = make_graph(pairs, d.x, sp, N, g.r_cut * (1 + 1e-12));
  return d;
}

struct HostResult {
  double energy;
  std::array<double, 9> virial;
  std::vector<double> energies, forces, atom_virial;
};

HostResult to_host(const Result& r, int N) {
  HostResult h{r.energy, r.virial, {}, {}, {}};
  auto e = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.energies);
  auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.forces);
  auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.atom_virial);
  h.energies.assign(e.data(), e.data() + N);
  h.forces.assign(f.data(), f.data() + 3 * N);
  h.atom_virial.assign(w.data(), w.data() + 9 * N);
  return h;
}

HostResult run(Evaluator& ev, const DeviceInput& d, What what = {}) {
  what.forces = what.energies = what.virial = what.atom_virial = true;
  return to_host(ev.compute(d.graph, d.x, what), int(d.x.extent(0)));
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// max_i |a_i - b_i| / max_i |b_i|
double rel_err(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m / std::max(max_abs(b), 1e-300);
}

std::vector<double> flat(const json& j) {
  std::vector<double> out;
  if (j.is_array()) {
    for (const auto& v : j) {
      const auto part = flat(v);
      out.insert(out.end(), part.begin(), part.end());
    }
  } else {
    out.push_back(j.get<double>());
  }
  return out;
}

const std::vector<std::string> kGoldens = {
    "cluster_axes11_L2m1",  "cluster_axes11_L2m2",  "cluster_axes11_L3m1",  "cluster_axes11_L3m2",
    "triclinic_ccu16_L2m1", "triclinic_ccu16_L2m2", "triclinic_ccu16_L3m1", "triclinic_ccu16_L3m2",
    "bcc_cu54_L2m1",        "bcc_cu54_L2m2",        "bcc_cu54_L3m1",        "bcc_cu54_L3m2",
    "diamond64_L2m1",       "diamond64_L2m2",       "diamond64_L3m1",       "diamond64_L3m2"};

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, Fp64MatchesTheReference) {
  const Golden g = load_golden(GetParam());
  const auto pot = read_potential(g.model_file);
  Evaluator ev(pot, {Precision::fp64});
  const auto d = upload(g, g.x);
  ASSERT_EQ(d.graph.edges.n_edges, g.j["edges"]["count"].get<int>());
  const auto r = run(ev, d);
  const auto& ref = g.j["results"];
  const double e_ref = ref["energy"].get<double>();
  std::printf("[ measured ] %s fp64: energy %.2e forces %.2e virial %.2e atom_virial %.2e (relative)\n", GetParam().c_str(),
              std::fabs(r.energy - e_ref) / std::fabs(e_ref), rel_err(r.forces, flat(ref["forces"])),
              rel_err(std::vector<double>(r.virial.begin(), r.virial.end()), flat(ref["virial"])),
              rel_err(r.atom_virial, flat(ref["atom_virial"])));
  EXPECT_LE(std::fabs(r.energy - e_ref) / std::fabs(e_ref), kFp64EnergyRelTol) << r.energy << " vs " << e_ref;
  EXPECT_LE(rel_err(r.energies, flat(ref["energies"])), kFp64EnergyRelTol);
  EXPECT_LE(rel_err(r.forces, flat(ref["forces"])), kFp64ForceRelTol);
  EXPECT_LE(rel_err(std::vector<double>(r.virial.begin(), r.virial.end()), flat(ref["virial"])), kFp64ForceRelTol);
  EXPECT_LE(rel_err(r.atom_virial, flat(ref["atom_virial"])), kFp64ForceRelTol);
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenTest, ::testing::ValuesIn(kGoldens),
                         [](const auto& info) { return info.param; });

}  // namespace
