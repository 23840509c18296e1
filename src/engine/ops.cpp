// The kernel pairs as torch::autograd::Functions. Scratch for the geometry (band and its
// derivative, radial basis and derivatives, dE/dvec) comes from the workspace; kernel outputs
// that autograd keeps (packed features, aggregates, their gradients) are torch tensors.
#include "ops.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "band_layout.hpp"
#include "edge_frame_pack.hpp"
#include "forces.hpp"
#include "layer_norm_silu.hpp"
#include "radial.hpp"
#include "rms_norm.hpp"
#include "rms_norm_sh.hpp"
#include "so2_gate.hpp"
#include "unrotate_aggregate.hpp"
#include "wigner_band.hpp"

namespace edgeframe::impl {

namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Exec = bridge::Exec;

StepContext& step_of(AutogradContext* ctx) { return *reinterpret_cast<StepContext*>(ctx->saved_data["step"].toInt()); }

torch::TensorOptions options(torch::Dtype dtype) {
  return torch::TensorOptions().dtype(dtype).device(bridge::device());
}

// Host backends run torch ops on the calling thread right after: make the kernels' writes
// visible first. On CUDA the kernels are on torch's stream and no fence is needed.
void fence_for_torch(const Exec& exec) {
#ifndef KOKKOS_ENABLE_CUDA
  exec.fence("edgeframe: kernel results handed to torch");
#else
  (void)exec;
#endif
}

kk::Vec3View<const double, Exec> vec_view(const Tensor& vec) {
  bridge::check(vec, torch::kFloat64, 2, "edge vectors");
  if (vec.size(1) != 3) throw ComputeError("edgeframe: edge vectors must be [E, 3]");
  return kk::Vec3View<const double, Exec>(vec.data_ptr<double>(), vec.size(0));
}

// Gradients arrive from autograd possibly undefined (output unused) or non-contiguous.
Tensor grad_or_zeros(const Tensor& g, torch::IntArrayRef sizes, torch::Dtype dtype) {
  if (!g.defined()) return torch::zeros(sizes, options(dtype));
  return g.contiguous();
}

// Calls f(Real{}) with Real = double or float as the step's dtype says: the one place where the
// compute dtype picks a kernel instantiation.
template <class F>
decltype(auto) with_real(torch::Dtype dtype, F&& f) {
  if (dtype == torch::kFloat64) return f(double{});
  return f(float{});
}

// ---- edge geometry: band (+ derivative) and radial basis ---------------------------------------

// The workspace slots of the geometry of E edges, forward and backward: the one list of what it
// takes, so that reserve_edge_geometry takes exactly these.
template <class Real>
struct GeometrySlots {
  kk::View2<Real, Exec> band;
  kk::View3<Real, Exec> dband;
  kk::View2<Real, Exec> rbf;
  kk::View2<double, Exec> drbf;
  kk::View1<Real, Exec> env;
  kk::View1<double, Exec> denv;
  kk::Vec3View<double, Exec> grad_vec;  // dE/dvec of the backward pass
  GeometrySlots(Workspace& ws, int E, int B, int n_rbf)
      : band(ws.take<Real>(Workspace::kBand, std::size_t(E) * B), E, B),
        dband(ws.take<Real>(Workspace::kDBand, std::size_t(E) * B * 3), E, B, 3),
        rbf(ws.take<Real>(Workspace::kRbf, std::size_t(E) * n_rbf), E, n_rbf),
        drbf(ws.take<double>(Workspace::kDRbf, std::size_t(E) * n_rbf), E, n_rbf),
        env(ws.take<Real>(Workspace::kEnv, E), E),
        denv(ws.take<double>(Workspace::kDEnv, E), E),
        grad_vec(ws.take<double>(Workspace::kGradVec, std::size_t(E) * 3), E) {}
};

struct EdgeGeometryFn : public torch::autograd::Function<EdgeGeometryFn> {
  template <class Real>
  static variable_list run_forward(const Tensor& vec, StepContext& s) {
    const int E = static_cast<int>(vec.size(0));
    const int B = kk::band_size(s.lmax, s.mmax);
    const GeometrySlots<Real> g(*s.workspace, E, B, s.n_rbf);
    const auto v = vec_view(vec);
    const Exec exec = bridge::exec_instance();
    kk::compute_wigner_band<Exec, Real>(exec, v, s.roll, g.band, g.dband, s.lmax, s.mmax);
    kk::Radial<Exec, Real> radial{v, g.rbf, g.env, g.drbf, g.denv, {}, {}, {}, s.r_cut, s.n_rbf, s.envelope_p};
    Kokkos::parallel_for("edgeframe::radial", kk::Range<Exec, kk::TagForward>(exec, 0, E), radial);
    fence_for_torch(exec);
    return {bridge::tensor_of(g.band, {E, B}), bridge::tensor_of(g.rbf, {E, s.n_rbf}), bridge::tensor_of(g.env, {E})};
  }

  template <class Real>
  static Tensor run_backward(const Tensor& vec, const variable_list& grads, StepContext& s) {
    const int E = static_cast<int>(vec.size(0));
    const int B = kk::band_size(s.lmax, s.mmax);
    // The forward's views, same slots, same sizes (nothing grows between forward and backward).
    const GeometrySlots<Real> g(*s.workspace, E, B, s.n_rbf);
    const kk::View3<const Real, Exec> dband = g.dband;
    const auto& drbf = g.drbf;
    const auto& denv = g.denv;
    const auto& grad_vec = g.grad_vec;
    const Tensor gb = grad_or_zeros(grads[0], {E, B}, s.dtype);
    const Tensor gr = grad_or_zeros(grads[1], {E, s.n_rbf}, s.dtype);
    const Tensor ge = grad_or_zeros(grads[2], {E}, s.dtype);
    const auto v = vec_view(vec);
    const Exec exec = bridge::exec_instance();
    kk::wigner_band_backward<Exec, Real>(exec, bridge::view2<const Real>(gb, "grad band"), dband, grad_vec);
    kk::Radial<Exec, Real> radial{v,
                                  {},
                                  {},
                                  drbf,
                                  denv,
                                  bridge::view2<const Real>(gr, "grad rbf"),
                                  bridge::view1<const Real>(ge, "grad env"),
                                  grad_vec,
                                  s.r_cut,
                                  s.n_rbf,
                                  s.envelope_p,
                                  true};
    Kokkos::parallel_for("edgeframe::radial_backward", kk::Range<Exec, kk::TagBackward>(exec, 0, E), radial);
    fence_for_torch(exec);
    return bridge::tensor_of(grad_vec, {E, 3});
  }

