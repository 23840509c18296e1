// bfloat16 storage of the kernel outputs that feed the bf16 GEMMs (kokkos/bf16.hpp) and the
// layer's edge block in one function (impl::so2_convolution):
// - kk::to_bf16 rounds as torch does (c10::BFloat16), bit for bit;
// - each kernel with a Bf16 output (pack forward, its backward-edge pass's grad_g, gate forward
//   and backward, unrotate backward; every form that takes one) stores exactly its Real output rounded by torch;
// - so2_convolution gives the numbers of the five calls it stands for (edge_frame_pack,
//   so2_linear, so2_gate, so2_linear, unrotate_aggregate): in fp32, and with bf16 storage
//   against those calls under the bf16 GEMM mode, which round the same operands in the GEMMs.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "band_layout.hpp"
#include "bf16.hpp"
#include "bridge.hpp"
#include "edge_frame_pack.hpp"
#include "gemm.hpp"
#include "graph.hpp"
#include "ops.hpp"
#include "so2_gate.hpp"
#include "tensor_compare.hpp"
#include "unrotate_aggregate.hpp"
#include "upload_graph.hpp"
#include "workspace.hpp"

namespace {

using namespace edgeframe;
using Exec = bridge::Exec;
using test::rel;

bool same_values(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && torch::equal(a.cpu(), b.cpu());
}

TEST(Bf16, RoundsToNearestEvenAsTorchDoes) {
  std::vector<std::uint32_t> bits = {0x00000000u, 0x80000000u, 0x3F800000u, 0x7F800000u, 0xFF800000u,
                                     0x7F7FFFFFu,                            // the largest float: rounds up to infinity
                                     0x00008000u, 0x00018000u, 0x80008000u,  // subnormal ties
                                     0x3F808000u, 0x3F818000u, 0x3F807FFFu, 0x3F808001u, 0xBF818000u};
  std::mt19937 rng(7);
  for (int k = 0; k < 20000; ++k) {
    const std::uint32_t b = rng();
    if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu)) continue;  // NaN: checked below
    bits.push_back(b);
    bits.push_back((b & 0xFFFF0000u) | 0x8000u);  // an exact tie
  }
  std::vector<float> v(bits.size());
  std::memcpy(v.data(), bits.data(), bits.size() * sizeof(float));
  const torch::Tensor t = torch::from_blob(v.data(), {std::int64_t(v.size())}, torch::kFloat32).to(torch::kBFloat16);
  const auto* want = static_cast<const std::uint16_t*>(t.data_ptr());
  int wrong = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const kk::Bf16 got = kk::to_bf16(v[i]);
    if (got.bits != want[i] && ++wrong < 5)
      ADD_FAILURE() << std::hex << "float bits 0x" << bits[i] << ": 0x" << got.bits << ", torch 0x" << want[i];
    float back;
    const std::uint32_t up = std::uint32_t(want[i]) << 16;
    std::memcpy(&back, &up, sizeof back);
    if (!(kk::from_bf16(got) == back || std::isnan(back))) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_TRUE(std::isnan(kk::from_bf16(kk::to_bf16(std::nanf("")))));
}

// A small molecule-like graph (every pair within the cutoff, no periodic images), its edge
// vectors, and a float step context with its band and envelope.
struct EdgeCase {
  static constexpr int L = 2, M = 2, C = 16, H = 12, Hr = 6;
  test::DeviceGraph dg;
  Workspace ws;
  impl::StepContext step;
  torch::Tensor vec, band, env;

  EdgeCase() {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> box(0.0, 5.0);
    const int N = 9;
    std::vector<double> x(3 * N), shift;
    std::vector<int> species(N, 0), pi, pj;
    for (double& q : x) q = box(rng);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j)
        if (i != j) {
          pi.push_back(i);
          pj.push_back(j);
          shift.insert(shift.end(), {0.0, 0.0, 0.0});
        }
    dg = test::upload_graph(x, species, pi, pj, shift, N, 6.0);
    step.graph = dg.graph.edges;
    step.workspace = &ws;
    step.dtype = torch::kFloat32;
    step.lmax = L;
    step.mmax = M;
    step.channels = C;
    step.n_rbf = 1;
    step.envelope_p = 5;
    step.r_cut = 6.0;
    step.scale = 1.0;
    const int E = step.graph.n_edges;
    kk::Vec3View<double, Exec> v("vec", E);
    kk::compute_edge_vectors(bridge::exec_instance(), step.graph, kk::Vec3View<const double, Exec>(dg.x), v);
    Kokkos::fence();
    vec = bridge::tensor_of(v, {E, 3}).clone().requires_grad_(true);
    const auto geo = impl::edge_geometry(vec, step);
    band = geo[0];
    env = geo[2];
  }
  int edges() const { return step.graph.n_edges; }
  int nodes() const { return step.graph.n_nodes; }
};

