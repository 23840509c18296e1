// The model of doc/model.md on top of the kernels: dense parts (radial MLPs, SO(2) linears,
// gates, feed-forward, readout) as LibTorch ops, the edge-frame parts as the autograd functions
// of ops.hpp, forces from one backward pass, sums in double by the kernels of forces.hpp.
#include "evaluator.hpp"
#include "debug_switches.hpp"

#include <torch/torch.h>
#ifdef KOKKOS_ENABLE_CUDA
#include <c10/core/AllocatorConfig.h>       // expandable segments (memory_budget_now)
#include <c10/cuda/CUDACachingAllocator.h>  // what torch's pool holds unused (budget_now)
#include <cuda_runtime_api.h>               // cudaMemGetInfo
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>

#include "band_layout.hpp"
#include "bridge.hpp"
#include "edge_chunks.hpp"
#include "errors.hpp"
#include "forces.hpp"
#include "model_v2.hpp"
#include "ops.hpp"
#include "runtime.hpp"
#include "step_graph.hpp"
#include "workspace.hpp"

namespace edgeframe {

using torch::Tensor;
namespace F = torch::nn::functional;

Precision parse_precision(const std::string& name) {
  if (name == "fp64") return Precision::fp64;
  if (name == "fp32") return Precision::fp32;
  if (name == "tf32") return Precision::tf32;
  if (name == "bf16") return Precision::bf16;
  if (name == "tf32x3") return Precision::tf32x3;
  throw InputError("unknown precision '" + name + "' (valid: fp64, fp32, tf32, bf16, tf32x3)");
}

std::string to_string(Precision p) {
  switch (p) {
    case Precision::fp64:
      return "fp64";
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::bf16:
      return "bf16";
    case Precision::tf32x3:
      return "tf32x3";
  }
  return "?";
}

void require_precision_available(Precision p) {
  const bool tensor_cores = p != Precision::fp64 && p != Precision::fp32;
  if (tensor_cores && !tf32_available())
    throw InputError("precision " + to_string(p) + " needs the CUDA engine; this build (" +
                     build_info().execution_space + ") supports fp64 and fp32");
}

AtomGraph make_graph(const kk::PairList<Exec>& pairs, kk::Vec3View<const double, Exec> positions,
                     kk::View1<const int, Exec> species, int n_local, double cutoff) {
  if (species.extent(0) != positions.extent(0))
    throw InputError("make_graph: " + std::to_string(species.extent(0)) + " species for " +
                     std::to_string(positions.extent(0)) + " positions");
  if (n_local < 0 || std::size_t(n_local) > positions.extent(0))
    throw InputError("make_graph: n_local " + std::to_string(n_local) + " out of range");
  AtomGraph g;
  g.edges = kk::build_graph(Exec(), pairs, positions, static_cast<int>(positions.extent(0)), cutoff);
  g.species = species;
  g.n_local = n_local;
  return g;
}

void refresh_graph_shifts(AtomGraph& graph, const kk::PairList<Exec>& pairs) {
  if (pairs.shift.extent(0) != 0 && graph.edges.n_edges > 0 &&
      pairs.i.extent(0) * graph.edges.per_pair < std::size_t(graph.edges.n_edges))
    throw InputError("refresh_graph_shifts: " + std::to_string(pairs.i.extent(0)) + " pairs for a graph of " +
                     std::to_string(graph.edges.n_edges) + " edges (not the pairs it was built from)");
  kk::refresh_shifts(Exec(), graph.edges, pairs);
}

namespace {

#ifdef KOKKOS_ENABLE_CUDA
// One counter of torch's caching allocator on the current device, over all its pools (current,
// peak, ...): what the memory budget and the reported peak read.
using TorchStats = c10::CachingDeviceAllocator::DeviceStats;
c10::CachingAllocator::Stat torch_pool_bytes(c10::CachingAllocator::StatArray TorchStats::*counter) {
  const TorchStats stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
  return (stats.*counter)[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
}
#endif

struct LayerWeights {
  Tensor norm_scale;  // [L+1, C]
  Tensor rad_w0_rbf, rad_w1, rad_b1, rad_w2, rad_b2;
  // The first radial linear's part that depends on the species pair only: bias + receiver
  // table[s_i] + sender table[s_j], row s_i S + s_j ([S^2, H_r], made in double at load).
  Tensor rad_pair;
  Tensor so2_1_w0, so2_1_b0, so2_2_w0, so2_2_b0;
  Tensor so2_1_w0_l0in;                      // so2_1 block 0 columns of the l = 0 input row (layer 0)
  Tensor so2_2_w0_l0out, so2_2_b0_l0out;     // so2_2 block 0 rows of the l = 0 output (last layer)
  std::vector<Tensor> so2_1_big, so2_2_big;  // per m = 1..mmax: [[Wr, -Wi], [Wi, Wr]]
  Tensor ffn_scale, ffn_w1, ffn_b1, ffn_wg, ffn_bg, ffn_w2, ffn_b2;
  // The two SO(2) linears as block GEMMs (impl::So2Plan), with this layer's skips applied.
  impl::So2Plan so2_1_plan, so2_2_plan;
};

}  // namespace

struct Evaluator::Impl {
  ModelConfig cfg;
  Precision precision;
  EvaluatorOptions::Activations activations;  // EvaluatorOptions::activations
  double memory_budget;                       // EvaluatorOptions::memory_budget
  bool cuda_graph;                            // EvaluatorOptions::cuda_graph
  int edge_chunk;                             // EvaluatorOptions::edge_chunk
  // The plan of the last step with a backward pass, and the graph size it was made for
  // (automatic makes a new one when the edge or node count changes).
  ActivationPlan plan;
  std::int64_t plan_edges = -1, plan_nodes = -1;
  long layers_recomputed = 0;  // edge parts run again in backward passes, over all compute() calls
  impl::EdgeChunks chunks;     // of the last graph seen (recompute with edge_chunk > 0)
  // The first layer rotates degree 0 only, the last aggregates degree 0 only, and both gate the
  // m = 0 rows only (make_so2_plans); EvaluatorOptions::trim_first_and_last_layers.
  bool trim_degrees;
  torch::Dtype dtype;
  Workspace workspace;
  Tensor species_embedding, e0, readout_scale, readout_w0, readout_b0, readout_w1, readout_b1;
  std::vector<LayerWeights> layers;

