// edge_frame_pack and unrotate_aggregate: forward against plain loops; backward by the adjoint
// identities (each kernel is linear in each input separately, so <grad_out, f(.., d_in, ..)>
// must equal <grad_in, d_in> exactly up to rounding); Serial vs OpenMP bit-identical; float
// against double.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <random>
#include <tuple>
#include <type_traits>
#include <vector>

#include "band_layout.hpp"
#include "edge_frame_pack.hpp"
#include "exec_spaces.hpp"
#include "graph.hpp"
#include "unrotate_aggregate.hpp"
#include "wigner_band.hpp"

namespace {

using namespace edgeframe;

// Kernel vs plain loop in double: same products, sums in a different order; values O(1..10).
constexpr double kLoopRelTol = 1e-13;  // relative to the largest |value|
// Adjoint identities: sums of ~1e4 products of O(1) numbers in two different orders.
constexpr double kAdjointRelTol = 1e-12;  // relative to sum |terms|
// float kernels against double ones: fp32 storage, double accumulation; inputs O(1).
constexpr double kFloatRelTol = 2e-6;  // relative to the largest |value|

struct Shape {
  int lmax, mmax, channels;
};

struct HostCase {
  Shape s;
  int N = 0, E = 0, B = 0, K = 0, G = 0, D = 0;
  std::vector<int> recv, send, recv_off, send_off, send_edges;
  std::vector<double> band, env;                  // [E, B], [E]
  std::vector<double> n, g, grad_u, w, grad_agg;  // [N,D,C] [E,G,2C] [E,K,2C] [E,K,C] [N,D,C]
};

std::vector<double> random_vec(size_t size, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(size);
  for (auto& x : v) x = u(rng);
  return v;
}

// A cluster of 8 atoms (all pairs within the cutoff) and one isolated atom.
HostCase make_case(Shape s, unsigned seed) {
  using Exec = Kokkos::Serial;
  HostCase h;
  h.s = s;
  h.N = 9;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 2.0);
  kk::Vec3View<double, Exec> x("x", h.N);
  for (int a = 0; a < 8; ++a)
    for (int k = 0; k < 3; ++k) x(a, k) = u(rng);
  for (int k = 0; k < 3; ++k) x(8, k) = 50.0;
  std::vector<int> pi, pj;
  for (int a = 0; a < h.N; ++a)
    for (int b = a + 1; b < h.N; ++b) {
      pi.push_back(a);
      pj.push_back(b);
    }
  kk::View1<int, Exec> vi("i", pi.size()), vj("j", pj.size());
  for (size_t p = 0; p < pi.size(); ++p) {
    vi(p) = pi[p];
    vj(p) = pj[p];
  }
  Exec exec;
  kk::PairList<Exec> pl{vi, vj, {}, true};
  const auto gr = kk::build_graph(exec, pl, kk::Vec3View<const double, Exec>(x), h.N, 6.0);
  h.E = gr.n_edges;
  kk::Vec3View<double, Exec> vec("vec", h.E);
  kk::compute_edge_vectors(exec, gr, kk::Vec3View<const double, Exec>(x), vec);
  h.B = kk::band_size(s.lmax, s.mmax);
  h.K = kk::band_rows(s.lmax, s.mmax);
  h.G = kk::gate_rows(s.lmax, s.mmax);
  h.D = kk::n_coeffs(s.lmax);
  // The band kernel makes mmax 1 or 2; an mmax 0 band is the m = 0 rows of an mmax 1 band (what
  // the engine's m0_band passes to the kernels for the first and last layers).
  const int band_mmax = std::max(s.mmax, 1);
  kk::View2<double, Exec> band("band", h.E, kk::band_size(s.lmax, band_mmax));
  kk::compute_wigner_band<Exec, double>(exec, vec, {}, band, {}, s.lmax, band_mmax);
  exec.fence("test");
  for (int e = 0; e < h.E; ++e)
    for (int l = 0; l <= s.lmax; ++l)
      for (int m = -kk::band_k(l, s.mmax); m <= kk::band_k(l, s.mmax); ++m)
        for (int mp = -l; mp <= l; ++mp) h.band.push_back(band(e, kk::band_index(l, m, mp, band_mmax)));
  h.recv.assign(gr.recv.data(), gr.recv.data() + h.E);
  h.send.assign(gr.send.data(), gr.send.data() + h.E);
  h.recv_off.assign(gr.recv_offsets.data(), gr.recv_offsets.data() + h.N + 1);
  h.send_off.assign(gr.send_offsets.data(), gr.send_offsets.data() + h.N + 1);
  h.send_edges.assign(gr.send_edges.data(), gr.send_edges.data() + h.E);
  const int C = s.channels;
  h.env = random_vec(h.E, rng);
  h.n = random_vec(size_t(h.N) * h.D * C, rng);
  h.g = random_vec(size_t(h.E) * h.G * 2 * C, rng);
  h.grad_u = random_vec(size_t(h.E) * h.K * 2 * C, rng);
  h.w = random_vec(size_t(h.E) * h.K * C, rng);
  h.grad_agg = random_vec(size_t(h.N) * h.D * C, rng);
  return h;
}

