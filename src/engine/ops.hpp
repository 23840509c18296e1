// The Kokkos kernel pairs as torch autograd functions (internal to the engine). Each forward
// launches the kernel on tensor memory through the bridge; each backward launches its adjoint.
// Forces then come from one torch::autograd::grad call on the energy.
#pragma once

#include <torch/torch.h>

#include <functional>

#include "bridge.hpp"
#include "evaluator.hpp"
#include "exchange.hpp"
#include "gemm.hpp"
#include "graph.hpp"
#include "workspace.hpp"

namespace edgeframe::impl {

// What the kernels need besides tensors, valid for one compute() call. The autograd functions
// find it through a pointer stored in their context (it outlives the backward pass, which runs
// inside the same compute() call).
struct StepContext {
  kk::Graph<bridge::Exec> graph;
  kk::View1<const double, bridge::Exec> roll;  // [E] or extent 0
  Workspace* workspace = nullptr;
  torch::Dtype dtype = torch::kFloat64;  // compute dtype of features, band, rbf
  int lmax = 0, mmax = 0, channels = 0, n_rbf = 0, envelope_p = 0;
  double r_cut = 0.0, scale = 0.0;   // Angstrom, 1 / avg_neighbors
  NodeExchange* exchange = nullptr;  // per-layer ghost exchange, or none
  int exchange_reverse_calls = 0;    // reverse() calls made by the backward pass so far
  StepTimes* times = nullptr;        // fenced time split, or none
  long layers_recomputed = 0;        // recomputed_layer() backward calls in this step (edge parts)
};

// Adds the time between construction and destruction to one StepTimes field, fencing at both
// ends so that asynchronous kernels and torch ops (same stream on CUDA) are counted where they
// run. Does nothing, and fences nothing, when the step has no timers.
class StepTimer {
 public:
  StepTimer(const StepContext& step, double StepTimes::*slot);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