torch::TensorOptions f32() { return torch::TensorOptions().dtype(torch::kFloat32).device(bridge::device()); }

// Bf16 outputs against Real outputs rounded by torch, for each kernel and form that takes one.
TEST(Bf16, EveryKernelStoresItsRealOutputRounded) {
  EdgeCase k;
  constexpr int L = EdgeCase::L, M = EdgeCase::M, C = EdgeCase::C, H = EdgeCase::H;
  const int E = k.edges(), N = k.nodes(), K = kk::band_rows(L, M);
  ASSERT_GT(E, 30);
  torch::manual_seed(11);
  const Exec exec = bridge::exec_instance();
  const torch::Tensor band = k.band.detach().contiguous(), env = k.env.detach().contiguous();
  const auto bf = [](const torch::Tensor& t) { return t.to(torch::kBFloat16); };

  // pack forward, both forms
  const torch::Tensor n = torch::randn({N, kk::n_coeffs(L), C}, f32());
  const torch::Tensor g = torch::randn({E, kk::gate_rows(L, M), 2 * C}, f32());
  kk::EdgeFramePack<Exec, float> p;
  p.n = bridge::view3<const float>(n, "n");
  p.band = bridge::view2<const float>(band, "band");
  p.g = bridge::view3<const float>(g, "g");
  p.recv = k.step.graph.recv;
  p.send = k.step.graph.send;
  p.lmax = L;
  p.mmax = M;
  p.channels = C;
  for (const kk::KernelForm form : {kk::KernelForm::host, kk::KernelForm::device}) {
    const torch::Tensor u = torch::empty({E, K, 2 * C}, f32()), ub = bf(u).zero_();
    kk::edge_frame_pack_forward_into(exec, p, bridge::view3<float>(u, "u"), E, form);
    kk::edge_frame_pack_forward_into(exec, p, bridge::view3<kk::Bf16>(ub, "u bf16"), E, form);
    exec.fence();
    EXPECT_TRUE(same_values(ub, bf(u))) << "pack forward, form " << int(form);
  }

  // pack backward-edge's grad_g: the device form (the host form sums in grad_g and refuses Bf16)
  {
    const torch::Tensor gu = torch::randn({E, K, 2 * C}, f32());
    const torch::Tensor rot = torch::empty_like(gu), gband = torch::empty_like(band);
    const torch::Tensor gg = torch::empty_like(g), ggb = bf(gg).zero_();
    kk::EdgeFramePack<Exec, float> q = p;
    q.grad_u = bridge::view3<const float>(gu, "grad u");
    q.grad_rot = bridge::view3<float>(rot, "grad rot");
    q.grad_band = bridge::view2<float>(gband, "grad band");
    kk::edge_frame_pack_backward_edge_into(exec, q, bridge::view3<float>(gg, "grad g"), E, kk::KernelForm::device);
    kk::edge_frame_pack_backward_edge_into(exec, q, bridge::view3<kk::Bf16>(ggb, "grad g bf16"), E,
                                           kk::KernelForm::device);
    exec.fence();
    EXPECT_TRUE(same_values(ggb, bf(gg))) << "pack backward-edge grad_g, device form";
    EXPECT_THROW(kk::edge_frame_pack_backward_edge_into(exec, q, bridge::view3<kk::Bf16>(ggb, "grad g bf16"), E,
                                                        kk::KernelForm::host),
                 std::invalid_argument);
  }

  // gate forward and backward: sigmoids computed by the kernel, and (host backends) given
  const torch::Tensor z = 3.0 * torch::randn({E, (K + L) * H}, f32());
  const torch::Tensor gx = torch::randn({E, K, H}, f32());
  for (const bool given : {false, true}) {
    if (given && !kk::gate_takes_sigmoids<Exec>()) continue;
    const torch::Tensor s0 = torch::sigmoid(z.narrow(1, 0, H)).contiguous();
    const torch::Tensor sg = torch::sigmoid(z.narrow(1, (L + 1) * H, L * H)).contiguous();
    const torch::Tensor x = torch::empty({E, K, H}, f32()), xb = bf(x).zero_();
    const torch::Tensor gz = torch::empty_like(z), gzb = bf(gz).zero_();
    auto run = [&](auto out) {
      using Out = decltype(out);
      kk::So2Gate<Exec, float, Out> f;
      f.z = bridge::view2<const float>(z, "z");
      if (given) {
        f.sig0 = bridge::view2<const float>(s0, "sig0");
        f.sig = bridge::view2<const float>(sg, "sig");
      }
      f.lmax = L;
      f.mmax = M;
      f.channels = H;
      f.x = bridge::view3<Out>(std::is_same_v<Out, float> ? x : xb, "x");
      f.grad_x = bridge::view3<const float>(gx, "grad x");
      f.grad_z = bridge::view2<Out>(std::is_same_v<Out, float> ? gz : gzb, "grad z");
      kk::so2_gate_forward(exec, f, E);
      kk::so2_gate_backward(exec, f, E);
    };
    run(float{});
    run(kk::Bf16{});
    exec.fence();
    EXPECT_TRUE(same_values(xb, bf(x))) << "gate forward, sigmoids given " << given;
    EXPECT_TRUE(same_values(gzb, bf(gz))) << "gate backward, sigmoids given " << given;
  }

  // unrotate backward: the device form (the host form sums in grad_w and refuses Bf16)
  const torch::Tensor w = torch::randn({E, K, C}, f32()), ga = torch::randn({N, kk::n_coeffs(L), C}, f32());
  const torch::Tensor gb = torch::empty_like(band), ge = torch::empty_like(env);
  kk::UnrotateAggregate<Exec, float> u;
  u.w = bridge::view3<const float>(w, "w");
  u.band = bridge::view2<const float>(band, "band");
  u.env = bridge::view1<const float>(env, "env");
  u.recv = k.step.graph.recv;
  u.recv_offsets = k.step.graph.recv_offsets;
  u.grad_agg = bridge::view3<const float>(ga, "grad agg");
  u.grad_band = bridge::view2<float>(gb, "grad band");
  u.grad_env = bridge::view1<float>(ge, "grad env");
  u.scale = 1.0;
  u.lmax = L;
  u.mmax = M;
  u.channels = C;
  const torch::Tensor gw = torch::empty({E, K, C}, f32()), gwb = bf(gw).zero_();
  kk::unrotate_aggregate_backward_into(exec, u, bridge::view3<float>(gw, "grad w"), E, kk::KernelForm::device);
  kk::unrotate_aggregate_backward_into(exec, u, bridge::view3<kk::Bf16>(gwb, "grad w bf16"), E, kk::KernelForm::device);
  exec.fence();
  EXPECT_TRUE(same_values(gwb, bf(gw))) << "unrotate backward, device form";
  EXPECT_THROW(kk::unrotate_aggregate_backward_into(exec, u, bridge::view3<kk::Bf16>(gwb, "grad w bf16"), E,
                                                    kk::KernelForm::host),
               std::invalid_argument);
}