// ---- plain loops ----------------------------------------------------------------------------
std::vector<double> ref_pack(const HostCase& h, const std::vector<double>& n, const std::vector<double>& band,
                             const std::vector<double>& g) {
  const int C = h.s.channels, L = h.s.lmax, M = h.s.mmax;
  std::vector<double> u(size_t(h.E) * h.K * 2 * C, 0.0);
  for (int e = 0; e < h.E; ++e)
    for (int l = 0; l <= L; ++l) {
      const int k = std::min(l, M);
      for (int m = -k; m <= k; ++m)
        for (int c = 0; c < 2 * C; ++c) {
          const int node = c < C ? h.send[e] : h.recv[e];
          double acc = 0;
          for (int mp = -l; mp <= l; ++mp)
            acc += band[size_t(e) * h.B + kk::band_index(l, m, mp, M)] *
                   n[(size_t(node) * h.D + l * l + l + mp) * C + c % C];
          u[(size_t(e) * h.K + kk::packed_row(l, m, L)) * 2 * C + c] =
              g[(size_t(e) * h.G + kk::gate_row(l, m, L)) * 2 * C + c] * acc;
        }
    }
  return u;
}

std::vector<double> ref_unrot(const HostCase& h, const std::vector<double>& w, const std::vector<double>& band,
                              const std::vector<double>& env, double scale) {
  const int C = h.s.channels, L = h.s.lmax, M = h.s.mmax;
  std::vector<double> agg(size_t(h.N) * h.D * C, 0.0);
  for (int e = 0; e < h.E; ++e)
    for (int l = 0; l <= L; ++l) {
      const int k = std::min(l, M);
      for (int mp = -l; mp <= l; ++mp)
        for (int c = 0; c < C; ++c) {
          double acc = 0;
          for (int m = -k; m <= k; ++m)
            acc += band[size_t(e) * h.B + kk::band_index(l, m, mp, M)] *
                   w[(size_t(e) * h.K + kk::packed_row(l, m, L)) * C + c];
          agg[(size_t(h.recv[e]) * h.D + l * l + l + mp) * C + c] += scale * env[e] * acc;
        }
    }
  return agg;
}

double dot(const std::vector<double>& a, const std::vector<double>& b, double* abs_sum = nullptr) {
  double s = 0, t = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    s += a[i] * b[i];
    t += std::fabs(a[i] * b[i]);
  }
  if (abs_sum) *abs_sum = t;
  return s;
}

double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double x : a) m = std::max(m, std::fabs(x));
  return m;
}