  static variable_list forward(AutogradContext* ctx, const Tensor& vec, std::int64_t step_handle) {
    ctx->saved_data["step"] = step_handle;
    ctx->save_for_backward({vec});
    StepContext& s = step_of(ctx);
    const StepTimer timer(s, &StepTimes::geometry);
    return with_real(s.dtype, [&](auto real) { return run_forward<decltype(real)>(vec, s); });
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    StepContext& s = step_of(ctx);
    const StepTimer timer(s, &StepTimes::geometry);
    const Tensor vec = ctx->get_saved_variables()[0];
    const Tensor gv = with_real(s.dtype, [&](auto real) { return run_backward<decltype(real)>(vec, grads, s); });
    return {gv, Tensor()};
  }
};

// ---- edge_frame_pack --------------------------------------------------------------------------
// The gradient with respect to the band of a kernel call on the rows of `part`: the kernels
// read and write the leading band_size(part) columns of each edge's band (ops.hpp BandPart);
// the gradient of any further columns is 0.
Tensor band_gradient(const Tensor& band, const BandPart& part) {
  return band.size(1) > kk::band_size(part.lmax, part.mmax) ? torch::zeros_like(band) : torch::empty_like(band);
}

// The part a kernel function's forward works on, kept in its context for the backward.
BandPart save_part(AutogradContext* ctx, std::int64_t lmax, std::int64_t mmax) {
  ctx->saved_data["lmax"] = lmax;
  ctx->saved_data["mmax"] = mmax;
  return {int(lmax), int(mmax)};
}
BandPart saved_part(AutogradContext* ctx) {
  return {int(ctx->saved_data["lmax"].toInt()), int(ctx->saved_data["mmax"].toInt())};
}

template <class Real>
kk::EdgeFramePack<Exec, Real> pack_functor(const StepContext& s, const BandPart& part, const Tensor& n,
                                           const Tensor& band, const Tensor& g) {
  kk::EdgeFramePack<Exec, Real> f;
  f.n = bridge::view3<const Real>(n, "pack input n");
  f.band = bridge::view2<const Real>(band, "band");
  f.g = bridge::view3<const Real>(g, "radial multipliers g");
  f.recv = s.graph.recv;
  f.send = s.graph.send;
  f.recv_offsets = s.graph.recv_offsets;
  f.send_offsets = s.graph.send_offsets;
  f.send_edges = s.graph.send_edges;
  f.lmax = part.lmax;
  f.mmax = part.mmax;
  f.channels = s.channels;
  return f;
}

// The radial MLP's last linear and the pack in one function: g = a w^T + b [E, gate_rows, 2C] is
// made in the forward and again in the backward, and only a [E, H_r] is kept in between. g is
// the widest tensor the layer would otherwise keep for its backward (gate_rows x 2C against H_r
// columns: 20x at L2, 36x at L3 for H_r = 64); making it again costs one GEMM of K = H_r.
struct EdgeFramePackFn : public torch::autograd::Function<EdgeFramePackFn> {
  static Tensor radial_multipliers(const Tensor& a, const Tensor& w, const Tensor& b, const StepContext& s,
                                   const BandPart& part) {
    const int E = s.graph.n_edges;
    return gemm(a, w.t(), b).view({E, kk::gate_rows(part.lmax, part.mmax), 2 * s.channels});
  }

  static Tensor forward(AutogradContext* ctx, const Tensor& n, const Tensor& band, const Tensor& a, const Tensor& w,
                        const Tensor& b, std::int64_t step_handle, std::int64_t lmax, std::int64_t mmax) {
    ctx->saved_data["step"] = step_handle;
    const BandPart part = save_part(ctx, lmax, mmax);
    ctx->save_for_backward({n, band, a, w, b});
    const StepContext& s = step_of(ctx);
    const StepTimer timer(s, &StepTimes::edge_frame);
    const int E = s.graph.n_edges, K = kk::band_rows(part.lmax, part.mmax);
    const Tensor g = radial_multipliers(a, w, b, s, part);
    Tensor u = torch::empty({E, K, 2 * s.channels}, options(s.dtype));
    const Exec exec = bridge::exec_instance();
    with_real(s.dtype, [&](auto real) {
      using Real = decltype(real);
      auto f = pack_functor<Real>(s, part, n, band, g);
      f.u = bridge::view3<Real>(u, "packed u");
      kk::edge_frame_pack_forward(exec, f, E);
    });
    fence_for_torch(exec);
    return u;
  }

