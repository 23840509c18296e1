// Model v2 on the engine's kernels (model_v2.hpp). The order of operations follows
// tools/edgeframe_ref/model_v2.py line by line; doc/model.md "Model v2" maps each step to its
// fairchem module.
#include "model_v2.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <sstream>

#include "band_layout.hpp"
#include "bridge.hpp"
#include "errors.hpp"
#include "forces.hpp"
#include "runtime.hpp"
#include "streamed_edges.hpp"

namespace edgeframe::impl {

using torch::Tensor;
namespace F = torch::nn::functional;

namespace {

// The reduce of one step and how often its backward ran (every rank must make the same calls).
struct ReduceCalls {
  GlobalReduce* reduce = nullptr;
  int backward = 0;
};

void reduce_in_place(GlobalReduce* reduce, Tensor& t) {  // t: contiguous, any device and dtype
  Tensor h = t.to(torch::kCPU, torch::kFloat64).contiguous();
  reduce->sum(h.data_ptr<double>(), static_cast<int>(h.numel()));
  t = h.to(t.device(), t.scalar_type());
}

// Sum over the owned rows on every rank: forward allreduces sum_i x_i; backward allreduces the
// incoming gradient (each rank used its own copy of the sum) and hands it to every owned row.
class GlobalRowSum : public torch::autograd::Function<GlobalRowSum> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, std::int64_t calls_address) {
    ctx->saved_data["calls"] = calls_address;
    ctx->saved_data["rows"] = x.size(0);
    Tensor s = x.sum(0).contiguous();
    reduce_in_place(reinterpret_cast<ReduceCalls*>(calls_address)->reduce, s);
    return s;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* calls = reinterpret_cast<ReduceCalls*>(ctx->saved_data["calls"].toInt());
    Tensor g = grads[0].contiguous();
    reduce_in_place(calls->reduce, g);
    ++calls->backward;
    return {g.unsqueeze(0).expand({ctx->saved_data["rows"].toInt(), g.size(0)}), Tensor()};
  }
};

thread_local ReduceCalls* t_reduce_calls = nullptr;  // the running step's (compute() sets it)

}  // namespace

ModelV2::ModelV2(const Potential& pot, const EvaluatorOptions& opt)
    : m_cfg(pot.v2),
      m_shared(pot.config),
      m_precision(opt.precision),
      m_dtype(opt.precision == Precision::fp64 ? torch::kFloat64 : torch::kFloat32),
      m_workspace(opt.poison_scratch),
      m_activations(opt.activations),
      m_memory_budget(opt.memory_budget),
      m_cuda_graph(opt.cuda_graph),
      m_edge_chunk(opt.edge_chunk) {
  if (m_cfg.lmax > kk::kMaxL) throw InputError("potential " + pot.path + ": lmax exceeds the compiled maximum");
  for (const auto& [name, t] : pot.tensors)
    m_tensors[name] =
        torch::from_blob(const_cast<double*>(t.values.data()), torch::IntArrayRef(t.shape), torch::kFloat64).clone();
}

Tensor ModelV2::host(const std::string& name) const {
  const auto it = m_tensors.find(name);
  if (it == m_tensors.end()) throw InputError("model v2 has no tensor " + name);
  return it->second;
}

Tensor ModelV2::dev(const Tensor& t) const { return t.to(bridge::device(), m_dtype).contiguous(); }

ModelV2::Radial ModelV2::make_radial(const std::string& p) const {
  Radial r;
  const int G = m_cfg.num_gaussians, Ce = m_cfg.edge_channels;
  const Tensor w0 = host(p + ".lin0.weight");  // [Ce, G + 2 Ce]: Gaussians, sender, receiver
  r.w0_gauss = dev(w0.narrow(1, 0, G));
  // The atom-pair part of the first linear as two tables over Z (sender with the bias): the
  // same sum as concatenating the embeddings, one gather each per edge.
  r.table_src = dev(host("edge.source_embedding").matmul(w0.narrow(1, G, Ce).t()) + host(p + ".lin0.bias"));
  r.table_tgt = dev(host("edge.target_embedding").matmul(w0.narrow(1, G + Ce, Ce).t()));
  r.ln0_w = dev(host(p + ".ln0.weight"));
  r.ln0_b = dev(host(p + ".ln0.bias"));
  r.w1 = dev(host(p + ".lin1.weight"));
  r.b1 = dev(host(p + ".lin1.bias"));
  r.ln1_w = dev(host(p + ".ln1.weight"));
  r.ln1_b = dev(host(p + ".ln1.bias"));
  r.w2 = dev(host(p + ".lin2.weight"));
  r.b2 = dev(host(p + ".lin2.bias"));
  return r;
}