// ---- kernels on an execution space ------------------------------------------------------------
template <class T, class Exec>
kk::View1<T, Exec> up1(const std::vector<double>& v, const char* label) {
  kk::View1<T, Exec> d(std::string(label), v.size());
  auto h = Kokkos::create_mirror_view(d);
  for (size_t i = 0; i < v.size(); ++i) h(i) = static_cast<T>(v[i]);
  Kokkos::deep_copy(d, h);
  return d;
}
template <class T, class Exec>
kk::View1<const int, Exec> upi(const std::vector<int>& v) {
  kk::View1<int, Exec> d("idx", v.size());
  auto h = Kokkos::create_mirror_view(d);
  for (size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}
template <class V>
std::vector<double> down(const V& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> out(h.size());
  for (size_t i = 0; i < h.size(); ++i) out[i] = double(h.data()[i]);
  return out;
}
template <class T, class Exec>
kk::View3<T, Exec> as3(const kk::View1<T, Exec>& v, int a, int b, int c) {
  return kk::View3<T, Exec>(v.data(), a, b, c);
}

struct Outputs {
  std::vector<double> u, grad_n, grad_band_p, grad_g, agg, grad_w, grad_band_u, grad_env;
};

template <class Exec, class Real>
Outputs run_kernels(const HostCase& h, const std::vector<double>& n, const std::vector<double>& band,
                    const std::vector<double>& g, const std::vector<double>& w, const std::vector<double>& env,
                    double scale, kk::KernelForm form = kk::native_form<Exec>(), int node_split = 0,
                    int forward_parts = 0) {
  const int C = h.s.channels;
  Exec exec;
  auto dn = up1<Real, Exec>(n, "n"), dband = up1<Real, Exec>(band, "band"), dg = up1<Real, Exec>(g, "g");
  auto dgu = up1<Real, Exec>(h.grad_u, "grad_u"), dw = up1<Real, Exec>(w, "w"), denv = up1<Real, Exec>(env, "env");
  auto dga = up1<Real, Exec>(h.grad_agg, "grad_agg");
  kk::View3<Real, Exec> u("u", h.E, h.K, 2 * C), grad_n("grad_n", h.N, h.D, C), grad_g("grad_g", h.E, h.G, 2 * C),
      grad_rot("grad_rot", h.E, h.K, 2 * C);
  kk::View2<Real, Exec> gbp("gbp", h.E, h.B), gbu("gbu", h.E, h.B);
  kk::View3<Real, Exec> agg("agg", h.N, h.D, C), grad_w("grad_w", h.E, h.K, C);
  kk::View1<Real, Exec> genv("genv", h.E);
  auto recv = upi<int, Exec>(h.recv), send = upi<int, Exec>(h.send), ro = upi<int, Exec>(h.recv_off),
       so = upi<int, Exec>(h.send_off), se = upi<int, Exec>(h.send_edges);
  kk::View2<const Real, Exec> band2(dband.data(), h.E, h.B);
  kk::EdgeFramePack<Exec, Real> pack{as3<Real, Exec>(dn, h.N, h.D, C),
                                     band2,
                                     as3<Real, Exec>(dg, h.E, h.G, 2 * C),
                                     recv,
                                     send,
                                     ro,
                                     so,
                                     se,
                                     u,
                                     as3<Real, Exec>(dgu, h.E, h.K, 2 * C),
                                     grad_rot,
                                     grad_n,
                                     gbp,
                                     grad_g,
                                     h.s.lmax,
                                     h.s.mmax,
                                     C,
                                     node_split};
  kk::edge_frame_pack_forward(exec, pack, h.E, form);
  kk::edge_frame_pack_backward(exec, pack, h.E, h.N, form);
  kk::UnrotateAggregate<Exec, Real> unrot{as3<Real, Exec>(dw, h.E, h.K, C),
                                          band2,
                                          denv,
                                          recv,
                                          ro,
                                          agg,
                                          as3<Real, Exec>(dga, h.N, h.D, C),
                                          grad_w,
                                          gbu,
                                          genv,
                                          scale,
                                          h.s.lmax,
                                          h.s.mmax,
                                          C,
                                          forward_parts};
  kk::unrotate_aggregate_forward(exec, unrot, h.N, form);
  kk::unrotate_aggregate_backward(exec, unrot, h.E, form);
  exec.fence("test: results to the host");
  return {down(u), down(grad_n), down(gbp), down(grad_g), down(agg), down(grad_w), down(gbu), down(genv)};
}

// {0, 1, 8} and {2, 0, 8}: the first and last layers run degree 0 alone and the m = 0 rows alone.
const Shape kShapes[] = {{2, 1, 5}, {3, 1, 4}, {2, 2, 3}, {4, 2, 6},
                         {2, 1, 8}, {0, 1, 8}, {2, 0, 8}};  // C % 4 == 0: 4 channels per thread
constexpr double kScale = 1.0 / 7.5;                        // 1 / avg_neighbors

template <class Exec>
class PackUnrotateTest : public ::testing::Test {};
TYPED_TEST_SUITE(PackUnrotateTest, test::ExecSpaces);

// The forward outputs against the plain loops in double.
void expect_forward_matches_plain_loops(const HostCase& h, const Outputs& out) {
  const auto u = ref_pack(h, h.n, h.band, h.g);
  const auto agg = ref_unrot(h, h.w, h.band, h.env, kScale);
  const double su = max_abs(u), sa = max_abs(agg);
  for (size_t i = 0; i < u.size(); ++i) ASSERT_NEAR(out.u[i], u[i], kLoopRelTol * su) << i;
  for (size_t i = 0; i < agg.size(); ++i) ASSERT_NEAR(out.agg[i], agg[i], kLoopRelTol * sa) << i;
}

// Every gradient by its adjoint identity: each kernel is linear in each input separately, so
// <grad_out, f(.., d_in, ..)> must equal <grad_in, d_in> for random directions d_in.
void expect_adjoint_identities(const HostCase& h, const Outputs& out, unsigned seed) {
  std::mt19937_64 rng(seed);
  const Shape& s = h.s;
  auto check = [&](const std::vector<double>& lhs_out, const std::vector<double>& grad_out,
                   const std::vector<double>& grad_in, const std::vector<double>& d_in, const char* what) {
    double t1, t2;
    const double a = dot(grad_out, lhs_out, &t1), b = dot(grad_in, d_in, &t2);
    EXPECT_NEAR(a, b, kAdjointRelTol * std::max(t1, t2)) << what << " L=" << s.lmax << " mmax=" << s.mmax;
  };
  const auto dn = random_vec(h.n.size(), rng), dband = random_vec(h.band.size(), rng), dg = random_vec(h.g.size(), rng),
             dw = random_vec(h.w.size(), rng), denv = random_vec(h.env.size(), rng);
  check(ref_pack(h, dn, h.band, h.g), h.grad_u, out.grad_n, dn, "pack d/dn");
  check(ref_pack(h, h.n, dband, h.g), h.grad_u, out.grad_band_p, dband, "pack d/dband");
  check(ref_pack(h, h.n, h.band, dg), h.grad_u, out.grad_g, dg, "pack d/dg");
  check(ref_unrot(h, dw, h.band, h.env, kScale), h.grad_agg, out.grad_w, dw, "unrotate d/dw");
  check(ref_unrot(h, h.w, dband, h.env, kScale), h.grad_agg, out.grad_band_u, dband, "unrotate d/dband");
  check(ref_unrot(h, h.w, h.band, denv, kScale), h.grad_agg, out.grad_env, denv, "unrotate d/denv");
}

TYPED_TEST(PackUnrotateTest, ForwardMatchesPlainLoops) {
  for (const Shape& s : kShapes) {
    const auto h = make_case(s, 17);
    const auto out = run_kernels<TypeParam, double>(h, h.n, h.band, h.g, h.w, h.env, kScale);
    expect_forward_matches_plain_loops(h, out);
    // the isolated atom (8) receives nothing
    for (int q = 0; q < h.D * s.channels; ++q) ASSERT_EQ(out.agg[size_t(8) * h.D * s.channels + q], 0.0);
  }
}

TYPED_TEST(PackUnrotateTest, BackwardSatisfiesTheAdjointIdentities) {
  for (const Shape& s : kShapes) {
    const auto h = make_case(s, 23);
    expect_adjoint_identities(h, run_kernels<TypeParam, double>(h, h.n, h.band, h.g, h.w, h.env, kScale), 99);
  }
}

TYPED_TEST(PackUnrotateTest, FloatAgreesWithDouble) {
  for (const Shape& s : kShapes) {
    const auto h = make_case(s, 31);
    const auto d = run_kernels<TypeParam, double>(h, h.n, h.band, h.g, h.w, h.env, kScale);
    const auto f = run_kernels<TypeParam, float>(h, h.n, h.band, h.g, h.w, h.env, kScale);
    for (auto [a, b] : {std::pair{&d.u, &f.u},
                        {&d.grad_n, &f.grad_n},
                        {&d.grad_band_p, &f.grad_band_p},
                        {&d.grad_g, &f.grad_g},
                        {&d.agg, &f.agg},
                        {&d.grad_w, &f.grad_w},
                        {&d.grad_band_u, &f.grad_band_u},
                        {&d.grad_env, &f.grad_env}}) {
      const double sc = max_abs(*a);
      for (size_t i = 0; i < a->size(); ++i) ASSERT_NEAR((*a)[i], (*b)[i], kFloatRelTol * sc);
    }
  }
}

// Both kernel forms (kernel_common.hpp KernelForm) on the same execution space and inputs.
// Per element the forward passes and the node passes keep the host form's products in its
// order: bitwise equal on host backends, to rounding on a device (FMA contraction is the
// compiler's). The per-edge backward sums over channels and, for grad_g, over m' in other
// orders: equal to rounding. Each output must be nonzero: zeros must not pass for agreement.
TYPED_TEST(PackUnrotateTest, DeviceFormMatchesHostForm) {
  // Shapes: degrees up to 8 (2l+1 > kMaxSlots = 8 goes in chunks: l = 5 two, l = 8 = kMaxL
  // three, and the pack's edge pass takes its chunked path there); channel counts below, at and
  // above a warp (33, 40: on CUDA a warp spans two degrees or nodes in the node passes, and the
  // last round of an edge's channel loop leaves lanes idle); 4 channels per thread where
  // channels % 4 == 0, else 1; mmax 0 to 3 (pairs of rows per gate row).
  const Shape shapes[] = {{2, 1, 5},  {3, 2, 40}, {5, 2, 36}, {8, 1, 33}, {2, 2, 64},
                          {3, 3, 32}, {0, 1, 33}, {3, 0, 40}, {2, 2, 3},  {4, 2, 6}};
  for (const Shape& s : shapes) {
    const auto h = make_case(s, 53);
    const auto host = run_kernels<TypeParam, double>(h, h.n, h.band, h.g, h.w, h.env, kScale, kk::KernelForm::host);
    const auto dev = run_kernels<TypeParam, double>(h, h.n, h.band, h.g, h.w, h.env, kScale, kk::KernelForm::device);
    const bool same_order_is_bitwise = std::is_same_v<typename TypeParam::memory_space, Kokkos::HostSpace>;
    for (auto [a, b, what, same_order] : {std::tuple{&host.u, &dev.u, "u", true},
                                          {&host.agg, &dev.agg, "agg", true},
                                          {&host.grad_n, &dev.grad_n, "grad_n", true},
                                          {&host.grad_w, &dev.grad_w, "grad_w", true},
                                          {&host.grad_band_p, &dev.grad_band_p, "pack grad_band", false},
                                          {&host.grad_g, &dev.grad_g, "grad_g", false},
                                          {&host.grad_band_u, &dev.grad_band_u, "unrotate grad_band", false},
                                          {&host.grad_env, &dev.grad_env, "grad_env", false}}) {
      const double sc = max_abs(*a);
      ASSERT_GT(sc, 0.0) << what;
      if (same_order && same_order_is_bitwise) {
        EXPECT_EQ(*a, *b) << what << " L " << s.lmax << " mmax " << s.mmax << " C " << s.channels;
        continue;
      }
      for (size_t i = 0; i < a->size(); ++i)
        ASSERT_NEAR((*a)[i], (*b)[i], kLoopRelTol * sc)
            << what << " L " << s.lmax << " mmax " << s.mmax << " C " << s.channels << " " << i;
    }
  }
}

// The device form of the pack's backward node pass with each node's sender and receiver edges
// on two threads (kernel_common.hpp node_pass_split; taken for small systems on a device, never
// by the host tests' own rule): the same grad_n as one thread per element to rounding (the two
// parts are summed apart, then added), the same bits on a second run (two adds onto zero
// commute), every other output untouched.
TYPED_TEST(PackUnrotateTest, SplitPackNodePassMatchesTheUnsplitOne) {
  const Shape shapes[] = {{2, 2, 64}, {3, 1, 33}, {5, 2, 36}, {0, 1, 8}};
  for (const Shape& s : shapes) {
    const auto h = make_case(s, 67);
    const auto one = run_kernels<TypeParam, double>(h, h.n, h.band, h.g, h.w, h.env, kScale, kk::KernelForm::device, 1);
    const auto two = run_kernels<TypeParam, double>(h, h.n, h.band, h.g, h.w, h.env, kScale, kk::KernelForm::device, 2);
    const auto again =
        run_kernels<TypeParam, double>(h, h.n, h.band, h.g, h.w, h.env, kScale, kk::KernelForm::device, 2);
    const double sc = max_abs(one.grad_n);
    ASSERT_GT(sc, 0.0);
    for (size_t i = 0; i < one.grad_n.size(); ++i)
      ASSERT_NEAR(one.grad_n[i], two.grad_n[i], kLoopRelTol * sc) << " L " << s.lmax << " C " << s.channels << " " << i;
    EXPECT_EQ(two.grad_n, again.grad_n);
    EXPECT_EQ(one.u, two.u);
    EXPECT_EQ(one.agg, two.agg);
    EXPECT_EQ(one.grad_w, two.grad_w);
  }
}

// The device form of the unrotate forward pass with each node's edge list in 2 or 4 parts on
// adjacent lanes (kernel_common.hpp edge_list_parts; taken for small systems on CUDA, never by
// the host tests' own rule; on the host the first lane sums every part): the same agg as one
// thread per element to rounding, in double and in float (the parts are summed in double, then
// added), the same bits on a second run, every other output untouched.
TYPED_TEST(PackUnrotateTest, PartedUnrotateForwardMatchesTheUnpartedOne) {
  const Shape shapes[] = {{2, 2, 64}, {3, 1, 33}, {5, 2, 36}, {0, 1, 8}, {2, 1, 8}};
  for (const Shape& s : shapes) {
    const auto h = make_case(s, 71);
    auto run = [&](auto real, int parts) {
      return run_kernels<TypeParam, decltype(real)>(h, h.n, h.band, h.g, h.w, h.env, kScale, kk::KernelForm::device, 0,
                                                    parts);
    };
    const auto one = run(double(), 1), one_f = run(float(), 1);
    const double sc = max_abs(one.agg);
    ASSERT_GT(sc, 0.0);
    for (int parts : {2, 4}) {
      const auto d = run(double(), parts), f = run(float(), parts), f_again = run(float(), parts);
      for (size_t i = 0; i < one.agg.size(); ++i) {
        ASSERT_NEAR(d.agg[i], one.agg[i], kLoopRelTol * sc) << parts << " parts, L " << s.lmax << " C " << s.channels;
        ASSERT_NEAR(f.agg[i], one.agg[i], kFloatRelTol * sc) << parts << " parts, L " << s.lmax << " C " << s.channels;
      }
      EXPECT_EQ(f.agg, f_again.agg);
      EXPECT_EQ(one_f.u, f.u);
      EXPECT_EQ(one_f.grad_n, f.grad_n);
      EXPECT_EQ(one_f.grad_w, f.grad_w);
      EXPECT_EQ(one_f.grad_band_u, f.grad_band_u);
    }
  }
}

TYPED_TEST(PackUnrotateTest, EachFormMatchesThePlainLoopsAndTheAdjointIdentities) {
  // ForwardMatchesPlainLoops and BackwardSatisfiesTheAdjointIdentities run the backend's own
  // form; here the other form on this backend, against the same references.
  const kk::KernelForm other =
      kk::native_form<TypeParam>() == kk::KernelForm::host ? kk::KernelForm::device : kk::KernelForm::host;
  for (const Shape& s : kShapes) {
    const auto h = make_case(s, 59);
    const auto out = run_kernels<TypeParam, double>(h, h.n, h.band, h.g, h.w, h.env, kScale, other);
    expect_forward_matches_plain_loops(h, out);
    expect_adjoint_identities(h, out, 101);
  }
}

// Per edge (or node), the rows `keep` of [rows, width] blocks: [outer, keep.size(), width].
std::vector<double> rows_of(const std::vector<double>& v, int outer, int rows, int width,
                            const std::vector<int>& keep) {
  std::vector<double> out;
  for (int o = 0; o < outer; ++o)
    for (int r : keep)
      out.insert(out.end(), v.begin() + (size_t(o) * rows + r) * width, v.begin() + (size_t(o) * rows + r + 1) * width);
  return out;
}

// The same blocks with every row outside `keep` zeroed.
std::vector<double> zero_other_rows(std::vector<double> v, int outer, int rows, int width,
                                    const std::vector<int>& keep) {
  for (int o = 0; o < outer; ++o)
    for (int r = 0; r < rows; ++r)
      if (std::find(keep.begin(), keep.end(), r) == keep.end())
        std::fill(v.begin() + (size_t(o) * rows + r) * width, v.begin() + (size_t(o) * rows + r + 1) * width, 0.0);
  return v;
}

TYPED_TEST(PackUnrotateTest, PartsOfTheRowsGiveTheWholeKernelsRows) {
  // The first and last layers run the kernels on parts of the band rows (src/engine/ops.hpp
  // BandPart): degree 0 alone with the whole band (its leading column), and the m = 0 rows of
  // every degree with the band's m = 0 rows (m0_band), g's leading rows and n of all degrees.
  // On its rows a part must give what the whole kernels give when the part's rows are the only
  // nonzero rows of grad_u and w: u, agg, and every gradient (the rest of the whole's are 0).
  const Shape s{3, 2, 8};
  const int C = s.channels, L = s.lmax;
  const auto h = make_case(s, 61);
  for (const bool m0 : {false, true}) {
    SCOPED_TRACE(m0 ? "m = 0 rows of every degree" : "degree 0");
    HostCase p = h;
    std::vector<int> rows, band_cols;  // the whole's packed rows and band columns the part holds
    if (m0) {
      p.s.mmax = 0;
      for (int l = 0; l <= L; ++l) {
        rows.push_back(kk::packed_row(l, 0, L));
        for (int t = 0; t <= 2 * l; ++t)
          band_cols.push_back(kk::band_offset(l, s.mmax) + kk::band_k(l, s.mmax) * (2 * l + 1) + t);
      }
    } else {
      p.s.lmax = 0;
      rows = {0};
      for (int b = 0; b < h.B; ++b) band_cols.push_back(b);  // the whole band: the kernel reads column 0
    }
    std::vector<int> g_rows(kk::gate_rows(p.s.lmax, p.s.mmax));
    for (size_t r = 0; r < g_rows.size(); ++r) g_rows[r] = int(r);
    p.K = int(rows.size());
    p.G = int(g_rows.size());
    p.B = int(band_cols.size());
    auto band_part = [&](const std::vector<double>& v) {  // [E, B] -> [E, band_cols]
      std::vector<double> out;
      for (int e = 0; e < h.E; ++e)
        for (int b : band_cols) out.push_back(v[size_t(e) * h.B + b]);
      return out;
    };
    p.band = band_part(h.band);
    p.g = rows_of(h.g, h.E, h.G, 2 * C, g_rows);
    p.grad_u = rows_of(h.grad_u, h.E, h.K, 2 * C, rows);
    p.w = rows_of(h.w, h.E, h.K, C, rows);
    HostCase z = h;
    z.grad_u = zero_other_rows(h.grad_u, h.E, h.K, 2 * C, rows);
    z.w = zero_other_rows(h.w, h.E, h.K, C, rows);
    const auto part = run_kernels<TypeParam, double>(p, p.n, p.band, p.g, p.w, p.env, kScale);
    const auto whole = run_kernels<TypeParam, double>(z, z.n, z.band, z.g, z.w, z.env, kScale);
    auto expect_near = [&](const std::vector<double>& got, const std::vector<double>& want, const char* what) {
      ASSERT_EQ(got.size(), want.size()) << what;
      const double sc = max_abs(want);
      ASSERT_GT(sc, 0.0) << what;
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], kLoopRelTol * sc) << what << " " << i;
    };
    expect_near(part.u, rows_of(whole.u, h.E, h.K, 2 * C, rows), "u");
    expect_near(part.agg, whole.agg, "agg");  // n's and agg's rows are [N, D, C] in both
    expect_near(part.grad_n, whole.grad_n, "grad_n");
    expect_near(part.grad_g, rows_of(whole.grad_g, h.E, h.G, 2 * C, g_rows), "grad_g");
    expect_near(part.grad_w, rows_of(whole.grad_w, h.E, h.K, C, rows), "grad_w");
    expect_near(part.grad_env, whole.grad_env, "grad_env");
    // Degree 0: the part's band is the whole band, of which the kernels write column 0; the
    // whole's other columns are 0 here (their rows of grad_u and w are).
    expect_near(part.grad_band_p, band_part(whole.grad_band_p), "pack grad_band");
    expect_near(part.grad_band_u, band_part(whole.grad_band_u), "unrotate grad_band");
  }
}

TEST(PackUnrotate, SerialAndOpenMPAreBitIdentical) {
#ifdef KOKKOS_ENABLE_OPENMP
  for (const Shape& s : kShapes) {
    const auto h = make_case(s, 5);
    const auto a = run_kernels<Kokkos::Serial, double>(h, h.n, h.band, h.g, h.w, h.env, kScale);
    const auto b = run_kernels<Kokkos::OpenMP, double>(h, h.n, h.band, h.g, h.w, h.env, kScale);
    EXPECT_EQ(a.u, b.u);
    EXPECT_EQ(a.grad_n, b.grad_n);
    EXPECT_EQ(a.grad_band_p, b.grad_band_p);
    EXPECT_EQ(a.grad_g, b.grad_g);
    EXPECT_EQ(a.agg, b.agg);
    EXPECT_EQ(a.grad_w, b.grad_w);
    EXPECT_EQ(a.grad_band_u, b.grad_band_u);
    EXPECT_EQ(a.grad_env, b.grad_env);
  }
#else
  GTEST_SKIP() << "this Kokkos has no OpenMP backend";
#endif
}

}  // namespace