  Impl(const Potential& pot, EvaluatorOptions opt)
      : cfg(pot.config),
        precision(opt.precision),
        activations(opt.activations),
        memory_budget(opt.memory_budget),
        cuda_graph(opt.cuda_graph),
        edge_chunk(opt.edge_chunk),
        trim_degrees(opt.trim_first_and_last_layers),
        dtype(opt.precision == Precision::fp64 ? torch::kFloat64 : torch::kFloat32),
        workspace(opt.poison_scratch || debug_poison_scratch()) {
    if (cfg.lmax > kk::kMaxL) throw InputError("potential " + pot.path + ": lmax exceeds the compiled maximum");
    // Stored values widened to double exactly, then cast once to the compute dtype.
    auto w = [&](const std::string& name) {
      const TensorData& t = pot.tensor(name);
      Tensor cpu = torch::from_blob(const_cast<double*>(t.values.data()), torch::IntArrayRef(t.shape), torch::kFloat64);
      return cpu.clone();
    };
    auto to_dev = [&](const Tensor& t) { return t.to(bridge::device(), dtype).contiguous(); };
    const int n_rbf = cfg.n_rbf, ee = cfg.edge_emb;
    species_embedding = to_dev(w("species_embedding"));
    e0 = to_dev(torch::tensor(cfg.e0, torch::kFloat64));
    readout_scale = to_dev(w("readout.norm_scale"));
    readout_w0 = to_dev(w("readout.0.weight"));
    readout_b0 = to_dev(w("readout.0.bias"));
    readout_w1 = to_dev(w("readout.1.weight"));
    readout_b1 = to_dev(w("readout.1.bias"));
    for (int t = 0; t < cfg.layers; ++t) {
      const std::string p = "layers." + std::to_string(t) + ".";
      LayerWeights lw;
      // Tensors used as stored: file name (after "layers.<t>.") -> member.
      static const std::pair<const char*, Tensor LayerWeights::*> kAsStored[] = {
          {"norm_scale", &LayerWeights::norm_scale},  {"radial.1.weight", &LayerWeights::rad_w1},
          {"radial.1.bias", &LayerWeights::rad_b1},   {"radial.2.weight", &LayerWeights::rad_w2},
          {"radial.2.bias", &LayerWeights::rad_b2},   {"so2_1.m0.weight", &LayerWeights::so2_1_w0},
          {"so2_1.m0.bias", &LayerWeights::so2_1_b0}, {"so2_2.m0.weight", &LayerWeights::so2_2_w0},
          {"so2_2.m0.bias", &LayerWeights::so2_2_b0}, {"ffn_norm_scale", &LayerWeights::ffn_scale},
          {"ffn.lin1.weight", &LayerWeights::ffn_w1}, {"ffn.lin1.bias", &LayerWeights::ffn_b1},
          {"ffn.gate.weight", &LayerWeights::ffn_wg}, {"ffn.gate.bias", &LayerWeights::ffn_bg},
          {"ffn.lin2.weight", &LayerWeights::ffn_w2}, {"ffn.lin2.bias", &LayerWeights::ffn_b2}};
      for (const auto& [name, member] : kAsStored) lw.*member = to_dev(w(p + name));
      // First radial linear on [rbf, emb(s_i), emb(s_j)] split into its rbf part and one table
      // per species pair (bias + emb(s_i) W_i^T + emb(s_j) W_j^T), gathered per edge: the same
      // sum, fewer flops, and one gather per layer instead of two gathers and two adds.
      const Tensor w0 = w(p + "radial.0.weight"), emb = w(p + "edge_embedding");
      lw.rad_w0_rbf = to_dev(w0.narrow(1, 0, n_rbf));
      const Tensor recv_table = emb.matmul(w0.narrow(1, n_rbf, ee).t()),
                   send_table = emb.matmul(w0.narrow(1, n_rbf + ee, ee).t());
      const std::int64_t S = emb.size(0);
      lw.rad_pair = to_dev((w(p + "radial.0.bias").view({1, 1, -1}) + recv_table.unsqueeze(1) + send_table.unsqueeze(0))
                               .reshape({S * S, -1}));
      lw.so2_1_w0_l0in = lw.so2_1_w0.narrow(1, 0, 2 * cfg.channels).contiguous();
      lw.so2_2_w0_l0out = lw.so2_2_w0.narrow(0, 0, cfg.channels).contiguous();
      lw.so2_2_b0_l0out = lw.so2_2_b0.narrow(0, 0, cfg.channels).contiguous();
      for (int m = 1; m <= cfg.mmax; ++m) {
        for (int which = 1; which <= 2; ++which) {
          const std::string q = p + "so2_" + std::to_string(which) + ".m" + std::to_string(m);
          const Tensor wr = w(q + ".weight_r"), wi = w(q + ".weight_i");
          const Tensor big = torch::cat({torch::cat({wr, -wi}, 1), torch::cat({wi, wr}, 1)}, 0);
          (which == 1 ? lw.so2_1_big : lw.so2_2_big).push_back(to_dev(big));
        }
      }
      layers.push_back(std::move(lw));
    }
    // After the vector is complete: the plans are handed to autograd by address.
    for (int t = 0; t < cfg.layers; ++t) make_so2_plans(layers[t], t == 0, t == cfg.layers - 1);
  }