Tensor ModelV2::charge_spin_embedding(const char* which, int value) const {
  const std::string kind = m_cfg.charge_spin_embedding, w = which;
  if (kind == "rand_emb") {
    const int offset = w == "charge" ? 100 : 0, size = w == "charge" ? 201 : 101;
    if (value + offset < 0 || value + offset >= size)
      throw InputError(w + " " + std::to_string(value) + " is outside the model's table (" + std::to_string(-offset) +
                       ".." + std::to_string(size - 1 - offset) + ")");
    return host("system." + w + "_table")[value + offset];
  }
  if (kind == "pos_emb") {
    const Tensor x = host("system." + w + "_frequencies") * (value * 2.0 * M_PI);
    const Tensor emb = torch::cat({torch::sin(x), torch::cos(x)});
    return (w == "spin" && value == 0) ? emb * 0.0 : emb;
  }
  const double x = (w == "spin" && value == 0) ? -100.0 : double(value);
  return host("system." + w + "_linear.weight").select(1, 0) * x + host("system." + w + "_linear.bias");
}

std::string ModelV2::set_system(const SystemInputs& in) {
  const ModelConfigV2& cfg = m_cfg;
  m_graphed.reset();  // before the weights its captured step reads are replaced
  const std::string task_name = in.task.empty() ? cfg.default_task : in.task;
  const TaskV2* task = cfg.task(task_name);
  if (!task) throw InputError("task '" + task_name + "' is not one of this model's tasks: " + cfg.task_names());
  const int charge = in.charge_set ? in.charge : task->default_charge;
  const int spin = in.spin_set ? in.spin : task->default_spin;
  std::vector<Tensor> parts = {charge_spin_embedding("charge", charge), charge_spin_embedding("spin", spin)};
  if (cfg.dataset_embedding) parts.push_back(host("system.dataset." + task->dataset_embedding));
  const Tensor emb =
      F::silu(torch::addmm(host("system.mix.bias"), torch::cat(parts).unsqueeze(0), host("system.mix.weight").t()))
          .squeeze(0);
  const int Z = cfg.max_num_elements;
  Tensor counts = torch::zeros({Z}, torch::kFloat64);
  for (std::size_t z = 0; z < in.atoms_per_z.size(); ++z) {
    if (in.atoms_per_z[z] == 0) continue;
    if (z == 0 || int(z) >= Z)
      throw InputError("atomic number " + std::to_string(z) + " is outside the model's elements (1.." +
                       std::to_string(Z - 1) + ")");
    counts[z] = in.atoms_per_z[z];
  }
  const double n_atoms = counts.sum().item<double>();
  if (!(n_atoms > 0)) throw InputError("model v2 needs the composition of the system (no atoms given)");
  // An element the task gives no reference energy, where it gives one to others, is one the
  // model was not trained on (a file of our trainer holds each trained element's fitted e0;
  // fairchem's tables are zero for elements absent from the data): its energies and forces would
  // mean nothing, and the run would not say so.
  const std::vector<double>& refs = task->element_references;
  const std::vector<std::string>& symbols = m_shared.species;  // symbol of Z at index Z - 1
  const auto symbol = [&](std::size_t z) { return z - 1 < symbols.size() ? symbols[z - 1] : std::string("?"); };
  std::string trained;
  for (std::size_t z = 1; z < refs.size(); ++z)
    if (refs[z] != 0.0) trained += (trained.empty() ? "" : ", ") + symbol(z);
  if (!trained.empty())
    for (std::size_t z = 1; z < in.atoms_per_z.size(); ++z)
      if (in.atoms_per_z[z] > 0 && (z >= refs.size() || refs[z] == 0.0))
        throw InputError("element " + symbol(z) + " has no reference energy in task '" + task_name +
                         "' of this model, so the model was not trained on it (elements with one: " + trained + ")");

  // UMA's mixture of linear experts: coefficients from the routing MLP, the merged weights
  // sum_k alpha_k W_k (fairchem eSCNMDMoeBackbone.set_MOLE_coefficients and merge_MOLE_model).
  Tensor coeff;
  if (cfg.experts > 0) {
    Tensor route = emb;
    if (cfg.composition_embedding) {
      const double denom = n_atoms + (cfg.composition_mean_include_self ? 1.0 : 0.0);
      route = torch::cat({counts.matmul(host("mole.composition_embedding")) / denom, emb});
    }
    Tensor a = route.unsqueeze(0);
    for (int k = 0; k < 3; ++k) {
      const std::string p = "mole.routing." + std::to_string(k);
      a = F::silu(torch::addmm(host(p + ".bias"), a, host(p + ".weight").t()));
    }
    coeff = torch::softmax(a.squeeze(0), 0) + 0.005;
  }
  auto merged = [&](const std::string& name) {
    const Tensor w = host(name);
    return cfg.experts > 0 ? torch::tensordot(coeff, w, {0}, {0}) : w;
  };

  const int L = cfg.lmax, M = cfg.mmax, C = cfg.channels, H = cfg.hidden_channels;
  m_layers.clear();
  for (int t = 0; t < cfg.layers; ++t) {
    const std::string p = "layers." + std::to_string(t);
    Layer lw;
    lw.norm1_w = dev(host(p + ".norm1.weight"));
    // fairchem adds the system embedding to the normalised degree 0: folded into the norm's bias.
    lw.norm1_b = dev(host(p + ".norm1.bias") + emb);
    lw.norm2_w = dev(host(p + ".norm2.weight"));
    lw.norm2_b = dev(host(p + ".norm2.bias"));
    lw.radial = make_radial(p + ".radial");
    lw.ffn_wg = dev(host(p + ".ffn.gate.weight"));
    lw.ffn_bg = dev(host(p + ".ffn.gate.bias"));
    lw.ffn_w1 = dev(host(p + ".ffn.lin1.weight"));
    lw.ffn_b1 = dev(host(p + ".ffn.lin1.bias"));
    lw.ffn_w2 = dev(host(p + ".ffn.lin2.weight"));
    lw.ffn_b2 = dev(host(p + ".ffn.lin2.bias"));
    // The SO(2) linears as block GEMMs over the packed rows (so2_gate.hpp's layout: block 0
    // rows, their gates, then the m > 0 rows), every block at full width.
    const int rows = kk::band_rows(L, M);
    lw.so2_1.x_width = rows * 2 * C;
    lw.so2_1.z_width = (rows + L) * H;
    lw.so2_1.blocks.push_back(
        {0, (L + 1) * 2 * C, 0, (2 * L + 1) * H, dev(merged(p + ".so2_1.m0.weight")), dev(host(p + ".so2_1.m0.bias"))});
    lw.so2_2.x_width = rows * H;
    lw.so2_2.z_width = rows * C;
    lw.so2_2.blocks.push_back(
        {0, (L + 1) * H, 0, (L + 1) * C, dev(merged(p + ".so2_2.m0.weight")), dev(host(p + ".so2_2.m0.bias"))});
    for (int m = 1; m <= M; ++m) {
      const int start = kk::packed_block_start(m, L), mrows = 2 * (L + 1 - m);
      for (int which = 1; which <= 2; ++which) {
        const std::string q = p + ".so2_" + std::to_string(which) + ".m" + std::to_string(m);
        const Tensor wr = merged(q + ".weight_r"), wi = merged(q + ".weight_i");
        const Tensor big = dev(torch::cat({torch::cat({wr, -wi}, 1), torch::cat({wi, wr}, 1)}, 0));
        if (which == 1)
          lw.so2_1.blocks.push_back({start * 2 * C, mrows * 2 * C, (start + L) * H, mrows * H, big, Tensor()});
        else
          lw.so2_2.blocks.push_back({start * H, mrows * H, start * C, mrows * C, big, Tensor()});
      }
    }
    validate(lw.so2_1);
    validate(lw.so2_2);
    m_layers.push_back(std::move(lw));
  }
  m_degree_radial = make_radial("edge_degree.radial");
  m_atom_embedding = dev(host("atom_embedding"));
  m_system_embedding = dev(emb);
  m_final_w = dev(host("final_norm.weight"));
  m_final_b = dev(host("final_norm.bias"));
  const std::string hp = "heads." + task->head;
  m_head_w0 = dev(host(hp + ".lin0.weight"));
  m_head_b0 = dev(host(hp + ".lin0.bias"));
  m_head_w1 = dev(host(hp + ".lin1.weight"));
  m_head_b1 = dev(host(hp + ".lin1.bias"));
  m_head_w2 = dev(host(hp + ".lin2.weight"));
  m_head_b2 = dev(host(hp + ".lin2.bias"));
  m_refs = task->element_references.empty()
               ? Tensor()
               : torch::tensor(task->element_references, torch::kFloat64).to(bridge::device());
  m_rmsd = task->rmsd;
  m_mean = task->mean;
  m_charge = charge;
  m_spin = spin;
  m_total_atoms = n_atoms;
  m_system_set = true;

  std::ostringstream log;
  log << "edgeframe model v2: task " << task_name << ", charge " << charge << ", spin " << spin << ", "
      << static_cast<long>(n_atoms) << " atoms";
  if (cfg.experts > 0) {
    const auto top = coeff.argmax().item<std::int64_t>();
    log << "; " << cfg.experts << " experts merged for this composition (largest coefficient "
        << coeff[top].item<double>() << ", expert " << top << ")";
  }
  return log.str();
}