  // grad_u may be overwritten: it is the gradient of u, whose one consumer is the first SO(2)
  // linear, and nothing reads it after this function; g is made here. Where the backward-edge
  // kernel allows it (kk::backward_edge_in_place), grad_rot takes grad_u's memory and grad_g
  // g's, instead of two more tensors of g's and u's size.
  template <class Real>
  static variable_list run_backward(AutogradContext* ctx, const Tensor& grad_u, const StepContext& s,
                                    const BandPart& part) {
    const auto saved = ctx->get_saved_variables();
    auto [grad_n, grad_band, grad_a] = pack_backward<Real>(saved[0], saved[1], saved[2], saved[3], saved[4], grad_u, s,
                                                           part, ctx->needs_input_grad(0));
    return {grad_n, grad_band, grad_a, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }

  // {grad n (undefined unless want_n), grad band, grad a} of the pack on n, band and g = a w^T + b.
  // bf16_grad_g (fp32 compute on a device, so2_convolution in the bf16 mode): the kernel writes
  // grad_g, which only feeds grad a's GEMM, in bfloat16 (a tensor of its own: the cast of g's
  // memory that bf16 GEMM would make otherwise takes as much).
  template <class Real>
  static std::tuple<Tensor, Tensor, Tensor> pack_backward(const Tensor& n, const Tensor& band, const Tensor& a,
                                                          const Tensor& w, const Tensor& b, const Tensor& grad_u,
                                                          const StepContext& s, const BandPart& part, bool want_n,
                                                          bool bf16_grad_g = false) {
    const int E = s.graph.n_edges;
    const bool in_place = kk::backward_edge_in_place<Exec>(part.lmax);
    const bool bf16_g = std::is_same_v<Real, float> && bf16_grad_g && kk::native_form<Exec>() == kk::KernelForm::device;
    // Fewer degrees than n holds: the node pass writes only theirs.
    Tensor grad_n = !want_n ? Tensor() : part.lmax < s.lmax ? torch::zeros_like(n) : torch::empty_like(n);
    Tensor grad_band = band_gradient(band, part);
    Tensor g = radial_multipliers(a, w, b, s, part);
    Tensor grad_g = bf16_g ? torch::empty(g.sizes(), options(torch::kBFloat16)) : in_place ? g : torch::empty_like(g);
    const Tensor grad_rot = in_place ? grad_u : torch::empty_like(grad_u);
    auto f = pack_functor<Real>(s, part, n, band, g);
    f.grad_u = bridge::view3<const Real>(grad_u, "grad u");
    f.grad_rot = bridge::view3<Real>(grad_rot, "grad rot");
    f.grad_band = bridge::view2<Real>(grad_band, "grad band");
    const Exec exec = bridge::exec_instance();
    if constexpr (std::is_same_v<Real, float>) {
      if (bf16_g) kk::edge_frame_pack_backward_edge_into(exec, f, bridge::view3<kk::Bf16>(grad_g, "grad g"), E);
    }
    if (!bf16_g) {
      f.grad_g = bridge::view3<Real>(grad_g, "grad g");
      kk::edge_frame_pack_backward_edge(exec, f, E);
    }
    fence_for_torch(exec);
    const Tensor grad_a = gemm(grad_g.view({E, w.size(0)}), w);  // explicit width: E may be 0
    // The node pass reads only grad_rot, band and n: g and grad_g go back to the allocator
    // first (on CUDA the stream orders their reuse after the kernels above).
    g.reset();
    grad_g.reset();
    if (want_n) {  // layer 0's input does not depend on the positions: skip its node pass
      f.grad_n = bridge::view3<Real>(grad_n, "grad n");
      kk::edge_frame_pack_backward_node(exec, f, s.graph.n_nodes);
      fence_for_torch(exec);
    }
    return {grad_n, grad_band, grad_a};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const StepContext& s = step_of(ctx);
    const StepTimer timer(s, &StepTimes::edge_frame);
    const BandPart part = saved_part(ctx);
    const int E = s.graph.n_edges, K = kk::band_rows(part.lmax, part.mmax);
    const Tensor gu = grad_or_zeros(grads[0], {E, K, 2 * s.channels}, s.dtype);
    return with_real(s.dtype, [&](auto real) { return run_backward<decltype(real)>(ctx, gu, s, part); });
  }
};

// ---- unrotate_aggregate -----------------------------------------------------------------------
template <class Real>
kk::UnrotateAggregate<Exec, Real> unrot_functor(const StepContext& s, const BandPart& part, const Tensor& w,
                                                const Tensor& band, const Tensor& env) {
  kk::UnrotateAggregate<Exec, Real> f;
  f.w = bridge::view3<const Real>(w, "messages w");
  f.band = bridge::view2<const Real>(band, "band");
  f.env = bridge::view1<const Real>(env, "envelope");
  f.recv = s.graph.recv;
  f.recv_offsets = s.graph.recv_offsets;
  f.scale = s.scale;
  f.lmax = part.lmax;
  f.mmax = part.mmax;
  f.channels = s.channels;
  return f;
}

// agg [N, (part.lmax + 1)^2, C] of unrotate_aggregate on w, band, env.
template <class Real>
Tensor unrotate_forward(const Tensor& w, const Tensor& band, const Tensor& env, const StepContext& s,
                        const BandPart& part) {
  const int N = s.graph.n_nodes;
  Tensor agg = torch::empty({N, kk::n_coeffs(part.lmax), s.channels}, options(bridge::dtype_of<Real>()));
  auto f = unrot_functor<Real>(s, part, w, band, env);
  f.agg = bridge::view3<Real>(agg, "aggregate");
  const Exec exec = bridge::exec_instance();
  kk::unrotate_aggregate_forward(exec, f, N);
  fence_for_torch(exec);
  return agg;
}

// {grad w, grad band, grad env} of unrotate_aggregate on w, band, env; grad w's elements are Out
// (Real, or Bf16: written so by the device form; the host form sums in grad w's rows, so there
// Real rows are rounded by torch).
template <class Real, class Out = Real>
std::tuple<Tensor, Tensor, Tensor> unrotate_backward(const Tensor& w, const Tensor& band, const Tensor& env,
                                                     const Tensor& grad_agg, const StepContext& s,
                                                     const BandPart& part) {
  const int E = s.graph.n_edges;
  Tensor grad_w = torch::empty(w.sizes(), options(bridge::dtype_of<Out>()));
  Tensor grad_band = band_gradient(band, part), grad_env = torch::empty_like(env);
  auto f = unrot_functor<Real>(s, part, w, band, env);
  f.grad_agg = bridge::view3<const Real>(grad_agg, "grad aggregate");
  f.grad_band = bridge::view2<Real>(grad_band, "grad band");
  f.grad_env = bridge::view1<Real>(grad_env, "grad env");
  const Exec exec = bridge::exec_instance();
  if constexpr (std::is_same_v<Out, Real>) {
    f.grad_w = bridge::view3<Real>(grad_w, "grad w");
    kk::unrotate_aggregate_backward(exec, f, E);
  } else if (kk::native_form<Exec>() == kk::KernelForm::device) {
    kk::unrotate_aggregate_backward_into(exec, f, bridge::view3<Out>(grad_w, "grad w"), E);
  } else {
    Tensor rows = torch::empty(w.sizes(), options(bridge::dtype_of<Real>()));
    f.grad_w = bridge::view3<Real>(rows, "grad w");
    kk::unrotate_aggregate_backward(exec, f, E);
    fence_for_torch(exec);
    grad_w = rows.to(bridge::dtype_of<Out>());
  }
  fence_for_torch(exec);
  return {grad_w, grad_band, grad_env};
}

struct UnrotateAggregateFn : public torch::autograd::Function<UnrotateAggregateFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& w, const Tensor& band, const Tensor& env,
                        std::int64_t step_handle, std::int64_t lmax, std::int64_t mmax) {
    ctx->saved_data["step"] = step_handle;
    const BandPart part = save_part(ctx, lmax, mmax);
    ctx->save_for_backward({w, band, env});
    const StepContext& s = step_of(ctx);
    const StepTimer timer(s, &StepTimes::edge_frame);
    return with_real(s.dtype, [&](auto real) { return unrotate_forward<decltype(real)>(w, band, env, s, part); });
  }

  template <class Real>
  static variable_list run_backward(AutogradContext* ctx, const Tensor& grad_agg, const StepContext& s,
                                    const BandPart& part) {
    const auto saved = ctx->get_saved_variables();
    auto [grad_w, grad_band, grad_env] = unrotate_backward<Real>(saved[0], saved[1], saved[2], grad_agg, s, part);
    return {grad_w, grad_band, grad_env, Tensor(), Tensor(), Tensor()};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const StepContext& s = step_of(ctx);
    const StepTimer timer(s, &StepTimes::edge_frame);
    const BandPart part = saved_part(ctx);
    const Tensor ga = grad_or_zeros(grads[0], {s.graph.n_nodes, kk::n_coeffs(part.lmax), s.channels}, s.dtype);
    return with_real(s.dtype, [&](auto real) { return run_backward<decltype(real)>(ctx, ga, s, part); });
  }
};

// ---- so2_linear (block GEMMs into column ranges) and so2_gate -----------------------------------
// On CUDA, torch's GEMMs take a column range of a row-major matrix as it is (a leading
// dimension larger than the width), so the outputs below are written in place.
// [rows, width] for blocks that write columns [start, start + count) each (the blocks are
// disjoint, validate()): the columns no block writes are zeroed, and only those. Zeroing the
// whole tensor first wrote every covered value twice: in the first and last layers, where the
// m > 0 blocks are skipped, those fills were edge-sized.
Tensor block_output(std::int64_t rows, int width, const So2Plan& plan, int So2Plan::Block::*start,
                    int So2Plan::Block::*count, const torch::TensorOptions& options) {
  Tensor out = torch::empty({rows, width}, options);
  std::vector<std::pair<int, int>> covered;
  for (const auto& b : plan.blocks) covered.emplace_back(b.*start, b.*start + b.*count);
  std::sort(covered.begin(), covered.end());
  int col = 0;
  for (const auto& [from, to] : covered) {
    if (from > col) out.narrow(1, col, from - col).zero_();
    col = std::max(col, to);
  }
  if (col < width) out.narrow(1, col, width - col).zero_();
  return out;
}

// z = the plan's blocks applied to x [E, x_width]; z [E, z_width] in `dtype` (x's, or fp32
// where x holds bf16 operands).
Tensor so2_blocks_forward(const Tensor& x, const So2Plan& plan, torch::Dtype dtype) {
  Tensor z = block_output(x.size(0), plan.z_width, plan, &So2Plan::Block::z_col, &So2Plan::Block::z_cols,
                          x.options().dtype(dtype));
  for (const auto& b : plan.blocks) {
    Tensor out = z.narrow(1, b.z_col, b.z_cols);
    const Tensor in = x.narrow(1, b.x_col, b.x_cols);
    gemm_out(out, in, b.w.t(), b.bias);
  }
  return z;
}