  // The band rows each kernel of a layer's edge part works on (see make_so2_plans).
  struct EdgeParts {
    impl::BandPart pack, unrotate;
    int gate_mmax;
  };
  EdgeParts edge_parts(bool first, bool last) const {
    const int L = cfg.lmax, M = cfg.mmax;
    // Plain assignments: nvcc 13.0's front end crashed (segfault) on the same choice written as
    // nested conditionals of braced BandPart temporaries.
    EdgeParts parts;
    parts.pack.lmax = parts.unrotate.lmax = L;
    parts.pack.mmax = parts.unrotate.mmax = parts.gate_mmax = M;
    if (!trim_degrees) return parts;
    if (first || last) parts.gate_mmax = 0;
    if (first) {
      parts.pack.lmax = 0;      // degree 0 alone (the step's band: its leading column)
      parts.unrotate.mmax = 0;  // the m = 0 rows of every degree (m0_band)
    }
    if (last) {
      if (!first) parts.pack.mmax = 0;  // the m = 0 rows of every degree
      parts.unrotate.lmax = 0;          // degree 0 alone
      parts.unrotate.mmax = M;
    }
    return parts;
  }

  // Bytes per edge and node a step holds (memory_plan.hpp), counted from the shapes of what each
  // layer's autograd graph saves (doc/engine.md "What a layer keeps for the backward pass"):
  // the radial MLP's two pre-activations and a [E, H_r] each, the gate's input z
  // [E, (gated rows + L) H] and the unrotate's input, the messages [E, message rows, C]. During
  // its backward a layer also holds the pack's grad_u [E, u rows, 2C] and its recomputed
  // multipliers g [E, gate rows, 2C], and grad_rot and grad_g of the same shapes where the
  // kernel cannot write them over those (impl::pack_backward_in_place: host backends), once z and
  // the messages are consumed. Held through the step: torch's band gradients and m = 0 band rows,
  // the int64 recv / send / pair columns, and the Kokkos workspace (Workspace's slots, grown by
  // 1/8: edge vectors and dE/dr_e in double, band and its three derivatives, rbf and envelope
  // with their double derivatives; per node energies, forces, virials). Per node and layer: the
  // two norms' inputs [N, D, C] and the feed-forward's hidden rows [N, D, C_f].
  MemoryModel memory_model() const {
    const double vb = dtype == torch::kFloat64 ? 8.0 : 4.0;
    const int L = cfg.lmax, C = cfg.channels, H = cfg.hidden_channels, D = cfg.num_coeffs();
    MemoryModel m;
    for (int t = 0; t < cfg.layers; ++t) {
      const EdgeParts parts = edge_parts(t == 0, t == cfg.layers - 1);
      const double radial = 3.0 * cfg.radial_hidden;
      const double z = double(kk::band_rows(L, parts.gate_mmax) + L) * H;
      const double messages = double(kk::band_rows(parts.unrotate.lmax, parts.unrotate.mmax)) * C;
      const bool in_place = impl::pack_backward_in_place(parts.pack.lmax);
      const double pack_grads =
          (in_place ? 1.0 : 2.0) *
          double(kk::band_rows(parts.pack.lmax, parts.pack.mmax) + kk::gate_rows(parts.pack.lmax, parts.pack.mmax)) *
          2.0 * C;
      m.kept_per_edge.push_back(vb * (radial + z + messages));
      m.backward_per_edge.push_back(vb * (radial + std::max(z + messages, pack_grads)));
    }
    const double band = kk::band_size(L, cfg.mmax);
    const double workspace_per_edge = workspace_bytes_per_edge(band, vb, cfg.n_rbf);
    // torch's band gradient: the sum autograd accumulates and the two parts each layer's backward
    // adds to it (pack and unrotate); the m = 0 band rows of the first and last layers.
    m.persistent_per_edge = vb * (3.0 * band + 2.0 * D) + 3.0 * 8.0 + workspace_per_edge;
    m.per_node = vb * cfg.layers * double(D) * (2.0 * C + cfg.ffn_channels) + 1.125 * (1 + 3 + 9) * 8.0;
    return m;
  }

  // The plan for a step of this graph (forces wanted), made again when the graph's size changes
  // (and with it the predicted bytes).
  const ActivationPlan& plan_for(std::int64_t E, std::int64_t N) {
    if (E == plan_edges && N == plan_nodes) return plan;
    plan = impl::choose_activation_plan(memory_model(), activations, edge_chunk, memory_budget, E, N);
    plan_edges = E;
    plan_nodes = N;
    return plan;
  }

