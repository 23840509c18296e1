// The engine's one entry point (STYLE.md §2): Evaluator::compute(graph, positions, what).
// Shared by the host pair style, the /kk style, the tests and the benchmark. No torch and no
// LAMMPS in this header; the model lives behind a pointer to an implementation.
//
// Inputs live in Kokkos::DefaultExecutionSpace's memory (device memory on CUDA builds).
// Nodes 0..n_local-1 are the atoms whose energies count; nodes n_local.. are ghosts/images
// whose features are computed but whose energies are not summed. Forces come for every node
// (LAMMPS folds ghost forces back with its reverse communication). With What::exchange set,
// ghost features are not computed but received from their owners before every layer but the
// first (exchange.hpp); the graph then needs only edges into owned nodes (edges into ghosts
// would be wasted work), and ghost rows skip the feed-forward and readout (their energies are 0).
#pragma once

#include <Kokkos_Core.hpp>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "exchange.hpp"
#include "graph.hpp"
#include "step_times.hpp"
#include "kernel_common.hpp"
#include "memory_plan.hpp"
#include "potential.hpp"

namespace edgeframe {

namespace impl {
class ModelV2;  // model_v2.hpp
}

using Exec = Kokkos::DefaultExecutionSpace;

// fp64 | fp32 | three tensor-core modes with fp32 storage and kernels, which differ in how the
// GEMMs are formed (gemm.hpp): tf32 (TF32 GEMMs), bf16 (bfloat16 operands, fp32 sums) and
// tf32x3 (3xTF32: three TF32 GEMMs per product, fp32's accuracy). The tensor-core modes are for
// CUDA builds only; the Evaluator refuses them elsewhere (require_precision_available,
// tf32_available() in runtime.hpp).
enum class Precision { fp64, fp32, tf32, bf16, tf32x3 };
Precision parse_precision(const std::string& name);  // throws InputError naming the valid ones
std::string to_string(Precision p);
// Throws InputError when p is a tensor-core mode (tf32, bf16, tf32x3) and this build has no CUDA.
void require_precision_available(Precision p);

// Built once per neighbour-list rebuild (make_graph).
struct AtomGraph {
  kk::Graph<Exec> edges;               // receiver-sorted directed edges, graph.hpp
  kk::View1<const int, Exec> species;  // [N] species index of every node (potential order)
  int n_local = 0;
};

// pairs: neighbour pairs (graph.hpp); positions: [N, 3] Angstrom at build time; species: [N].
// Keeps pairs with 0 < r < cutoff at build time. Pass cutoff = r_cut + skin to build once per
// neighbour-list rebuild: edges beyond r_cut then contribute exactly nothing (the envelope and
// all its derivatives are zero there).
AtomGraph make_graph(const kk::PairList<Exec>& pairs, kk::Vec3View<const double, Exec> positions,
                     kk::View1<const int, Exec> species, int n_local, double cutoff);
// A graph kept between rebuilds: its edges' shifts from the current shifts of the pairs it was
// built from (box changes between rebuilds). Same addresses, no allocation, no host boundary.
void refresh_graph_shifts(AtomGraph& graph, const kk::PairList<Exec>& pairs);

// Sums over every rank of a run (MPI allreduce in the pair styles; none: this process holds the
// whole system). Model v2's charge balancing needs one per layer, forward and backward.
struct GlobalReduce {
  virtual ~GlobalReduce() = default;
  virtual void sum(double* values, int count) = 0;  // in place, host memory
};

// Model v2's system inputs (pair_style keywords task, charge, spin) and the composition of the
// whole system: atoms per atomic number Z (index Z), summed over all ranks.
struct SystemInputs {
  std::string task;  // empty: the model's default task
  bool charge_set = false, spin_set = false;
  int charge = 0, spin = 0;  // unset: the task's defaults (fairchem's)
  std::vector<double> atoms_per_z;
};

struct What {
  bool forces = true;                  // and with them dE/dr_e
  bool energies = false;               // per-atom energies
  bool virial = false;                 // global 3x3
  bool atom_virial = false;            // per-atom 3x3
  kk::View1<const double, Exec> roll;  // tests only: [E] extra roll of each edge frame (radians)
  NodeExchange* exchange = nullptr;    // per-layer ghost exchange (exchange.hpp), or none
  GlobalReduce* reduce = nullptr;      // model v2 on several ranks: sums over all of them
  StepTimes* times = nullptr;          // fenced time split (StepTimes), or none
};

// Views alias the evaluator's workspace and stay valid until the next compute() call.
struct Result {
  double energy = 0.0;                   // eV, sum over local atoms, accumulated in double
  std::array<double, 9> virial{};        // eV, W_ab = -sum_e r_e,a (dE/dr_e)_b, row-major
  kk::View1<double, Exec> energies;      // [N] eV (when asked)
  kk::Vec3View<double, Exec> forces;     // [N, 3] eV/Angstrom (when asked)
  kk::View2<double, Exec> atom_virial;   // [N, 9] eV (when asked)
  kk::Vec3View<double, Exec> edge_grad;  // [E, 3] dE/dr_e, eV/Angstrom (when forces or virials are asked)
};

struct EvaluatorOptions {
  Precision precision = Precision::fp64;
  // debug: fill freshly grown scratch with NaN (also EDGEFRAME_POISON_SCRATCH=1, debug_switches.hpp)
  bool poison_scratch = false;
  // What the backward pass gets from the forward (doc/engine.md "Activations and the memory
  // budget"). keep: every layer's per-edge activations (fastest). recompute: none; the edge part
  // of every layer (radial MLP, pack, SO(2) linears, gate, unrotate) runs again there
  // (impl::recomputed_layer), in chunks of at most edge_chunk edges (receiver ranges; 0: all
  // edges at once): peak memory then holds one chunk's activations instead of all layers' over
  // all edges, for one more forward pass of the edge parts. automatic (the default): keep all
  // while the estimated peak of the step fits memory_budget, else recompute the fewest layers
  // that make it fit, else all of them in chunks sized to fit, else (model v2) stream, chosen
  // again for every new graph (memory_plan.hpp). stream (model v2 only): as recompute, and the
  // edge geometry (Wigner band, envelope, Gaussians) and the edge-degree embedding run per chunk
  // too, and each layer keeps only its two node inputs (impl::streamed_edges): a few numbers per
  // edge and per node stay through the step, so that the largest systems fit. Same results to
  // rounding in every mode.
  enum class Activations { automatic, keep, recompute, stream };
  Activations activations = Activations::automatic;
  int edge_chunk = 0;  // recompute and stream only (automatic sizes its own chunks)
  // Bytes the step may use (torch's allocations and the Kokkos workspace), for automatic.
  // 0: on CUDA the device's free memory when a plan is made (with what torch's allocator holds
  // unused) less 10 %; on host backends no limit (keep all).
  double memory_budget = 0;
  // CUDA builds: record the device part of a step as one CUDA graph and replay it while the
  // graph, the positions view and What stay the same (their values may change), which takes
  // the host's launch and autograd overhead out of small steps (step_graph.hpp; doc/engine.md
  // "CUDA graphs"). A new graph or positions view costs one eager step and one capture. Steps
  // with an exchange, timers, a roll or recomputed layers (model v2 also: a global reduction,
  // charge balancing on several ranks) run as without it. No effect on host backends.
  bool cuda_graph = false;
  // The first layer rotates and gates only what reaches degree 0 of its output, and the last
  // layer only what reaches the energy (degree 0, m = 0 rows): same results to rounding, less
  // work. false runs every layer at full width (the tests compare both).
  bool trim_first_and_last_layers = true;
};

class Evaluator {
 public:
  Evaluator(const Potential& potential, EvaluatorOptions options = {});
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  Result compute(const AtomGraph& graph, kk::Vec3View<const double, Exec> positions, const What& what = {});