// z_send, z_recv: int32 table rows per edge. The LayerNorm + SiLU pairs are one kernel each
// (layer_norm_silu.hpp), the first with the atom-pair tables added inside it.
Tensor ModelV2::radial_hidden(const Radial& r, const Tensor& gauss, const Tensor& z_send, const Tensor& z_recv) const {
  constexpr double kLayerNormEps = 1e-5;  // torch.nn.LayerNorm's default, fairchem RadialMLP's
  Tensor a = layer_norm_silu(gemm_linear(gauss, r.w0_gauss), r.ln0_w, r.ln0_b, kLayerNormEps,
                             {r.table_src, r.table_tgt, z_send, z_recv});
  return layer_norm_silu(gemm_linear(a, r.w1, r.b1), r.ln1_w, r.ln1_b, kLayerNormEps);
}

// fairchem rms_norm_sh (ops.hpp: one kernel per direction).
Tensor ModelV2::rms_norm_sh(const Tensor& h, const Tensor& w, const Tensor& b) const {
  return impl::rms_norm_sh(h, w, b, m_cfg.lmax, m_cfg.norm_eps);
}

// Spectral FFN: per-degree linears, SiLU on l = 0, l >= 1 gated by sigmoid(SiLU(Linear(l = 0))).
Tensor ModelV2::feed_forward(const Layer& lw, const Tensor& n) const {
  const int L = m_cfg.lmax;
  const auto N = n.size(0);
  const Tensor q = torch::sigmoid(F::silu(gemm_linear(n.select(1, 0), lw.ffn_wg, lw.ffn_bg))).reshape({N, L, -1});
  std::vector<Tensor> out;
  for (int l = 0; l <= L; ++l) {
    Tensor a = gemm_linear(n.narrow(1, l * l, 2 * l + 1), lw.ffn_w1[l]);
    if (l == 0) {
      a = F::silu(a + lw.ffn_b1);
      out.push_back(gemm_linear(a, lw.ffn_w2[l], lw.ffn_b2));
    } else {
      out.push_back(gemm_linear(a * q.narrow(1, l - 1, 1), lw.ffn_w2[l]));
    }
  }
  return torch::cat(out, 1);
}

