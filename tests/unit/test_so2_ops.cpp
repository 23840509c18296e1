// The SO(2) linear as block GEMMs into column ranges (impl::so2_linear) and the fused gate
// kernel (kokkos/so2_gate.hpp through impl::so2_gate), each against the plain torch composition
// it replaced (narrow, addmm / mm, cat; sigmoid, silu, mul, cat): values and the gradient with
// respect to the input, fp64 and fp32, for the shapes the models use (mmax 1 and 2, and 0 for the first and last layers' gates).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <type_traits>

#include "band_layout.hpp"
#include "bridge.hpp"
#include "ops.hpp"
#include "tensor_compare.hpp"
#include "so2_gate.hpp"

namespace {

using namespace edgeframe;

using test::rel;

struct Case {
  torch::Dtype dtype;
  int lmax, mmax;
  double tolerance;  // relative to the largest value
};

std::string name_of(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(c.dtype == torch::kFloat64 ? "fp64" : "fp32") + "_L" + std::to_string(c.lmax) + "m" +
         std::to_string(c.mmax);
}

// fp64: the same products summed in another order. fp32: the gate kernel works in double and
// rounds once, the torch chain rounds after every op (a few float ulps).
const auto kCases = ::testing::Values(Case{torch::kFloat64, 2, 1, 1e-14}, Case{torch::kFloat64, 3, 2, 1e-14},
                                      Case{torch::kFloat32, 2, 1, 2e-6}, Case{torch::kFloat32, 3, 2, 2e-6});
// The gate also with mmax 0: the first and last layers gate the m = 0 rows only (evaluator.cpp).
const auto kGateCases = ::testing::Values(Case{torch::kFloat64, 2, 1, 1e-14}, Case{torch::kFloat64, 3, 2, 1e-14},
                                          Case{torch::kFloat32, 2, 1, 2e-6}, Case{torch::kFloat32, 3, 2, 2e-6},
                                          Case{torch::kFloat64, 2, 0, 1e-14}, Case{torch::kFloat32, 3, 0, 2e-6});

// ---- so2_gate ------------------------------------------------------------------------------
// The gate as the evaluator wrote it in torch: rows [E, K, C] in packed order, gates [E, L, C].
torch::Tensor gate_reference(const torch::Tensor& z, int L, int mmax, int C) {
  const int E = int(z.size(0)), K = kk::band_rows(L, mmax);
  const torch::Tensor z3 = z.view({E, K + L, C});
  const torch::Tensor rows = torch::cat({z3.narrow(1, 0, L + 1), z3.narrow(1, 2 * L + 1, K - L - 1)}, 1);
  const torch::Tensor sig = torch::sigmoid(z3.narrow(1, L + 1, L));
  std::vector<torch::Tensor> mult{sig};
  for (int m = 1; m <= mmax; ++m) {
    mult.push_back(sig.narrow(1, m - 1, L + 1 - m));
    mult.push_back(sig.narrow(1, m - 1, L + 1 - m));
  }
  return torch::cat({torch::silu(rows.narrow(1, 0, 1)), rows.narrow(1, 1, K - 1) * torch::cat(mult, 1)}, 1);
}

class So2GateTest : public ::testing::TestWithParam<Case> {};

TEST_P(So2GateTest, ValuesAndGradientMatchTheTorchComposition) {
  const Case c = GetParam();
  constexpr int E = 53, C = 20;
  const int K = kk::band_rows(c.lmax, c.mmax);
  torch::manual_seed(5);
  const auto opts = torch::TensorOptions().dtype(c.dtype).device(bridge::device());
  const torch::Tensor base = 3.0 * torch::randn({E, (K + c.lmax) * C}, opts);
  const torch::Tensor probe = torch::randn({E, K, C}, opts);
  const torch::Tensor z1 = base.clone().requires_grad_(true), z2 = base.clone().requires_grad_(true);
  const torch::Tensor got = impl::so2_gate(z1, c.lmax, c.mmax, C), want = gate_reference(z2, c.lmax, c.mmax, C);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_LT(rel(got, want), c.tolerance);
  const torch::Tensor g1 = torch::autograd::grad({(got * probe).sum()}, {z1})[0];
  const torch::Tensor g2 = torch::autograd::grad({(want * probe).sum()}, {z2})[0];
  EXPECT_LT(rel(g1, g2), c.tolerance);
  std::printf("[ measured ] so2_gate %s L%d m%d: values %.1e, gradient %.1e (relative)\n", c10::toString(c.dtype),
              c.lmax, c.mmax, rel(got, want), rel(g1, g2));
}

INSTANTIATE_TEST_SUITE_P(Cases, So2GateTest, kGateCases, name_of);

TEST(So2Gate, RowsWiderThanTheHostBufferMatchToo) {
  // Host backends keep one double per channel on the stack (kHostChannels); wider rows take the
  // per-channel order. Both must give the composition's numbers.
  // That order is also the device order, so this covers it on host builds (mmax 1 and 2).
  constexpr int E = 3, C = 1030;
  for (const auto& [L, M] : {std::pair{2, 1}, std::pair{3, 2}}) {
    const int K = kk::band_rows(L, M);
    torch::manual_seed(9);
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(bridge::device());
    const torch::Tensor base = 3.0 * torch::randn({E, (K + L) * C}, opts), probe = torch::randn({E, K, C}, opts);
    const torch::Tensor z1 = base.clone().requires_grad_(true), z2 = base.clone().requires_grad_(true);
    const torch::Tensor got = impl::so2_gate(z1, L, M, C), want = gate_reference(z2, L, M, C);
    EXPECT_LT(rel(got, want), 1e-14) << "L" << L << "m" << M;
    const torch::Tensor g1 = torch::autograd::grad({(got * probe).sum()}, {z1})[0];
    const torch::Tensor g2 = torch::autograd::grad({(want * probe).sum()}, {z2})[0];
    EXPECT_LT(rel(g1, g2), 1e-14) << "L" << L << "m" << M;
  }
}

// Devices leave the kernel's sig0 / sig empty and it computes the sigmoids from z, in the
// compute precision (so2_gate.hpp); impl::so2_gate does that on a GPU build. Here the kernel is
// called directly with no sigmoids, so a host build runs that path too (per-channel order), in
// double (against the torch chain to 1e-14) and in float (sigmoids in float: to a few float
// ulps of the double torch chain, the fp32 cases' 2e-6 above).
template <class Real>
void check_kernel_sigmoids(double tolerance) {
  constexpr int E = 7, C = 20;
  const Exec exec = bridge::exec_instance();
  const auto dtype = std::is_same_v<Real, float> ? torch::kFloat32 : torch::kFloat64;
  // (3, 2): the per-channel form; the others: its form for lmax <= kShortDegrees (GateUpTo).
  const std::pair<int, int> shapes[] = {{2, 1}, {3, 2}, {2, 0}, {2, 2}, {1, 1}, {0, 0}};
  for (const auto& [L, M] : shapes) {
    const int K = kk::band_rows(L, M);
    torch::manual_seed(11);
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(bridge::device());
    const torch::Tensor z64 = 3.0 * torch::randn({E, (K + L) * C}, opts), probe64 = torch::randn({E, K, C}, opts);
    const torch::Tensor zr = z64.clone().requires_grad_(true);
    const torch::Tensor want = gate_reference(zr, L, M, C);
    const torch::Tensor want_grad = torch::autograd::grad({(want * probe64).sum()}, {zr})[0];
    // The kernel's inputs in its precision (z rounded once); the reference stays in double.
    const torch::Tensor z = z64.to(dtype), probe = probe64.to(dtype);
    const torch::Tensor x = torch::empty({E, K, C}, z.options()), gz = torch::empty_like(z);
    kk::So2Gate<Exec, Real> f;
    f.z = bridge::view2<const Real>(z, "z");
    f.x = bridge::view3<Real>(x, "x");
    f.grad_x = bridge::view3<const Real>(probe, "grad x");
    f.grad_z = bridge::view2<Real>(gz, "grad z");
    f.lmax = L;
    f.mmax = M;
    f.channels = C;
    ASSERT_EQ(f.sig0.extent(0), 0u);
    kk::so2_gate_forward(exec, f, E);
    kk::so2_gate_backward(exec, f, E);
    exec.fence("so2 gate test");
    EXPECT_LT(rel(x, want.detach()), tolerance) << "L" << L << "m" << M;
    EXPECT_LT(rel(gz, want_grad), tolerance) << "L" << L << "m" << M;
  }
}

TEST(So2Gate, SigmoidsComputedInTheKernelMatchToo) {
  check_kernel_sigmoids<double>(1e-14);
  check_kernel_sigmoids<float>(2e-6);
}

// ---- so2_linear ----------------------------------------------------------------------------
// A plan shaped like the evaluator's: block 0 with a bias over the first rows, m blocks without,
// and (partial) a plan that reads only the first input row and writes only block 0's columns,
// as the first layer does: the rest of z is zero, the rest of grad x is zero.
class So2LinearTest : public ::testing::TestWithParam<Case> {};

TEST_P(So2LinearTest, BlockGemmsMatchNarrowMmCat) {
  const Case c = GetParam();
  constexpr int E = 41, Cin = 12, Cout = 10;
  const int L = c.lmax, K = kk::band_rows(L, c.mmax);
  torch::manual_seed(7);
  const auto opts = torch::TensorOptions().dtype(c.dtype).device(bridge::device());
  for (const bool partial : {false, true}) {
    impl::So2Plan plan;
    plan.x_width = K * Cin;
    plan.z_width = K * Cout;
    plan.blocks.push_back({0, (partial ? 1 : L + 1) * Cin, 0, (L + 1) * Cout,
                           torch::randn({(L + 1) * Cout, (partial ? 1 : L + 1) * Cin}, opts),
                           torch::randn({(L + 1) * Cout}, opts)});
    for (int m = 1; m <= c.mmax && !partial; ++m) {
      const int start = kk::packed_block_start(m, L), rows = 2 * (L + 1 - m);
      plan.blocks.push_back({start * Cin, rows * Cin, start * Cout, rows * Cout,
                             torch::randn({rows * Cout, rows * Cin}, opts), torch::Tensor()});
    }
    const torch::Tensor base = torch::randn({E, K * Cin}, opts), probe = torch::randn({E, K * Cout}, opts);
    const torch::Tensor x1 = base.clone().requires_grad_(true), x2 = base.clone().requires_grad_(true);
    const torch::Tensor got = impl::so2_linear(x1, plan);
    std::vector<torch::Tensor> parts;
    int written = 0;
    for (const auto& b : plan.blocks) {
      const torch::Tensor in = x2.narrow(1, b.x_col, b.x_cols);
      parts.push_back(b.bias.defined() ? torch::addmm(b.bias, in, b.w.t()) : in.mm(b.w.t()));
      written += b.z_cols;
    }
    if (written < plan.z_width) parts.push_back(torch::zeros({E, plan.z_width - written}, opts));
    const torch::Tensor want = torch::cat(parts, 1);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_LT(rel(got, want), c.tolerance) << "partial " << partial;
    const torch::Tensor g1 = torch::autograd::grad({(got * probe).sum()}, {x1})[0];
    const torch::Tensor g2 = torch::autograd::grad({(want * probe).sum()}, {x2})[0];
    EXPECT_LT(rel(g1, g2), c.tolerance) << "partial " << partial;
    if (partial) {
      EXPECT_EQ(got.narrow(1, (L + 1) * Cout, (K - L - 1) * Cout).abs().max().item<double>(), 0.0);
      EXPECT_EQ(g1.narrow(1, Cin, (K - 1) * Cin).abs().max().item<double>(), 0.0);
    }
    std::printf("[ measured ] so2_linear %s L%d m%d%s: values %.1e, gradient %.1e (relative)\n", c10::toString(c.dtype),
                L, c.mmax, partial ? " (first-layer plan)" : "", rel(got, want), rel(g1, g2));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, So2LinearTest, kCases, name_of);

}  // namespace
