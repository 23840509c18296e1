// The fused equivariant RMS norm (kokkos/rms_norm.hpp through impl::rms_norm) against the
// torch composition it replaced (per degree: cast to double, mean of squares, + eps, sqrt,
// divide, cast back, times the scale): values and the gradient with respect to h, in fp64 and
// fp32, on a dense input and on a view that skips rows (the feed-forward's and readout's l = 0
// norms read only row 0 of [N, D, C]). Below it, model v2's rms_norm_sh (kokkos/rms_norm_sh.hpp)
// against its torch composition in the same way.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "bridge.hpp"
#include "ops.hpp"
#include "tensor_compare.hpp"

namespace {

using namespace edgeframe;

torch::Tensor reference(const torch::Tensor& h, const torch::Tensor& scale, int lmax, double eps) {
  std::vector<torch::Tensor> parts;
  for (int l = 0; l <= lmax; ++l) {
    const torch::Tensor wide = h.narrow(1, l * l, 2 * l + 1).to(torch::kFloat64);
    const torch::Tensor n = wide / torch::sqrt(wide.pow(2).mean({1, 2}, true) + eps);
    parts.push_back(n.to(h.scalar_type()) * scale[l]);
  }
  return torch::cat(parts, 1);
}

using test::rel;

struct Case {
  torch::Dtype dtype;
  int lmax;          // degrees normalised
  int rows;          // rows of the input per node (>= (lmax+1)^2: a view over the first ones)
  double tolerance;  // relative to the largest value
};

class RmsNormTest : public ::testing::TestWithParam<Case> {};

TEST_P(RmsNormTest, ValuesAndGradientMatchTheTorchComposition) {
  const Case c = GetParam();
  constexpr int N = 37, C = 24;
  constexpr double kEps = 1e-6;
  torch::manual_seed(3);
  const auto opts = torch::TensorOptions().dtype(c.dtype).device(bridge::device());
  // Degrees of very different sizes, and one node that is all zeros (rms = sqrt(eps)).
  torch::Tensor base = torch::randn({N, c.rows, C}, opts) * torch::linspace(0.01, 30.0, c.rows, opts).view({1, -1, 1});
  base[5].zero_();
  const torch::Tensor scale = torch::rand({c.lmax + 1, C}, opts) + 0.5;
  const torch::Tensor probe = torch::randn({N, (c.lmax + 1) * (c.lmax + 1), C}, opts);

  const torch::Tensor h1 = base.clone().requires_grad_(true), h2 = base.clone().requires_grad_(true);
  const torch::Tensor got = impl::rms_norm(h1, scale, c.lmax, kEps);
  const torch::Tensor want = reference(h2.narrow(1, 0, (c.lmax + 1) * (c.lmax + 1)), scale, c.lmax, kEps);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_LT(rel(got, want), c.tolerance);
  const torch::Tensor g1 = torch::autograd::grad({(got * probe).sum()}, {h1})[0];
  const torch::Tensor g2 = torch::autograd::grad({(want * probe).sum()}, {h2})[0];
  EXPECT_LT(rel(g1, g2), c.tolerance);
  // Rows beyond the normalised degrees get no gradient.
  const int used = (c.lmax + 1) * (c.lmax + 1);
  if (c.rows > used) {
    EXPECT_EQ(g1.narrow(1, used, c.rows - used).abs().max().item<double>(), 0.0);
  }
  std::printf("[ measured ] rms_norm %s lmax %d rows %d: values %.1e, gradient %.1e (relative)\n",
              c10::toString(c.dtype), c.lmax, c.rows, rel(got, want), rel(g1, g2));
}

// fp64: the same operations in another order (sums over (2l+1) C terms). fp32: values rounded
// once from double as in the reference; the reference's backward rounds grad * scale to float
// before going to double, the kernel does not (a few float ulps).
INSTANTIATE_TEST_SUITE_P(Cases, RmsNormTest,
                         ::testing::Values(Case{torch::kFloat64, 2, 9, 1e-14}, Case{torch::kFloat64, 3, 16, 1e-14},
                                           Case{torch::kFloat64, 0, 9, 1e-14}, Case{torch::kFloat32, 2, 9, 1e-6},
                                           Case{torch::kFloat32, 0, 16, 1e-6}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return std::string(c.dtype == torch::kFloat64 ? "fp64" : "fp32") + "_lmax" +
                                  std::to_string(c.lmax) + "_rows" + std::to_string(c.rows);
                         });

}  // namespace