// h + the feed-forward of its normalised rows, on rows 0..n_live only (exchange mode: the ghost
// rows n_live.. are overwritten by the next layer's exchange and carry no energy).
Tensor ModelV2::with_feed_forward(const Layer& lw, const Tensor& h, int n_live) const {
  const auto N = h.size(0);
  if (n_live >= N) return h + feed_forward(lw, rms_norm_sh(h, lw.norm2_w, lw.norm2_b));
  const Tensor live = h.narrow(0, 0, n_live);
  return torch::cat(
      {live + feed_forward(lw, rms_norm_sh(live, lw.norm2_w, lw.norm2_b)), h.narrow(0, n_live, N - n_live)}, 0);
}

// Gaussian basis of r on [0, r_cut] (fairchem GaussianSmearing: no envelope, no 1/r).
Tensor ModelV2::gaussian_basis(const Tensor& vec) const {
  const ModelConfigV2& cfg = m_cfg;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(vec.device());
  const Tensor r = vec.norm(2, 1).to(m_dtype);
  const Tensor centres = torch::linspace(0.0, cfg.r_cut, cfg.num_gaussians, opts).to(m_dtype);
  const double width = cfg.gaussian_width * cfg.r_cut / (cfg.num_gaussians - 1);
  const Tensor d = r.unsqueeze(1) - centres.unsqueeze(0);
  return torch::exp(d * d * (-0.5 / (width * width)));
}

// The edge-degree embedding's sum into the nodes [N, D, C] over the edges of step context s:
// m = 0 coefficients of every degree from a radial MLP, unrotated.
Tensor ModelV2::edge_degree(StepContext& s, const Tensor& band, const Tensor& env, const Tensor& gauss,
                            const Tensor& z_send, const Tensor& z_recv) const {
  const int L = m_cfg.lmax;
  const Tensor a = radial_hidden(m_degree_radial, gauss, z_send, z_recv);
  const Tensor rad =
      gemm_linear(a, m_degree_radial.w2, m_degree_radial.b2).view({band.size(0), L + 1, m_cfg.channels}) /
      m_cfg.edge_degree_rescale;
  return unrotate_aggregate(rad, m0_band(band, L, m_cfg.mmax), env, s, BandPart{L, 0});
}

// fairchem balance_channels: the balanced l = 0 channels are shifted so that their sum over ALL
// atoms is the charge (spin channels: spin - 1); the sum runs over the owned rows of every rank.
Tensor ModelV2::balance(const Tensor& h, int n_owned, GlobalReduce* reduce) const {
  Tensor out = h;
  const std::pair<const int*, double> ranges[] = {{m_cfg.charge_balanced, m_charge},
                                                  {m_cfg.spin_balanced, m_spin - 1.0}};
  for (const auto& [range, target] : ranges) {
    const int a = range[0], b = range[1];
    if (b <= a) continue;
    const Tensor x = out.select(1, 0).narrow(1, a, b - a);  // [N, b - a]
    const Tensor owned = x.narrow(0, 0, n_owned);
    const Tensor total =
        reduce ? GlobalRowSum::apply(owned, reinterpret_cast<std::int64_t>(t_reduce_calls)) : owned.sum(0);
    const Tensor corr = (total - target) / m_total_atoms;
    const Tensor l0 = out.select(1, 0);
    const Tensor new_l0 = torch::cat({l0.narrow(1, 0, a), x - corr, l0.narrow(1, b, l0.size(1) - b)}, 1);
    out = torch::cat({new_l0.unsqueeze(1), out.narrow(1, 1, out.size(1) - 1)}, 1);
  }
  return out;
}

