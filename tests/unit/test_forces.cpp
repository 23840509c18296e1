// forces.hpp's global sums against a plain loop, and their check of every force: a finite force
// leaves the sums bit for bit as they are without forces, a NaN or Inf one makes W_xx NaN (what
// finish_step's finiteness check of the sums then reports).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "exec_spaces.hpp"
#include "forces.hpp"

namespace {

using namespace edgeframe;

template <class Exec>
class ForcesTest : public ::testing::Test {};
TYPED_TEST_SUITE(ForcesTest, test::ExecSpaces);

template <class Exec>
std::vector<double> global_sums(const std::vector<double>& vec, const std::vector<double>& grad,
                                const std::vector<double>& energies, const std::vector<double>* forces, int n_local) {
  const int E = int(vec.size() / 3), N = int(energies.size());
  auto upload3 = [](const std::vector<double>& h, const char* name) {
    kk::Vec3View<double, Exec> d(std::string(name), int(h.size() / 3));
    auto m = Kokkos::create_mirror_view(d);
    for (std::size_t i = 0; i < h.size(); ++i) m.data()[i] = h[i];
    Kokkos::deep_copy(d, m);
    return d;
  };
  kk::View1<double, Exec> e("energies", N);
  auto em = Kokkos::create_mirror_view(e);
  for (int i = 0; i < N; ++i) em(i) = energies[i];
  Kokkos::deep_copy(e, em);
  const int n_chunks = (std::max(E, N) + kk::kSumChunk - 1) / kk::kSumChunk;
  kk::GlobalSums<Exec> gs{
      upload3(vec, "vec"),
      upload3(grad, "grad"),
      e,
      forces ? kk::Vec3View<const double, Exec>(upload3(*forces, "forces")) : kk::Vec3View<const double, Exec>(),
      kk::View2<double, Exec>("partials", n_chunks, 10),
      kk::View1<double, Exec>("sums", 10),
      E,
      n_local,
      n_chunks};
  kk::global_sums(Exec(), gs);
  const auto h = test::to_host(gs.sums);
  return std::vector<double>(h.data(), h.data() + 10);
}

TYPED_TEST(ForcesTest, GlobalSumsMatchAPlainLoopAndCheckEveryForce) {
  using Exec = TypeParam;
  const int E = 700, N = 300, n_local = 250;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<double> vec(3 * E), grad(3 * E), energies(N), forces(3 * N);
  for (double* v : {vec.data(), grad.data()})
    for (int i = 0; i < 3 * E; ++i) v[i] = u(rng);
  for (double& v : energies) v = u(rng);
  for (double& v : forces) v = u(rng);

  const auto plain = global_sums<Exec>(vec, grad, energies, nullptr, n_local);
  std::vector<double> ref(10, 0.0);
  for (int e = 0; e < E; ++e)
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) ref[3 * a + b] -= vec[3 * e + a] * grad[3 * e + b];
  for (int i = 0; i < n_local; ++i) ref[9] += energies[i];
  for (int q = 0; q < 10; ++q) EXPECT_NEAR(plain[q], ref[q], 1e-12 * (1.0 + std::fabs(ref[q]))) << q;

  // Finite forces: the same sums, bit for bit.
  EXPECT_EQ(global_sums<Exec>(vec, grad, energies, &forces, n_local), plain);
  // One non-finite force component, on an owned node, a ghost node, the last node: W_xx is NaN,
  // the other nine sums are unchanged.
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()})
    for (const int node : {0, n_local + 3, N - 1}) {
      auto f = forces;
      f[3 * node + 2] = bad;
      const auto s = global_sums<Exec>(vec, grad, energies, &f, n_local);
      EXPECT_TRUE(std::isnan(s[0])) << "node " << node << " force " << bad;
      for (int q = 1; q < 10; ++q) EXPECT_EQ(s[q], plain[q]) << q;
    }
}

}  // namespace
