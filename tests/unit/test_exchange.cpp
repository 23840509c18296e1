// Per-layer ghost exchange (issue #8) at the engine level, without LAMMPS or MPI: a plain owner
// table plays the communication. (1) The autograd function: its backward is the adjoint of its
// forward. (2) The whole evaluator: a periodic golden unfolded into owned atoms + image ghosts
// whose features only the exchange provides equals the periodic graph with shifts.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "bridge.hpp"
#include "evaluator.hpp"
#include "exchange.hpp"
#include "ops.hpp"
#include "potential.hpp"
#include "upload_graph.hpp"

namespace {

using namespace edgeframe;
using json = nlohmann::json;

// Ghost node g (>= n_local) is a copy of owner[g - n_local]: what LAMMPS' forward and reverse
// communication do, for one process.
class TableExchange : public NodeExchange {
 public:
  TableExchange(int n_local, std::vector<int> owner) : m_n_local(n_local), m_owner(std::move(owner)) {}
  int forward_calls = 0, reverse_calls = 0;
  int skip_forward = -1;  // deliberately broken: skip this forward call (0-based)

  void forward(const NodeRows& h) override {
    if (forward_calls++ == skip_forward) return;
    apply(h, [&](auto* rows) {
      for (std::size_t g = 0; g < m_owner.size(); ++g)
        for (int c = 0; c < h.width; ++c)
          rows[(m_n_local + g) * h.width + c] = rows[std::size_t(m_owner[g]) * h.width + c];
    });
  }
  void reverse(const NodeRows& grad) override {
    ++reverse_calls;
    apply(grad, [&](auto* rows) {
      for (std::size_t g = 0; g < m_owner.size(); ++g)
        for (int c = 0; c < grad.width; ++c) {
          rows[std::size_t(m_owner[g]) * grad.width + c] += rows[(m_n_local + g) * grad.width + c];
          rows[(m_n_local + g) * grad.width + c] = 0;
        }
    });
  }

