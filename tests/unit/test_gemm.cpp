// The precision modes' GEMMs (src/engine/gemm.hpp) against fp64 products of the same fp32
// operands, on the engine's device: on CUDA builds the real TF32 / bf16 tensor-core paths, on
// host builds the same algebra in fp32 GEMMs (there tf32x3 tests the split and its recombination,
// and bf16 the operand rounding). Errors are relative to the largest |entry| of the fp64 product.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bridge.hpp"
#include "gemm.hpp"
#include "runtime.hpp"
#include "tensor_compare.hpp"

namespace {

using namespace edgeframe;
using impl::GemmScope;
using test::rel;
using torch::Tensor;

Tensor random_fp32(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  torch::manual_seed(seed);
  // Mixed magnitudes: a plain randn hides errors that only show with a spread of exponents.
  const auto opt = torch::TensorOptions().dtype(torch::kFloat).device(bridge::device());
  return torch::randn({rows, cols}, opt) * torch::exp(2.0 * torch::randn({rows, cols}, opt));
}

Tensor fp64_product(const Tensor& a, const Tensor& b) { return a.to(torch::kFloat64).mm(b.to(torch::kFloat64)); }

TEST(Gemm, TheTf32SplitHasAnExactTf32HeadAndAnExactTail) {
  const Tensor x = random_fp32(257, 129, 1);
  const auto [hi, lo] = impl::split_tf32(x);
  const Tensor bits = hi.view(torch::kInt32).bitwise_and((1 << 13) - 1);
  EXPECT_EQ(bits.count_nonzero().item<std::int64_t>(), 0) << "hi keeps bits TF32 does not have";
  EXPECT_TRUE(torch::equal(hi + lo, x)) << "hi + lo must be x exactly";
  // Rounded to nearest: the tail is at most half a TF32 ulp, 2^-11 of |x|.
  const double worst = (lo.abs() / x.abs().clamp_min(1e-30)).max().item<double>();
  EXPECT_LE(worst, std::ldexp(1.0, -11) * (1 + 1e-6));
}

TEST(Gemm, Tf32x3GivesFp32sAccuracy) {
  const Tensor a = random_fp32(300, 384, 2), b = random_fp32(384, 200, 3);
  const Tensor want = fp64_product(a, b);
  double err_fp32 = 0, err_x3 = 0;
  {
    const GemmScope scope(Precision::fp32);
    err_fp32 = rel(impl::gemm(a, b), want);
  }
  {
    const GemmScope scope(Precision::tf32x3);
    err_x3 = rel(impl::gemm(a, b), want);
    // a transposed operand (the models pass w.t()) and a bias, into a column view
    Tensor wide = torch::zeros({300, 250}, a.options());
    Tensor out = wide.narrow(1, 20, 200);
    const Tensor bt = b.t().contiguous().t(), bias = random_fp32(1, 200, 4).view({200});
    impl::gemm_out(out, a, bt, bias);
    EXPECT_LT(rel(out, want + bias.to(torch::kFloat64)), 4 * std::max(err_fp32, 1e-7));
    EXPECT_EQ(wide.narrow(1, 0, 20).count_nonzero().item<std::int64_t>(), 0) << "wrote outside its columns";
  }
  std::printf("[ measured ] 300x384x200: fp32 %.2e, tf32x3 %.2e of the largest entry\n", err_fp32, err_x3);
  EXPECT_LT(err_x3, 4 * std::max(err_fp32, 1e-7));
  if (tf32_available()) {  // and plain TF32 is far worse, so the split is what makes the difference
    const GemmScope scope(Precision::tf32);
    const double err_tf32 = rel(impl::gemm(a, b), want);
    std::printf("[ measured ] 300x384x200: tf32 %.2e\n", err_tf32);
    EXPECT_GT(err_tf32, 20 * err_x3);
  }
}

// The split mode's tensor-core kernel (gemm_tf32x3_tensor_cores, kokkos/tensor_core_gemm.hpp) at
// shapes that cut every tile edge (M, N, K not multiples of the kernel's tile; K from 4, one k step,
// to 1024, with two and three k steps of 16 or 32 between),
// both storage orders of B, with and without a bias, from a column range of a wider A into a
// column range of a wider C: within 4x cuBLAS fp32's error against fp64 (as the split from torch
// ops above) and nothing written outside the range. The
// all-positive case of K 1024 catches sums left to the tensor cores' accumulator, which rounds
// toward zero: a bias of a few hundred fp32 ulps there, about 20x fp32's error.
TEST(Gemm, Tf32x3TensorCoreKernelOverEveryTileEdge) {
  const bool cuda = bridge::device().is_cuda();
  struct Case {
    int m, k, n;
    bool positive;
  };
  const Case cases[] = {{1000, 388, 200, false}, {129, 16, 132, false}, {37, 1024, 512, false},
                        {700, 1024, 256, true},  {5, 4, 4, false},      {200, 48, 64, false}};
  // Both kernels where the device runs them (wgmma: compute capability 9.0; elsewhere declined).
  for (const auto kernel : {impl::TensorCoreKernel::mma_sync, impl::TensorCoreKernel::wgmma}) {
    const char* kernel_name = kernel == impl::TensorCoreKernel::wgmma ? "wgmma" : "mma.sync";
    std::uint64_t seed = 30;
    double worst = 0, worst_fp32 = 0;
    bool ran = true;
    for (const Case& c : cases) {
      Tensor a_wide = random_fp32(c.m, c.k + 8, ++seed), w = random_fp32(c.n, c.k, ++seed);
      Tensor b_kn = random_fp32(c.k, c.n, ++seed);
      const Tensor bias = random_fp32(1, c.n, ++seed).view({c.n});
      if (c.positive) a_wide.abs_(), w.abs_(), b_kn.abs_();
      const Tensor a = a_wide.narrow(1, 4, c.k);  // row stride k + 8, 16-byte offset
      for (const Tensor& b : {w.t(), b_kn}) {
        for (const bool with_bias : {false, true}) {
          const Tensor bb = with_bias ? bias : Tensor();
          const std::string where = "m " + std::to_string(c.m) + " k " + std::to_string(c.k) + " n " +
                                    std::to_string(c.n) + (b.is_contiguous() ? " B [K, N]" : " B = W^T") +
                                    (with_bias ? ", bias" : "");
          Tensor want = fp64_product(a, b);
          if (with_bias) want = want + bias.to(torch::kFloat64);
          Tensor wide = torch::zeros({c.m, c.n + 8}, a.options());
          Tensor out = wide.narrow(1, 4, c.n);
          const bool done = impl::gemm_tf32x3_tensor_cores(out, a, b, bb, kernel);
          if (kernel == impl::TensorCoreKernel::wgmma && cuda && !done) {
            ran = false;  // not a device of compute capability 9.0: declined, nothing written
            EXPECT_EQ(wide.count_nonzero().item<std::int64_t>(), 0) << where;
            continue;
          }
          ASSERT_EQ(done, cuda) << where << " (" << kernel_name << ")";
          if (!cuda) continue;
          double err_fp32 = 0;
          {
            const GemmScope scope(Precision::fp32);
            err_fp32 = rel(impl::gemm(a, b, bb), want);
          }
          const double err = rel(out, want);
          worst = std::max(worst, err);
          worst_fp32 = std::max(worst_fp32, err_fp32);
          EXPECT_LT(err, 4 * std::max(err_fp32, 1e-7)) << where << " (" << kernel_name << "): fp32 " << err_fp32;
          EXPECT_EQ(wide.narrow(1, 0, 4).count_nonzero().item<std::int64_t>(), 0) << where << ": wrote left";
          EXPECT_EQ(wide.narrow(1, c.n + 4, 4).count_nonzero().item<std::int64_t>(), 0) << where << ": wrote right";
        }
      }
    }
    if (cuda && ran)
      std::printf("[ measured ] tensor-core 3xTF32 (%s) worst %.2e of the largest entry, cuBLAS fp32 %.2e\n",
                  kernel_name, worst, worst_fp32);
  }
  if (!cuda) GTEST_SKIP() << "the tensor-core kernel runs on CUDA builds only (declined here, as it should be)";
  // No rows: nothing to do, done. A row stride that is not a multiple of 4: declined, nothing written.
  Tensor none = torch::empty({0, 8}, torch::TensorOptions().dtype(torch::kFloat).device(bridge::device()));
  EXPECT_TRUE(impl::gemm_tf32x3_tensor_cores(none, random_fp32(0, 4, 1), random_fp32(4, 8, 2)));
  Tensor wide = torch::zeros({10, 10}, none.options());
  Tensor out = wide.narrow(1, 0, 8);
  EXPECT_FALSE(impl::gemm_tf32x3_tensor_cores(out, random_fp32(10, 4, 3), random_fp32(4, 8, 4)));
  EXPECT_EQ(wide.count_nonzero().item<std::int64_t>(), 0);
}

// The SO(2) blocks' form: a bias and a column range of a wider output. On CUDA that goes through
// cuBLASLt with the bias in its epilogue (gemm_bias_in_epilogue) for both storage orders of
// either operand and at an offset that is only 16-byte aligned; on host builds through addmm.
// Either way: the product and bias to the mode's accuracy (TF32's error where TF32 is on, far
// above fp32's), and no column outside the range written.
TEST(Gemm, BiasIntoAColumnRangeOfAWiderOutput) {
  const Tensor a = random_fp32(1000, 384, 12), w = random_fp32(256, 384, 13);
  const Tensor bias = random_fp32(1, 256, 14).view({256});
  const Tensor want = fp64_product(a, w.t()) + bias.to(torch::kFloat64);
  const bool cuda = bridge::device().is_cuda();
  const Tensor a_column_major = a.t().contiguous().t(), b_row_major = w.t().contiguous();
  double err_fp32 = 0;
  std::vector<Precision> precisions{Precision::fp32};
  if (tf32_available()) precisions.push_back(Precision::tf32);
  for (const Precision p : precisions) {
    const GemmScope scope(p);
    // the contiguous product of the same mode sets the accuracy to expect
    const double err_contiguous = rel(impl::gemm(a, w.t(), bias), want);
    double worst = 0;
    for (const Tensor& a_form : {a, a_column_major}) {
      for (const Tensor& b_form : {w.t(), b_row_major}) {
        for (const std::int64_t offset : {std::int64_t{0}, std::int64_t{20}}) {
          Tensor wide = torch::zeros({1000, 640}, a.options());
          Tensor out = wide.narrow(1, offset, 256);
          impl::gemm_out(out, a_form, b_form, bias);
          const double err = rel(out, want);
          worst = std::max(worst, err);
          EXPECT_LT(err, 4 * std::max(err_contiguous, 1e-7))
              << "precision " << static_cast<int>(p) << ", offset " << offset;
          EXPECT_EQ(wide.narrow(1, 0, offset).count_nonzero().item<std::int64_t>(), 0) << "wrote left of its columns";
          EXPECT_EQ(wide.narrow(1, offset + 256, 640 - offset - 256).count_nonzero().item<std::int64_t>(), 0)
              << "wrote right of its columns";
          // The epilogue path itself: taken on CUDA for every one of these forms, declined on the host.
          Tensor again = torch::zeros({1000, 640}, a.options()).narrow(1, offset, 256);
          EXPECT_EQ(impl::gemm_bias_in_epilogue(again, a_form, b_form, bias), cuda) << "offset " << offset;
          if (cuda) {
            EXPECT_TRUE(torch::equal(again, out)) << "gemm_out took another path";
          }
        }
      }
    }
    if (p == Precision::fp32) err_fp32 = worst;
    if (cuda) {
      std::printf("[ measured ] 1000x384x256 + bias into a column range, precision %d: %.2e (contiguous addmm %.2e)\n",
                  static_cast<int>(p), worst, err_contiguous);
      if (p == Precision::tf32) {
        EXPECT_GT(worst, 20 * err_fp32) << "TF32 was on but the epilogue GEMM ran in fp32";
      }
    }
  }
  // Declined, with nothing written: fp64 (addmm keeps it), a bias that is a misaligned slice.
  Tensor wide64 = torch::zeros({1000, 640}, a.options().dtype(torch::kFloat64));
  Tensor out64 = wide64.narrow(1, 0, 256);
  EXPECT_FALSE(
      impl::gemm_bias_in_epilogue(out64, a.to(torch::kFloat64), w.t().to(torch::kFloat64), bias.to(torch::kFloat64)));
  const Tensor bias_slice = random_fp32(1, 257, 15).view({257}).narrow(0, 1, 256);  // 4-byte aligned
  Tensor wide = torch::zeros({1000, 640}, a.options());
  Tensor out = wide.narrow(1, 0, 256);
  EXPECT_FALSE(impl::gemm_bias_in_epilogue(out, a, w.t(), bias_slice));
  EXPECT_EQ(wide.count_nonzero().item<std::int64_t>(), 0);
}

TEST(Gemm, Bf16RoundsTheOperandsAndSumsInFp32) {
  const Tensor a = random_fp32(300, 384, 5), b = random_fp32(384, 200, 6);
  const GemmScope scope(Precision::bf16);
  const Tensor got = impl::gemm(a, b);
  // The same operands rounded to bf16, multiplied in fp64: only the fp32 summation differs.
  const Tensor rounded =
      fp64_product(a.to(torch::kBFloat16).to(torch::kFloat), b.to(torch::kBFloat16).to(torch::kFloat));
  const double err_sum = rel(got, rounded), err = rel(got, fp64_product(a, b));
  std::printf("[ measured ] 300x384x200 bf16: %.2e of the largest entry (fp32 summation %.2e)\n", err, err_sum);
  EXPECT_LT(err_sum, 1e-5);
  EXPECT_LT(err, 2e-2);  // bf16 keeps 8 mantissa bits: 2^-9 per operand, averaged over K
  EXPECT_GT(err, 1e-4);  // and the rounding really happened
}

// bf16 operands (as the kernels store them for the bf16 mode, ops.hpp so2_convolution) taken
// as they are, from column ranges of wider bf16 matrices, into a column range of a wider fp32
// output, with and without a bias: the rounded operands' product summed in fp32, nothing written
// outside the range, and on CUDA the one-call cuBLASLt path (gemm_bf16_lt) taken.
TEST(Gemm, Bf16OperandsIntoAColumnRangeOfAWiderOutput) {
  const Tensor a_wide = random_fp32(1000, 512, 15).to(torch::kBFloat16);
  const Tensor w = random_fp32(256, 384, 16).to(torch::kBFloat16), bias = random_fp32(1, 256, 17).view({256});
  const bool cuda = bridge::device().is_cuda();
  const GemmScope scope(Precision::fp32);  // bf16 operands take the bf16 GEMM in any mode
  for (const std::int64_t a_offset : {std::int64_t{0}, std::int64_t{64}}) {
    const Tensor a = a_wide.narrow(1, a_offset, 384);
    for (const bool with_bias : {false, true}) {
      const Tensor b = with_bias ? bias : Tensor();
      Tensor want = fp64_product(a.to(torch::kFloat), w.t().to(torch::kFloat));
      if (with_bias) want = want + bias.to(torch::kFloat64);
      for (const std::int64_t offset : {std::int64_t{0}, std::int64_t{32}}) {
        Tensor wide = torch::zeros({1000, 640}, bias.options());
        Tensor out = wide.narrow(1, offset, 256);
        impl::gemm_out(out, a, w.t(), b);
        const double err = rel(out, want);
        EXPECT_LT(err, 1e-5) << "a offset " << a_offset << ", bias " << with_bias << ", offset " << offset;
        EXPECT_EQ(wide.narrow(1, 0, offset).count_nonzero().item<std::int64_t>(), 0) << "wrote left of its columns";
        EXPECT_EQ(wide.narrow(1, offset + 256, 640 - offset - 256).count_nonzero().item<std::int64_t>(), 0)
            << "wrote right of its columns";
        Tensor again = torch::zeros({1000, 640}, bias.options()).narrow(1, offset, 256);
        EXPECT_EQ(impl::gemm_bf16_lt(again, a, w.t(), b), cuda) << "a offset " << a_offset << ", offset " << offset;
        if (cuda) {
          EXPECT_TRUE(torch::equal(again, out)) << "gemm_out took another path";
        }
      }
      // gemm() of bf16 operands: an fp32 product, not one rounded to bf16 (the pack's backward
      // hands it its bf16 grad_g on CUDA; so2_convolution's GPU test found the rounding)
      const Tensor product = impl::gemm(a, w.t(), b);
      EXPECT_EQ(product.scalar_type(), torch::kFloat);
      EXPECT_LT(rel(product, want), 1e-5);
    }
  }
}

// impl::linear as an autograd op: value and the gradients of a, w and the bias in tf32x3 as in
// fp64, and a kept for the backward only when w needs a gradient.
TEST(Gemm, LinearsBackwardUsesTheSameMode) {
  const Tensor a0 = random_fp32(64, 96, 7), w0 = random_fp32(48, 96, 8), b0 = random_fp32(1, 48, 9).view({48});
  const Tensor g = random_fp32(64, 48, 10);
  auto grads = [&](torch::Dtype dtype, Precision p) {
    const GemmScope scope(p);
    Tensor a = a0.to(dtype).requires_grad_(), w = w0.to(dtype).requires_grad_(), b = b0.to(dtype).requires_grad_();
    const Tensor y = impl::gemm_linear(a, w, b);
    const auto d = torch::autograd::grad({y}, {a, w, b}, {g.to(dtype)});
    return std::vector<Tensor>{y.detach(), d[0], d[1], d[2]};
  };
  const auto want = grads(torch::kFloat64, Precision::fp64);
  const auto fp32 = grads(torch::kFloat, Precision::fp32);
  const auto x3 = grads(torch::kFloat, Precision::tf32x3);
  for (int k = 0; k < 4; ++k) {
    const double e32 = rel(fp32[k], want[k]);
    EXPECT_LT(rel(x3[k], want[k]), 4 * std::max(e32, 1e-7)) << "output " << k;
  }
  // [..., K] inputs as rows of one GEMM
  const GemmScope scope(Precision::tf32x3);
  const Tensor a3 = random_fp32(60, 96, 11).view({20, 3, 96});
  const Tensor y3 = impl::gemm_linear(a3, w0);
  EXPECT_EQ(y3.sizes(), (std::vector<std::int64_t>{20, 3, 48}));
  EXPECT_LT(rel(y3, fp64_product(a3.reshape({60, 96}), w0.t()).view({20, 3, 48})), 1e-6);
}

TEST(Gemm, TheScopeRestoresTheModeAndTorchsTf32Switch) {
  const bool before = at::globalContext().allowTF32CuBLAS();
  {
    const GemmScope outer(Precision::tf32);
    EXPECT_TRUE(at::globalContext().allowTF32CuBLAS());
    {
      const GemmScope inner(Precision::tf32x3);
      EXPECT_EQ(impl::gemm_mode(), impl::GemmMode::tf32x3);
      EXPECT_FALSE(at::globalContext().allowTF32CuBLAS()) << "tf32x3 keeps TF32 off outside its own GEMMs";
    }
    EXPECT_EQ(impl::gemm_mode(), impl::GemmMode::native);
    EXPECT_TRUE(at::globalContext().allowTF32CuBLAS());
  }
  EXPECT_EQ(at::globalContext().allowTF32CuBLAS(), before);
}

}  // namespace