// grad x [E, x_width] in `dtype` from grad z [E, z_width] (contiguous).
Tensor so2_blocks_backward(const Tensor& g, const So2Plan& plan, torch::Dtype dtype) {
  Tensor gx = block_output(g.size(0), plan.x_width, plan, &So2Plan::Block::x_col, &So2Plan::Block::x_cols,
                           g.options().dtype(dtype));
  for (const auto& b : plan.blocks) {
    Tensor out = gx.narrow(1, b.x_col, b.x_cols);
    gemm_out(out, g.narrow(1, b.z_col, b.z_cols), b.w);
  }
  return gx;
}

struct So2LinearFn : public torch::autograd::Function<So2LinearFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, std::int64_t plan_handle) {
    ctx->saved_data["plan"] = plan_handle;
    return so2_blocks_forward(x, *reinterpret_cast<const So2Plan*>(plan_handle), x.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const So2Plan& plan = *reinterpret_cast<const So2Plan*>(ctx->saved_data["plan"].toInt());
    const Tensor& gz = grads[0];
    if (!gz.defined()) return {Tensor(), Tensor()};
    const Tensor g = gz.contiguous();
    return {so2_blocks_backward(g, plan, g.scalar_type()), Tensor()};
  }
};

// The sigmoids the gate kernel reads on host backends: of z's row 0 [E, C] and of the gate rows
// [E, L C]. On devices the kernel computes them itself (so2_gate.hpp): none are made here.
constexpr bool gate_torch_sigmoids() { return kk::gate_takes_sigmoids<Exec>(); }

std::pair<Tensor, Tensor> gate_sigmoids(const Tensor& z, int lmax, int channels) {
  if (!gate_torch_sigmoids()) return {};
  return {torch::sigmoid(z.narrow(1, 0, channels)),
          torch::sigmoid(z.narrow(1, (lmax + 1) * channels, lmax * channels))};
}

template <class Real, class Out = Real>
kk::So2Gate<Exec, Real, Out> gate_functor(const Tensor& z, const std::pair<Tensor, Tensor>& sig, int lmax, int mmax,
                                          int channels) {
  kk::So2Gate<Exec, Real, Out> f;
  f.z = bridge::view2<const Real>(z, "first SO(2) linear output z");
  if (sig.first.defined()) {  // else left empty: the kernel computes them
    f.sig0 = bridge::view2<const Real>(sig.first, "sigmoid of row 0");
    f.sig = bridge::view2<const Real>(sig.second, "sigmoid of the gates");
  }
  f.lmax = lmax;
  f.mmax = mmax;
  f.channels = channels;
  return f;
}

// The gated rows x [E, K, C] of z, elements Out (Real, or Bf16 rounded at the store).
template <class Real, class Out = Real>
Tensor gate_forward(const Tensor& z, int lmax, int mmax, int channels) {
  const int E = static_cast<int>(z.size(0)), K = kk::band_rows(lmax, mmax);
  Tensor x = torch::empty({E, K, channels}, options(bridge::dtype_of<Out>()));
  const auto sig = gate_sigmoids(z, lmax, channels);  // the functor's views read them
  auto f = gate_functor<Real, Out>(z, sig, lmax, mmax, channels);
  f.x = bridge::view3<Out>(x, "gated rows");
  const Exec exec = bridge::exec_instance();
  kk::so2_gate_forward(exec, f, E);
  fence_for_torch(exec);
  return x;
}

// grad z (z's shape, elements Out) from the gated rows' gradient grad_x [E, K, C].
template <class Real, class Out = Real>
Tensor gate_backward(const Tensor& z, const Tensor& grad_x, int lmax, int mmax, int channels) {
  Tensor grad_z = torch::empty(z.sizes(), options(bridge::dtype_of<Out>()));
  const auto sig = gate_sigmoids(z, lmax, channels);  // recomputed (host backends): nothing more is kept
  auto f = gate_functor<Real, Out>(z, sig, lmax, mmax, channels);
  f.grad_x = bridge::view3<const Real>(grad_x, "grad gated rows");
  f.grad_z = bridge::view2<Out>(grad_z, "grad z");
  const Exec exec = bridge::exec_instance();
  kk::so2_gate_backward(exec, f, static_cast<int>(z.size(0)));
  fence_for_torch(exec);
  return grad_z;
}

struct So2GateFn : public torch::autograd::Function<So2GateFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& z, std::int64_t lmax, std::int64_t mmax,
                        std::int64_t channels) {
    ctx->save_for_backward({z});
    ctx->saved_data["shape"] = std::vector<std::int64_t>{lmax, mmax, channels};
    return with_real(z.scalar_type(),
                     [&](auto real) { return gate_forward<decltype(real)>(z, int(lmax), int(mmax), int(channels)); });
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Tensor z = ctx->get_saved_variables()[0];
    const auto shape = ctx->saved_data["shape"].toIntVector();
    const int E = static_cast<int>(z.size(0)), K = kk::band_rows(int(shape[0]), int(shape[1]));
    const Tensor gx = grad_or_zeros(grads[0], {E, K, shape[2]}, z.scalar_type());
    const Tensor gz = with_real(z.scalar_type(), [&](auto real) {
      return gate_backward<decltype(real)>(z, gx, int(shape[0]), int(shape[1]), int(shape[2]));
    });
    return {gz, Tensor(), Tensor(), Tensor()};
  }
};

// ---- so2_convolution: pack, SO(2) linear, gate, SO(2) linear, unrotate in one function ---------
// The kernel outputs that only feed a GEMM (u and x forward, grad_w and grad_z backward) are
// stored as Store: Real, or kk::Bf16 in the bf16 GEMM mode, where those GEMMs round their
// operands to bfloat16 anyway (gemm.hpp): the kernels round at the store and the GEMMs read half
// the bytes, with no cast pass between (each a read of the fp32 tensor and a write of its copy).
// Kept for the backward, as by the separate functions: the pack's inputs, z and w; z and w are
// released as soon as the backward has used them.
template <class Store>
struct So2ConvolutionFn : public torch::autograd::Function<So2ConvolutionFn<Store>> {
  using Real = float;  // Store = Real (tests: the same path in fp32) or Bf16
  static constexpr torch::Dtype kStore = bridge::dtype_of<Store>();

  static const So2Plan& plan(AutogradContext* ctx, const char* which) {
    return *reinterpret_cast<const So2Plan*>(ctx->saved_data[which].toInt());
  }
  // z or w, kept by the forward and released by the backward once used: a second backward
  // through the same graph (retain_graph) finds it gone and says so.
  static Tensor kept(AutogradContext* ctx, const char* which) {
    const auto it = ctx->saved_data.find(which);
    if (it == ctx->saved_data.end())
      throw ComputeError(std::string("edgeframe: so2_convolution's backward ran twice (its ") + which +
                         " is released by the first)");
    return it->second.toTensor();
  }