// The two SO(2) linears of a layer as model_v2.cpp lays them out, random weights.
struct Plans {
  impl::So2Plan so2_1, so2_2;
  Plans(int L, int M, int C, int H) {
    const int rows = kk::band_rows(L, M);
    auto rnd = [](int out, int in) { return torch::randn({out, in}, f32()) / std::sqrt(double(in)); };
    so2_1.x_width = rows * 2 * C;
    so2_1.z_width = (rows + L) * H;
    so2_1.blocks.push_back({0, (L + 1) * 2 * C, 0, (2 * L + 1) * H, rnd((2 * L + 1) * H, (L + 1) * 2 * C),
                            torch::randn({(2 * L + 1) * H}, f32())});
    so2_2.x_width = rows * H;
    so2_2.z_width = rows * C;
    so2_2.blocks.push_back(
        {0, (L + 1) * H, 0, (L + 1) * C, rnd((L + 1) * C, (L + 1) * H), torch::randn({(L + 1) * C}, f32())});
    for (int m = 1; m <= M; ++m) {
      const int start = kk::packed_block_start(m, L), mrows = 2 * (L + 1 - m);
      so2_1.blocks.push_back(
          {start * 2 * C, mrows * 2 * C, (start + L) * H, mrows * H, rnd(mrows * H, mrows * 2 * C), torch::Tensor()});
      so2_2.blocks.push_back({start * H, mrows * H, start * C, mrows * C, rnd(mrows * C, mrows * H), torch::Tensor()});
    }
    impl::validate(so2_1);
    impl::validate(so2_2);
  }
};