 private:
  // The rows live where the engine computes (GPU memory on CUDA builds): the table works on a
  // host copy and writes it back (on host builds cpu() is the same storage, nothing is copied).
  template <class Fn>
  static void apply(const NodeRows& r, Fn&& fn) {
    if (r.rows == 0 || r.width == 0) return;
    const auto dtype = r.type == RowType::f64 ? torch::kFloat64 : torch::kFloat32;
    const torch::Tensor rows =
        torch::from_blob(r.data, {r.rows, r.width}, torch::TensorOptions().dtype(dtype).device(bridge::device()));
    torch::Tensor host = rows.cpu();
    if (r.type == RowType::f64)
      fn(host.data_ptr<double>());
    else
      fn(host.data_ptr<float>());
    if (host.data_ptr() != rows.data_ptr()) rows.copy_(host);
  }
  int m_n_local;
  std::vector<int> m_owner;
};

TEST(NodeExchange, BackwardIsTheAdjointOfForward) {
  // <F x, y> = <x, F^T y> with F the forward exchange; F^T must be what autograd returns.
  constexpr int kLocal = 3, kLmax = 2, kC = 4, kD = (kLmax + 1) * (kLmax + 1);
  const std::vector<int> owner = {0, 2, 2, 1};  // ghosts 3..6; atom 2 has two images
  const int N = kLocal + int(owner.size());
  TableExchange table(kLocal, owner);
  impl::StepContext step;
  step.graph.n_nodes = N;
  step.lmax = kLmax;
  step.channels = kC;
  step.dtype = torch::kFloat64;
  step.exchange = &table;
  torch::manual_seed(11);
  const auto opts =
      torch::TensorOptions().dtype(torch::kFloat64).device(bridge::device());  // where the engine keeps rows
  const torch::Tensor x = torch::randn({N, kD, kC}, opts).requires_grad_(true), y = torch::randn({N, kD, kC}, opts);
  const torch::Tensor x_before = x.detach().clone();
  const torch::Tensor fx = impl::node_exchange(x, step);
  EXPECT_EQ(table.forward_calls, 1);
  for (int g = 0; g < int(owner.size()); ++g) EXPECT_TRUE(torch::equal(fx[kLocal + g], x[owner[g]]));
  EXPECT_TRUE(torch::equal(fx.narrow(0, 0, kLocal), x.narrow(0, 0, kLocal)));
  EXPECT_TRUE(torch::equal(x.detach(), x_before)) << "the input must not change";
  const torch::Tensor gx = torch::autograd::grad({(fx * y).sum()}, {x})[0];
  EXPECT_EQ(table.reverse_calls, 1);
  const double lhs = (fx * y).sum().item<double>(), rhs = (x * gx).sum().item<double>();
  EXPECT_NEAR(lhs, rhs, 1e-12 * std::fabs(lhs));
  // Explicitly: owners collect their ghosts' rows, ghost rows are zero.
  torch::Tensor want = y.clone();
  for (int g = 0; g < int(owner.size()); ++g) {
    want[owner[g]] += y[kLocal + g];
    want[kLocal + g].zero_();
  }
  EXPECT_TRUE(torch::allclose(gx, want, 0, 1e-15));
}

struct Case {
  std::vector<double> x, shift;
  std::vector<int> species, pi, pj;
  int n_local = 0;
  double r_cut = 0;
  std::string model_file;
};

// The golden's periodic graph (edges with image shifts), as the engine tests build it.
Case load(const std::string& name) {
  std::ifstream in(std::string(EDGEFRAME_GOLDENS_DIR) + "/" + name + ".json");
  const json j = json::parse(in);
  Case c;
  const auto& s = j["structure"];
  for (const auto& p : s["positions"])
    for (int k = 0; k < 3; ++k) c.x.push_back(p[k].get<double>());
  for (const auto& v : s["species_index"]) c.species.push_back(v.get<int>());
  const auto& e = j["edges"];
  for (size_t q = 0; q < e["i"].size(); ++q) {
    c.pi.push_back(e["i"][q].get<int>());
    c.pj.push_back(e["j"][q].get<int>());
    for (int k = 0; k < 3; ++k) {
      double v = 0.0;
      for (int a = 0; a < 3; ++a) v += e["shift"][q][a].get<double>() * s["cell"][a][k].get<double>();
      c.shift.push_back(v);
    }
  }
  c.n_local = int(c.species.size());
  c.r_cut = j["model"]["r_cut"].get<double>();
  c.model_file = std::string(EDGEFRAME_GOLDENS_DIR) + "/" + j["model_file"].get<std::string>();
  return c;
}

// Every sender seen through a nonzero shift becomes a ghost node at x_j + shift (one per
// distinct image), as a LAMMPS rank would hold it; edges carry no shift any more.
Case unfold(const Case& c, std::vector<int>& owner) {
  Case u = c;
  u.pj.clear();
  u.shift.assign(c.shift.size(), 0.0);
  std::map<std::tuple<int, long, long, long>, int> ghost_of;
  for (size_t q = 0; q < c.pi.size(); ++q) {
    const double* s = &c.shift[3 * q];
    if (s[0] == 0 && s[1] == 0 && s[2] == 0) {
      u.pj.push_back(c.pj[q]);
      continue;
    }
    const auto key =
        std::make_tuple(c.pj[q], std::lround(s[0] * 1e6), std::lround(s[1] * 1e6), std::lround(s[2] * 1e6));
    auto it = ghost_of.find(key);
    if (it == ghost_of.end()) {
      it = ghost_of.emplace(key, int(u.species.size())).first;
      owner.push_back(c.pj[q]);
      u.species.push_back(c.species[c.pj[q]]);
      for (int k = 0; k < 3; ++k) u.x.push_back(c.x[3 * c.pj[q] + k] + s[k]);
    }
    u.pj.push_back(it->second);
  }
  return u;
}

struct Out {
  double energy;
  std::array<double, 9> virial;
  std::vector<double> forces, energies;
};

Out evaluate(Evaluator& ev, const Case& c, NodeExchange* exchange) {
  const int N = int(c.species.size());
  const auto d = test::upload_graph(c.x, c.species, c.pi, c.pj, c.shift, c.n_local, c.r_cut * (1 + 1e-12));
  const auto& x = d.x;
  const AtomGraph& g = d.graph;
  What what;
  what.energies = what.virial = true;
  what.exchange = exchange;
  const Result r = ev.compute(g, x, what);
  auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.forces);
  auto e = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.energies);
  return {r.energy, r.virial, std::vector<double>(f.data(), f.data() + 3 * N),
          std::vector<double>(e.data(), e.data() + N)};
}

