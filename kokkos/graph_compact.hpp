// graph_compact: the edges with r < cutoff of a candidate graph, rewritten at every step into
// storage the caller keeps (graph per_rebuild, doc/pair_edgeframe.md "Keyword graph").
//
// The candidate graph is built at a neighbour-list rebuild from the pairs within r_cut + skin
// (graph.hpp build_graph). At each step the candidates with 0 < r < cutoff at the current
// positions (the same test, the same floating-point expression as build_graph's) are written in
// their order, so the edges, their order, the receiver CSR and the sender grouping are exactly
// those build_graph gives at cutoff: only the edges within r_cut are evaluated, whatever the skin.
//
// Padding (capacity > live edges): the output always has `capacity` edges, so that its views,
// its size and therefore a CUDA graph captured on it stay valid from step to step and across
// rebuilds. The spare slots are self edges (i <- i) with an image offset of length pad_length
// (> r_cut): the envelope and all its derivatives are zero there, so they add exactly nothing
// (tests: KeptGraph.* in tests/unit/test_graph_radial.cpp, Evaluator.AKeptGraphsSpareEdgesAddNothing). They are spread over the receivers,
// floor(P (a + 1) / N) - floor(P a / N) at the end of receiver a's edges, so that no receiver's
// segment grows by more than one slot in N / P.
//
// Overflow (more live edges than capacity): the kernels write a consistent graph of the first
// `capacity` live edges and no padding, and status(1) says so; the host reads status after the
// step (no wait before it) and runs the step again with more room (KeptGraph, kept_graph.hpp).
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "graph.hpp"
#include "kernel_common.hpp"

namespace edgeframe::kk {

// [2]: live edges (r < cutoff) of the last compaction, 1 if they did not fit the capacity.
// Host-pinned: the kernels write it, the host reads it after the step without a copy.
using CompactStatus = Kokkos::View<int*, Kokkos::SharedHostPinnedSpace>;

struct TagCount {};
struct TagSendCount {};
struct TagEdges {};
struct TagNodes {};

// Every pass is parallel over candidates or nodes (no per-node loops over a node's edges): the
// sender grouping comes from a second scan, in the candidates' sender order, instead of a
// walk through each sender's group.
template <class Exec>
struct CompactEdges {
  // The candidate graph [Ec] and the current positions [N, 3], Angstrom.
  View1<const int, Exec> c_recv, c_send, c_recv_offsets, c_send_offsets, c_send_edges;
  Vec3View<const double, Exec> c_shift, x;
  View1<int, Exec> index;       // [Ec + 1] live candidates before c (receiver order); index(Ec): all
  View1<int, Exec> send_index;  // [Ec + 1] kept candidates before position q of the sender order
  // The output graph: `capacity` edges in views of at least that extent.
  View1<int, Exec> recv, send, recv_offsets, send_offsets, send_edges;
  Vec3View<double, Exec> shift;
  CompactStatus status;
  double cutoff2;     // Angstrom^2
  double pad_length;  // Angstrom, > the model's r_cut
  int n_nodes, n_cand, capacity;
  bool pad;  // false: capacity is the live count itself (read on the host before the output)

  KOKKOS_INLINE_FUNCTION bool live(int c) const {
    const int i = c_recv(c), j = c_send(c);
    double r2 = 0.0;
    for (int k = 0; k < 3; ++k) {
      const double d = x(j, k) - x(i, k) + c_shift(c, k);
      r2 += d * d;
    }
    return r2 > 0.0 && r2 < cutoff2;
  }
  // Spare slots in all (none on overflow or without padding).
  KOKKOS_INLINE_FUNCTION int padding() const {
    const int n_live = index(n_cand);
    return pad && n_live < capacity ? capacity - n_live : 0;
  }
  // Spare slots at the ends of the receivers before a (a = N: all of them).
  KOKKOS_INLINE_FUNCTION int pad_before(int a, int P) const {
    return n_nodes > 0 ? static_cast<int>(std::int64_t(P) * a / n_nodes) : 0;
  }
  // Output slot of candidate c, or -1 (not live, or beyond the capacity on overflow).
  KOKKOS_INLINE_FUNCTION int slot(int c, int P) const {
    if (index(c + 1) == index(c)) return -1;
    const int e = index(c) + pad_before(c_recv(c), P);
    return e < capacity ? e : -1;
  }
  // The first output edge of receiver a (a = N: the edge count).
  KOKKOS_INLINE_FUNCTION int first_edge(int a, int P) const {
    const int live_before = index(c_recv_offsets(a));
    return (live_before < capacity ? live_before : capacity) + pad_before(a, P);
  }
  // Node a's spare slots: the block [end - spare, end) at the end of its receiver segment.
  KOKKOS_INLINE_FUNCTION int spare_of(int a, int P) const { return pad_before(a + 1, P) - pad_before(a, P); }
  // Where node a's sent edges start in send_edges: the kept edges and spare slots of nodes < a.
  KOKKOS_INLINE_FUNCTION int first_sent(int a, int P) const { return send_index(c_send_offsets(a)) + pad_before(a, P); }

