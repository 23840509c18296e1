#include "memory_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace edgeframe {

bool ActivationPlan::any_recomputed() const {
  return std::any_of(recompute.begin(), recompute.end(), [](char r) { return r != 0; });
}

std::string ActivationPlan::describe() const {
  if (!any_recomputed()) return "keep";
  const std::string chunks = edge_chunk > 0 ? " in edge chunks of " + std::to_string(edge_chunk) : "";
  if (stream) return "stream all layers" + chunks;
  if (std::all_of(recompute.begin(), recompute.end(), [](char r) { return r != 0; }))
    return "recompute all layers" + chunks;
  std::string layers;
  for (std::size_t t = 0; t < recompute.size(); ++t)
    if (recompute[t]) layers += (layers.empty() ? "" : ",") + std::to_string(t);
  return "recompute layers " + layers + chunks;
}

double predicted_peak(const MemoryModel& m, std::int64_t n_edges, std::int64_t n_nodes,
                      const std::vector<char>& recompute, int edge_chunk) {
  const double E = double(n_edges);
  const double chunk = edge_chunk > 0 ? std::min(E, double(edge_chunk)) : E;
  double below = 0, peak = 0;  // below: bytes per edge kept by the layers under t
  for (std::size_t t = 0; t < m.kept_per_edge.size(); ++t) {
    const bool again = t < recompute.size() && recompute[t];
    peak = std::max(peak, E * below + (again ? chunk : E) * m.backward_per_edge[t]);
    if (!again) below += m.kept_per_edge[t];
  }
  peak = std::max(peak, E * below);
  const bool chunked = edge_chunk > 0 && std::any_of(recompute.begin(), recompute.end(), [](char r) { return r; });
  return m.margin * (E * m.persistent_per_edge + double(n_nodes) * m.per_node + peak +
                     (chunked ? chunk_graph_bytes(n_edges, n_nodes, edge_chunk) : 0.0));
}

double predicted_stream_peak(const MemoryModel& m, std::int64_t n_edges, std::int64_t n_nodes, int edge_chunk) {
  const double E = double(n_edges);
  const double chunk = edge_chunk > 0 ? std::min(E, double(edge_chunk)) : E;
  return m.margin * (E * m.stream_per_edge + double(n_nodes) * m.stream_per_node + chunk * m.stream_chunk_per_edge +
                     chunk_graph_bytes(n_edges, n_nodes, edge_chunk));
}

double usable_device_bytes(double available_bytes, bool expandable_segments) {
  const double fragmentation = expandable_segments ? kFragmentationExpandable : kFragmentation;
  return std::max(0.0, available_bytes) * (1.0 - kDeviceHeadroom) * (1.0 - fragmentation);
}

double chunk_graph_bytes(std::int64_t n_edges, std::int64_t n_nodes, int edge_chunk) {
  if (edge_chunk <= 0 || edge_chunk >= n_edges) return 0.0;
  // Receiver ranges end at whole receivers, so a few more chunks than E / chunk: one more.
  const double chunks = std::ceil(double(n_edges) / edge_chunk) + 1.0;
  return 4.0 * double(n_edges) + chunks * 8.0 * double(n_nodes + 1);
}

namespace {

// The largest chunk on a ladder from E down to kMinEdgeChunk (5 % a rung) whose predicted peak
// fits the budget: the fewest chunks, so the least per-chunk work. Where no rung fits, the rung
// of the smallest peak: peak(c) = fixed + c per_chunk_edge + (E / c) node-sized chunk graphs
// falls as c shrinks only until the chunk graphs' growth overtakes it, so the smallest chunk is
// not the least memory where the node part is large (a million atoms: about 2.4x the least).
// 0 stands for one chunk of all edges.
template <class Peak>
int chunk_for(std::int64_t n_edges, double budget, Peak&& peak) {
  const double smallest = std::min<double>(kMinEdgeChunk, double(n_edges));
  constexpr double largest = std::numeric_limits<int>::max();  // a chunk is an int edge count
  auto as_chunk = [&](double e) { return e < double(n_edges) ? int(std::min(e, largest)) : 0; };
  int best = 0;
  double best_peak = 0;
  for (double edges = double(n_edges);; edges = std::max(smallest, 0.95 * edges)) {
    const int chunk = as_chunk(edges);
    const double p = peak(chunk);
    if (p <= budget) return chunk;
    if (edges == double(n_edges) || p < best_peak) best = chunk, best_peak = p;
    if (edges <= smallest) break;
  }
  return best;
}

}  // namespace

ActivationPlan plan_activations(const MemoryModel& m, std::int64_t n_edges, std::int64_t n_nodes, double budget) {
  const std::size_t layers = m.kept_per_edge.size();
  ActivationPlan plan;
  plan.recompute.assign(layers, 0);
  plan.predicted_bytes = predicted_peak(m, n_edges, n_nodes, plan.recompute, 0);
  if (budget <= 0 || plan.predicted_bytes <= budget || n_edges == 0) return plan;
  // One more recomputed layer at a time, all edges at once: the one that lowers the peak most
  // (ties: the lower layer), until the plan fits or every layer is recomputed.
  for (std::size_t added = 0; added < layers; ++added) {
    std::size_t best = layers;
    double best_peak = 0;
    for (std::size_t t = 0; t < layers; ++t) {
      if (plan.recompute[t]) continue;
      plan.recompute[t] = 1;
      const double p = predicted_peak(m, n_edges, n_nodes, plan.recompute, 0);
      plan.recompute[t] = 0;
      if (best == layers || p < best_peak) best = t, best_peak = p;
    }
    plan.recompute[best] = 1;
    plan.predicted_bytes = best_peak;
    if (best_peak <= budget) return plan;
  }
  // Every layer recomputed, and still over: edge chunks as large as the budget allows (with
  // every layer recomputed the peak is fixed + chunk max_t backward_t), never below kMinEdgeChunk.
  plan.edge_chunk =
      chunk_for(n_edges, budget, [&](int c) { return predicted_peak(m, n_edges, n_nodes, plan.recompute, c); });
  plan.predicted_bytes = predicted_peak(m, n_edges, n_nodes, plan.recompute, plan.edge_chunk);
  plan.fits = plan.predicted_bytes <= budget;
  if (plan.fits || !m.has_stream()) return plan;
  // Still over: stream, whose fixed part holds a few numbers per edge instead of the geometry
  // and each layer's node activations; taken when it fits or at least needs less.
  ActivationPlan streamed = plan;
  streamed.stream = true;
  streamed.edge_chunk =
      chunk_for(n_edges, budget, [&](int c) { return predicted_stream_peak(m, n_edges, n_nodes, c); });
  streamed.predicted_bytes = predicted_stream_peak(m, n_edges, n_nodes, streamed.edge_chunk);
  streamed.fits = streamed.predicted_bytes <= budget;
  return streamed.predicted_bytes < plan.predicted_bytes ? streamed : plan;
}

}  // namespace edgeframe