 private:
  StepTimes* m_times;
  double StepTimes::*m_slot;
  double m_start = 0.0;
};

// ---- step plumbing shared by model v1 (evaluator.cpp) and model v2 (model_v2.cpp) ----------

// A step's outputs in the workspace: per-node energies, forces and virials (Result), and the
// fixed-order chunk partials and totals of the global sums; dE/dr_e's slot is taken here too
// (Kokkos memory taken at the step's start, see reserve_edge_geometry).
struct StepOutputs {
  Result res;
  kk::View2<double, bridge::Exec> partials;
  kk::View1<double, bridge::Exec> sums;
  int n_chunks = 1;
};
StepOutputs take_step_outputs(Workspace& ws, int n_nodes, int n_edges);

// Every rank must make the same sequence of reverse exchanges (exchange.hpp), also when this
// one's backward pass made fewer (no edges, nothing asked): the missing ones carry zero rows
// [N, width]. More than `expected` is a bug and throws. Timed as exchange.
void pad_reverse_exchanges(StepContext& step, int expected, int n_nodes, int width);

// The step's tail: dE/dr_e into Result::edge_grad (workspace memory, so that it outlives the
// call; copied unless the geometry backward wrote it there; zeros without grad_vec), the
// per-node energies in double, forces and per-atom virials from dE/dr_e (with grad), and the
// global sums. vec: the step's edge vectors. Timed as geometry.
void finish_forces_and_sums(StepContext& step, StepOutputs& out, const kk::Vec3View<double, bridge::Exec>& vec,
                            const torch::Tensor& grad_vec, const torch::Tensor& energies, int n_local, bool grad,
                            bool atom_virial);

// The activation plan of a step of E edges and N nodes with forces (memory_plan.hpp): keep, or
// recompute every layer (in edge chunks of edge_chunk), as the options fix it, or automatic's
// choice under memory_budget_now(budget_option). The model's layers give the plan's.
ActivationPlan choose_activation_plan(const MemoryModel& model, EvaluatorOptions::Activations activations,
                                      int edge_chunk, double budget_option, std::int64_t E, std::int64_t N);
// An automatic plan's budget: the option if > 0, else on CUDA the device's free memory plus what
// torch's allocator holds unused, less what usable_device_bytes keeps back (memory_plan.hpp);
// on host backends 0 (no limit).
double memory_budget_now(double option);

// A finished step's device sums -> Result (host boundary); throws NonFiniteError naming the
// first bad node (evaluator.cpp).
Result finish_step(const Result& res, const kk::View1<double, bridge::Exec>& sums, int n_local, bool grad);

// vec [E, 3] float64 (leaf) -> {band [E, B], rbf [E, n_rbf], env [E]} in the compute dtype.
// The band derivative is built in the same pass and kept in the workspace for the backward,
// which returns dE/dvec in float64.
torch::autograd::variable_list edge_geometry(const torch::Tensor& vec, StepContext& step);
// Takes the workspace slots that edge_geometry of up to n_edges edges uses, forward and
// backward. A step that runs the geometry per edge chunk (the stream plan) calls it with its
// largest chunk before its first torch op: Kokkos allocates outside torch's caching allocator,
// and once torch's pool has grown through the step a late workspace growth can find the card
// full (a million-atom step on an 80 GB H100 failed so).
void reserve_edge_geometry(StepContext& step, int n_edges);

// Whether the pack's backward writes grad_rot and grad_g over grad_u and g for this degree
// (kk::backward_edge_in_place on the engine's execution space): the memory model counts two
// more edge tensors where it does not.
bool pack_backward_in_place(int lmax);

// The band rows a pack or unrotate call works on: degrees 0..lmax and orders |m| <= mmax (-1:
// the step's). The band passed must hold the layout of (lmax, mmax) in its leading columns
// (band_layout.hpp): the step's band does for every lmax with the step's mmax, because degree l
// precedes l + 1; for mmax 0, m0_band() makes it. The first and last layers work on such parts
// (evaluator.cpp, make_so2_plans).
struct BandPart {
  int lmax = -1, mmax = -1;
};

// n [N, D, C], band [E, B], the radial MLP's last hidden layer a [E, H_r] and its output linear
// w [gate_rows 2C, H_r], b [gate_rows 2C] -> u [E, K, 2C] (edge_frame_pack.hpp) with the radial
// multipliers g = a w^T + b viewed as [E, gate_rows, 2C]. g is made again in the backward
// instead of kept (the layer's widest saved tensor); w and b get no gradient. K and gate_rows
// are those of `part` (the leading rows of each: the m = 0 block comes first); n may hold more
// degrees than part.lmax.
torch::Tensor edge_frame_pack(const torch::Tensor& n, const torch::Tensor& band, const torch::Tensor& a,
                              const torch::Tensor& w, const torch::Tensor& b, StepContext& step, BandPart part = {});

// w [E, K, C], band [E, B], env [E] -> agg [N, (part.lmax + 1)^2, C] (unrotate_aggregate.hpp),
// already scaled by 1 / avg_neighbors; K is part's.
torch::Tensor unrotate_aggregate(const torch::Tensor& w, const torch::Tensor& band, const torch::Tensor& env,
                                 StepContext& step, BandPart part = {});

// The m = 0 rows of a band of (lmax, mmax) as a band of (lmax, 0): [E, (lmax + 1)^2].
torch::Tensor m0_band(const torch::Tensor& band, int lmax, int mmax);

// One SO(2) linear as a list of dense blocks over column ranges of x [E, X] -> z [E, Z]: block b
// reads x's columns [x_col, x_col + x_cols) and writes z's [z_col, z_col + z_cols) =
// x_part w^T (+ bias). Each block's GEMM writes straight into its columns of z, and backward
// each block's grad GEMM into its columns of grad x: no cat, no narrow-backward fills and adds
// (each was a launch and an edge-sized copy). z columns no block writes are zero; grad x columns no
// block reads are zero. Only the gradient with respect to x is formed (weights are constants).
struct So2Plan {
  struct Block {
    int x_col = 0, x_cols = 0, z_col = 0, z_cols = 0;
    torch::Tensor w, bias;  // [z_cols, x_cols], [z_cols] or undefined
  };
  std::vector<Block> blocks;
  int x_width = 0, z_width = 0;
};
torch::Tensor so2_linear(const torch::Tensor& x, const So2Plan& plan);
void validate(const So2Plan& plan);  // throws ComputeError unless the blocks are in range and disjoint

// The gate between the two SO(2) linears (so2_gate.hpp): z [E, (K + L) C] (block-0 rows, the
// gate pre-activations, then the m > 0 rows) -> [E, K, C].
torch::Tensor so2_gate(const torch::Tensor& z, int lmax, int mmax, int channels);

// A layer's edge block in one autograd function, fp32 compute: edge_frame_pack (n, band, a, w2,
// b2 as there), so2_1 [E, K 2C] -> [E, (K + L) H], so2_gate over H channels, so2_2 [E, K H] ->
// [E, K C], unrotate_aggregate (band, env) -> agg [N, (part.lmax + 1)^2, C]: the same numbers as
// those five calls. With bf16_storage the tensors that only feed the SO(2) GEMMs (u, the gated
// rows, and backward their gradients) are written by the kernels in bfloat16, rounded as the
// bf16 GEMM mode rounds its operands (gemm.hpp), so the step reads and writes fewer bytes and
// makes no cast pass: for the bf16 precision mode (the same numbers as the five calls under it).
torch::Tensor so2_convolution(const torch::Tensor& n, const torch::Tensor& band, const torch::Tensor& a,
                              const torch::Tensor& w2, const torch::Tensor& b2, const torch::Tensor& env,
                              const So2Plan& so2_1, const So2Plan& so2_2, int hidden, StepContext& step,
                              bool bf16_storage, BandPart part = {});

// Equivariant RMS norm (rms_norm.hpp): h [N, >= (lmax+1)^2, C] (a view with dense rows is fine),
// scale [lmax+1, C] -> [N, (lmax+1)^2, C]; mean and rms in double for every dtype.
torch::Tensor rms_norm(const torch::Tensor& h, const torch::Tensor& scale, int lmax, double eps);

// fairchem's rms_norm_sh (rms_norm_sh.hpp): h [N, (lmax+1)^2, C], w [lmax+1, C], b [C] ->
// degree 0 centred over channels, every row scaled by one degree-balanced rms per node and by
// w of its degree, b added to degree 0; statistics in double for every dtype.
torch::Tensor rms_norm_sh(const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& b, int lmax, double eps);

// LayerNorm + SiLU of each row (layer_norm_silu.hpp): a [E, H] -> silu(LayerNorm(x) w + b),
// x = a + table_src[row_send] + table_tgt[row_recv] where the tables are defined (model v2's
// first radial hidden layer: the atom-pair embedding). Gradient with respect to a only.
struct EdgeEmbeddingAdd {
  torch::Tensor table_src, table_tgt;  // [Z, H], the dtype of a; undefined: no add
  torch::Tensor row_send, row_recv;    // [E] int32 table rows
};
torch::Tensor layer_norm_silu(const torch::Tensor& a, const torch::Tensor& w, const torch::Tensor& b, double eps,
                              const EdgeEmbeddingAdd& add = {});

// h [N, D, C] -> the same features with every ghost row replaced by its owner's (forward
// communication through step.exchange); backward: ghost-row gradients are added to their
// owners' rows and zeroed (reverse communication). Always returns a new tensor.
torch::Tensor node_exchange(const torch::Tensor& h, StepContext& step);

// A part of a layer as a function of the tensors that carry gradients into it: the evaluator
// passes the edge part of a layer (or of one edge chunk), with h = the normalised node features.
using LayerFn = std::function<torch::Tensor(const torch::Tensor& h, const torch::Tensor& band, const torch::Tensor& rbf,
                                            const torch::Tensor& env)>;

// Activation recomputation ("checkpointing"): runs layer(h, band, rbf, env) without autograd and
// keeps only those four inputs; the backward pass runs it again with autograd on and
// back-propagates through that fresh graph. Peak memory then holds the activations of one such
// part at a time instead of all of them, for one more forward pass of each. `layer` must
// outlive the backward pass and compute the same function both times (it does: same weights,
// same graph, deterministic kernels).
// `recomputed` is incremented each time the backward pass runs the layer again (tests and the
// log check with it that recomputation really happened).
torch::Tensor recomputed_layer(const LayerFn& layer, const torch::Tensor& h, const torch::Tensor& band,
                               const torch::Tensor& rbf, const torch::Tensor& env, long& recomputed);

}  // namespace edgeframe::impl