  // Work that provably cannot change the energy or its gradient (doc/model.md "Parameters
  // without effect") is skipped, not computed and discarded:
  //   layer 0: only the l = 0 row of the rotated input is nonzero (all l > 0 features start at
  //     zero), so block 0 reads only the l = 0 columns of W0 and the m > 0 blocks give zeros;
  //   last layer: only h[0] reaches the readout and only the m = 0, l = 0 message row feeds it,
  //     so the m > 0 blocks and the l > 0 outputs of linear 2 (and of the feed-forward) are dead.
  // The kernels around the SO(2) linears make only the rows these read (edge_parts()):
  //   layer 0: the pack rotates degree 0 only (u [E, 1, 2C]: D^0 = 1, one radial multiplier
  //     row); the messages are the m = 0 rows (the only nonzero ones), unrotated from those;
  //   last layer: the pack makes the m = 0 rows only (block 0's input), and the unrotate
  //     aggregates degree 0 only (the one message row linear 2 writes);
  //   both: without m > 0 blocks, linear 1 has no m > 0 outputs, and the gate makes the m = 0
  //     rows only (mmax 0 in so2_gate: x [E, L + 1, H], which linear 2's block 0 reads).
  // Linear 1: u [E, K, 2C] -> z [E, (K + L) H] (block 0 rows with the gates after them, then the
  // m > 0 rows, so2_gate.hpp); linear 2: gated [E, K, H] -> messages [E, K, C].
  void make_so2_plans(LayerWeights& lw, bool first, bool last) const {
    const int L = cfg.lmax, C = cfg.channels, H = cfg.hidden_channels;
    const bool m_blocks = !(first || last);
    const EdgeParts parts = edge_parts(first, last);
    const int u_rows = kk::band_rows(parts.pack.lmax, parts.pack.mmax);
    const int gated_rows = kk::band_rows(L, parts.gate_mmax);  // rows of x, the gate's output
    const int message_rows = kk::band_rows(parts.unrotate.lmax, parts.unrotate.mmax);
    impl::So2Plan& p1 = lw.so2_1_plan;
    p1.x_width = u_rows * 2 * C;
    p1.z_width = (gated_rows + L) * H;
    p1.blocks.push_back(
        {0, (first ? 1 : L + 1) * 2 * C, 0, (2 * L + 1) * H, first ? lw.so2_1_w0_l0in : lw.so2_1_w0, lw.so2_1_b0});
    impl::So2Plan& p2 = lw.so2_2_plan;
    p2.x_width = gated_rows * H;
    p2.z_width = message_rows * C;
    if (last)
      p2.blocks.push_back({0, (L + 1) * H, 0, C, lw.so2_2_w0_l0out, lw.so2_2_b0_l0out});
    else
      p2.blocks.push_back({0, (L + 1) * H, 0, (L + 1) * C, lw.so2_2_w0, lw.so2_2_b0});
    for (int m = 1; m <= cfg.mmax && m_blocks; ++m) {
      const int start = kk::packed_block_start(m, L), rows = 2 * (L + 1 - m);
      p1.blocks.push_back({start * 2 * C, rows * 2 * C, (start + L) * H, rows * H, lw.so2_1_big[m - 1], Tensor()});
      p2.blocks.push_back({start * H, rows * H, start * C, rows * C, lw.so2_2_big[m - 1], Tensor()});
    }
    impl::validate(p1);
    impl::validate(p2);
  }

  // Per degree l: h / sqrt(mean_{m,c} h^2 + eps) * scale[l]; h [N, >= (lmax+1)^2, C], scale
  // [lmax+1, C]. One kernel each way (rms_norm.hpp). In fp32 the squares and their mean are
  // taken in double: features above ~1.8e19 would square to inf in float and the quotient would
  // be a silent 0 (finite, wrong forces).
  Tensor rms_norm_eq(const Tensor& h, const Tensor& scale, int lmax) const {
    return impl::rms_norm(h, scale, lmax, cfg.norm_eps);
  }

  // Feed-forward of the last layer: only the l = 0 output reaches the readout, which is all it
  // returns ([N, 1, C]).
  Tensor feed_forward_l0(const LayerWeights& lw, const Tensor& h) const {
    const Tensor h0 = h.narrow(1, 0, 1);
    const Tensor n0 = rms_norm_eq(h, lw.ffn_scale.narrow(0, 0, 1), 0);
    const Tensor a = F::silu(impl::gemm_linear(n0, lw.ffn_w1[0], lw.ffn_b1));
    return h0 + impl::gemm_linear(a, lw.ffn_w2[0], lw.ffn_b2);
  }

  Tensor feed_forward(const LayerWeights& lw, const Tensor& h) const {
    const int L = cfg.lmax, N = static_cast<int>(h.size(0));
    const Tensor n = rms_norm_eq(h, lw.ffn_scale, L);
    const Tensor q = torch::sigmoid(impl::gemm_linear(n.select(1, 0), lw.ffn_wg, lw.ffn_bg)).reshape({N, L, -1});
    std::vector<Tensor> out;
    for (int l = 0; l <= L; ++l) {
      Tensor a = impl::gemm_linear(n.narrow(1, l * l, 2 * l + 1), lw.ffn_w1[l]);
      if (l == 0) {
        a = F::silu(a + lw.ffn_b1);
        out.push_back(impl::gemm_linear(a, lw.ffn_w2[l], lw.ffn_b2));
      } else {
        a = a * q.narrow(1, l - 1, 1);
        out.push_back(impl::gemm_linear(a, lw.ffn_w2[l]));
      }
    }
    return torch::cat(out, 1);
  }

