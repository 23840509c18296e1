// How a force step holds what its backward pass needs, chosen against a memory budget
// (EvaluatorOptions::activations = automatic, the default): keep every layer's per-edge
// activations while the step's estimated peak fits the budget (fastest); else recompute the
// edge parts of the fewest layers that make it fit, heaviest first; else recompute all of them in
// edge chunks sized to fit. Plain arithmetic (no torch, no Kokkos) so that it can be tested
// alone; the evaluator fills the model from its layers' shapes (evaluator.cpp memory_model).
//
// The model counts bytes per edge and per node. It is an estimate, checked against the torch
// peak measured on the host (unit test MemoryPlan.ModelBoundsTheMeasuredPeak) and against the
// H200's peaks (doc/engine.md "Activations and the memory budget"); it errs on the high side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgeframe {

struct MemoryModel {
  // [layers] bytes per edge that layer t keeps from its forward for its backward pass, and that
  // it holds while its backward runs (its kept activations, less those already consumed, plus
  // the gradients and recomputed multipliers of the pack's backward: its peak).
  std::vector<double> kept_per_edge, backward_per_edge;
  double persistent_per_edge = 0;  // held through the step: geometry, band, graph, Kokkos workspace
  double per_node = 0;             // node features and the node parts' activations, all layers
  // The stream plan (model v2 only; 0 where a model family has none): held through the step
  // per edge (edge vectors and their gradients) and per node (each layer's two inputs and one
  // layer's node activations and chunk sums while its backward runs), and per edge of the one
  // chunk that runs (its geometry, Gaussians and the heaviest edge part's backward).
  double stream_per_edge = 0, stream_per_node = 0, stream_chunk_per_edge = 0;
  bool has_stream() const { return stream_chunk_per_edge > 0; }
  // Applied to the count: the H200's measured peaks (torch + workspace) lay 1-2 % above it
  // (doc/engine.md "Activations and the memory budget"); the rest is room for what it misses.
  double margin = 1.1;
};

struct ActivationPlan {
  std::vector<char> recompute;  // [layers] 1: the layer's edge part runs again in the backward pass
  int edge_chunk = 0;           // edges per recomputed chunk, 0: all edges at once
  // Every layer streamed (model v2): the edge geometry too runs per chunk, forward and again in
  // the backward pass, and each layer keeps only its node inputs (recompute is all ones).
  bool stream = false;
  double predicted_bytes = 0;  // the model's peak for this plan
  bool fits = true;            // predicted_bytes <= budget (false: the smallest plan tried, over it)
  bool any_recomputed() const;
  std::string describe() const;  // e.g. "keep", "recompute layers 1,2", "stream all layers in edge chunks of 262144"
};

// Bytes per edge of the Kokkos workspace's edge slots (workspace.hpp; both model families): edge
// vectors and dE/dr_e in double, the band and its three derivatives, n_rbf radial values with
// their double derivatives and the envelope with its double derivative, in value_bytes unless
// said; grown by 1/8 as Workspace grows them.
inline double workspace_bytes_per_edge(double band_size, double value_bytes, int n_rbf) {
  return 1.125 * (2 * 3 * 8.0 + 4.0 * band_size * value_bytes + n_rbf * (value_bytes + 8.0) + value_bytes + 8.0);
}

// The model's peak for a plan. The backward pass runs from the last layer to the first: while
// layer t's backward runs, the layers below it still hold what they keep and the layers above
// have let theirs go; a recomputed layer holds one chunk's worth while its chunk runs again.
// So: E persistent + N per_node + the largest of E sum_{s < t kept} kept_s + c_t backward_t
// over t (c_t = E for a kept layer, the chunk for a recomputed one) and of E sum_{kept} kept_s
// (the end of the forward pass); with chunks, plus their graphs (chunk_graph_bytes).
double predicted_peak(const MemoryModel& m, std::int64_t n_edges, std::int64_t n_nodes,
                      const std::vector<char>& recompute, int edge_chunk);

// The stream plan's peak: E stream_per_edge + N stream_per_node + chunk stream_chunk_per_edge
// + the chunk graphs.
double predicted_stream_peak(const MemoryModel& m, std::int64_t n_edges, std::int64_t n_nodes, int edge_chunk);

// Bytes of the chunk graphs of a chunked plan (graph_chunk.hpp, held together through the step):
// each keeps node-sized receiver and sender offsets, and all of them the edges' sender
// grouping. 0 for one chunk (0 or edge_chunk >= n_edges: the step's own graph). Counted in both
// chunked plans' peaks.
double chunk_graph_bytes(std::int64_t n_edges, std::int64_t n_nodes, int edge_chunk);

// What of a device's available memory (free, plus what torch's caching allocator holds unused)
// an automatic plan may fill: 5 % is kept back for what neither the model nor the allocators
// count (the CUDA context's growth, cuBLAS workspaces), and from the rest the share of torch's
// pool that its caching allocator holds but cannot hand out (blocks split for other sizes). The
// million-atom step that ran out of an 80 GB H100's memory held 8.24 GiB of 66.45 GiB reserved
// unused (12.4 %; doc/engine.md "Activations and the memory budget"): kFragmentation keeps back
// 15 %. With expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) the pool
// maps pages into one growing segment and keeps little unused: 3 %.
inline constexpr double kDeviceHeadroom = 0.05;
inline constexpr double kFragmentation = 0.15, kFragmentationExpandable = 0.03;
double usable_device_bytes(double available_bytes, bool expandable_segments);

// The plan for a step of n_edges / n_nodes under budget bytes (<= 0: no limit, keep all):
// keep; else the fewest recomputed layers; else every layer recomputed in edge chunks; and where
// that does not fit and the model has a stream plan, every layer streamed in chunks sized to fit.
// Chunks are never smaller than kMinEdgeChunk edges. Where no chunk fits, the plan is returned
// with fits = false and the chunk of the least predicted memory, and the caller says so (a step
// that does not fit would fail in an allocation).
inline constexpr int kMinEdgeChunk = 4096;
ActivationPlan plan_activations(const MemoryModel& m, std::int64_t n_edges, std::int64_t n_nodes, double budget);

}  // namespace edgeframe