// Bytes per edge and node of a step (memory_plan.hpp), counted from what each autograd function
// of the step keeps (ops.cpp): per layer the inputs of the two LayerNorm + SiLU kernels and the
// radial hidden the pack keeps (3 Ce), the gate's input z [(K + L) H] and the messages
// unrotate_aggregate keeps [K C] (the SO(2) linears keep nothing: their weights take no
// gradient); its backward holds the radial part and the larger of those and the pack's
// gradients and recomputed multipliers (as v1's). Held through the step: the edge-degree
// embedding's radial inputs and its messages [(L + 1) C], the Gaussians and what their
// expression keeps (3 G), the band, its gradient and derivative, the edge vectors, the int32
// table rows and the Kokkos workspace, as v1's count of those.
MemoryModel ModelV2::memory_model(bool lean_stream) const {
  const ModelConfigV2& cfg = m_cfg;
  const double vb = m_dtype == torch::kFloat64 ? 8.0 : 4.0;
  const int L = cfg.lmax, M = cfg.mmax, C = cfg.channels, H = cfg.hidden_channels, Ce = cfg.edge_channels;
  const int D = (L + 1) * (L + 1);
  const double K = kk::band_rows(L, M);
  MemoryModel m;
  const double radial = 3.0 * Ce, z = (K + L) * H, messages = K * C;
  const double pack_grads = (pack_backward_in_place(L) ? 1.0 : 2.0) * (K + kk::gate_rows(L, M)) * 2.0 * C;
  for (int t = 0; t < cfg.layers; ++t) {
    m.kept_per_edge.push_back(vb * (radial + z + messages));
    m.backward_per_edge.push_back(vb * (radial + std::max(z + messages, pack_grads)));
  }
  const double band = kk::band_size(L, M);
  // n_rbf 1: the step's edge geometry makes one (unused) radial value per edge (device_step).
  const double workspace_per_edge = workspace_bytes_per_edge(band, vb, 1);
  const double edge_degree = 2.0 * Ce + (L + 1) * C, gaussians = 3.0 * cfg.num_gaussians;
  m.persistent_per_edge =
      vb * (3.0 * band + 2.0 * D + edge_degree + gaussians) + 3.0 * 8.0 + 2 * 4.0 + workspace_per_edge;
  // Node features and what rms_norm_sh, the FFN and the sums keep, per layer: about 6 [D, C]
  // rows and the FFN's hidden [D, H] twice.
  m.per_node = vb * cfg.layers * double(D) * (6.0 * C + 2.0 * H) + 1.125 * (1 + 3 + 9) * 8.0;
  // Stream (streamed_edges.hpp). Per edge through the step: the edge vectors in the workspace,
  // dE/dr_e there at the end, the gradient each layer returns and autograd's sum of them
  // (doubles), the int32 table rows. Per node: each layer's input and its input to the
  // feed-forward (2 [D, C] per layer; lean, the feed-forward inputs and layer 0's input alone:
  // layers + 1 [D, C]), and while a layer's backward runs the larger of its node
  // part's activations and the chunk pass's node-sized tensors (the prepared features, a
  // chunk's sum and gradient, their running sum, the incoming gradient): 4 [D, C] and the
  // feed-forward's hidden rows 2 [D, H], as measured on the host (unit test
  // TheModelV2MemoryModelBoundsTheMeasuredPeak, nearest-neighbour graph: about 10 [D, C] rows
  // per node in all at 2 layers, C = H).
  // Per edge of the running chunk: its workspace slots, geometry tensors and Gaussians as in
  // persistent_per_edge, and the heaviest of the layers' backward and the edge-degree part.
  m.stream_per_edge = 4.0 * 3.0 * 8.0 + 1.125 * 2.0 * 3.0 * 8.0 + 2 * 4.0;
  const double kept_rows = lean_stream ? cfg.layers + 1.0 : 2.0 * cfg.layers;
  m.stream_per_node = vb * double(D) * (kept_rows * C + 4.0 * C + 2.0 * H) + 1.125 * (1 + 3 + 9) * 8.0;
  const double heaviest = *std::max_element(m.backward_per_edge.begin(), m.backward_per_edge.end());
  m.stream_chunk_per_edge =
      vb * (3.0 * band + 2.0 * D + gaussians) + workspace_per_edge + std::max(heaviest, vb * edge_degree);
  return m;
}