  // The edge part of a layer: normalised node features n [N, D, C] -> aggregated messages
  // [N, D, C] over the edges of step.graph (the whole graph, or one edge chunk of it with
  // band/rbf/env/pair narrowed to that chunk's edges).
  // The first layer rotates degree 0 only and the last aggregates degree 0 only (make_so2_plans):
  // the last layer's messages are [N, 1, C].
  Tensor edge_messages(const LayerWeights& lw, const Tensor& n, const Tensor& band, const Tensor& rbf,
                       const Tensor& env, const Tensor& pair, impl::StepContext& step, bool first, bool last) const {
    const int E = static_cast<int>(band.size(0)), C = cfg.channels, H = cfg.hidden_channels;
    const EdgeParts parts = edge_parts(first, last);
    // The m = 0 rows of the band, for the parts that take them (the step's band otherwise).
    const bool m0_part = cfg.mmax > 0 && (parts.pack.mmax == 0 || parts.unrotate.mmax == 0);
    const Tensor band_m0 = m0_part ? impl::m0_band(band, cfg.lmax, cfg.mmax) : Tensor();
    auto band_for = [&](const impl::BandPart& p) { return p.mmax < cfg.mmax ? band_m0 : band; };
    // pair [E]: the species pair of each edge (s_recv S + s_send); addmm_ adds rbf W^T in place
    // (the tensor-core modes form that product in their own GEMM, gemm.hpp, and add it).
    Tensor a = lw.rad_pair.index_select(0, pair);
    if (impl::gemm_mode() == impl::GemmMode::native)
      a.addmm_(rbf, lw.rad_w0_rbf.t());
    else
      a = a + impl::gemm_linear(rbf, lw.rad_w0_rbf);
    a = F::silu(a);
    a = F::silu(impl::gemm_linear(a, lw.rad_w1, lw.rad_b1));
    // Each edge tensor is let go as soon as the next one exists: the SO(2) linears keep no input
    // for their backward, so u and x would otherwise stay alive only as locals here, on top of
    // every earlier layer's saved activations: that was the step's peak, and letting them go
    // took it to 0.91x (measured with bench/edgeframe_bench --memory-profile, doc/engine.md).
    // The radial multipliers of the pack's rows are the leading rows of w2 (m outer, then l).
    const int g_rows = kk::gate_rows(parts.pack.lmax, parts.pack.mmax) * 2 * C;
    const Tensor w2 = lw.rad_w2.narrow(0, 0, g_rows), b2 = lw.rad_b2.narrow(0, 0, g_rows);
    Tensor u = impl::edge_frame_pack(n, band_for(parts.pack), a, w2, b2, step, parts.pack);  // with g = a w2^T + b2
    // Explicit widths: a rank without edges has E = 0, where -1 is ambiguous.
    Tensor z = impl::so2_linear(u.reshape({E, lw.so2_1_plan.x_width}), lw.so2_1_plan);
    u.reset();
    Tensor x = impl::so2_gate(z, cfg.lmax, parts.gate_mmax, H);
    z.reset();  // the gate keeps it for its backward
    const int rows = lw.so2_2_plan.z_width / C;
    Tensor wmsg = impl::so2_linear(x.reshape({E, lw.so2_2_plan.x_width}), lw.so2_2_plan).reshape({E, rows, C});
    x.reset();
    return impl::unrotate_aggregate(wmsg, band_for(parts.unrotate), env, step, parts.unrotate);
  }

  // One layer around its edge part: messages(n) is edge_messages on the whole graph, or the sum
  // over edge chunks of recomputed edge parts (the plan's recomputed layers).
  Tensor interaction(const LayerWeights& lw, const Tensor& h, const std::function<Tensor(const Tensor&)>& messages,
                     bool last, int n_live) const {
    const Tensor n = rms_norm_eq(h, lw.norm_scale, cfg.lmax);
    // The last layer's messages have degree 0 only, and only h[0] leaves it (feed_forward_l0).
    const Tensor h1 = last ? h.narrow(1, 0, 1) + messages(n).narrow(1, 0, 1) : h + messages(n);
    // Rows n_live.. (exchange mode: ghosts) are overwritten by the next exchange and carry no
    // energy: their feed-forward is dead work, so they leave the layer as they are.
    const int N = static_cast<int>(h1.size(0));
    if (n_live < N) {
      const Tensor live = h1.narrow(0, 0, n_live);
      const Tensor out = last ? feed_forward_l0(lw, live) : live + feed_forward(lw, live);
      return torch::cat({out, h1.narrow(0, n_live, N - n_live)}, 0);
    }
    return last ? feed_forward_l0(lw, h1) : h1 + feed_forward(lw, h1);
  }

  impl::DeviceStep device_step(const AtomGraph& graph, kk::Vec3View<const double, Exec> positions, const What& what,
                               impl::StepContext& step);
  impl::GraphedSteps graphed;  // EvaluatorOptions::cuda_graph

