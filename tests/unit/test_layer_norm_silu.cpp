// The fused LayerNorm + SiLU of model v2's radial MLPs (kokkos/layer_norm_silu.hpp through
// impl::layer_norm_silu) against the torch composition it replaced, silu(layer_norm(a +
// table_src[rows_send] + table_tgt[rows_recv])): values and the gradient with respect to a, in
// fp64 and fp32, with and without the embedding tables, on rows of very different scales and
// one constant row (variance 0: the eps alone sets the scale).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "bridge.hpp"
#include "ops.hpp"
#include "tensor_compare.hpp"

namespace {

using namespace edgeframe;

using test::rel;

struct Case {
  torch::Dtype dtype;
  bool tables;
  double tolerance;  // relative to the largest value
};

class LayerNormSiluTest : public ::testing::TestWithParam<Case> {};
void check_against_the_composition(const Case& c, int H);

// Widths: fewer channels than a GPU warp has lanes (idle lanes in every sum), more, and several
// per lane (each lane's partial sums run over up to 10 channels).
TEST_P(LayerNormSiluTest, ValuesAndGradientMatchTheTorchComposition) {
  for (const int H : {4, 40, 300}) check_against_the_composition(GetParam(), H);
}

void check_against_the_composition(const Case& c, int H) {
  SCOPED_TRACE("width " + std::to_string(H));
  constexpr int E = 53, Z = 7;
  constexpr double kEps = 1e-5;
  torch::manual_seed(11);
  const auto opts = torch::TensorOptions().dtype(c.dtype).device(bridge::device());
  const auto iopts = torch::TensorOptions().dtype(torch::kInt32).device(bridge::device());
  torch::Tensor base = torch::randn({E, H}, opts) * torch::logspace(-2, 2, E, 10.0, opts).view({-1, 1}) + 0.3;
  base[4].fill_(2.5);  // constant row
  const torch::Tensor w = torch::randn({H}, opts), b = torch::randn({H}, opts);
  impl::EdgeEmbeddingAdd add;
  if (c.tables) {
    add.table_src = torch::randn({Z, H}, opts);
    add.table_tgt = torch::randn({Z, H}, opts);
    add.row_send = torch::randint(0, Z, {E}, iopts);
    add.row_recv = torch::randint(0, Z, {E}, iopts);
    // The constant row stays constant: both of its tables' rows are equal constants.
    add.table_src[Z - 1].fill_(0.5);
    add.table_tgt[Z - 1].fill_(-1.0);
    add.row_send[4].fill_(Z - 1);
    add.row_recv[4].fill_(Z - 1);
  }
  const torch::Tensor probe = torch::randn({E, H}, opts);

  // The composition in fp64 of the same values (exact for fp32 inputs): torch's float
  // layer_norm loses about mean / std ulps in rows of small spread (up to 2e-6 relative here),
  // more than the kernel, whose statistics are in double.
  const auto f64 = [](const torch::Tensor& t) { return t.to(torch::kFloat64); };
  const torch::Tensor a1 = base.clone().requires_grad_(true), a2 = f64(base).requires_grad_(true);
  const torch::Tensor got = impl::layer_norm_silu(a1, w, b, kEps, add);
  torch::Tensor x = a2;
  if (c.tables)
    x = x + f64(add.table_src).index_select(0, add.row_send.to(torch::kLong)) +
        f64(add.table_tgt).index_select(0, add.row_recv.to(torch::kLong));
  const torch::Tensor want = torch::silu(torch::layer_norm(x, {H}, f64(w), f64(b), kEps));
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_LT(rel(f64(got), want), c.tolerance);
  const torch::Tensor g1 = torch::autograd::grad({(got * probe).sum()}, {a1})[0];
  const torch::Tensor g2 = torch::autograd::grad({(want * f64(probe)).sum()}, {a2})[0];
  EXPECT_LT(rel(f64(g1), g2), c.tolerance);
  // The constant row's output is silu(b) (xhat = 0) and so is the composition's.
  EXPECT_LT(rel(got[4], torch::silu(b)), c.tolerance);
  std::printf("[ measured ] layer_norm_silu %s tables %d width %d: values %.1e, gradient %.1e (relative)\n",
              c10::toString(c.dtype), int(c.tables), H, rel(got, want), rel(g1, g2));
}

TEST(LayerNormSilu, RefusesMismatchedShapes) {
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(bridge::device());
  const torch::Tensor a = torch::randn({5, 8}, opts), w = torch::randn({7}, opts), b = torch::randn({8}, opts);
  EXPECT_THROW(impl::layer_norm_silu(a, w, b, 1e-5), ComputeError);
  impl::EdgeEmbeddingAdd add;
  add.table_src = torch::randn({3, 8}, opts);
  add.table_tgt = torch::randn({3, 8}, opts);
  add.row_send = torch::zeros({5}, opts.dtype(torch::kLong));  // int64: refused (int32 rows)
  add.row_recv = torch::zeros({5}, opts.dtype(torch::kLong));
  EXPECT_THROW(impl::layer_norm_silu(a, b, b, 1e-5, add), ComputeError);
}

// fp64: the same operations in another order (the kernel's statistics are in double for both
// dtypes). fp32: the kernel's float rounding of s, its sigmoid and each output against the
// composition in fp64, a few float ulps (measured up to 9.3e-8 on the CPU).
INSTANTIATE_TEST_SUITE_P(Cases, LayerNormSiluTest,
                         ::testing::Values(Case{torch::kFloat64, false, 1e-13}, Case{torch::kFloat64, true, 1e-13},
                                           Case{torch::kFloat32, false, 5e-7}, Case{torch::kFloat32, true, 5e-7}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return std::string(c.dtype == torch::kFloat64 ? "fp64" : "fp32") +
                                  (c.tables ? "_tables" : "_plain");
                         });

}  // namespace