const ActivationPlan& ModelV2::plan_for(std::int64_t E, std::int64_t N, bool lean_stream) {
  if (E == m_plan_edges && N == m_plan_nodes && lean_stream == m_plan_lean) return m_plan;
  m_plan = choose_activation_plan(memory_model(lean_stream), m_activations, m_edge_chunk, m_memory_budget, E, N);
  m_plan_edges = E;
  m_plan_nodes = N;
  m_plan_lean = lean_stream;
  return m_plan;
}

bool ModelV2::lean_stream_applies(const What& what) const {
  return !what.exchange && !(what.reduce && balanced_ranges() > 0);
}

int ModelV2::balanced_ranges() const {
  return (m_cfg.charge_balanced[1] > m_cfg.charge_balanced[0]) + (m_cfg.spin_balanced[1] > m_cfg.spin_balanced[0]);
}

Result ModelV2::compute(const AtomGraph& graph, kk::Vec3View<const double, Exec> positions, const What& what) {
  if (!m_system_set)
    throw InputError("model v2: the system inputs (task, charge, spin, composition) are not set (set_system)");
  // A graphed step has no timers (they fence), no exchange and no global reduction (both call
  // MPI from the host between layers), no recomputation and no streaming (host code between the
  // layers or the chunks) and no roll (tests).
  const bool grad = what.forces || what.virial || what.atom_virial;
  const ActivationPlan& plan = plan_for(graph.edges.n_edges, graph.edges.n_nodes, lean_stream_applies(what));
  const bool recomputes = (grad && plan.any_recomputed()) || plan.stream;
  const bool reduces = what.reduce && balanced_ranges() > 0;
  const bool graphed =
      m_cuda_graph && !what.times && !what.exchange && !reduces && !recomputes && what.roll.extent(0) == 0;
  auto step = [&] { return device_step(graph, positions, what); };
  return graphed ? m_graphed.run(graph, positions, what, step) : finish(step());
}

