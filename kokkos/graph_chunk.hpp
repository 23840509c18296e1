// graph_chunk: the part of a graph (graph.hpp) whose edges run into one range of receivers,
// as a graph of its own, so that the edge kernels (edge_frame_pack, unrotate_aggregate) can
// run on one edge chunk at a time unchanged (activation recomputation in edge chunks,
// doc/engine.md). Edges are receiver-sorted, so receivers [a0, a1) own the contiguous edges
// [recv_offsets[a0], recv_offsets[a1]); the chunk keeps every node (N is unchanged: node
// features and aggregates stay global) and renumbers its edges from 0.
//   recv, send: subviews of the parent's (global node ids);
//   recv_offsets: the parent's clamped to the chunk (nodes outside it have no edges);
//   send_offsets / send_edges: the parent's sender grouping restricted to the chunk. Each
//     sender's group is ascending in edge id, so its chunk edges are one contiguous run of it,
//     found by binary search: same order as the parent's, deterministic.
#pragma once

#include <Kokkos_Core.hpp>
#include <vector>

#include "graph.hpp"
#include "kernel_common.hpp"

namespace edgeframe::kk {

namespace impl {

template <class Exec>
struct ChunkSenders {
  View1<const int, Exec> send_offsets, send_edges;  // parent
  View1<int, Exec> first;                           // [N] first chunk edge in the parent's group
  View1<int, Exec> offsets;                         // [N+1] chunk send_offsets
  int e0, e1;

  // first index in send_edges[lo, hi) whose value is >= e
  KOKKOS_INLINE_FUNCTION int lower_bound(int lo, int hi, int e) const {
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (send_edges(mid) < e)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  // parallel_scan over nodes: count this chunk's edges per sender
  KOKKOS_INLINE_FUNCTION void operator()(int a, int& update, const bool final) const {
    const int lo = lower_bound(send_offsets(a), send_offsets(a + 1), e0);
    const int hi = lower_bound(lo, send_offsets(a + 1), e1);
    if (final) {
      offsets(a) = update;
      first(a) = lo;
    }
    update += hi - lo;
  }
};

}  // namespace impl

// Receiver ranges [a_k, a_{k+1}) of at most max_edges edges each (a single receiver with more
// edges gets a chunk of its own), from the parent's recv_offsets on the host. Returns the
// bounds a_0 = 0 < a_1 < ... < a_K = N.
inline std::vector<int> chunk_receivers(const std::vector<int>& recv_offsets, int max_edges) {
  const int n = static_cast<int>(recv_offsets.size()) - 1;
  std::vector<int> bounds{0};
  for (int a = 0; a < n; ++a)
    // close the current chunk before receiver a if a's edges would overflow it, and only if
    // it has edges: no chunk is ever empty (a zero-edge receiver joins its neighbours)
    if (recv_offsets[a + 1] - recv_offsets[bounds.back()] > max_edges && recv_offsets[a] > recv_offsets[bounds.back()])
      bounds.push_back(a);
  if (n > 0) bounds.push_back(n);
  return bounds;
}

// The chunk of receivers [a0, a1), whose edges are [e0, e1) = [recv_offsets[a0], recv_offsets[a1])
// (the caller has the offsets on the host already: chunk_receivers).
template <class Exec>
Graph<Exec> graph_chunk(const Exec& exec, const Graph<Exec>& g, int e0, int e1) {
  Graph<Exec> c;
  c.n_nodes = g.n_nodes;
  c.n_edges = e1 - e0;
  c.revision = next_graph_revision();
  c.recv = Kokkos::subview(g.recv, std::make_pair(e0, e1));
  c.send = Kokkos::subview(g.send, std::make_pair(e0, e1));
  c.shift = Kokkos::subview(g.shift, std::make_pair(e0, e1), Kokkos::ALL);
  const int N = g.n_nodes;
  c.recv_offsets =
      View1<int, Exec>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "edgeframe::chunk recv_offsets"), N + 1);
  c.send_offsets =
      View1<int, Exec>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "edgeframe::chunk send_offsets"), N + 1);
  c.send_edges =
      View1<int, Exec>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "edgeframe::chunk send_edges"), c.n_edges);
  const auto parent_ro = g.recv_offsets;
  const auto ro = c.recv_offsets;
  Kokkos::parallel_for(
      "edgeframe::chunk_recv_offsets", Range<Exec>(exec, 0, N + 1), KOKKOS_LAMBDA(int a) {
        const int o = parent_ro(a);
        ro(a) = (o < e0 ? e0 : (o > e1 ? e1 : o)) - e0;
      });
  View1<int, Exec> first(Kokkos::view_alloc(Kokkos::WithoutInitializing, "edgeframe::chunk first"), N);
  impl::ChunkSenders<Exec> senders{g.send_offsets, g.send_edges, first, c.send_offsets, e0, e1};
  int total = 0;
  Kokkos::parallel_scan("edgeframe::chunk_senders", Range<Exec>(exec, 0, N), senders, total);
  if (total != c.n_edges)  // every chunk edge has exactly one sender: a broken parent graph
    Kokkos::abort("edgeframe::graph_chunk: the sender grouping does not cover the chunk's edges");
  Kokkos::deep_copy(exec, Kokkos::subview(c.send_offsets, N), total);
  const auto so = c.send_offsets;
  const auto parent_se = g.send_edges;
  const auto se = c.send_edges;
  Kokkos::parallel_for(
      "edgeframe::chunk_send_edges", Range<Exec>(exec, 0, N), KOKKOS_LAMBDA(int a) {
        for (int q = so(a), p = first(a); q < so(a + 1); ++q, ++p) se(q) = parent_se(p) - e0;
      });
  return c;
}

}  // namespace edgeframe::kk
