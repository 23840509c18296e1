// The edge chunks of a graph for activations recompute with edge_chunk > 0 (both model
// families): receiver ranges of at most edge_chunk edges, each as a graph of its own
// (graph_chunk.hpp), so that a recomputed layer's edge part runs one chunk at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "bridge.hpp"
#include "graph.hpp"
#include "graph_chunk.hpp"
#include "ops.hpp"

namespace edgeframe::impl {

class EdgeChunks {
 public:
  // The step contexts of a step whose layers are recomputed, over step.graph: with
  // 0 < edge_chunk < n_edges one per chunk (the chunk's graph, the rest as step's), else one for
  // the whole graph; ranges gets each one's [e0, e1). A deque: recomputed_layer keeps the
  // contexts' addresses until the backward pass.
  void step_contexts(const bridge::Exec& exec, const StepContext& step, int edge_chunk,
                     std::deque<StepContext>& contexts, std::vector<std::pair<int, int>>& ranges) {
    const int E = step.graph.n_edges;
    if (edge_chunk > 0 && edge_chunk < E) {
      update(exec, step.graph, edge_chunk);
      ranges = m_edges;
      for (const auto& cg : m_graphs) {
        contexts.push_back(step);
        contexts.back().graph = cg;
      }
    } else {
      // One chunk: the step's own graph. Chunk graphs of an earlier plan go (a plan that
      // streamed a large graph in small chunks would otherwise hold them for the model's life).
      m_graphs.clear();
      m_edges.clear();
      m_revision = 0;
      m_edge_chunk = -1;
      ranges.emplace_back(0, E);
      contexts.push_back(step);
    }
  }
  long builds() const { return m_builds; }  // chunk sets made (tests: once per graph)
  // Bytes the chunk graphs hold (their own offsets and sender grouping; recv, send and shift are
  // views of the step's graph).
  std::size_t bytes() const {
    std::size_t b = 0;
    for (const auto& g : m_graphs)
      b += (g.recv_offsets.extent(0) + g.send_offsets.extent(0) + g.send_edges.extent(0)) * sizeof(int);
    return b;
  }

 private:
  // The chunks of g, rebuilt only when the graph (its revision: a build or a compaction, which
  // rewrites the same views) or the chunk size changes; a graph without a revision (0: made by
  // hand) every time. Reads recv_offsets on the host then.
  void update(const bridge::Exec& exec, const kk::Graph<bridge::Exec>& g, int edge_chunk) {
    if (g.revision != 0 && m_revision == g.revision && m_edge_chunk == edge_chunk) return;
    const auto ro_view = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g.recv_offsets);
    const std::vector<int> ro(ro_view.data(), ro_view.data() + g.n_nodes + 1);
    const std::vector<int> bounds = kk::chunk_receivers(ro, edge_chunk);
    m_revision = g.revision;
    m_edge_chunk = edge_chunk;
    m_edges.clear();
    m_graphs.clear();
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
      m_edges.emplace_back(ro[bounds[k]], ro[bounds[k + 1]]);
      m_graphs.push_back(kk::graph_chunk(exec, g, m_edges.back().first, m_edges.back().second));
    }
    ++m_builds;
  }
  std::uint64_t m_revision = 0;
  int m_edge_chunk = -1;
  std::vector<std::pair<int, int>> m_edges;
  std::vector<kk::Graph<bridge::Exec>> m_graphs;
  long m_builds = 0;
};

}  // namespace edgeframe::impl