  Tensor readout(const Tensor& h, const Tensor& species) const {
    Tensor f = rms_norm_eq(h, readout_scale.view({1, -1}), 0).select(1, 0);
    f = F::silu(impl::gemm_linear(f, readout_w0, readout_b0));
    return impl::gemm_linear(f, readout_w1, readout_b1).select(1, 0) + e0.index_select(0, species);
  }
};

Evaluator::Evaluator(const Potential& potential, EvaluatorOptions options) {
  if (options.memory_budget < 0) throw InputError("Evaluator: memory_budget must be >= 0 bytes");
  if (options.edge_chunk < 0) throw InputError("Evaluator: edge_chunk must be >= 0");
  require_precision_available(options.precision);
  // Model v2 (format_version 2) runs on its own implementation (model_v2.hpp); v1 stays here
  // until the shipped potentials are v2 (issue 25).
  if (options.activations == EvaluatorOptions::Activations::stream && potential.format_version != kFormatVersionV2)
    throw InputError("potential " + potential.path +
                     ": activations stream is for model v2 potentials (this one is model v1; use recompute)");
  if (potential.format_version == kFormatVersionV2) {
    options.poison_scratch = options.poison_scratch || debug_poison_scratch();
    m_v2 = std::make_unique<impl::ModelV2>(potential, options);
  } else {
    m_impl = std::make_unique<Impl>(potential, options);
  }
}
Evaluator::~Evaluator() = default;
const ModelConfig& Evaluator::config() const { return m_v2 ? m_v2->config() : m_impl->cfg; }
Precision Evaluator::precision() const { return m_v2 ? m_v2->precision() : m_impl->precision; }
std::size_t Evaluator::workspace_allocations() const {
  return m_v2 ? m_v2->workspace().allocations() : m_impl->workspace.allocations();
}
std::size_t Evaluator::workspace_bytes() const { return m_v2 ? m_v2->workspace().bytes() : m_impl->workspace.bytes(); }
int Evaluator::format_version() const { return m_v2 ? kFormatVersionV2 : kFormatVersion; }
const ModelConfigV2& Evaluator::config_v2() const {
  if (!m_v2) throw InputError("the potential is a v1 model: it has no v2 config");
  return m_v2->config_v2();
}
std::string Evaluator::set_system(const SystemInputs& inputs) {
  if (!m_v2) throw InputError("task, charge and spin are model v2 settings; this potential is a v1 model");
  return m_v2->set_system(inputs);
}
std::size_t Evaluator::torch_device_peak_bytes() {
#ifdef KOKKOS_ENABLE_CUDA
  return std::size_t(torch_pool_bytes(&TorchStats::allocated_bytes).peak);
#else
  return 0;
#endif
}
long Evaluator::layers_recomputed() const { return m_v2 ? m_v2->layers_recomputed() : m_impl->layers_recomputed; }
const ActivationPlan& Evaluator::activation_plan() const { return m_v2 ? m_v2->activation_plan() : m_impl->plan; }
MemoryModel Evaluator::memory_model() const { return m_v2 ? m_v2->memory_model() : m_impl->memory_model(); }
bool Evaluator::trims_first_and_last_layers() const { return m_v2 ? false : m_impl->trim_degrees; }
long Evaluator::edge_chunk_builds() const { return m_v2 ? m_v2->edge_chunk_builds() : m_impl->chunks.builds(); }
std::size_t Evaluator::edge_chunk_bytes() const { return m_v2 ? m_v2->edge_chunk_bytes() : m_impl->chunks.bytes(); }
long Evaluator::cuda_graph_captures() const { return m_v2 ? m_v2->cuda_graph_captures() : m_impl->graphed.captures(); }
long Evaluator::cuda_graph_replays() const { return m_v2 ? m_v2->cuda_graph_replays() : m_impl->graphed.replays(); }

namespace {

// Failure path only (a sum came out non-finite): the first node whose per-atom energy (owned
// nodes) or force is non-finite, so that the caller can name an atom. Costs two host copies,
// and nothing on the path that succeeds.
[[noreturn]] void throw_non_finite(const Result& res, int n_local, bool have_forces) {
  const auto e = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), res.energies);
  const auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), res.forces);
  const int n = static_cast<int>(e.extent(0));
  int first = -1, count = 0;
  for (int k = 0; k < n; ++k) {
    bool bad = k < n_local && !std::isfinite(e(k));
    for (int d = 0; have_forces && d < 3; ++d) bad = bad || !std::isfinite(f(k, d));
    if (bad && count++ == 0) first = k;
  }
  auto show = [](double v) {  // "nan", never "-nan": the sign of a NaN means nothing
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", std::isnan(v) ? std::fabs(v) : v);
    return std::string(buf);
  };
  const std::string summary = std::isfinite(res.energy) ? "non-finite forces or virial (dE/dr_e has NaN or Inf)"
                                                        : "non-finite energy (" + show(res.energy) + " eV)";
  std::string detail;
  if (first >= 0) {
    detail = "energy " + show(e(first)) + " eV";
    if (have_forces)
      detail += ", force (" + show(f(first, 0)) + ", " + show(f(first, 1)) + ", " + show(f(first, 2)) + ") eV/A";
  }
  throw NonFiniteError(summary, first, count, detail);
}

}  // namespace