// fp64, same terms in a different order (images vs shifts change no arithmetic but the CSR
// order of the senders): measured differences ~1e-15 relative.
constexpr double kRelTol = 1e-12;

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double a : v) m = std::max(m, std::fabs(a));
  return m;
}

class ExchangeGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ExchangeGolden, UnfoldedImagesWithExchangeEqualThePeriodicGraph) {
  const Case periodic = load(GetParam());
  std::vector<int> owner;
  const Case unfolded = unfold(periodic, owner);
  ASSERT_GT(owner.size(), 0u) << "the golden should have periodic images";
  const auto pot = read_potential(periodic.model_file);
  Evaluator ev(pot, {Precision::fp64});
  const Out want = evaluate(ev, periodic, nullptr);
  TableExchange table(periodic.n_local, owner);
  const Out got = evaluate(ev, unfolded, &table);
  const int T = pot.config.layers;
  EXPECT_EQ(table.forward_calls, T - 1);
  EXPECT_EQ(table.reverse_calls, T - 1);
  EXPECT_NEAR(got.energy, want.energy, kRelTol * std::fabs(want.energy));
  const double w_scale = max_abs(std::vector<double>(want.virial.begin(), want.virial.end()));
  for (int q = 0; q < 9; ++q) EXPECT_NEAR(got.virial[q], want.virial[q], kRelTol * w_scale);
  // Forces on ghosts belong to their owners (LAMMPS' reverse communication of forces).
  std::vector<double> folded(got.forces.begin(), got.forces.begin() + 3 * periodic.n_local);
  for (size_t g = 0; g < owner.size(); ++g)
    for (int k = 0; k < 3; ++k) folded[3 * owner[g] + k] += got.forces[3 * (periodic.n_local + g) + k];
  const double scale = max_abs(want.forces);
  for (size_t i = 0; i < folded.size(); ++i) EXPECT_NEAR(folded[i], want.forces[i], kRelTol * scale) << i;
  for (int a = 0; a < periodic.n_local; ++a)
    EXPECT_NEAR(got.energies[a], want.energies[a], kRelTol * std::fabs(want.energy));

  // A deliberately broken exchange (layer 2 reads stale ghost features) must show.
  TableExchange broken(periodic.n_local, owner);
  broken.skip_forward = T - 2;
  const Out bad = evaluate(ev, unfolded, &broken);
  EXPECT_GT(std::fabs(bad.energy - want.energy), 1e3 * kRelTol * std::fabs(want.energy));
}

INSTANTIATE_TEST_SUITE_P(Goldens, ExchangeGolden,
                         ::testing::Values("diamond64_L2m2", "bcc_cu54_L3m1", "triclinic_ccu16_L3m2"),
                         [](const auto& info) { return info.param; });

TEST(NodeExchange, EveryCallHappensAlsoWithoutEdges) {
  // MPI partners need the same call sequence on every rank: a rank whose atoms have no edges
  // still makes T-1 forward and T-1 reverse exchanges.
  Case c = load("cluster_axes11_L2m1");
  const auto pot = read_potential(c.model_file);
  Evaluator ev(pot, {Precision::fp64});
  c.pi.clear();
  c.pj.clear();
  c.shift.clear();
  TableExchange table(c.n_local, {});
  evaluate(ev, c, &table);
  EXPECT_EQ(table.forward_calls, pot.config.layers - 1);
  EXPECT_EQ(table.reverse_calls, pot.config.layers - 1);
}

}  // namespace