  // parallel_scan over [0, Ec]: index(c) = live candidates before c.
  KOKKOS_INLINE_FUNCTION void operator()(TagCount, int c, int& update, const bool final) const {
    if (final) index(c) = update;
    if (c < n_cand) update += live(c) ? 1 : 0;
  }
  // parallel_scan over [0, Ec]: send_index(q) = kept candidates before position q of the
  // candidates' sender grouping.
  KOKKOS_INLINE_FUNCTION void operator()(TagSendCount, int q, int& update, const bool final) const {
    if (final) send_index(q) = update;
    if (q < n_cand) update += slot(c_send_edges(q), padding()) >= 0 ? 1 : 0;
  }
  // Over [0, Ec): the kept candidate c into its slot, and the candidate at position q = c of the
  // sender grouping into its place in send_edges: after the kept edges of the senders before
  // its sender a and those of a before it, and after a's spare slots if its slot follows them
  // (a's edges within one receiver segment keep their order; a's spare slots are in a's own).
  KOKKOS_INLINE_FUNCTION void operator()(TagEdges, int c) const {
    const int P = padding();
    const int e = slot(c, P);
    if (e >= 0) {
      recv(e) = c_recv(c);
      send(e) = c_send(c);
      for (int k = 0; k < 3; ++k) shift(e, k) = c_shift(c, k);
    }
    const int q = c, cq = c_send_edges(q), eq = slot(cq, P);
    if (eq < 0) return;
    const int a = c_send(cq), spare = spare_of(a, P);
    const int pads_before = eq >= first_edge(a + 1, P) ? spare : 0;
    send_edges(send_index(q) + pad_before(a, P) + pads_before) = eq;
  }
  // Over [0, N]: receiver and sender offsets, each node's spare slots on both sides.
  KOKKOS_INLINE_FUNCTION void operator()(TagNodes, int a) const {
    const int P = padding();
    recv_offsets(a) = first_edge(a, P);
    send_offsets(a) = first_sent(a, P);
    if (a == 0) {
      status(0) = index(n_cand);
      status(1) = index(n_cand) > capacity ? 1 : 0;
    }
    if (a == n_nodes) return;
    const int end = first_edge(a + 1, P), spare = spare_of(a, P);
    if (spare == 0) return;
    // a's kept sent edges before its spare slots: those into receivers <= a, a leading part of
    // its group (the group is in candidate order, so by receiver): a binary search.
    int lo = c_send_offsets(a), hi = c_send_offsets(a + 1);
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (c_recv(c_send_edges(mid)) <= a)
        lo = mid + 1;
      else
        hi = mid;
    }
    const int out = first_sent(a, P) + (send_index(lo) - send_index(c_send_offsets(a)));
    for (int k = 0; k < spare; ++k) {
      const int e = end - spare + k;
      recv(e) = a;
      send(e) = a;
      shift(e, 0) = pad_length;
      shift(e, 1) = 0.0;
      shift(e, 2) = 0.0;
      send_edges(out + k) = e;
    }
  }
};

// Counts the live candidates (index); the first pass of compact_edges, also run alone by the
// host when it needs the count (a rebuild, or no padding).
template <class Exec>
void count_live_edges(const Exec& exec, const CompactEdges<Exec>& k) {
  Kokkos::parallel_scan("edgeframe::graph_compact_count", Range<Exec, TagCount>(exec, 0, k.n_cand + 1), k);
}

// The output graph from the counted candidates (count_live_edges first); no allocation, no wait.
template <class Exec>
void write_compacted_edges(const Exec& exec, const CompactEdges<Exec>& k) {
  Kokkos::parallel_scan("edgeframe::graph_compact_send_count", Range<Exec, TagSendCount>(exec, 0, k.n_cand + 1), k);
  Kokkos::parallel_for("edgeframe::graph_compact_edges", Range<Exec, TagEdges>(exec, 0, k.n_cand), k);
  Kokkos::parallel_for("edgeframe::graph_compact_nodes", Range<Exec, TagNodes>(exec, 0, k.n_nodes + 1), k);
}

}  // namespace edgeframe::kk