// ---- model v2's rms_norm_sh (kokkos/rms_norm_sh.hpp) against the torch composition it replaced
namespace {

using namespace edgeframe;

torch::Tensor reference_sh(const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& b, int lmax,
                           double eps) {
  const int D = (lmax + 1) * (lmax + 1);
  const torch::Tensor h0 = h.narrow(1, 0, 1);
  const torch::Tensor x = torch::cat({h0 - h0.mean(2, true), h.narrow(1, 1, D - 1)}, 1);
  std::vector<double> row_weight;
  std::vector<std::int64_t> row_degree;
  for (int l = 0; l <= lmax; ++l)
    for (int k = 0; k < 2 * l + 1; ++k) {
      row_weight.push_back(1.0 / ((2 * l + 1) * (lmax + 1)));
      row_degree.push_back(l);
    }
  const torch::Tensor rw = torch::tensor(row_weight, h.options()).view({1, -1, 1});
  const torch::Tensor deg = torch::tensor(row_degree, torch::TensorOptions().dtype(torch::kLong).device(h.device()));
  const torch::Tensor ms = (x * x * rw).sum(1, true).mean(2, true);
  const torch::Tensor out = x * torch::rsqrt(ms + eps) * w.index_select(0, deg).unsqueeze(0);
  return torch::cat({out.narrow(1, 0, 1) + b.view({1, 1, -1}), out.narrow(1, 1, D - 1)}, 1);
}

struct ShCase {
  torch::Dtype dtype;
  int lmax;
  double tolerance;
};

class RmsNormShTest : public ::testing::TestWithParam<ShCase> {};

TEST_P(RmsNormShTest, ValuesAndGradientMatchTheTorchComposition) {
  const ShCase c = GetParam();
  constexpr int N = 29, C = 24;
  constexpr double kEps = 1e-6;
  const int D = (c.lmax + 1) * (c.lmax + 1);
  torch::manual_seed(5);
  const auto opts = torch::TensorOptions().dtype(c.dtype).device(bridge::device());
  // Degrees of very different sizes, an offset on degree 0 (the centring), and one node whose
  // degree 0 is constant and higher degrees zero (x = 0: out = b, r = eps^-1/2).
  torch::Tensor base = torch::randn({N, D, C}, opts) * torch::linspace(0.01, 30.0, D, opts).view({1, -1, 1});
  base.select(1, 0).add_(3.0);
  base[7].zero_();
  base[7][0].fill_(1.5);
  const torch::Tensor w = torch::rand({c.lmax + 1, C}, opts) + 0.5, b = torch::randn({C}, opts);
  const torch::Tensor probe = torch::randn({N, D, C}, opts);
  const torch::Tensor h1 = base.clone().requires_grad_(true), h2 = base.clone().requires_grad_(true);
  const torch::Tensor got = impl::rms_norm_sh(h1, w, b, c.lmax, kEps);
  const torch::Tensor want = reference_sh(h2, w, b, c.lmax, kEps);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_LT(rel(got, want), c.tolerance);
  const torch::Tensor g1 = torch::autograd::grad({(got * probe).sum()}, {h1})[0];
  const torch::Tensor g2 = torch::autograd::grad({(want * probe).sum()}, {h2})[0];
  EXPECT_LT(rel(g1, g2), c.tolerance);
  std::printf("[ measured ] rms_norm_sh %s lmax %d: values %.1e, gradient %.1e (relative)\n", c10::toString(c.dtype),
              c.lmax, rel(got, want), rel(g1, g2));
}

TEST(RmsNormSh, RefusesMismatchedShapes) {
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(bridge::device());
  const torch::Tensor h = torch::randn({4, 9, 8}, opts), b = torch::randn({8}, opts);
  EXPECT_THROW(impl::rms_norm_sh(h, torch::randn({2, 8}, opts), b, 2, 1e-6), ComputeError);  // w: lmax 1's
  EXPECT_THROW(impl::rms_norm_sh(h, torch::randn({4, 8}, opts), b, 3, 1e-6), ComputeError);  // h: lmax 2's rows
}

// fp64: the same sums in another order. fp32: torch's float statistics against the kernel's
// double ones, each output rounded once.
INSTANTIATE_TEST_SUITE_P(Cases, RmsNormShTest,
                         ::testing::Values(ShCase{torch::kFloat64, 2, 1e-13}, ShCase{torch::kFloat64, 3, 1e-13},
                                           ShCase{torch::kFloat64, 0, 1e-13}, ShCase{torch::kFloat32, 2, 2e-6}),
                         [](const auto& info) {
                           const ShCase& c = info.param;
                           return std::string(c.dtype == torch::kFloat64 ? "fp64" : "fp32") + "_lmax" +
                                  std::to_string(c.lmax);
                         });

}  // namespace
