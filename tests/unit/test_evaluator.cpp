// Evaluator (the whole model) against the PyTorch reference goldens, plus invariances, repeat-run
// determinism and the warm-step workspace rule.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <type_traits>
#include <type_traits>
#include <vector>

#include "band_layout.hpp"
#include "errors.hpp"
#include "evaluator.hpp"
#include "graph_chunk.hpp"
#include "kept_graph.hpp"
#include "potential.hpp"
#include "runtime.hpp"
#include "torch_memory.hpp"
#include "upload_graph.hpp"

namespace {

using namespace edgeframe;
using json = nlohmann::json;

// fp64 against the float64 reference: same formulas, different summation orders (GEMMs, CSR
// sums), ~1e-14 relative per op over a few hundred ops. Issue #4 asks for <= 1e-10.
constexpr double kFp64EnergyRelTol = 1e-10;  // relative to |E|
constexpr double kFp64ForceRelTol = 1e-10;   // relative to max |F| (absolute floor: that scale)

struct Golden {
  json j;
  std::vector<double> x;  // [N*3]
  std::vector<int> species, pi, pj;
  std::vector<double> shift;  // [E*3] Cartesian, S @ cell
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

using DeviceInput = test::DeviceGraph;

DeviceInput upload(const Golden& g, const std::vector<double>& x) {
  // The golden's edges are exactly those with r < r_cut; a slightly larger build cutoff keeps an
  // edge at r_cut - 1 ulp from being lost to rounding (edges past r_cut contribute zero).
  return test::upload_graph(x, g.species, g.pi, g.pj, g.shift, int(g.species.size()), g.r_cut * (1 + 1e-12));
}

struct HostResult {
  double energy;
  std::array<double, 9> virial;
  std::vector<double> energies, forces, atom_virial, edge_grad;
};

HostResult to_host(const Result& r, int N) {
  HostResult h{r.energy, r.virial, {}, {}, {}, {}};
  auto gr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.edge_grad);
  h.edge_grad.assign(gr.data(), gr.data() + gr.size());
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
  std::printf("[ measured ] %s fp64: energy %.2e forces %.2e virial %.2e atom_virial %.2e (relative)\n",
              GetParam().c_str(), std::fabs(r.energy - e_ref) / std::fabs(e_ref),
              rel_err(r.forces, flat(ref["forces"])),
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

namespace {

// fp32 features/weights/band with geometry and sums in double, against the float64 reference.
// Measured on the 16 goldens (CPU, torch 2.11, 2 threads; the [ measured ] lines): energy
// <= 6e-8 relative; forces <= 7e-6 relative to max |F| on 14 goldens, 1.3e-5 on bcc_cu54_L2m2
// and 2.9e-5 on bcc_cu54_L2m1. The rattled bcc lattice is ill-conditioned for forces: each
// F_a is a sum of dE/dr_e about 10x larger than F_a that nearly cancel, and fp32 GEMMs carry
// ~1e-7 relative per output through T = 3 layers. The all-float32 PyTorch reference
// (edgeframe_ref.load_model(dtype=float32)) is itself off by 1.4e-4 and 2.1e-4 on those two,
// 4.4e-5 on diamond64: the engine, with its band and sums in double, is 2-16x closer.
// Bound: twice the worst measured value.
constexpr double kFp32EnergyRelTol = 2e-7;  // relative to |E|
constexpr double kFp32ForceRelTol = 6e-5;   // relative to max |F| (also used for the virial)

TEST_P(GoldenTest, Fp32MatchesTheReferenceWithinTheMeasuredBound) {
  const Golden g = load_golden(GetParam());
  const auto pot = read_potential(g.model_file);
  Evaluator ev(pot, {Precision::fp32});
  const auto d = upload(g, g.x);
  const auto r = run(ev, d);
  const auto& ref = g.j["results"];
  const double e_ref = ref["energy"].get<double>();
  const double ee = std::fabs(r.energy - e_ref) / std::fabs(e_ref), fe = rel_err(r.forces, flat(ref["forces"]));
  const double ve = rel_err(std::vector<double>(r.virial.begin(), r.virial.end()), flat(ref["virial"]));
  EXPECT_LE(ee, kFp32EnergyRelTol);
  EXPECT_LE(fe, kFp32ForceRelTol);
  EXPECT_LE(ve, kFp32ForceRelTol);
}

// ---- invariances and determinism (fp64) ------------------------------------------------------

// The same structure in another frame, order or edge roll: only summation order and the
// rounding of the transformed inputs differ.
constexpr double kInvarianceRelTol = 1e-12;  // relative to |E| and to max |F|

std::array<double, 9> random_rotation(unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n;
  double q[4] = {n(rng), n(rng), n(rng), n(rng)};
  const double s = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  for (double& v : q) v /= s;
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  return {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
          2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
          2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
}

std::vector<double> rotate(const std::array<double, 9>& R, const std::vector<double>& v) {
  std::vector<double> out(v.size());
  for (size_t a = 0; a < v.size() / 3; ++a)
    for (int i = 0; i < 3; ++i)
      out[3 * a + i] = R[3 * i] * v[3 * a] + R[3 * i + 1] * v[3 * a + 1] + R[3 * i + 2] * v[3 * a + 2];
  return out;
}

class InvarianceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(InvarianceTest, RotationTranslationPermutationAndRoll) {
  const Golden g = load_golden(GetParam());
  const auto pot = read_potential(g.model_file);
  Evaluator ev(pot, {Precision::fp64});
  const auto base = run(ev, upload(g, g.x));
  const double fscale = max_abs(base.forces);
  auto same = [&](const HostResult& r, const std::vector<double>& forces, const char* what) {
    EXPECT_LE(std::fabs(r.energy - base.energy), kInvarianceRelTol * std::fabs(base.energy)) << what;
    double m = 0;
    for (size_t i = 0; i < forces.size(); ++i) m = std::max(m, std::fabs(r.forces[i] - forces[i]));
    EXPECT_LE(m, kInvarianceRelTol * fscale) << what;
  };
  {  // rotation: positions and image shifts rotate, forces rotate with them
    const auto R = random_rotation(4);
    Golden rg = g;
    rg.shift = rotate(R, g.shift);
    const auto r = run(ev, upload(rg, rotate(R, g.x)));
    same(r, rotate(R, base.forces), "rotation");
  }
  {  // translation
    std::vector<double> x = g.x;
    for (size_t a = 0; a < x.size() / 3; ++a) {
      x[3 * a] += 3.7;
      x[3 * a + 1] -= 1.25;
      x[3 * a + 2] += 0.5;
    }
    same(run(ev, upload(g, x)), base.forces, "translation");
  }
  {  // permutation of the atoms (and with it of the edge order)
    const int N = int(g.species.size());
    std::vector<int> perm(N);
    for (int a = 0; a < N; ++a) perm[a] = (a * 7 + 3) % N;  // N is coprime to 7 in these goldens
    Golden pg = g;
    std::vector<double> x(3 * N), forces(3 * N);
    for (int a = 0; a < N; ++a) {
      pg.species[perm[a]] = g.species[a];
      for (int k = 0; k < 3; ++k) {
        x[3 * perm[a] + k] = g.x[3 * a + k];
        forces[3 * perm[a] + k] = base.forces[3 * a + k];
      }
    }
    for (size_t p = 0; p < g.pi.size(); ++p) {
      pg.pi[p] = perm[g.pi[p]];
      pg.pj[p] = perm[g.pj[p]];
    }
    same(run(ev, upload(pg, x)), forces, "permutation");
  }
  {  // random roll of every edge frame about its axis
    const auto d = upload(g, g.x);
    const int E = d.graph.edges.n_edges;
    kk::View1<double, Exec> roll("roll", E);
    auto h = Kokkos::create_mirror_view(roll);
    std::mt19937_64 rng(8);
    std::uniform_real_distribution<double> u(-M_PI, M_PI);
    for (int e = 0; e < E; ++e) h(e) = u(rng);
    Kokkos::deep_copy(roll, h);
    What w;
    w.roll = roll;
    same(run(ev, d, w), base.forces, "roll");
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, InvarianceTest,
                         ::testing::Values("cluster_axes11_L3m2", "triclinic_ccu16_L2m2", "bcc_cu54_L2m1"),
                         [](const auto& info) { return info.param; });

TEST(Evaluator, RepeatRunsAreBitIdenticalAndAWarmStepGrowsNoScratch) {
  const Golden g = load_golden("triclinic_ccu16_L3m2");
  const auto pot = read_potential(g.model_file);
  for (Precision p : {Precision::fp64, Precision::fp32}) {
    Evaluator ev(pot, {p});
    const auto d = upload(g, g.x);
    const auto first = run(ev, d);
    const std::size_t allocations = ev.workspace_allocations();
    for (int rep = 0; rep < 3; ++rep) {
      const auto again = run(ev, d);
      EXPECT_EQ(again.energy, first.energy);
      EXPECT_EQ(again.forces, first.forces);
      EXPECT_EQ(again.virial, first.virial);
      EXPECT_EQ(again.atom_virial, first.atom_virial);
      EXPECT_EQ(again.energies, first.energies);
    }
    EXPECT_EQ(ev.workspace_allocations(), allocations) << "a warm step grew the workspace";
  }
}

// What the forward keeps for the backward pass (doc/engine.md "What a layer keeps for the
// backward pass"), from the profiler's memory events: the bytes torch holds when the backward pass
// starts. Per edge and layer the model needs the radial MLP's two pre-activations and last hidden
// layer (3 H_r), the gate's input z ((K + L) H) and the messages (K C); the step also holds four
// int64 index columns per edge (receivers, senders and their species). Keeping the radial
// multipliers g again (gate_rows 2C per edge and layer: +49 % here), or any other per-edge tensor
// of a layer, fails the upper bound; node-sized tensors get an allowance of 40 [D, C] rows per
// node and layer (measured: 1.8 of the 15 MiB). A profiler that saw no allocations, or a model
// that misses a kept tensor, fails the lower bound. (Transients such as u and x, which live only
// inside a layer's forward, are not seen here: they are gone when the backward pass starts.)
TEST(Evaluator, TheForwardKeepsOnlyWhatTheBackwardNeeds) {
  const Golden g = load_golden("diamond64_L3m2");
  const auto pot = read_potential(g.model_file);
  const ModelConfig& c = pot.config;
  Evaluator ev(pot, {Precision::fp64});
  const auto d = upload(g, g.x);
  run(ev, d);  // warm: the workspace and torch's allocator settle
  const profiling::MemoryTimeline t = profiling::memory_timeline_of([&] { run(ev, d); });
  const int E = d.graph.edges.n_edges, N = int(g.species.size());
  const int K = kk::band_rows(c.lmax, c.mmax), D = c.num_coeffs();
  // Per layer and edge the backward reads the radial activations, the gate's input z and the
  // unrotate's messages. The first and last layers make the m = 0 rows only (evaluator.cpp,
  // make_so2_plans): their z has L + 1 gated rows, their messages L + 1 rows (first) or 1 (last).
  double per_edge = 0.0;
  for (int t = 0; t < c.layers; ++t) {
    const bool first = t == 0, last = t == c.layers - 1;
    const int gated = first || last ? c.lmax + 1 : K, messages = last ? 1 : first ? c.lmax + 1 : K;
    per_edge += 3.0 * c.radial_hidden + double(gated + c.lmax) * c.hidden_channels + double(messages) * c.channels;
  }
  const double edge_bytes = double(E) * (per_edge * sizeof(double) + 4 * sizeof(std::int64_t));
  const double node_allowance = double(N) * c.layers * 40.0 * D * c.channels * sizeof(double);
  const double g_bytes = double(E) * c.layers * kk::gate_rows(c.lmax, c.mmax) * 2.0 * c.channels * sizeof(double);
  std::printf(
      "[ measured ] held at the backward pass: %.3f MiB; edge model %.3f MiB + node allowance %.3f MiB "
      "(keeping g would add %.3f MiB); peak %.3f MiB in %s\n",
      t.at_backward / 1048576.0, edge_bytes / 1048576.0, node_allowance / 1048576.0, g_bytes / 1048576.0,
      t.peak / 1048576.0, t.at_peak.empty() ? "?" : t.at_peak.back().c_str());
  ASSERT_GE(t.at_backward, 0) << "the profiler saw no backward pass";
  EXPECT_GE(double(t.at_backward), edge_bytes) << "fewer bytes held than the tensors the backward reads";
  EXPECT_LE(double(t.at_backward), edge_bytes + node_allowance) << "the forward keeps more than the backward needs";
  EXPECT_LT(node_allowance, 0.5 * g_bytes) << "the allowance would hide a kept g: the test case is too small";
}

// Model v2 cases: the shipped carbon v2 potential on a golden's diamond structure (its pairs
// within the potential's r_cut), with the system inputs of that composition.
struct V2Case {
  Potential pot;
  Golden g;
  std::vector<int> carbon;  // v2 species index = Z - 1
  DeviceInput upload_at(const std::vector<double>& x) const {
    return test::upload_graph(x, carbon, g.pi, g.pj, g.shift, int(carbon.size()), pot.v2.r_cut);
  }
  SystemInputs system(int charge = 0) const {
    SystemInputs in;
    in.atoms_per_z.assign(pot.v2.max_num_elements, 0.0);
    in.atoms_per_z[6] = double(carbon.size());
    in.charge_set = true;
    in.charge = charge;
    return in;
  }
};
V2Case carbon_v2_case(const char* golden) {
  V2Case c{
      read_potential(std::string(EDGEFRAME_POTENTIALS_DIR) + "/C-diamond-v2.safetensors"), load_golden(golden), {}};
  if (c.pot.format_version != kFormatVersionV2) throw std::runtime_error("C-diamond-v2 is not a v2 file");
  c.carbon.assign(c.g.species.size(), 5);
  return c;
}

// The memory model behind Activations::automatic (memory_plan.hpp, Evaluator::Impl::memory_model)
// against the step it models: torch's peak above the step's start (the profiler's memory events)
// plus the Kokkos workspace must not exceed the model's peak, for the plans keep and recompute
// (all layers, then in chunks). The model may be generous (its 1.1 margin) but not wildly: on
// this model (C = H = 16) it counts 1.10-1.31x of the measured peak on the host. Before the
// host's non-in-place pack gradients and the workspace's exact slots were counted it gave
// 0.57-0.83x here, and before the band gradient's accumulation 0.98x on the H200 (recompute,
// one chunk): both fail this test. The H200 gate compares the two for the full-size models (the
// bench's JSON: predicted_peak_bytes against peak_bytes).
// prepare(ev): the system inputs of a v2 model (nothing for v1); chunk: the chunked plan's size.
// stream: the stream plans too (model v2).
template <class Prepare>
void check_memory_model_bounds(const Potential& pot, const DeviceInput& d, int chunk, Prepare&& prepare,
                               const char* label, bool stream = false) {
  using A = EvaluatorOptions::Activations;
  for (const Precision p : {Precision::fp64, Precision::fp32}) {
    std::vector<std::pair<A, int>> plans = {{A::keep, 0}, {A::recompute, 0}, {A::recompute, chunk}};
    if (stream) plans.insert(plans.end(), {{A::stream, 0}, {A::stream, chunk}});
    for (const auto& [activations, edge_chunk] : plans) {
      EvaluatorOptions opt;
      opt.precision = p;
      opt.activations = activations;
      opt.edge_chunk = edge_chunk;
      Evaluator ev(pot, opt);
      prepare(ev);
      run(ev, d);  // warm: the workspace and torch's allocator settle
      const profiling::MemoryTimeline t = profiling::memory_timeline_of([&] { run(ev, d); });
      const double measured = double(t.peak) + double(ev.workspace_bytes());
      const double model = ev.activation_plan().predicted_bytes;
      std::printf(
          "[ measured ] %s %s %s: torch peak %.3f MiB + workspace %.3f MiB = %.3f MiB; model %.3f MiB (%.2fx)\n", label,
          to_string(p).c_str(), ev.activation_plan().describe().c_str(), t.peak / 1048576.0,
          ev.workspace_bytes() / 1048576.0, measured / 1048576.0, model / 1048576.0, model / measured);
      EXPECT_GE(model, measured) << label << " " << ev.activation_plan().describe();
      EXPECT_LE(model, 1.5 * measured) << label << " " << ev.activation_plan().describe();
    }
  }
}

TEST(Evaluator, TheMemoryModelBoundsTheMeasuredPeak) {
  const Golden g = load_golden("diamond64_L3m2");
  check_memory_model_bounds(
      read_potential(g.model_file), upload(g, g.x), 2000, [](Evaluator&) {}, "v1");
}

// Recompute vs keep in fp32: on the CPU measured up to 5e-7 (bound 3e-6); on the H200 cuBLAS
// picks other GEMM kernels for the chunks' shapes, measured up to 4.7e-6: there the bound is
// fp32 mode's accuracy contract, forces within 1e-5 (relative to max |F|) of fp64.
constexpr double kFp32Contract =
    std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace> ? 3e-6 : 1e-5;

// Activations::recompute runs every layer's edge part twice (without autograd, then again in the
// backward pass), in edge chunks (graph_chunk.hpp) when edge_chunk > 0: 0 = one chunk, 250 =
// chunks of a few whole receivers, 1 = one receiver per chunk. The results may differ only
// where gradients from different layers or chunks are summed in another order, i.e. by
// rounding. Also with ghost rows (n_local < N), and in fp32 against fp32. prepare(ev): the
// system inputs of a v2 model; upload_at(x): positions x and a new graph of them. mode: recompute,
// or stream (model v2: the geometry and the edge-degree embedding per chunk too, node parts
// recomputed; counted as recompute's, per layer and chunk).
template <class Prepare, class Upload>
void check_recompute_matches_keep(const Potential& pot, int layers, const std::vector<double>& x, Prepare&& prepare,
                                  Upload&& upload_at, const std::string& name,
                                  EvaluatorOptions::Activations mode = EvaluatorOptions::Activations::recompute) {
  for (Precision p : {Precision::fp64, Precision::fp32}) {
    for (int chunk : {0, 250, 1}) {
      EvaluatorOptions keep_opt, recompute_opt;
      keep_opt.precision = recompute_opt.precision = p;
      keep_opt.activations = EvaluatorOptions::Activations::keep;
      recompute_opt.activations = mode;
      recompute_opt.edge_chunk = chunk;
      Evaluator keep(pot, keep_opt), recompute(pot, recompute_opt);
      prepare(keep);
      prepare(recompute);
      auto d = upload_at(x);
      const bool stream = mode == EvaluatorOptions::Activations::stream;
      const auto ro = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.graph.edges.recv_offsets);
      const std::vector<int> offsets(ro.data(), ro.data() + ro.extent(0));
      const long chunks = chunk == 0 ? 1 : static_cast<long>(edgeframe::kk::chunk_receivers(offsets, chunk).size()) - 1;
      const int n_locals[] = {d.graph.n_local, d.graph.n_local / 2};  // an array: nvcc's front end
      for (int n_local : n_locals) {                                  // rejects a braced list here
        d.graph.n_local = n_local;
        const long before = recompute.layers_recomputed();
        const auto a = run(keep, d), b = run(recompute, d);
        // The recomputation did happen (identical results alone would not show it): once per
        // layer and chunk.
        EXPECT_EQ(recompute.layers_recomputed() - before, layers * chunks) << name << " chunk " << chunk;
        EXPECT_EQ(keep.layers_recomputed(), 0) << name;
        EXPECT_EQ(recompute.activation_plan().stream, stream) << recompute.activation_plan().describe();
        // fp32: chunks add their float aggregates in another order, and on a GPU cuBLAS picks
        // other GEMM kernels (other reduction orders) for the chunks' shapes (kFp32Contract);
        // a chunk lost or counted twice moves results by O(1).
        const double tol = p == Precision::fp64 ? 1e-13 : kFp32Contract;
        EXPECT_NEAR(b.energy, a.energy, tol * std::fabs(a.energy)) << name;
        EXPECT_LT(rel_err(b.forces, a.forces), tol) << name << " chunk " << chunk << " n_local " << n_local;
        EXPECT_LT(rel_err(std::vector<double>(b.virial.begin(), b.virial.end()),
                          std::vector<double>(a.virial.begin(), a.virial.end())),
                  tol)
            << name;
        EXPECT_LT(rel_err(b.atom_virial, a.atom_virial), tol) << name;
        EXPECT_LT(rel_err(b.energies, a.energies), tol) << name;
        std::printf(
            "[ measured ] %s %s %s edge_chunk %d (%ld chunks) n_local %d: against keep max |dF| / max |F| = %.1e\n",
            name.c_str(), to_string(p).c_str(), stream ? "stream" : "recompute", chunk, chunks, n_local,
            rel_err(b.forces, a.forces));
      }
      // The chunks were built once for this graph (two calls above), and again for a new one.
      EXPECT_EQ(recompute.edge_chunk_builds(), chunk > 0 ? 1 : 0) << name;
      const auto again = upload_at(x);
      const auto c = run(recompute, again), k = run(keep, again);
      EXPECT_EQ(recompute.edge_chunk_builds(), chunk > 0 ? 2 : 0) << name;
      EXPECT_LT(rel_err(c.forces, k.forces), p == Precision::fp64 ? 1e-13 : kFp32Contract) << name << " new graph";
    }
  }
}

TEST(Evaluator, RecomputedEdgePartsGiveTheSameResults) {
  for (const char* name : {"triclinic_ccu16_L3m2", "diamond64_L2m1"}) {
    const Golden g = load_golden(name);
    const auto pot = read_potential(g.model_file);
    check_recompute_matches_keep(
        pot, pot.config.layers, g.x, [](Evaluator&) {}, [&](const std::vector<double>& x) { return upload(g, x); },
        name);
  }
}

// Activations::automatic (the default) against a memory budget (memory_plan.hpp): without one
// (host backends) every layer keeps its activations; just under the keep plan's predicted peak
// the planner recomputes some layers and fits; under one byte it recomputes every layer and says
// the plan does not fit. Results equal the kept run's to fp64 rounding, and the recomputation
// did happen (counted per layer and chunk).
TEST(Evaluator, AutomaticActivationsRecomputeWhatTheBudgetNeeds) {
  const Golden g = load_golden("diamond64_L3m2");
  const auto pot = read_potential(g.model_file);
  const int layers = pot.config.layers;
  const auto d = upload(g, g.x);
  EvaluatorOptions keep_opt;
  keep_opt.precision = Precision::fp64;
  keep_opt.activations = EvaluatorOptions::Activations::keep;
  Evaluator keep(pot, keep_opt);
  const auto ref = run(keep, d);
  const double keep_peak = keep.activation_plan().predicted_bytes;
  ASSERT_FALSE(keep.activation_plan().any_recomputed());
  ASSERT_GT(keep_peak, 0.0);
  const auto ro = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.graph.edges.recv_offsets);
  const std::vector<int> offsets(ro.data(), ro.data() + ro.extent(0));
  for (const double budget : {0.0, 0.95 * keep_peak, 1.0}) {
    EvaluatorOptions opt;
    opt.precision = Precision::fp64;
    opt.memory_budget = budget;
    ASSERT_EQ(opt.activations, EvaluatorOptions::Activations::automatic) << "automatic is the default";
    Evaluator ev(pot, opt);
    const auto r = run(ev, d);
    const ActivationPlan& plan = ev.activation_plan();
    const long recomputed = std::count(plan.recompute.begin(), plan.recompute.end(), char(1));
    std::printf("[ measured ] budget %.4g MB (keep's model peak %.4g MB): %s, model peak %.4g MB\n", budget * 1e-6,
                keep_peak * 1e-6, plan.describe().c_str(), plan.predicted_bytes * 1e-6);
    if (budget == 0.0) {
      EXPECT_EQ(recomputed, 0);
      EXPECT_EQ(plan.describe(), "keep");
    } else if (budget < 10.0) {
      EXPECT_EQ(recomputed, layers);
      EXPECT_FALSE(plan.fits);
    } else {
      EXPECT_GT(recomputed, 0);
      EXPECT_LT(recomputed, layers) << "one layer fewer should do for 5 % less";
      EXPECT_TRUE(plan.fits);
      EXPECT_LE(plan.predicted_bytes, budget);
    }
    const long chunks = plan.edge_chunk == 0 ? 1 : long(kk::chunk_receivers(offsets, plan.edge_chunk).size()) - 1;
    EXPECT_EQ(ev.layers_recomputed(), recomputed * chunks);
    EXPECT_NEAR(r.energy, ref.energy, 1e-13 * std::fabs(ref.energy));
    EXPECT_LT(rel_err(r.forces, ref.forces), 1e-13);
    EXPECT_LT(rel_err(std::vector<double>(r.virial.begin(), r.virial.end()),
                      std::vector<double>(ref.virial.begin(), ref.virial.end())),
              1e-13);
  }
}

TEST(Evaluator, TrimmedFirstAndLastLayersGiveTheFullLayersResults) {
  // The first and last layers make only the rows whose values reach the energy (evaluator.cpp
  // make_so2_plans: degree 0 alone, the m = 0 rows alone); EvaluatorOptions::
  // trim_first_and_last_layers = false makes every row. The model is the same: results equal to rounding, with ghost rows too (n_local < N), in
  // fp64 and fp32. Both against the goldens: GoldenTest (trimmed, the default).
  for (const char* name : {"triclinic_ccu16_L3m2", "diamond64_L2m1"}) {
    const Golden g = load_golden(name);
    const auto pot = read_potential(g.model_file);
    for (Precision p : {Precision::fp64, Precision::fp32}) {
      Evaluator trimmed(pot, {p});
      EvaluatorOptions whole;
      whole.precision = p;
      whole.trim_first_and_last_layers = false;
      Evaluator full(pot, whole);
      ASSERT_TRUE(trimmed.trims_first_and_last_layers());
      ASSERT_FALSE(full.trims_first_and_last_layers());
      auto d = upload(g, g.x);
      for (int n_local : {d.graph.n_local, d.graph.n_local / 2}) {
        d.graph.n_local = n_local;
        const auto a = run(trimmed, d), b = run(full, d);
        const double tol = p == Precision::fp64 ? 1e-13 : kFp32Contract;
        EXPECT_NEAR(a.energy, b.energy, tol * std::fabs(b.energy)) << name;
        EXPECT_LT(rel_err(a.forces, b.forces), tol) << name << " n_local " << n_local;
        EXPECT_LT(rel_err(a.atom_virial, b.atom_virial), tol) << name << " n_local " << n_local;
      }
    }
  }
}

// Every directed pair i <- j (with its image shift) of a periodic golden closer than cutoff,
// from the images -2..2 of its cell: the candidate pairs of a neighbour list with a skin.
struct HostPairList {
  std::vector<int> i, j;
  std::vector<double> shift;
};
HostPairList pairs_within(const Golden& g, double cutoff) {
  const auto& cell = g.j["structure"]["cell"];
  const int N = int(g.species.size());
  HostPairList out;
  for (int a = 0; a < N; ++a)
    for (int b = 0; b < N; ++b)
      for (int s0 = -2; s0 <= 2; ++s0)
        for (int s1 = -2; s1 <= 2; ++s1)
          for (int s2 = -2; s2 <= 2; ++s2) {
            double sh[3], r2 = 0.0;
            for (int k = 0; k < 3; ++k) {
              sh[k] = s0 * cell[0][k].get<double>() + s1 * cell[1][k].get<double>() + s2 * cell[2][k].get<double>();
              const double d = g.x[3 * b + k] - g.x[3 * a + k] + sh[k];
              r2 += d * d;
            }
            if (r2 == 0.0 || r2 >= cutoff * cutoff) continue;
            out.i.push_back(a);
            out.j.push_back(b);
            out.shift.insert(out.shift.end(), sh, sh + 3);
          }
  return out;
}

// A graph built once per neighbour-list rebuild keeps the pairs within r_cut + skin
// (make_graph's cutoff; the pair styles' graph per_rebuild): the edges beyond r_cut must add
// exactly nothing, through the envelope, which is zero with all its derivatives there. The same
// pairs built at r_cut and at r_cut + 1.5 A give the same energy, per-atom energies, forces and
// virials, for models of both trims and in fp64 and fp32.
TEST(Evaluator, EdgesBeyondTheCutoffAddNothing) {
  for (const char* name : {"bcc_cu54_L2m1", "triclinic_ccu16_L3m2"}) {
    const Golden g = load_golden(name);
    const auto pot = read_potential(g.model_file);
    const double skin = 1.5;
    const HostPairList pl = pairs_within(g, g.r_cut + skin);
    const int N = int(g.species.size());
    const auto at_cut = test::upload_graph(g.x, g.species, pl.i, pl.j, pl.shift, N, g.r_cut);
    const auto with_skin = test::upload_graph(g.x, g.species, pl.i, pl.j, pl.shift, N, g.r_cut + skin);
    ASSERT_GT(with_skin.graph.edges.n_edges, at_cut.graph.edges.n_edges * 5 / 4) << name;
    for (Precision p : {Precision::fp64, Precision::fp32}) {
      Evaluator ev(pot, {p});
      const auto a = run(ev, with_skin), b = run(ev, at_cut);
      const double tol = p == Precision::fp64 ? 1e-13 : kFp32Contract;
      EXPECT_NEAR(a.energy, b.energy, tol * std::fabs(b.energy)) << name;
      EXPECT_LT(rel_err(a.energies, b.energies), tol) << name;
      EXPECT_LT(rel_err(a.forces, b.forces), tol) << name;
      EXPECT_LT(rel_err(a.atom_virial, b.atom_virial), tol) << name;
      for (int c = 0; c < 9; ++c) EXPECT_NEAR(a.virial[c], b.virial[c], tol * max_abs(b.atom_virial) * N) << name;
    }
  }
}

// graph per_rebuild's kept graph (kept_graph.hpp): candidates within r_cut + 1.5 A, the step's
// edges compacted to r < r_cut, padded with spare self edges (edge_headroom 0.2: about one per
// receiver and more) that must add exactly nothing. Energies, forces and virials equal those of
// the graph built at r_cut, for models of both families, fp64 and fp32.
TEST(Evaluator, AKeptGraphsSpareEdgesAddNothing) {
  struct Case {
    Potential pot;
    Golden g;
    std::vector<int> species;
    SystemInputs system;  // model v2 only
  };
  std::vector<Case> cases;
  for (const char* name : {"bcc_cu54_L2m1", "triclinic_ccu16_L3m2"}) {
    Golden g = load_golden(name);
    cases.push_back({read_potential(g.model_file), g, g.species, {}});
  }
  const V2Case v2 = carbon_v2_case("diamond64_L2m2");
  cases.push_back({v2.pot, v2.g, v2.carbon, v2.system()});
  for (const Case& c : cases) {
    const double r_cut = c.pot.format_version == kFormatVersionV2 ? c.pot.v2.r_cut : c.pot.config.r_cut, skin = 1.5;
    const HostPairList pl = pairs_within(c.g, r_cut + skin);
    const int N = int(c.species.size());
    const auto at_cut = test::upload_graph(c.g.x, c.species, pl.i, pl.j, pl.shift, N, r_cut);
    const auto up = test::upload_pairs(c.g.x, c.species, pl.i, pl.j, pl.shift);
    KeptGraph kept(0.2);
    kept.rebuild(up.pairs, up.x, up.species, N, r_cut + skin, r_cut);
    ASSERT_TRUE(kept.held_every_edge());
    ASSERT_EQ(kept.live_edges(), at_cut.graph.edges.n_edges);
    ASSERT_GT(kept.capacity(), kept.live_edges() + N / 8) << "spare slots on most receivers";
    const test::DeviceGraph padded{up.x, kept.graph()};
    for (Precision p : {Precision::fp64, Precision::fp32}) {
      Evaluator ev(c.pot, {p});
      if (c.pot.format_version == kFormatVersionV2) ev.set_system(c.system);
      const auto a = run(ev, padded), b = run(ev, at_cut);
      const double tol = p == Precision::fp64 ? 1e-13 : kFp32Contract;
      EXPECT_NEAR(a.energy, b.energy, tol * std::fabs(b.energy)) << c.g.model_file;
      EXPECT_LT(rel_err(a.energies, b.energies), tol) << c.g.model_file;
      EXPECT_LT(rel_err(a.forces, b.forces), tol) << c.g.model_file;
      EXPECT_LT(rel_err(a.atom_virial, b.atom_virial), tol) << c.g.model_file;
      for (int k = 0; k < 9; ++k)
        EXPECT_NEAR(a.virial[k], b.virial[k], tol * max_abs(b.atom_virial) * N) << c.g.model_file;
    }
  }
}

// The same for model v2 (ModelV2::memory_model), the shipped carbon v2 file on diamond 64, with
// the stream plans: at r_cut (28 edges per atom, the per-edge terms lead) and with the nearest
// neighbours only (4 per atom, where the per-node terms weigh about as much as the edges').
TEST(Evaluator, TheModelV2MemoryModelBoundsTheMeasuredPeak) {
  const V2Case c = carbon_v2_case("diamond64_L2m2");
  const auto prepare = [&](Evaluator& ev) { ev.set_system(c.system()); };
  check_memory_model_bounds(c.pot, c.upload_at(c.g.x), 500, prepare, "v2", true);
  const HostPairList nearest = pairs_within(c.g, 2.0);
  const int N = int(c.carbon.size());
  const auto sparse = test::upload_graph(c.g.x, c.carbon, nearest.i, nearest.j, nearest.shift, N, c.pot.v2.r_cut);
  ASSERT_EQ(sparse.graph.edges.n_edges, 4 * N);
  check_memory_model_bounds(c.pot, sparse, 100, prepare, "v2 nearest neighbours", true);
}

// Model v2 under a memory budget (activations automatic): a budget between the all-recompute
// and keep peaks recomputes some layers, a budget below every plan recomputes all in chunks and
// says it does not fit; results as keep's.
TEST(Evaluator, AModelV2MemoryBudgetPicksThePlanAndKeepsTheResults) {
  const V2Case c = carbon_v2_case("diamond64_L2m2");
  const auto d = c.upload_at(c.g.x);
  EvaluatorOptions keep_opt;
  keep_opt.activations = EvaluatorOptions::Activations::keep;
  Evaluator keep(c.pot, keep_opt);
  keep.set_system(c.system());
  const HostResult want = run(keep, d);
  const double keep_peak = keep.activation_plan().predicted_bytes;
  for (const double budget : {0.97 * keep_peak, 1.0}) {
    EvaluatorOptions opt;
    opt.memory_budget = budget;
    Evaluator ev(c.pot, opt);
    ev.set_system(c.system());
    const HostResult got = run(ev, d);
    const ActivationPlan& plan = ev.activation_plan();
    EXPECT_TRUE(plan.any_recomputed()) << budget;
    EXPECT_EQ(plan.fits, budget > 1.0) << plan.describe();
    EXPECT_GT(ev.layers_recomputed(), 0) << plan.describe();
    EXPECT_NEAR(got.energy, want.energy, 1e-12 * std::fabs(want.energy)) << plan.describe();
    EXPECT_LT(rel_err(got.forces, want.forces), 1e-11) << plan.describe();
    EXPECT_LT(rel_err(got.atom_virial, want.atom_virial), 1e-11) << plan.describe();
  }
}

// Model v2's recomputed edge parts, whole and in chunks, as v1's.
TEST(Evaluator, ModelV2RecomputedEdgePartsGiveTheSameResults) {
  const V2Case c = carbon_v2_case("diamond64_L2m2");
  check_recompute_matches_keep(
      c.pot, c.pot.v2.layers, c.g.x, [&](Evaluator& ev) { ev.set_system(c.system()); },
      [&](const std::vector<double>& x) { return c.upload_at(x); }, "carbon v2");
}

// Activations stream (model v2): every per-edge quantity, the geometry and the edge-degree
// embedding included, made per chunk from the edge vectors; the same results.
TEST(Evaluator, ModelV2StreamedLayersGiveTheSameResults) {
  const V2Case c = carbon_v2_case("diamond64_L2m2");
  check_recompute_matches_keep(
      c.pot, c.pot.v2.layers, c.g.x, [&](Evaluator& ev) { ev.set_system(c.system()); },
      [&](const std::vector<double>& x) { return c.upload_at(x); }, "carbon v2", EvaluatorOptions::Activations::stream);
}

// A random roll of every edge frame about its axis leaves model v2's results as they are, also
// streamed in chunks (whose geometry reads the chunk's rows of the roll; any rows would leave
// the results unchanged, so this checks that a streamed step takes a roll, not which rows).
TEST(Evaluator, ModelV2StreamedStepsAreInvariantUnderARoll) {
  const V2Case c = carbon_v2_case("diamond64_L2m2");
  const auto d = c.upload_at(c.g.x);
  const int E = d.graph.edges.n_edges;
  kk::View1<double, Exec> roll("roll", E);
  auto h = Kokkos::create_mirror_view(roll);
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(-M_PI, M_PI);
  for (int e = 0; e < E; ++e) h(e) = u(rng);
  Kokkos::deep_copy(roll, h);
  What rolled;
  rolled.roll = roll;
  EvaluatorOptions keep_opt, stream_opt;
  keep_opt.activations = EvaluatorOptions::Activations::keep;
  stream_opt.activations = EvaluatorOptions::Activations::stream;
  stream_opt.edge_chunk = 250;
  Evaluator keep(c.pot, keep_opt), stream(c.pot, stream_opt);
  keep.set_system(c.system());
  stream.set_system(c.system());
  const HostResult base = run(keep, d), a = run(stream, d, rolled);
  ASSERT_TRUE(stream.activation_plan().stream);
  ASSERT_GT(stream.layers_recomputed(), c.pot.v2.layers) << "several chunks";
  EXPECT_NEAR(a.energy, base.energy, kInvarianceRelTol * std::fabs(base.energy));
  EXPECT_LT(rel_err(a.forces, base.forces), kInvarianceRelTol);
}

// Stream is for model v2: a v1 potential with it is an input error that says so.
TEST(Evaluator, StreamIsRefusedForModelV1) {
  const Golden g = load_golden("diamond64_L2m1");
  EvaluatorOptions opt;
  opt.activations = EvaluatorOptions::Activations::stream;
  try {
    Evaluator ev(read_potential(g.model_file), opt);
    FAIL() << "a v1 potential with activations stream was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("activations stream is for model v2"), std::string::npos) << e.what();
  }
}

// EvaluatorOptions::cuda_graph (step_graph.hpp). On CUDA the first step with a given graph and
// positions view runs eagerly, the second is captured and replayed, later ones are replays: a
// replay must read the positions' current values (moved in place here), and a new graph must
// be captured anew. Every result is the eager evaluator's: the same kernels in the same order;
// cuBLAS may choose another GEMM kernel for the graph's stream and workspace, hence rounding-level
// tolerances (fp32: the 1e-5 of issue #7's fp32 mode, against fp64 there, against fp32 here).
// On host backends the option does nothing: no captures, the same results.
// prepare(ev): the system inputs of a v2 model (nothing for v1); upload_at(x): positions x and
// a new graph of them.
template <class Prepare, class Upload>
void check_cuda_graph_replays(const Potential& pot, const std::vector<double>& x0, Prepare&& prepare,
                              Upload&& upload_at) {
  const bool device = !std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
  for (Precision p : {Precision::fp64, Precision::fp32}) {
    const double tol = p == Precision::fp64 ? 1e-12 : 1e-5;
    Evaluator eager(pot, {p});
    EvaluatorOptions options{p};
    options.cuda_graph = true;
    Evaluator graphed(pot, options);
    prepare(eager);
    prepare(graphed);
    auto same = [&](const HostResult& a, const HostResult& b, const char* what) {
      EXPECT_NEAR(a.energy, b.energy, tol * std::fabs(b.energy)) << what;
      EXPECT_LT(rel_err(a.forces, b.forces), tol) << what;
      EXPECT_LT(rel_err(a.atom_virial, b.atom_virial), tol) << what;
      EXPECT_LT(rel_err(a.energies, b.energies), tol) << what;
      EXPECT_LT(rel_err(std::vector<double>(a.virial.begin(), a.virial.end()),
                        std::vector<double>(b.virial.begin(), b.virial.end())),
                tol)
          << what;
    };
    const auto d = upload_at(x0);
    const HostResult first = run(graphed, d);
    same(first, run(eager, d), "eager first step");
    EXPECT_EQ(graphed.cuda_graph_captures(), 0);
    const HostResult replayed = run(graphed, d);
    same(replayed, first, "captured and replayed");
    EXPECT_EQ(graphed.cuda_graph_captures(), device ? 1 : 0);
    EXPECT_EQ(graphed.cuda_graph_replays(), device ? 1 : 0);

    // Positions moved in place (same view): the replay must see them.
    std::vector<double> moved = x0;
    moved[0] += 0.02;
    moved[4] -= 0.015;
    auto hx = Kokkos::create_mirror_view(d.x);
    for (std::size_t k = 0; k < moved.size(); ++k) hx(k / 3, k % 3) = moved[k];
    Kokkos::deep_copy(d.x, hx);
    const HostResult after_move = run(graphed, d);
    EXPECT_GT(rel_err(after_move.forces, first.forces), 1e-3) << "the replay read stale positions";
    same(after_move, run(eager, d), "replay after an in-place move");
    EXPECT_EQ(graphed.cuda_graph_captures(), device ? 1 : 0);
    EXPECT_EQ(graphed.cuda_graph_replays(), device ? 2 : 0);

    // A new graph (a neighbour-list rebuild): one eager step, then a new capture.
    const auto rebuilt = upload_at(moved);
    const HostResult want = run(eager, rebuilt);
    same(run(graphed, rebuilt), want, "new graph, eager");
    same(run(graphed, rebuilt), want, "new graph, captured");
    EXPECT_EQ(graphed.cuda_graph_captures(), device ? 2 : 0);
    EXPECT_EQ(graphed.cuda_graph_replays(), device ? 3 : 0);
  }
}

TEST(Evaluator, ACudaGraphReplaysTheStepWhileItsInputsStayPut) {
  const Golden g = load_golden("triclinic_ccu16_L3m2");
  check_cuda_graph_replays(
      read_potential(g.model_file), g.x, [](Evaluator&) {}, [&](const std::vector<double>& x) { return upload(g, x); });
}

// Model v2 (the shipped carbon potential on a rattled diamond box): the same replays; a new
// set_system replaces the weights a captured step reads, so the next step runs eagerly again
// and is then captured anew, with the new system's results.
TEST(Evaluator, ACudaGraphReplaysAModelV2StepUntilTheSystemChanges) {
  const V2Case c = carbon_v2_case("diamond64_L2m2");
  const Potential& pot = c.pot;
  auto upload_at = [&](const std::vector<double>& x) { return c.upload_at(x); };
  auto system = [&](int charge) { return c.system(charge); };
  check_cuda_graph_replays(
      pot, c.g.x, [&](Evaluator& ev) { ev.set_system(system(0)); }, upload_at);

  const bool device = !std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
  EvaluatorOptions options{Precision::fp64};
  options.cuda_graph = true;
  Evaluator graphed(pot, options), eager(pot, {Precision::fp64});
  graphed.set_system(system(0));
  const auto d = upload_at(c.g.x);
  run(graphed, d);
  const HostResult neutral = run(graphed, d);
  EXPECT_EQ(graphed.cuda_graph_captures(), device ? 1 : 0);
  graphed.set_system(system(1));
  eager.set_system(system(1));
  const HostResult want = run(eager, d);
  ASSERT_GT(std::fabs(want.energy - neutral.energy), 1e-9) << "the charge changes nothing: the test cannot tell";
  for (const char* what : {"after set_system, eager", "after set_system, captured"}) {
    const HostResult got = run(graphed, d);
    EXPECT_NEAR(got.energy, want.energy, 1e-12 * std::fabs(want.energy)) << what;
    EXPECT_LT(rel_err(got.forces, want.forces), 1e-12) << what;
  }
  EXPECT_EQ(graphed.cuda_graph_captures(), device ? 2 : 0);
  EXPECT_EQ(graphed.cuda_graph_replays(), device ? 2 : 0);
}

TEST(Evaluator, PoisonedScratchChangesNothing) {
  // Every scratch element a kernel reads was written first in the same step: NaN-filled fresh
  // scratch gives bit-identical results.
  const Golden g = load_golden("cluster_axes11_L2m2");
  const auto pot = read_potential(g.model_file);
  Evaluator plain(pot, {Precision::fp64, false}), poisoned(pot, {Precision::fp64, true});
  const auto d = upload(g, g.x);
  const auto a = run(plain, d), b = run(poisoned, d);
  EXPECT_EQ(a.energy, b.energy);
  EXPECT_EQ(a.forces, b.forces);
  EXPECT_EQ(a.atom_virial, b.atom_virial);
}

TEST(Evaluator, OnlyLocalAtomsCountTowardsTheEnergy) {
  const Golden g = load_golden("cluster_axes11_L2m1");
  const auto pot = read_potential(g.model_file);
  Evaluator ev(pot);
  auto d = upload(g, g.x);
  const auto all = run(ev, d);
  d.graph.n_local = 5;
  const auto part = run(ev, d);
  double sum = 0;
  for (int a = 0; a < 5; ++a) sum += all.energies[a];
  EXPECT_NEAR(part.energy, sum, 1e-13 * std::fabs(sum));
  // forces are -d(sum of local energies)/dx: they differ from the all-atom forces
  EXPECT_GT(rel_err(part.forces, all.forces), 1e-3);
}

TEST(Evaluator, ForcesAreMinusTheEnergyGradient) {
  // Central differences on the open cluster, h = 1e-5 Angstrom: truncation ~h^2 |E'''| ~ 1e-9,
  // rounding ~1e-16 |E| / h ~ 1e-10 eV/Angstrom.
  constexpr double kStep = 1e-5, kTol = 1e-7;  // Angstrom, eV/Angstrom
  const Golden g = load_golden("cluster_axes11_L3m2");
  const auto pot = read_potential(g.model_file);
  Evaluator ev(pot);
  const auto base = run(ev, upload(g, g.x));
  for (int a : {0, 3, 10})
    for (int k = 0; k < 3; ++k) {
      std::vector<double> xp = g.x, xm = g.x;
      xp[3 * a + k] += kStep;
      xm[3 * a + k] -= kStep;
      const double ep = run(ev, upload(g, xp)).energy, em = run(ev, upload(g, xm)).energy;
      EXPECT_NEAR(base.forces[3 * a + k], -(ep - em) / (2 * kStep), kTol) << "atom " << a << " dir " << k;
    }
}

TEST(Evaluator, NonFiniteEnergyNamesTheFirstNodeAndOnlyOwnedEnergiesCount) {
  // e0[Cu] = 1e39 eV is a finite double that overflows float32 (max 3.4e38): in fp32 every Cu
  // atom's energy is +inf, in fp64 nothing is wrong. The structure alternates C, Cu, C, ...
  const Golden g = load_golden("triclinic_ccu16_L2m1");
  auto pot = read_potential(g.model_file);
  ASSERT_EQ(pot.config.species.at(1), "Cu");
  pot.config.e0[1] = 1e39;
  int first_cu = -1, n_cu = 0;
  for (int a = 0; a < int(g.species.size()); ++a)
    if (g.species[a] == 1 && n_cu++ == 0) first_cu = a;
  ASSERT_GT(first_cu, 0);
  auto d = upload(g, g.x);
  Evaluator ev64(pot, {Precision::fp64});
  EXPECT_TRUE(std::isfinite(run(ev64, d).energy));
  Evaluator ev32(pot, {Precision::fp32});
  try {
    run(ev32, d);
    ADD_FAILURE() << "no NonFiniteError";
  } catch (const NonFiniteError& e) {
    EXPECT_EQ(e.node(), first_cu);
    EXPECT_EQ(e.count(), n_cu);
    EXPECT_EQ(e.summary(), "non-finite energy (inf eV)");
    EXPECT_NE(std::string(e.what()).find("first node with a non-finite energy or force: " + std::to_string(first_cu)),
              std::string::npos)
        << e.what();
  }
  // Energies of nodes past n_local (ghosts) do not count: neither in the sum nor in the scan.
  d.graph.n_local = first_cu;
  EXPECT_TRUE(std::isfinite(run(ev32, d).energy));
  d.graph.n_local = first_cu + 1;
  try {
    run(ev32, d);
    ADD_FAILURE() << "no NonFiniteError with n_local " << first_cu + 1;
  } catch (const NonFiniteError& e) {
    EXPECT_EQ(e.node(), first_cu);
    EXPECT_EQ(e.count(), 1) << "ghost energies were counted";
  }
}

TEST(Evaluator, RejectsMismatchedInputs) {
  const Golden g = load_golden("cluster_axes11_L2m1");
  const auto pot = read_potential(g.model_file);
  Evaluator ev(pot);
  const auto d = upload(g, g.x);
  kk::Vec3View<double, Exec> x2("x2", 3);
  EXPECT_THROW(ev.compute(d.graph, x2), InputError);
  What w;
  w.roll = kk::View1<double, Exec>("roll", 2);
  EXPECT_THROW(ev.compute(d.graph, d.x, w), InputError);
  EXPECT_THROW(parse_precision("fp16"), InputError);
}

TEST(Evaluator, Tf32IsRefusedWithoutCudaAndCloseToFp32WithIt) {
  const Golden g = load_golden("diamond64_L2m1");
  const auto pot = read_potential(g.model_file);
  if (!tf32_available()) {
    EXPECT_THROW(Evaluator(pot, {Precision::tf32}), InputError);
    return;
  }
  // CUDA: same graph in fp32 and tf32. TF32 rounds GEMM inputs to 10 mantissa bits (2^-11
  // relative); through this small golden model the forces move by far less than 1 %.
  Evaluator f32(pot, {Precision::fp32}), t32(pot, {Precision::tf32});
  const auto d = upload(g, g.x);
  auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f32.compute(d.graph, d.x).forces);
  auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t32.compute(d.graph, d.x).forces);
  double scale = 0, diff = 0;
  for (std::size_t i = 0; i < a.extent(0); ++i)
    for (int k = 0; k < 3; ++k) {
      scale = std::max(scale, std::abs(a(i, k)));
      diff = std::max(diff, std::abs(a(i, k) - b(i, k)));
    }
  std::printf("[ measured ] diamond64_L2m1 tf32 vs fp32: max |dF| / max |F| = %.2e\n", diff / scale);
  EXPECT_LT(diff, 1e-2 * scale);
}

// The tensor-core modes (gemm.hpp) through both models: refused without CUDA; with it, forces
// against fp64 on v1's golden model and the shipped carbon v2 file: tf32x3 within 1e-5 of the
// largest force (issue #26's bar for the split mode; fp32 is at 3e-7-1e-5 here, and TF32's
// rounding of the split's tail makes tf32x3 up to a few times fp32's error), bf16 between 1x
// and 64x tf32's error (8 mantissa bits against 11: about 8x, more through a deep model; 1x
// would mean the rounding did not happen), and every mode's error printed.
TEST(Evaluator, TensorCorePrecisionsAreRefusedWithoutCudaAndMeasuredWithIt) {
  const Golden g1 = load_golden("diamond64_L2m1");
  const auto pot1 = read_potential(g1.model_file);
  const V2Case c = carbon_v2_case("diamond64_L2m2");
  if (!tf32_available()) {
    for (const Precision p : {Precision::bf16, Precision::tf32x3}) {
      EXPECT_THROW(Evaluator(pot1, {p}), InputError) << to_string(p);
      EXPECT_THROW(Evaluator(c.pot, {p}), InputError) << to_string(p);
    }
    return;
  }
  auto forces = [](const Potential& pot, const DeviceInput& d, Precision p, const SystemInputs* sys) {
    Evaluator ev(pot, {p});
    if (sys) ev.set_system(*sys);
    return run(ev, d).forces;
  };
  const SystemInputs sys = c.system();
  const struct {
    const char* name;
    const Potential& pot;
    DeviceInput d;
    const SystemInputs* sys;
  } models[] = {{"v1 diamond64_L2m1", pot1, upload(g1, g1.x), nullptr},
                {"v2 C-diamond-v2 diamond64", c.pot, c.upload_at(c.g.x), &sys}};
  for (const auto& m : models) {
    const auto want = forces(m.pot, m.d, Precision::fp64, m.sys);
    double err[4] = {};
    const Precision modes[] = {Precision::fp32, Precision::tf32, Precision::bf16, Precision::tf32x3};
    for (int k = 0; k < 4; ++k) err[k] = rel_err(forces(m.pot, m.d, modes[k], m.sys), want);
    std::printf("[ measured ] %s, max |dF| / max |F| against fp64: fp32 %.2e, tf32 %.2e, bf16 %.2e, tf32x3 %.2e\n",
                m.name, err[0], err[1], err[2], err[3]);
    EXPECT_LT(err[3], 1e-5) << m.name;
    EXPECT_GT(err[2], err[1]) << m.name;
    EXPECT_LT(err[2], 64 * err[1]) << m.name;
  }
}

}  // namespace