  static Tensor forward(AutogradContext* ctx, const Tensor& n, const Tensor& band, const Tensor& a, const Tensor& w2,
                        const Tensor& b2, const Tensor& env, std::int64_t step_handle, std::int64_t plan1_handle,
                        std::int64_t plan2_handle, std::int64_t lmax, std::int64_t mmax, std::int64_t hidden) {
    ctx->saved_data["step"] = step_handle;
    ctx->saved_data["so2_1"] = plan1_handle;
    ctx->saved_data["so2_2"] = plan2_handle;
    ctx->saved_data["hidden"] = hidden;
    const BandPart part = save_part(ctx, lmax, mmax);
    ctx->save_for_backward({n, band, a, w2, b2, env});
    const StepContext& s = step_of(ctx);
    const StepTimer timer(s, &StepTimes::edge_frame);
    const So2Plan &p1 = plan(ctx, "so2_1"), &p2 = plan(ctx, "so2_2");
    const int E = s.graph.n_edges, K = kk::band_rows(part.lmax, part.mmax), C = s.channels, H = int(hidden);
    const Exec exec = bridge::exec_instance();

    Tensor g = EdgeFramePackFn::radial_multipliers(a, w2, b2, s, part);
    Tensor u = torch::empty({E, K, 2 * C}, options(kStore));
    kk::edge_frame_pack_forward_into(exec, pack_functor<Real>(s, part, n, band, g), bridge::view3<Store>(u, "packed u"),
                                     E);
    fence_for_torch(exec);
    g.reset();
    Tensor z = so2_blocks_forward(u.view({E, p1.x_width}), p1, torch::kFloat);
    u.reset();
    Tensor x = gate_forward<Real, Store>(z, part.lmax, part.mmax, H);
    Tensor w = so2_blocks_forward(x.view({E, p2.x_width}), p2, torch::kFloat).view({E, K, C});
    x.reset();
    Tensor agg = unrotate_forward<Real>(w, band, env, s, part);
    ctx->saved_data["z"] = z;
    ctx->saved_data["w"] = w;
    return agg;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const StepContext& s = step_of(ctx);
    const StepTimer timer(s, &StepTimes::edge_frame);
    const BandPart part = saved_part(ctx);
    const So2Plan &p1 = plan(ctx, "so2_1"), &p2 = plan(ctx, "so2_2");
    const int E = s.graph.n_edges, K = kk::band_rows(part.lmax, part.mmax), C = s.channels;
    const int H = int(ctx->saved_data["hidden"].toInt());
    const auto saved = ctx->get_saved_variables();
    const Tensor &n = saved[0], &band = saved[1], &a = saved[2], &w2 = saved[3], &b2 = saved[4], &env = saved[5];
    const Tensor grad_agg = grad_or_zeros(grads[0], {s.graph.n_nodes, kk::n_coeffs(part.lmax), C}, torch::kFloat);
    auto [grad_w, grad_band, grad_env] = unrotate_backward<Real, Store>(kept(ctx, "w"), band, env, grad_agg, s, part);
    ctx->saved_data.erase("w");
    Tensor grad_x = so2_blocks_backward(grad_w.view({E, p2.z_width}), p2, torch::kFloat);
    grad_w.reset();
    Tensor grad_z = gate_backward<Real, Store>(kept(ctx, "z"), grad_x.view({E, K, H}), part.lmax, part.mmax, H);
    // Released before the pass that holds the layer's widest tensors (the pack's backward), as
    // autograd releases them between the separate functions.
    grad_x.reset();
    ctx->saved_data.erase("z");
    const Tensor grad_u = so2_blocks_backward(grad_z, p1, torch::kFloat).view({E, K, 2 * C});
    grad_z.reset();
    auto [grad_n, grad_band_pack, grad_a] = EdgeFramePackFn::pack_backward<Real>(
        n, band, a, w2, b2, grad_u, s, part, ctx->needs_input_grad(0), std::is_same_v<Store, kk::Bf16>);
    grad_band.add_(grad_band_pack);  // in place: the sum autograd would have made, one tensor less
    return {grad_n,   grad_band, grad_a,   Tensor(), Tensor(), grad_env,
            Tensor(), Tensor(),  Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

// ---- rms_norm (equivariant RMS norm of node features) -----------------------------------------
template <class Real>
kk::RmsNorm<Exec, Real> rms_functor(const Tensor& h, const Tensor& scale, int lmax, double eps) {
  kk::RmsNorm<Exec, Real> f;
  f.h_data = h.data_ptr<Real>();
  f.node_stride = h.stride(0);
  f.scale = bridge::view2<const Real>(scale, "norm scale");
  f.lmax = lmax;
  f.channels = static_cast<int>(h.size(2));
  f.eps = eps;
  return f;
}

struct RmsNormFn : public torch::autograd::Function<RmsNormFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& h, const Tensor& scale, std::int64_t lmax, double eps) {
    const int N = static_cast<int>(h.size(0)), D = static_cast<int>((lmax + 1) * (lmax + 1));
    Tensor out = torch::empty({N, D, h.size(2)}, h.options());
    Tensor r = torch::empty({N, lmax + 1}, h.options().dtype(torch::kFloat64));
    const Exec exec = bridge::exec_instance();
    with_real(h.scalar_type(), [&](auto real) {
      using Real = decltype(real);
      auto f = rms_functor<Real>(h, scale, static_cast<int>(lmax), eps);
      f.out = bridge::view3<Real>(out, "normalised features");
      f.r = bridge::view2<double>(r, "inverse rms");
      kk::rms_norm_forward(exec, f, N);
    });
    fence_for_torch(exec);
    ctx->save_for_backward({h, scale, r});
    ctx->saved_data["lmax"] = lmax;
    ctx->saved_data["eps"] = eps;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor &h = saved[0], &scale = saved[1], &r = saved[2];
    const int lmax = static_cast<int>(ctx->saved_data["lmax"].toInt());
    const int N = static_cast<int>(h.size(0)), D = (lmax + 1) * (lmax + 1);
    const Tensor g = grad_or_zeros(grads[0], {N, D, h.size(2)}, h.scalar_type());
    Tensor grad_h = torch::empty({N, D, h.size(2)}, h.options().memory_format(torch::MemoryFormat::Contiguous));
    const Exec exec = bridge::exec_instance();
    with_real(h.scalar_type(), [&](auto real) {
      using Real = decltype(real);
      auto f = rms_functor<Real>(h, scale, lmax, ctx->saved_data["eps"].toDouble());
      f.r = bridge::view2<double>(r, "inverse rms");
      f.grad_out = bridge::view3<const Real>(g, "grad normalised features");
      f.grad_h = bridge::view3<Real>(grad_h, "grad features");
      kk::rms_norm_backward(exec, f, N);
    });
    fence_for_torch(exec);
    return {grad_h, Tensor(), Tensor(), Tensor()};
  }
};

// ---- layer_norm_silu (model v2's radial MLP hidden layers) -------------------------------------
template <class Real>
kk::LayerNormSilu<Exec, Real> layer_norm_silu_functor(const Tensor& a, const Tensor& w, const Tensor& b, double eps,
                                                      const EdgeEmbeddingAdd& add) {
  kk::LayerNormSilu<Exec, Real> f;
  f.a = bridge::view2<const Real>(a, "radial rows");
  f.w = bridge::view1<const Real>(w, "layer norm weight");
  f.b = bridge::view1<const Real>(b, "layer norm bias");
  if (add.table_src.defined()) {
    f.table_src = bridge::view2<const Real>(add.table_src, "source embedding table");
    f.table_tgt = bridge::view2<const Real>(add.table_tgt, "target embedding table");
    f.z_send = bridge::view1<const int>(add.row_send, "source table rows");
    f.z_recv = bridge::view1<const int>(add.row_recv, "target table rows");
  }
  f.width = static_cast<int>(a.size(1));
  f.rows = static_cast<int>(a.size(0));
  f.eps = eps;
  return f;
}

struct LayerNormSiluFn : public torch::autograd::Function<LayerNormSiluFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& w, const Tensor& b, double eps,
                        std::int64_t add_handle) {
    const auto& add = *reinterpret_cast<const EdgeEmbeddingAdd*>(add_handle);
    Tensor y = torch::empty_like(a);
    const Exec exec = bridge::exec_instance();
    with_real(a.scalar_type(), [&](auto real) {
      using Real = decltype(real);
      auto f = layer_norm_silu_functor<Real>(a, w, b, eps, add);
      f.y = bridge::view2<Real>(y, "layer norm silu output");
      kk::layer_norm_silu_forward(exec, f);
    });
    fence_for_torch(exec);
    // The tables and their rows are kept by value (tensors share storage): the caller's
    // EdgeEmbeddingAdd need not outlive the backward pass.
    ctx->save_for_backward({a, w, b, add.table_src, add.table_tgt, add.row_send, add.row_recv});
    ctx->saved_data["eps"] = eps;
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor &a = saved[0], &w = saved[1], &b = saved[2];
    const EdgeEmbeddingAdd add{saved[3], saved[4], saved[5], saved[6]};
    const Tensor gy = grad_or_zeros(grads[0], a.sizes(), a.scalar_type());
    Tensor grad_a = torch::empty_like(a);
    const Exec exec = bridge::exec_instance();
    with_real(a.scalar_type(), [&](auto real) {
      using Real = decltype(real);
      auto f = layer_norm_silu_functor<Real>(a, w, b, ctx->saved_data["eps"].toDouble(), add);
      f.grad_y = bridge::view2<const Real>(gy, "grad layer norm silu output");
      f.grad_a = bridge::view2<Real>(grad_a, "grad radial rows");
      kk::layer_norm_silu_backward(exec, f);
    });
    fence_for_torch(exec);
    return {grad_a, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

// ---- rms_norm_sh (model v2's norm of node features) ------------------------------------------
template <class Real>
kk::RmsNormSh<Exec, Real> rms_norm_sh_functor(const Tensor& h, const Tensor& w, const Tensor& b, int lmax, double eps) {
  kk::RmsNormSh<Exec, Real> f;
  f.h = bridge::view3<const Real>(h, "node features");
  f.w = bridge::view2<const Real>(w, "norm weight");
  f.b = bridge::view1<const Real>(b, "norm bias");
  f.lmax = lmax;
  f.channels = static_cast<int>(h.size(2));
  f.eps = eps;
  return f;
}

struct RmsNormShFn : public torch::autograd::Function<RmsNormShFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& h, const Tensor& w, const Tensor& b, std::int64_t lmax,
                        double eps) {
    Tensor out = torch::empty_like(h);
    const Exec exec = bridge::exec_instance();
    with_real(h.scalar_type(), [&](auto real) {
      using Real = decltype(real);
      auto f = rms_norm_sh_functor<Real>(h, w, b, static_cast<int>(lmax), eps);
      f.out = bridge::view3<Real>(out, "normalised features");
      kk::rms_norm_sh_forward(exec, f, static_cast<int>(h.size(0)));
    });
    fence_for_torch(exec);
    ctx->save_for_backward({h, w, b});
    ctx->saved_data["lmax"] = lmax;
    ctx->saved_data["eps"] = eps;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor &h = saved[0], &w = saved[1], &b = saved[2];
    const Tensor g = grad_or_zeros(grads[0], h.sizes(), h.scalar_type());
    Tensor grad_h = torch::empty_like(h);
    const Exec exec = bridge::exec_instance();
    with_real(h.scalar_type(), [&](auto real) {
      using Real = decltype(real);
      auto f = rms_norm_sh_functor<Real>(h, w, b, static_cast<int>(ctx->saved_data["lmax"].toInt()),
                                         ctx->saved_data["eps"].toDouble());
      f.grad_out = bridge::view3<const Real>(g, "grad normalised features");
      f.grad_h = bridge::view3<Real>(grad_h, "grad node features");
      kk::rms_norm_sh_backward(exec, f, static_cast<int>(h.size(0)));
    });
    fence_for_torch(exec);
    return {grad_h, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

// ---- node exchange (per-layer ghost features) -------------------------------------------------
NodeRows rows_of(const Tensor& t) {
  NodeRows r;
  r.data = t.data_ptr();
  r.type = t.scalar_type() == torch::kFloat64 ? RowType::f64 : RowType::f32;
  r.rows = static_cast<int>(t.size(0));
  r.width = static_cast<int>(t.numel() / std::max<std::int64_t>(t.size(0), 1));
  return r;
}

// Forward: out = h with ghost rows overwritten by their owners' (forward communication).
// Backward: the adjoint, owner rows += ghost rows, ghost rows := 0 (reverse communication).
// Both act on a fresh contiguous copy: autograd keeps h (the residual path reads it), and the
// incoming gradient may be shared with other nodes of the graph.
struct NodeExchangeFn : public torch::autograd::Function<NodeExchangeFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& h, std::int64_t step_handle) {
    ctx->saved_data["step"] = step_handle;
    StepContext& s = step_of(ctx);
    Tensor out = h.contiguous().clone();
    const StepTimer timer(s, &StepTimes::exchange);
    // The exchange reads and writes the rows outside torch's stream (host copies, MPI).
    bridge::exec_instance().fence("edgeframe: features handed to the exchange");
    s.exchange->forward(rows_of(out));
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    StepContext& s = step_of(ctx);
    Tensor g = grads[0].defined() ? grads[0].contiguous().clone() : Tensor();
    if (!g.defined()) {
      const int N = s.graph.n_nodes, D = (s.lmax + 1) * (s.lmax + 1);
      g = torch::zeros({N, D, s.channels}, options(s.dtype));
    }
    const StepTimer timer(s, &StepTimes::exchange);
    bridge::exec_instance().fence("edgeframe: gradients handed to the exchange");
    s.exchange->reverse(rows_of(g));
    ++s.exchange_reverse_calls;
    return {g, Tensor()};
  }
};

std::int64_t handle_of(StepContext& step) { return reinterpret_cast<std::int64_t>(&step); }

}  // namespace