Result Evaluator::compute(const AtomGraph& graph, kk::Vec3View<const double, Exec> positions, const What& what) {
  if (m_v2) {
    Result res = m_v2->compute(graph, positions, what);
    if (what.times) ++what.times->calls;
    return res;
  }
  impl::StepContext step;
  step.times = what.times;
  Result res;
  {
    const impl::StepTimer timer(step, &StepTimes::total);
    // The plan first: whether any layer is recomputed decides whether the step can be graphed.
    const bool grad = what.forces || what.virial || what.atom_virial;
    const bool recomputes = grad && m_impl->plan_for(graph.edges.n_edges, graph.edges.n_nodes).any_recomputed();
    // The graphed step has no timers (they fence), no exchange (it calls MPI from the host
    // between layers), no recomputation (its chunks are built on the host) and no roll (tests).
    const bool graphed = m_impl->cuda_graph && !what.times && !what.exchange && !recomputes && what.roll.extent(0) == 0;
    auto device_step = [&] { return m_impl->device_step(graph, positions, what, step); };
    res = graphed ? m_impl->graphed.run(graph, positions, what, device_step) : impl::finish(device_step());
  }
  if (what.times) ++what.times->calls;
  return res;
}

impl::DeviceStep Evaluator::Impl::device_step(const AtomGraph& graph, kk::Vec3View<const double, Exec> positions,
                                              const What& what, impl::StepContext& step) {
  Impl& m = *this;
  const ModelConfig& cfg = m.cfg;
  const auto& g = graph.edges;
  const int N = g.n_nodes, E = g.n_edges;
  if (positions.extent(0) != std::size_t(N) || graph.species.extent(0) != std::size_t(N))
    throw InputError("Evaluator::compute: graph has " + std::to_string(N) + " nodes but " +
                     std::to_string(positions.extent(0)) + " positions and " + std::to_string(graph.species.extent(0)) +
                     " species");
  if (what.roll.extent(0) != 0 && what.roll.extent(0) != std::size_t(E))
    throw InputError("Evaluator::compute: roll must have one angle per edge");
  torch::InferenceMode inference_off(false);  // we need autograd even if a caller disabled it
  const impl::GemmScope gemm_scope(m.precision);
  Workspace& ws = m.workspace;
  const Exec exec = bridge::exec_instance();

  step.graph = g;
  step.roll = what.roll;
  step.workspace = &ws;
  step.dtype = m.dtype;
  step.lmax = cfg.lmax;
  step.mmax = cfg.mmax;
  step.channels = cfg.channels;
  step.n_rbf = cfg.n_rbf;
  step.envelope_p = cfg.envelope_p;
  step.r_cut = cfg.r_cut;
  step.scale = 1.0 / cfg.avg_neighbors;
  step.exchange = what.exchange;

  // Geometry in double: r_e = x_j - x_i + shift.
  kk::Vec3View<double, Exec> vec(ws.take<double>(Workspace::kVec, std::size_t(E) * 3), E);
  {
    const impl::StepTimer timer(step, &StepTimes::geometry);
    kk::compute_edge_vectors(exec, g, positions, vec);
  }
  impl::StepOutputs out = impl::take_step_outputs(ws, N, E);
#ifndef KOKKOS_ENABLE_CUDA
  exec.fence("edgeframe: edge vectors handed to torch");  // on CUDA torch runs on the kernels' stream
#endif

  const bool grad = what.forces || what.virial || what.atom_virial;
  const Tensor vec_t = bridge::tensor_of(vec, {E, 3}).requires_grad_(grad);
  const auto geo = impl::edge_geometry(vec_t, step);
  const Tensor &band = geo[0], &rbf = geo[1], &env = geo[2];

  const Tensor species = bridge::tensor_of(graph.species, {N}).to(torch::kLong);
  const Tensor recv = bridge::tensor_of(g.recv, {E}).to(torch::kLong),
               send = bridge::tensor_of(g.send, {E}).to(torch::kLong);
  // The species pair of each edge, the row of the radial tables (LayerWeights::rad_pair).
  const Tensor pair = species.index_select(0, recv) * std::int64_t(cfg.species.size()) + species.index_select(0, send);

  Tensor h =
      torch::zeros({N, cfg.num_coeffs(), cfg.channels}, torch::TensorOptions().dtype(m.dtype).device(bridge::device()));
  h.select(1, 0).copy_(m.species_embedding.index_select(0, species));
  // Rows whose layer outputs matter: all, or with an exchange only the owned ones (ghost rows
  // are received before every layer that reads them).
  const int n_live = step.exchange ? graph.n_local : N;
  // The plan's recomputed layers (compute() made it for this graph): their edge parts run again
  // in the backward pass, in chunks of at most plan.edge_chunk edges (receiver ranges; 0: one
  // chunk). Each chunk has its own graph (graph_chunk.hpp) and step context, and its function
  // is held at a fixed address until the backward pass below is done (a deque never moves what
  // it holds).
  const ActivationPlan& plan = m.plan;
  const bool recompute = grad && E > 0 && plan.any_recomputed();
  const int edge_chunk = plan.edge_chunk;
  std::deque<impl::StepContext> chunk_steps;
  std::vector<std::pair<int, int>> chunk_edges;  // [e0, e1) per chunk
  if (recompute) m.chunks.step_contexts(exec, step, edge_chunk, chunk_steps, chunk_edges);
  std::deque<impl::LayerFn> chunk_fns;
  const int last = cfg.layers - 1;
  for (int t = 0; t < cfg.layers; ++t) {
    // Exchange mode: ghost rows are received from their owners before every layer that reads
    // them as senders (layer 0 reads the species embedding, which ghosts have themselves).
    // The exchange stays outside the recomputed part: the backward pass must not repeat it.
    if (t > 0 && step.exchange) h = impl::node_exchange(h, step);
    const LayerWeights& lw = m.layers[t];
    std::function<Tensor(const Tensor&)> messages = [&](const Tensor& n) {
      return m.edge_messages(lw, n, band, rbf, env, pair, step, t == 0, t == last);
    };
    if (recompute && plan.recompute[t])
      messages = [&](const Tensor& n) {
        Tensor agg;
        for (std::size_t k = 0; k < chunk_steps.size(); ++k) {
          const auto [e0, e1] = chunk_edges[k];
          impl::StepContext& cs = chunk_steps[k];
          const Tensor chunk_pair = pair.narrow(0, e0, e1 - e0);
          const bool first_layer = t == 0, last_layer = t == last;
          chunk_fns.emplace_back(
              [&m, &lw, &cs, chunk_pair, first_layer, last_layer](const Tensor& n_in, const Tensor& band_in,
                                                                  const Tensor& rbf_in, const Tensor& env_in) {
                return m.edge_messages(lw, n_in, band_in, rbf_in, env_in, chunk_pair, cs, first_layer, last_layer);
              });
          const Tensor part =
              impl::recomputed_layer(chunk_fns.back(), n, band.narrow(0, e0, e1 - e0), rbf.narrow(0, e0, e1 - e0),
                                     env.narrow(0, e0, e1 - e0), step.layers_recomputed);
          agg = agg.defined() ? agg + part : part;
        }
        return agg;
      };
    h = m.interaction(lw, h, messages, t == last, n_live);
  }
  // Exchange mode: ghost energies are zero (never computed; they would not count anyway).
  Tensor energies = m.readout(h.narrow(0, 0, n_live), species.narrow(0, 0, n_live));
  if (n_live < N) energies = torch::cat({energies, torch::zeros({N - n_live}, energies.options())});

  // dE/dr_e from one backward pass through every layer and the band.
  Tensor grad_vec;
  if (grad && E > 0) {
    const Tensor e_local = energies.narrow(0, 0, graph.n_local).sum();
    grad_vec = torch::autograd::grad({e_local}, {vec_t}, {}, false, false, true)[0];
  }
  m.layers_recomputed += step.layers_recomputed;
  // Exchange mode: T - 1 exchanged layers (layer 0's input is the embedding of the node's own
  // species, the same on every rank).
  impl::pad_reverse_exchanges(step, cfg.layers - 1, N, cfg.num_coeffs() * cfg.channels);
  impl::finish_forces_and_sums(step, out, vec, grad_vec, energies, graph.n_local, grad, what.atom_virial);
  return impl::DeviceStep{out.res, out.sums, grad, graph.n_local};
}