DeviceStep ModelV2::device_step(const AtomGraph& graph, kk::Vec3View<const double, Exec> positions, const What& what) {
  const ModelConfigV2& cfg = m_cfg;
  const auto& g = graph.edges;
  const int N = g.n_nodes, E = g.n_edges, L = cfg.lmax, M = cfg.mmax, C = cfg.channels, H = cfg.hidden_channels;
  if (positions.extent(0) != std::size_t(N) || graph.species.extent(0) != std::size_t(N))
    throw InputError("Evaluator::compute: graph has " + std::to_string(N) + " nodes but " +
                     std::to_string(positions.extent(0)) + " positions and " + std::to_string(graph.species.extent(0)) +
                     " species");
  torch::InferenceMode inference_off(false);
  const GemmScope gemm_scope(m_precision);
  Workspace& ws = m_workspace;
  const Exec exec = bridge::exec_instance();
  StepContext step;
  step.graph = g;
  step.roll = what.roll;
  step.workspace = &ws;
  step.dtype = m_dtype;
  step.lmax = L;
  step.mmax = M;
  step.channels = C;
  step.n_rbf = 1;  // the Bessel basis of edge_geometry is not used by model v2 (Gaussians of r below)
  step.envelope_p = cfg.envelope_p;
  step.r_cut = cfg.r_cut;
  step.scale = 1.0;  // fairchem sums messages without a 1 / avg_neighbors
  step.exchange = what.exchange;
  step.times = what.times;
  const StepTimer total_timer(step, &StepTimes::total);  // timing detail: dense = total - the rest
  ReduceCalls reduce_calls{what.reduce, 0};
  t_reduce_calls = &reduce_calls;

  kk::Vec3View<double, Exec> vec(ws.take<double>(Workspace::kVec, std::size_t(E) * 3), E);
  kk::compute_edge_vectors(exec, g, positions, vec);
  StepOutputs out = take_step_outputs(ws, N, E);
#ifndef KOKKOS_ENABLE_CUDA
  exec.fence("edgeframe: edge vectors handed to torch");
#endif
  const bool grad = what.forces || what.virial || what.atom_virial;
  const Tensor vec_t = bridge::tensor_of(vec, {E, 3}).requires_grad_(grad);
  const auto opts = torch::TensorOptions().dtype(m_dtype).device(bridge::device());
  // The plan's edge chunks (compute() made it for this graph): receiver ranges, each with a graph
  // and step context of its own; 0: one chunk. Deques: the autograd functions keep the contexts'
  // and functions' addresses until the backward pass.
  const ActivationPlan& plan = m_plan;
  const bool stream = E > 0 && plan.stream;
  const bool recompute = !stream && grad && E > 0 && plan.any_recomputed();
  std::deque<StepContext> chunk_steps;
  std::vector<std::pair<int, int>> chunk_edges;
  if (recompute || stream) m_chunks.step_contexts(exec, step, plan.edge_chunk, chunk_steps, chunk_edges);
  if (stream) {  // every chunk's geometry slots, before torch's pool grows (reserve_edge_geometry)
    int largest = 0;
    for (const auto& [e0, e1] : chunk_edges) largest = std::max(largest, e1 - e0);
    reserve_edge_geometry(step, largest);
  }
  if (stream && step.roll.extent(0) > 0)  // streamed chunks compute their own geometry
    for (std::size_t k = 0; k < chunk_steps.size(); ++k)
      chunk_steps[k].roll = Kokkos::subview(step.roll, chunk_edges[k]);
  // Stream: no geometry of the whole graph; each chunk makes its own (edge_geometry on its rows).
  Tensor band, env, gauss;
  if (!stream) {
    const auto geo = edge_geometry(vec_t, step);
    band = geo[0];
    env = geo[2];
    gauss = gaussian_basis(vec_t);
  }

  // int32 throughout: layer_norm_silu takes int32 table rows, index_select int32 indices.
  const Tensor z = bridge::tensor_of(graph.species, {N}) + 1;  // species index = Z - 1
  const Tensor z_recv = z.index_select(0, bridge::tensor_of(g.recv, {E}));
  const Tensor z_send = z.index_select(0, bridge::tensor_of(g.send, {E}));
  const int D = (L + 1) * (L + 1);

  // Stream: a chunk's geometry from its edge vectors (rows [e0, e1) of vec_t); its table rows.
  struct ChunkInputs {
    Tensor band, env, gauss, z_send, z_recv;
  };
  auto chunk_inputs = [&](const Tensor& vec_chunk, int k) {
    const auto [e0, e1] = chunk_edges[k];
    const auto geo = edge_geometry(vec_chunk, chunk_steps[k]);
    return ChunkInputs{geo[0], geo[2], gaussian_basis(vec_chunk), z_send.narrow(0, e0, e1 - e0),
                       z_recv.narrow(0, e0, e1 - e0)};
  };
  std::deque<StreamedEdges> streamed;

  const Tensor h0 = m_atom_embedding.index_select(0, z) + m_system_embedding;
  Tensor h = torch::cat({h0.unsqueeze(1), torch::zeros({N, D - 1, C}, opts)}, 1);
  if (stream) {
    StreamedEdges& parts = streamed.emplace_back();
    parts.chunk = [&](const Tensor&, const Tensor& vec_chunk, int k) {
      const ChunkInputs in = chunk_inputs(vec_chunk, k);
      return edge_degree(chunk_steps[k], in.band, in.env, in.gauss, in.z_send, in.z_recv);
    };
    parts.ranges = chunk_edges;
    h = h + streamed_edges(parts, Tensor(), vec_t);
  } else {
    h = h + edge_degree(step, band, env, gauss, z_send, z_recv);
  }
  const int rows = kk::band_rows(L, M);
  // A layer's edge part, n -> aggregated messages, over the edges of step context s (the whole
  // graph or one edge chunk of it) with those edges' table rows.
  auto edge_part = [&](int t, StepContext& context, const Tensor& zs, const Tensor& zr) -> LayerFn {
    StepContext* sp = &context;  // by pointer: the function outlives this call (recomputed_layer)
    return [&, t, sp, zs, zr](const Tensor& nn, const Tensor& bb, const Tensor& gg, const Tensor& ee) {
      StepContext& s = *sp;
      const Layer& lt = m_layers[t];
      const auto Ec = bb.size(0);
      const Tensor a = radial_hidden(lt.radial, gg, zs, zr);
      // bf16: the GEMM operands stored in bfloat16 by the kernels themselves (so2_convolution).
      if (m_precision == Precision::bf16)
        return so2_convolution(nn, bb, a, lt.radial.w2, lt.radial.b2, ee, lt.so2_1, lt.so2_2, H, s, true);
      Tensor u = edge_frame_pack(nn, bb, a, lt.radial.w2, lt.radial.b2, s);
      Tensor zz = so2_linear(u.reshape({Ec, lt.so2_1.x_width}), lt.so2_1);
      u.reset();
      Tensor x = so2_gate(zz, L, M, H);
      zz.reset();
      const Tensor w = so2_linear(x.reshape({Ec, lt.so2_2.x_width}), lt.so2_2).reshape({Ec, rows, C});
      x.reset();
      return unrotate_aggregate(w, bb, ee, s);
    };
  };
  // The plan's recomputed layers: their edge parts keep only their inputs and run again in the
  // backward pass (recomputed_layer), chunk by chunk. Streamed layers (all of them, plan.stream)
  // keep only their feed-forward's input and layer 0 its input (streamed_edges with the layer
  // before's node part as its base; the last node part checkpointed), or, where a node part makes
  // a collective call, each its input and its feed-forward's input.
  std::deque<LayerFn> edge_parts;
  std::deque<std::function<Tensor(const Tensor&)>> node_parts;
  // Rows n_live.. (exchange mode: ghosts) are overwritten by the next layer's exchange and carry
  // no energy: their feed-forward is dead work, so they leave each layer with its messages only.
  const int n_live = step.exchange ? graph.n_local : N;
  // Lean stream (lean_stream_applies): a layer's node part may run again in the backward pass
  // of the next layer's streamed unit, so it must make no collective call.
  const bool lean = stream && lean_stream_applies(what);
  for (int t = 0; t < cfg.layers; ++t) {
    const Layer& lw = m_layers[t];
    // Exchange mode: ghost rows come from their owners before every layer (layer 0 too: the
    // edge-degree embedding of a ghost sums over edges this rank does not hold).
    if (step.exchange) h = node_exchange(h, step);
    if (stream) {
      StreamedEdges& parts = streamed.emplace_back();
      parts.prepare = [this, t](const Tensor& x) { return rms_norm_sh(x, m_layers[t].norm1_w, m_layers[t].norm1_b); };
      parts.chunk = [&, t](const Tensor& n, const Tensor& vec_chunk, int k) {
        const ChunkInputs in = chunk_inputs(vec_chunk, k);
        return edge_part(t, chunk_steps[k], in.z_send, in.z_recv)(n, in.band, in.gauss, in.env);
      };
      parts.ranges = chunk_edges;
      parts.recomputed = &m_layers_recomputed;
      // Lean: layer t - 1's node part is folded into this unit, which then keeps only that
      // part's input (layer t - 1's feed-forward input), not that and its output as well.
      if (lean && t > 0)
        parts.base = [&, t](const Tensor& x) {
          return balance(with_feed_forward(m_layers[t - 1], x, n_live), graph.n_local, what.reduce);
        };
      h = parts.base ? streamed_edges(parts, h, vec_t) : h + streamed_edges(parts, h, vec_t);
      if (lean && t + 1 < cfg.layers) continue;  // its node part runs in the next layer's unit
      node_parts.push_back([this, t, n_live](const Tensor& x) { return with_feed_forward(m_layers[t], x, n_live); });
      h = grad ? checkpointed(node_parts.back(), h) : node_parts.back()(h);
      h = balance(h, graph.n_local, what.reduce);
      continue;
    }
    const Tensor n = rms_norm_sh(h, lw.norm1_w, lw.norm1_b);
    Tensor messages;
    if (!recompute || !plan.recompute[t]) {
      messages = edge_part(t, step, z_send, z_recv)(n, band, gauss, env);
    } else {
      for (std::size_t k = 0; k < chunk_steps.size(); ++k) {
        const auto [e0, e1] = chunk_edges[k];
        edge_parts.push_back(
            edge_part(t, chunk_steps[k], z_send.narrow(0, e0, e1 - e0), z_recv.narrow(0, e0, e1 - e0)));
        const Tensor part =
            recomputed_layer(edge_parts.back(), n, band.narrow(0, e0, e1 - e0), gauss.narrow(0, e0, e1 - e0),
                             env.narrow(0, e0, e1 - e0), m_layers_recomputed);
        messages = messages.defined() ? messages + part : part;
      }
    }
    h = with_feed_forward(lw, h + messages, n_live);
    h = balance(h, graph.n_local, what.reduce);
  }
  Tensor f = rms_norm_sh(h.narrow(0, 0, n_live), m_final_w, m_final_b).select(1, 0);
  f = F::silu(gemm_linear(f, m_head_w0, m_head_b0));
  f = F::silu(gemm_linear(f, m_head_w1, m_head_b1));
  Tensor energies = gemm_linear(f, m_head_w2, m_head_b2).select(1, 0) * m_rmsd + m_mean / m_total_atoms;
  if (m_refs.defined()) energies = energies + m_refs.index_select(0, z.narrow(0, 0, n_live)).to(m_dtype);
  if (n_live < N) energies = torch::cat({energies, torch::zeros({N - n_live}, energies.options())});

  Tensor grad_vec;
  if (grad) {
    const Tensor e_local = energies.narrow(0, 0, graph.n_local).sum();
    grad_vec = torch::autograd::grad({e_local}, {vec_t}, {}, false, false, true)[0];
  }
  // Every rank makes the same reverse exchanges (one per layer: layer 0's input, the
  // edge-degree embedding, is exchanged too) and backward reductions, also one whose backward
  // pass reached none of them (no edges): the missing ones carry zeros.
  pad_reverse_exchanges(step, cfg.layers, N, D * C);
  const int balanced = balanced_ranges();
  if (what.reduce && grad)
    for (int k = reduce_calls.backward; k < balanced * cfg.layers; ++k) {
      std::vector<double> zeros(C, 0.0);
      what.reduce->sum(zeros.data(), C);
    }
  t_reduce_calls = nullptr;

  finish_forces_and_sums(step, out, vec, grad_vec, energies, graph.n_local, grad, what.atom_virial);
  return DeviceStep{out.res, out.sums, grad, graph.n_local};
}

}  // namespace edgeframe::impl
