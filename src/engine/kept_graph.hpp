// The graph of `graph per_rebuild` (doc/pair_edgeframe.md "Keyword graph"): candidate edges
// built at each neighbour-list rebuild from the pairs within r_cut + skin, and at every step the
// edges with r < r_cut among them, written into storage the graph keeps (graph_compact.hpp).
// A step evaluates only the edges within r_cut, whatever the skin, and allocates nothing.
//
// Two ways to size the step's graph:
// - exact (edge_headroom 0): the host reads the live count after the compaction's first pass
//   (one wait per step) and the graph has exactly the live edges;
// - padded (edge_headroom h > 0): the graph has a fixed capacity, (1 + h) x the live edges at
//   the last (re)allocation (h doubles after each overflow), the spare slots filled with edges
//   that add exactly nothing; nothing before the engine waits for the host, and the graph's
//   views, its size and so a CUDA graph captured on it (EvaluatorOptions::cuda_graph) stay valid
//   across steps and rebuilds while the node count stays. A step whose live edges outgrow the
//   capacity is found after it (held_every_edge, which reads the count the kernels left in
//   host-pinned memory) and must be run again.
#pragma once

#include <cstdint>

#include "evaluator.hpp"
#include "graph_compact.hpp"

namespace edgeframe {

class KeptGraph {
 public:
  // edge_headroom: 0 (exact) or the padded graph's spare fraction (0 < h <= 1).
  explicit KeptGraph(double edge_headroom);

  // At a neighbour-list rebuild (or a new node map): candidates from the pairs with
  // 0 < r < candidate_cutoff at these positions, and the step's graph of the edges with
  // 0 < r < cutoff. Waits for the host (the counts size the views).
  void rebuild(const kk::PairList<Exec>& pairs, kk::Vec3View<const double, Exec> positions,
               kk::View1<const int, Exec> species, int n_local, double candidate_cutoff, double cutoff);
  // Between rebuilds: the candidates' image offsets from the pairs' current ones (box changes;
  // the pairs the candidates were built from), then step().
  void refresh(const kk::PairList<Exec>& pairs, kk::Vec3View<const double, Exec> positions);
  // The step's graph at these positions (the positions view of rebuild()'s call or one with the
  // same nodes). Padded: no allocation, no wait.
  void step(kk::Vec3View<const double, Exec> positions);

  const AtomGraph& graph() const { return m_graph; }
  // After a step evaluated on graph() and its results reached the host: whether the graph held
  // every edge within the cutoff. If not (padded only), the capacity has grown: step() again
  // and evaluate again.
  bool held_every_edge();
  // The edges within the cutoff of the last step held (exact: of the last step()).
  int live_edges() const { return m_live; }
  int capacity() const { return m_graph.edges.n_edges; }
  int candidate_edges() const { return m_candidates.edges.n_edges; }
  long allocations() const { return m_allocations; }  // of the step graph's storage (tests)
  // Padded: the spare fraction now, edge_headroom doubled after each overflow (up to 0.25).
  double spare_fraction() const { return m_spare_fraction; }

 private:
  kk::CompactEdges<Exec> kernels(kk::Vec3View<const double, Exec> positions) const;
  // A step's compaction after its count (count_live_edges has filled m_index for k's positions).
  void write_counted(kk::CompactEdges<Exec>& k);
  // New storage (new addresses) for what changes: node-sized views for a new node count, edge
  // views for a new capacity.
  void allocate(int n_nodes, int capacity);
  int spare(int live) const;  // padded: spare slots for `live` edges
  int padded_capacity(int n_nodes, int live) const;

  double m_headroom;
  double m_spare_fraction;
  double m_cutoff = 0.0;
  AtomGraph m_candidates;
  AtomGraph m_graph;  // views of the storage below ([0, n_edges))
  kk::View1<int, Exec> m_recv, m_send, m_send_edges;
  kk::Vec3View<double, Exec> m_shift;
  kk::View1<int, Exec> m_species;              // [N] a copy: its address is part of a capture's key
  kk::View1<int, Exec> m_index, m_send_index;  // [candidates + 1] the compaction's scans
  kk::CompactStatus m_status;
  int m_live = 0;
  long m_allocations = 0;
};

}  // namespace edgeframe