// The budget of an automatic plan: the option, or on CUDA what the device has free now plus
// what torch's allocator holds unused, less what usable_device_bytes keeps back; on host
// backends none (keep all).
double impl::memory_budget_now(double option) {
  if (option > 0) return option;
#ifdef KOKKOS_ENABLE_CUDA
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return 0;
  const double pool_unused = double(torch_pool_bytes(&TorchStats::reserved_bytes).current -
                                    torch_pool_bytes(&TorchStats::allocated_bytes).current);
  return usable_device_bytes(double(free_bytes) + pool_unused,
                             c10::CachingAllocator::AcceleratorAllocatorConfig::use_expandable_segments());
#else
  return 0;
#endif
}

ActivationPlan impl::choose_activation_plan(const MemoryModel& model, EvaluatorOptions::Activations activations,
                                            int edge_chunk, double budget_option, std::int64_t E, std::int64_t N) {
  const std::size_t layers = model.kept_per_edge.size();
  if (activations == EvaluatorOptions::Activations::automatic)
    return plan_activations(model, E, N, memory_budget_now(budget_option));
  ActivationPlan plan;
  plan.stream = activations == EvaluatorOptions::Activations::stream;
  const bool all = plan.stream || activations == EvaluatorOptions::Activations::recompute;
  plan.recompute.assign(layers, all ? 1 : 0);
  plan.edge_chunk = all ? edge_chunk : 0;
  plan.predicted_bytes = plan.stream ? predicted_stream_peak(model, E, N, plan.edge_chunk)
                                     : predicted_peak(model, E, N, plan.recompute, plan.edge_chunk);
  return plan;
}

Result impl::finish_step(const Result& step_result, const kk::View1<double, Exec>& sums, int n_local, bool grad) {
  Result res = step_result;
  auto host_sums = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sums);  // host boundary: fences
  res.energy = host_sums(9);
  for (int q = 0; q < 9; ++q) res.virial[q] = host_sums(q);
  bool finite = std::isfinite(res.energy);
  for (int q = 0; q < 9; ++q) finite = finite && std::isfinite(res.virial[q]);  // NaN/Inf in any dE/dr_e lands here
  if (!finite) throw_non_finite(res, n_local, grad);
  return res;
}

}  // namespace edgeframe