StepTimer::StepTimer(const StepContext& step, double StepTimes::*slot) : m_times(step.times), m_slot(slot) {
  if (!m_times) return;
  bridge::exec_instance().fence("edgeframe: timer start");  // on CUDA torch shares this stream
  m_start = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

StepTimer::~StepTimer() {
  if (!m_times) return;
  bridge::exec_instance().fence("edgeframe: timer stop");
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  m_times->*m_slot += now - m_start;
}

StepOutputs take_step_outputs(Workspace& ws, int N, int E) {
  StepOutputs out;
  out.res.energies = kk::View1<double, Exec>(ws.take<double>(Workspace::kEnergies, N), N);
  out.res.forces = kk::Vec3View<double, Exec>(ws.take<double>(Workspace::kForces, std::size_t(N) * 3), N);
  out.res.atom_virial = kk::View2<double, Exec>(ws.take<double>(Workspace::kAtomVirial, std::size_t(N) * 9), N, 9);
  // dE/dr_e of every edge, filled at the step's end (finish_forces_and_sums): taken now, before
  // torch's pool grows through the step, which on a full card leaves no room for it later.
  ws.take<double>(Workspace::kGradVec, std::size_t(E) * 3);
  // Chunks over the edges (virial) and the nodes (energies of the owned ones, every force's check).
  out.n_chunks = std::max({(E + kk::kSumChunk - 1) / kk::kSumChunk, (N + kk::kSumChunk - 1) / kk::kSumChunk, 1});
  out.partials =
      kk::View2<double, Exec>(ws.take<double>(Workspace::kPartials, std::size_t(out.n_chunks) * 10), out.n_chunks, 10);
  out.sums = kk::View1<double, Exec>(ws.take<double>(Workspace::kSums, 10), 10);
  return out;
}

void pad_reverse_exchanges(StepContext& step, int expected, int N, int width) {
  if (!step.exchange) return;
  if (step.exchange_reverse_calls > expected)
    throw ComputeError("edgeframe: the backward pass made " + std::to_string(step.exchange_reverse_calls) +
                       " reverse exchanges for " + std::to_string(expected) + " exchanged layers");
  if (step.exchange_reverse_calls == expected) return;
  const Tensor zero = torch::zeros({N, width}, options(step.dtype));
  NodeRows rows;
  rows.data = zero.data_ptr();
  rows.type = step.dtype == torch::kFloat64 ? RowType::f64 : RowType::f32;
  rows.rows = N;
  rows.width = width;
  const StepTimer timer(step, &StepTimes::exchange);
  bridge::exec_instance().fence("edgeframe: zero rows handed to the exchange");
  for (int k = step.exchange_reverse_calls; k < expected; ++k) step.exchange->reverse(rows);
}

void finish_forces_and_sums(StepContext& step, StepOutputs& out, const kk::Vec3View<double, Exec>& vec,
                            const Tensor& grad_vec, const Tensor& energies, int n_local, bool grad, bool atom_virial) {
  const auto& g = step.graph;
  const int N = g.n_nodes, E = g.n_edges;
  const Exec exec = bridge::exec_instance();
  Result& res = out.res;
  res.edge_grad = kk::Vec3View<double, Exec>(step.workspace->take<double>(Workspace::kGradVec, std::size_t(E) * 3), E);
  const Tensor edge_grad_t = bridge::tensor_of(res.edge_grad, {E, 3});
  if (!grad_vec.defined())
    edge_grad_t.zero_();
  else if (grad_vec.data_ptr() != edge_grad_t.data_ptr())
    edge_grad_t.copy_(grad_vec);
  const Tensor energies64 = energies.detach().to(torch::kFloat64).contiguous();
  Kokkos::deep_copy(exec, res.energies, kk::View1<const double, Exec>(energies64.data_ptr<double>(), N));
  kk::Vec3View<const double, Exec> gv = res.edge_grad;
  kk::NodeForces<Exec> nf{g.recv_offsets,
                          g.send_offsets,
                          g.send_edges,
                          vec,
                          gv,
                          res.forces,
                          atom_virial ? res.atom_virial : kk::View2<double, Exec>()};
  const StepTimer timer(step, &StepTimes::geometry);
  if (grad) kk::node_forces(exec, nf, N);
  const kk::Vec3View<const double, Exec> checked_forces = grad ? res.forces : kk::Vec3View<double, Exec>();
  kk::GlobalSums<Exec> gs{vec, gv, res.energies, checked_forces, out.partials, out.sums, E, n_local, out.n_chunks};
  kk::global_sums(exec, gs);
}

torch::autograd::variable_list edge_geometry(const torch::Tensor& vec, StepContext& step) {
  return EdgeGeometryFn::apply(vec, handle_of(step));
}

void reserve_edge_geometry(StepContext& step, int n_edges) {
  const int B = kk::band_size(step.lmax, step.mmax);
  with_real(step.dtype, [&](auto real) { GeometrySlots<decltype(real)>(*step.workspace, n_edges, B, step.n_rbf); });
}

bool pack_backward_in_place(int lmax) { return kk::backward_edge_in_place<Exec>(lmax); }

// `part` with the step's values for -1, checked against the step and the band passed.
BandPart resolved(BandPart part, const torch::Tensor& band, const StepContext& step) {
  if (part.lmax < 0) part.lmax = step.lmax;
  if (part.mmax < 0) part.mmax = step.mmax;
  if (part.lmax > step.lmax || part.mmax > step.mmax)
    throw ComputeError("edge-frame kernels: asked for degrees up to " + std::to_string(part.lmax) + " and |m| up to " +
                       std::to_string(part.mmax) + " of a step with " + std::to_string(step.lmax) + " and " +
                       std::to_string(step.mmax));
  if (band.dim() != 2 || band.size(1) < kk::band_size(part.lmax, part.mmax))
    throw ComputeError("edge-frame kernels: the band passed has fewer columns than its part needs (" +
                       std::to_string(kk::band_size(part.lmax, part.mmax)) + ")");
  return part;
}

torch::Tensor edge_frame_pack(const torch::Tensor& n, const torch::Tensor& band, const torch::Tensor& a,
                              const torch::Tensor& w, const torch::Tensor& b, StepContext& step, BandPart part) {
  part = resolved(part, band, step);
  return EdgeFramePackFn::apply(n.contiguous(), band, a.contiguous(), w, b, handle_of(step), part.lmax, part.mmax);
}

torch::Tensor unrotate_aggregate(const torch::Tensor& w, const torch::Tensor& band, const torch::Tensor& env,
                                 StepContext& step, BandPart part) {
  part = resolved(part, band, step);
  return UnrotateAggregateFn::apply(w.contiguous(), band, env, handle_of(step), part.lmax, part.mmax);
}

torch::Tensor so2_convolution(const torch::Tensor& n, const torch::Tensor& band, const torch::Tensor& a,
                              const torch::Tensor& w2, const torch::Tensor& b2, const torch::Tensor& env,
                              const So2Plan& so2_1, const So2Plan& so2_2, int hidden, StepContext& step,
                              bool bf16_storage, BandPart part) {
  if (step.dtype != torch::kFloat32) throw ComputeError("edgeframe: so2_convolution computes in fp32 only");
  part = resolved(part, band, step);
  const auto p1 = reinterpret_cast<std::int64_t>(&so2_1), p2 = reinterpret_cast<std::int64_t>(&so2_2);
  if (bf16_storage)
    return So2ConvolutionFn<kk::Bf16>::apply(n.contiguous(), band, a.contiguous(), w2, b2, env, handle_of(step), p1, p2,
                                             part.lmax, part.mmax, hidden);
  return So2ConvolutionFn<float>::apply(n.contiguous(), band, a.contiguous(), w2, b2, env, handle_of(step), p1, p2,
                                        part.lmax, part.mmax, hidden);
}

torch::Tensor m0_band(const torch::Tensor& band, int lmax, int mmax) {
  std::vector<torch::Tensor> rows;
  for (int l = 0; l <= lmax; ++l)
    rows.push_back(band.narrow(1, kk::band_offset(l, mmax) + kk::band_k(l, mmax) * (2 * l + 1), 2 * l + 1));
  return torch::cat(rows, 1);
}

void validate(const So2Plan& plan) {
  // Blocks in range and disjoint on both sides: the forward and backward zero exactly the
  // columns no block writes (block_output).
  auto disjoint = [](std::vector<std::pair<int, int>> ranges, int width) {
    std::sort(ranges.begin(), ranges.end());
    int end = 0;
    for (const auto& [begin, count] : ranges) {
      if (begin < end || count < 0 || begin + count > width) return false;
      end = begin + count;
    }
    return true;
  };
  std::vector<std::pair<int, int>> xs, zs;
  for (const auto& b : plan.blocks) {
    xs.emplace_back(b.x_col, b.x_cols);
    zs.emplace_back(b.z_col, b.z_cols);
    if (b.w.dim() != 2 || b.w.size(0) != b.z_cols || b.w.size(1) != b.x_cols ||
        (b.bias.defined() && b.bias.numel() != b.z_cols))
      throw ComputeError("edgeframe: SO(2) plan block weight does not match its column ranges");
  }
  if (!disjoint(xs, plan.x_width) || !disjoint(zs, plan.z_width))
    throw ComputeError("edgeframe: SO(2) plan blocks overlap or leave their matrix");
}

torch::Tensor so2_linear(const torch::Tensor& x, const So2Plan& plan) {
  if (x.dim() != 2 || x.size(1) != plan.x_width || !x.is_contiguous())
    throw ComputeError("edgeframe: so2_linear wants contiguous x [E, " + std::to_string(plan.x_width) + "]");
  return So2LinearFn::apply(x, reinterpret_cast<std::int64_t>(&plan));
}

torch::Tensor so2_gate(const torch::Tensor& z, int lmax, int mmax, int channels) {
  return So2GateFn::apply(z.contiguous(), lmax, mmax, channels);
}

torch::Tensor layer_norm_silu(const torch::Tensor& a, const torch::Tensor& w, const torch::Tensor& b, double eps,
                              const EdgeEmbeddingAdd& add) {
  const auto H = a.dim() == 2 ? a.size(1) : -1;
  if (H < 1 || w.dim() != 1 || w.size(0) != H || b.dim() != 1 || b.size(0) != H || w.scalar_type() != a.scalar_type() ||
      b.scalar_type() != a.scalar_type())
    throw ComputeError("edgeframe: layer_norm_silu wants a [E, H] and w, b [H] of one dtype");
  if (add.table_src.defined()) {
    const auto E = a.size(0);
    if (!add.table_tgt.defined() || add.table_src.dim() != 2 || add.table_src.size(1) != H ||
        add.table_tgt.dim() != 2 || add.table_tgt.size(1) != H || add.row_send.numel() != E ||
        add.row_recv.numel() != E || add.row_send.scalar_type() != torch::kInt32 ||
        add.row_recv.scalar_type() != torch::kInt32)
      throw ComputeError("edgeframe: layer_norm_silu's embedding add wants tables [Z, H] and int32 rows [E]");
  }
  EdgeEmbeddingAdd contiguous = add;
  if (add.table_src.defined())
    contiguous = {add.table_src.contiguous(), add.table_tgt.contiguous(), add.row_send.contiguous(),
                  add.row_recv.contiguous()};
  return LayerNormSiluFn::apply(a.contiguous(), w.contiguous(), b.contiguous(), eps,
                                reinterpret_cast<std::int64_t>(&contiguous));
}

torch::Tensor rms_norm_sh(const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& b, int lmax,
                          double eps) {
  const int D = (lmax + 1) * (lmax + 1);
  if (h.dim() != 3 || h.size(1) != D || w.dim() != 2 || w.size(0) != lmax + 1 || w.size(1) != h.size(2) ||
      b.numel() != h.size(2) || w.scalar_type() != h.scalar_type() || b.scalar_type() != h.scalar_type())
    throw ComputeError("edgeframe: rms_norm_sh wants h [N, (lmax+1)^2, C], w [lmax+1, C], b [C] of one dtype");
  return RmsNormShFn::apply(h.contiguous(), w.contiguous(), b.reshape({-1}).contiguous(), lmax, eps);
}

torch::Tensor rms_norm(const torch::Tensor& h, const torch::Tensor& scale, int lmax, double eps) {
  if (h.dim() != 3 || h.size(1) < (lmax + 1) * (lmax + 1) || scale.dim() != 2 || scale.size(0) != lmax + 1 ||
      scale.size(1) != h.size(2) || scale.scalar_type() != h.scalar_type())
    throw ComputeError("edgeframe: rms_norm wants h [N, >= (lmax+1)^2, C] and scale [lmax+1, C] of one dtype");
  // Rows and channels must be dense within a node (a narrow over degrees keeps them so).
  // Only the normalised rows go in, so the gradient has the input's shape.
  const Tensor rows = h.size(1) == (lmax + 1) * (lmax + 1) ? h : h.narrow(1, 0, (lmax + 1) * (lmax + 1));
  const Tensor hd = rows.stride(2) == 1 && rows.stride(1) == rows.size(2) ? rows : rows.contiguous();
  return RmsNormFn::apply(hd, scale.contiguous(), lmax, eps);
}

torch::Tensor node_exchange(const torch::Tensor& h, StepContext& step) {
  if (!step.exchange) throw ComputeError("edgeframe: node_exchange without an exchange");
  if (h.dim() != 3 || h.scalar_type() != step.dtype || h.size(0) != step.graph.n_nodes)
    throw ComputeError("edgeframe: node_exchange wants features [N, D, C] of the graph's nodes in the compute dtype");
  return NodeExchangeFn::apply(h, handle_of(step));
}

namespace {

struct RecomputedLayerFn : public torch::autograd::Function<RecomputedLayerFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& h, const Tensor& band, const Tensor& rbf, const Tensor& env,
                        std::int64_t layer_handle, std::int64_t counter_handle) {
    ctx->saved_data["layer"] = layer_handle;
    ctx->saved_data["counter"] = counter_handle;
    ctx->save_for_backward({h, band, rbf, env});
    const torch::NoGradGuard no_grad;  // nothing of the layer's inside is kept
    return (*reinterpret_cast<const LayerFn*>(layer_handle))(h, band, rbf, env);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const auto& layer = *reinterpret_cast<const LayerFn*>(ctx->saved_data["layer"].toInt());
    const variable_list saved = ctx->get_saved_variables();
    variable_list inputs, wrt;
    std::vector<std::size_t> slot_of_wrt;
    for (std::size_t k = 0; k < saved.size(); ++k) {
      Tensor x = saved[k].detach();  // a leaf of the recomputed graph, same storage
      if (ctx->needs_input_grad(k)) {
        x.requires_grad_(true);
        wrt.push_back(x);
        slot_of_wrt.push_back(k);
      }
      inputs.push_back(x);
    }
    variable_list result(saved.size() + 2);  // + the two handles, which have no gradient
    if (wrt.empty()) return result;
    ++*reinterpret_cast<long*>(ctx->saved_data["counter"].toInt());
    Tensor out;
    {
      const torch::AutoGradMode grad_on(true);
      out = layer(inputs[0], inputs[1], inputs[2], inputs[3]);
    }
    const variable_list grads = torch::autograd::grad({out}, wrt, {grad_out[0]}, false, false, true);
    for (std::size_t i = 0; i < wrt.size(); ++i) result[slot_of_wrt[i]] = grads[i];
    return result;
  }
};

}  // namespace

Tensor recomputed_layer(const LayerFn& layer, const Tensor& h, const Tensor& band, const Tensor& rbf, const Tensor& env,
                        long& recomputed) {
  return RecomputedLayerFn::apply(h, band, rbf, env, reinterpret_cast<std::int64_t>(&layer),
                                  reinterpret_cast<std::int64_t>(&recomputed));
}

}  // namespace edgeframe::impl