// so2_convolution against the five calls: the aggregate and the gradients of n, the radial
// hidden a and the edge vectors (through the band and the envelope), in fp32 and in the bf16
// mode. On host backends the same numbers bit for bit. On CUDA the bf16 GEMMs of the five calls
// read contiguous casts and those of so2_convolution column ranges of the stored operands, and
// cuBLAS may pick another kernel (another fp32 summation order) for another operand alignment.
TEST(So2Convolution, GivesTheNumbersOfTheFiveCallsItStandsFor) {
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
    EdgeCase k;
    constexpr int L = EdgeCase::L, M = EdgeCase::M, C = EdgeCase::C, H = EdgeCase::H, Hr = EdgeCase::Hr;
    const int E = k.edges(), N = k.nodes(), K = kk::band_rows(L, M);
    torch::manual_seed(21);
    const Plans plans(L, M, C, H);
    const torch::Tensor n = torch::randn({N, kk::n_coeffs(L), C}, f32()).requires_grad_(true);
    const torch::Tensor a = torch::randn({E, Hr}, f32()).requires_grad_(true);
    const torch::Tensor w2 = torch::randn({kk::gate_rows(L, M) * 2 * C, Hr}, f32()) / std::sqrt(double(Hr));
    const torch::Tensor b2 = torch::randn({kk::gate_rows(L, M) * 2 * C}, f32());
    const torch::Tensor probe = torch::randn({N, kk::n_coeffs(L), C}, f32());
    const impl::GemmScope scope(precision);
    auto five_calls = [&] {
      const torch::Tensor u = impl::edge_frame_pack(n, k.band, a, w2, b2, k.step);
      const torch::Tensor z = impl::so2_linear(u.reshape({E, plans.so2_1.x_width}), plans.so2_1);
      const torch::Tensor x = impl::so2_gate(z, L, M, H);
      const torch::Tensor w = impl::so2_linear(x.reshape({E, plans.so2_2.x_width}), plans.so2_2).reshape({E, K, C});
      return impl::unrotate_aggregate(w, k.band, k.env, k.step);
    };
    const torch::Tensor want = five_calls();
    const torch::Tensor got = impl::so2_convolution(n, k.band, a, w2, b2, k.env, plans.so2_1, plans.so2_2, H, k.step,
                                                    precision == Precision::bf16);
    const auto gw = torch::autograd::grad({(want * probe).sum()}, {n, a, k.vec}, {}, true);
    const auto gg = torch::autograd::grad({(got * probe).sum()}, {n, a, k.vec}, {}, true);
    for (const auto& g : gw) ASSERT_GT(g.abs().max().item<double>(), 0.0);  // every gradient is a check
    const char* names[] = {"aggregate", "grad n", "grad a", "grad edge vectors"};
    const torch::Tensor pairs[4][2] = {{got, want}, {gg[0], gw[0]}, {gg[1], gw[1]}, {gg[2], gw[2]}};
    const bool bitwise = !bridge::device().is_cuda() || precision == Precision::fp32;
    for (int q = 0; q < 4; ++q) {
      const double r = rel(pairs[q][0], pairs[q][1]);
      std::printf("[ measured ] so2_convolution %s, %s: %.2e relative to the five calls\n",
                  to_string(precision).c_str(), names[q], r);
      if (bitwise)
        EXPECT_TRUE(same_values(pairs[q][0].detach(), pairs[q][1].detach())) << to_string(precision) << " " << names[q];
      else
        EXPECT_LT(r, 1e-5) << to_string(precision) << " " << names[q];
    }
    // and the bf16 path is not the fp32 one
    if (precision == Precision::bf16) {
      const impl::GemmScope fp32(Precision::fp32);
      EXPECT_GT(rel(got, five_calls()), 1e-4);
    }
  }
}

}  // namespace
