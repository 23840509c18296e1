// Model v2 in the engine (internal; Evaluator dispatches to it for format_version 2 files):
// fairchem's eSCN-MD backbone and energy head on the kernels of ops.hpp, the dense parts as
// LibTorch ops. The reference it matches term for term is tools/edgeframe_ref/model_v2.py.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "evaluator.hpp"
#include "edge_chunks.hpp"
#include "ops.hpp"
#include "step_graph.hpp"
#include "workspace.hpp"

namespace edgeframe::impl {

class ModelV2 {
 public:
  ModelV2(const Potential& pot, const EvaluatorOptions& opt);
  // Fixes task, charge, spin and the composition (merges the experts); returns a log line.
  std::string set_system(const SystemInputs& inputs);
  bool has_system() const { return m_system_set; }
  Result compute(const AtomGraph& graph, kk::Vec3View<const double, Exec> positions, const What& what);

  const ModelConfig& config() const { return m_shared; }
  const ModelConfigV2& config_v2() const { return m_cfg; }
  Precision precision() const { return m_precision; }
  const Workspace& workspace() const { return m_workspace; }
  long layers_recomputed() const { return m_layers_recomputed; }    // edge parts run again (recomputed layers)
  const ActivationPlan& activation_plan() const { return m_plan; }  // of the last step
  // lean_stream: the stream plan keeps layers + 1 feature rows per node (lean_stream_applies),
  // not 2 per layer.
  MemoryModel memory_model(bool lean_stream = true) const;
  long edge_chunk_builds() const { return m_chunks.builds(); }
  std::size_t edge_chunk_bytes() const { return m_chunks.bytes(); }
  long cuda_graph_captures() const { return m_graphed.captures(); }
  long cuda_graph_replays() const { return m_graphed.replays(); }

 private:
  struct Radial {                                  // Linear, LayerNorm, SiLU, Linear, LayerNorm, SiLU, (Linear: w2, b2)
    torch::Tensor w0_gauss, table_src, table_tgt;  // first linear split: [Ce, G], [Z, Ce] x2 (bias in table_src)
    torch::Tensor ln0_w, ln0_b, w1, b1, ln1_w, ln1_b, w2, b2;
  };
  struct Layer {
    torch::Tensor norm1_w, norm1_b, norm2_w, norm2_b;  // norm1_b: the bias plus the system embedding
    Radial radial;
    So2Plan so2_1, so2_2;
    torch::Tensor ffn_wg, ffn_bg, ffn_w1, ffn_b1, ffn_w2, ffn_b2;
  };

  torch::Tensor host(const std::string& name) const;  // a file tensor, double, CPU
  torch::Tensor dev(const torch::Tensor& t) const;    // to the compute device and dtype
  Radial make_radial(const std::string& prefix) const;
  torch::Tensor radial_hidden(const Radial& r, const torch::Tensor& gauss, const torch::Tensor& z_send,
                              const torch::Tensor& z_recv) const;
  torch::Tensor rms_norm_sh(const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& b) const;
  torch::Tensor feed_forward(const Layer& lw, const torch::Tensor& n) const;
  torch::Tensor with_feed_forward(const Layer& lw, const torch::Tensor& h, int n_live) const;
  torch::Tensor gaussian_basis(const torch::Tensor& vec) const;
  torch::Tensor edge_degree(StepContext& s, const torch::Tensor& band, const torch::Tensor& env,
                            const torch::Tensor& gauss, const torch::Tensor& z_send, const torch::Tensor& z_recv) const;
  torch::Tensor balance(const torch::Tensor& h, int n_owned, GlobalReduce* reduce) const;
  torch::Tensor charge_spin_embedding(const char* which, int value) const;
  int balanced_ranges() const;  // charge and spin ranges of balance(): 0, 1 or 2
  DeviceStep device_step(const AtomGraph& graph, kk::Vec3View<const double, Exec> positions, const What& what);

  ModelConfigV2 m_cfg;
  ModelConfig m_shared;
  Precision m_precision;
  torch::Dtype m_dtype;
  Workspace m_workspace;
  EvaluatorOptions::Activations m_activations;  // EvaluatorOptions::activations
  double m_memory_budget = 0;                   // EvaluatorOptions::memory_budget
  ActivationPlan m_plan;                        // plan_for's, made again when the graph's size changes
  std::int64_t m_plan_edges = -1, m_plan_nodes = -1;
  bool m_plan_lean = true;
  const ActivationPlan& plan_for(std::int64_t E, std::int64_t N, bool lean_stream);
  // A streamed step folds each layer's node part into the next layer's unit (streamed_edges.hpp
  // StreamedEdges::base) unless that part makes a collective call: the exchange, or charge and
  // spin balance summed over ranks.
  bool lean_stream_applies(const What& what) const;
  bool m_cuda_graph = false;                       // EvaluatorOptions::cuda_graph
  int m_edge_chunk = 0;                            // EvaluatorOptions::edge_chunk (activations recompute)
  EdgeChunks m_chunks;                             // of the last graph seen (edge_chunk > 0)
  GraphedSteps m_graphed;                          // reset by set_system: a captured step reads the merged weights
  long m_layers_recomputed = 0;                    // recomputed_layer's count, over all steps
  std::map<std::string, torch::Tensor> m_tensors;  // every file tensor, double, CPU
  // Set by set_system: the merged layers and what the system inputs select.
  bool m_system_set = false;
  std::vector<Layer> m_layers;
  Radial m_degree_radial;
  torch::Tensor m_atom_embedding, m_system_embedding, m_final_w, m_final_b;
  torch::Tensor m_head_w0, m_head_b0, m_head_w1, m_head_b1, m_head_w2, m_head_b2, m_refs;
  double m_rmsd = 1, m_mean = 0, m_charge = 0, m_spin = 0;
  double m_total_atoms = 0;  // of the whole system (set_system's composition)
};

}  // namespace edgeframe::impl