  const ModelConfig& config() const;
  Precision precision() const;
  // Workspace growth events so far (a warm step adds none) and bytes held.
  std::size_t workspace_allocations() const;
  std::size_t workspace_bytes() const;
  // CUDA builds: the most bytes LibTorch's caching allocator has held allocated on this device
  // in this process (all evaluators, every step so far); host backends: 0 (not tracked).
  static std::size_t torch_device_peak_bytes();
  // Edge parts run again in backward passes so far (recomputed layers x edge chunks per force
  // call; 0 while every layer keeps its activations).
  long layers_recomputed() const;
  // The activations plan of the last step that needed a backward pass (model v2: of the last
  // step; memory_plan.hpp): the one the options fix, or automatic's choice for that step's graph.
  const ActivationPlan& activation_plan() const;
  // The count of bytes per edge and per node behind the plans (memory_plan.hpp), for planning
  // without a step (edgeframe_bench --plan).
  MemoryModel memory_model() const;
  // Times the edge chunks were (re)built: once per graph (neighbour-list rebuild), not per call.
  long edge_chunk_builds() const;
  // Bytes the edge chunks' graphs hold (0 without chunks).
  std::size_t edge_chunk_bytes() const;
  // cuda_graph: steps captured so far (one per new graph, positions view or request; model v2
  // also one after each set_system) and steps replayed from a capture (0 and 0 on host
  // backends or without the option).
  long cuda_graph_captures() const;
  long cuda_graph_replays() const;
  // EvaluatorOptions::trim_first_and_last_layers as constructed.
  bool trims_first_and_last_layers() const;

  // Model v2 (format_version 2): the potential's version, its config, and the system inputs,
  // which must be set before the first compute() and again whenever they change (the
  // composition selects UMA's experts). set_system returns a line for the log; v1 models
  // take no system inputs (InputError).
  int format_version() const;
  const ModelConfigV2& config_v2() const;  // throws InputError for v1
  std::string set_system(const SystemInputs& inputs);

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
  std::unique_ptr<impl::ModelV2> m_v2;
};

}  // namespace edgeframe
