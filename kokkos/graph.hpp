// graph: neighbour pairs -> directed edges sorted by receiving atom (CSR), the sender grouping
// for sender-side sums, and per-step edge vectors. Built once per neighbour-list rebuild; the
// edge vectors are recomputed every step from the positions.
//
// Edge e = (i <- j): receiver recv[e] = i, sender send[e] = j, r_e = x_j - x_i + shift_e
// (Angstrom; shift_e is the Cartesian image offset, zero for LAMMPS ghosts).
// Order: by receiver, then by input pair index, then direction (a half pair (i, j) gives
// (i <- j) first, then (j <- i) with shift -s). The order depends only on the input, never on
// the thread count: the sort keys are unique integers.
#pragma once

#include <Kokkos_Core.hpp>
#include <Kokkos_Sort.hpp>
#include <atomic>
#include <cstdint>

#include "kernel_common.hpp"

namespace edgeframe::kk {

// Neighbour pairs as the caller has them. half = true: each pair stands for both directions
// (LAMMPS "neigh half" with newton on); false: each pair is one directed edge (i <- j).
template <class Exec>
struct PairList {
  View1<const int, Exec> i, j;         // [P] atom indices into the positions
  Vec3View<const double, Exec> shift;  // [P, 3] Angstrom, or extent 0: no shifts
  bool half = false;
};

template <class Exec>
struct Graph {
  int n_nodes = 0;
  int n_edges = 0;
  View1<int, Exec> recv, send;    // [E]
  Vec3View<double, Exec> shift;   // [E, 3] Angstrom
  View1<int, Exec> recv_offsets;  // [N+1] edges into i: recv_offsets[i] .. recv_offsets[i+1]-1
  View1<int, Exec> send_offsets;  // [N+1] into send_edges
  View1<int, Exec> send_edges;    // [E] edge ids grouped by sender, ascending within a group
  // [E] the input pair of each edge, per_pair * p + direction (1: the reverse of a half pair):
  // refresh_shifts takes the shifts of a kept graph from the pairs' current ones.
  // (Compacted graphs, graph_compact.hpp, have none: extent 0.)
  View1<int, Exec> pair;
  int per_pair = 1;
  // Changes whenever the edges do (a build, a compaction): caches of a graph's host-side
  // structure key on it (edge_chunks.hpp), since compaction rewrites the same views.
  std::uint64_t revision = 0;
};

// A revision number no graph of this process has had yet.
inline std::uint64_t next_graph_revision() {
  static std::atomic<std::uint64_t> last{0};
  return ++last;
}

namespace impl {

// Keeps a pair when 0 < |r| < cutoff; exclusive scan of the number of edges each pair emits.
template <class Exec>
struct PairEmit {
  View1<const int, Exec> i, j;
  Vec3View<const double, Exec> shift, x;  // [P, 3], [N, 3] Angstrom
  View1<int, Exec> first;                 // [P] first output slot of pair p
  View1<std::int64_t, Exec> keys;         // [E] (TagForward only)
  double cutoff2;                         // Angstrom^2
  int per_pair;                           // 1 (full list) or 2 (half list)
  std::int64_t slots;                     // keys are recv * slots + (per_pair * p + dir)

  KOKKOS_INLINE_FUNCTION bool keep(int p) const {
    const int a = i(p), b = j(p);
    double r2 = 0.0;
    for (int k = 0; k < 3; ++k) {
      const double d = x(b, k) - x(a, k) + (shift.extent(0) ? shift(p, k) : 0.0);
      r2 += d * d;
    }
    return r2 > 0.0 && r2 < cutoff2;
  }
  // parallel_scan: count
  KOKKOS_INLINE_FUNCTION void operator()(int p, int& update, const bool final) const {
    const int n = keep(p) ? per_pair : 0;
    if (final) first(p) = update;
    update += n;
  }
  // emit sort keys (after the scan; a pair emits iff first(p+1) > first(p))
  KOKKOS_INLINE_FUNCTION void operator()(TagForward, int p) const {
    if (!keep(p)) return;
    const int slot = first(p);
    keys(slot) = std::int64_t(i(p)) * slots + std::int64_t(per_pair) * p;
    if (per_pair == 2) keys(slot + 1) = std::int64_t(j(p)) * slots + 2 * std::int64_t(p) + 1;
  }
};

template <class Exec>
struct EdgeFromKey {
  View1<const std::int64_t, Exec> keys;
  View1<const int, Exec> pi, pj;
  Vec3View<const double, Exec> pshift;
  View1<int, Exec> recv, send, pair;
  Vec3View<double, Exec> shift;
  std::int64_t slots;
  int per_pair;

  KOKKOS_INLINE_FUNCTION void operator()(int e) const {
    const std::int64_t key = keys(e);
    const std::int64_t local = key % slots;
    const int p = static_cast<int>(local / per_pair);
    const bool reverse = (local % per_pair) == 1;
    pair(e) = static_cast<int>(local);
    recv(e) = reverse ? pj(p) : pi(p);
    send(e) = reverse ? pi(p) : pj(p);
    for (int k = 0; k < 3; ++k) {
      const double s = pshift.extent(0) ? pshift(p, k) : 0.0;
      shift(e, k) = reverse ? -s : s;
    }
  }
};

// CSR row offsets from a sorted row index per item: offsets[r] = first item of row r.
// Each item e writes the offsets of the rows between its predecessor's row and its own, so
// every offset is written exactly once: no atomics, deterministic.
template <class Exec>
struct CsrOffsets {
  View1<const int, Exec> row;  // [E] sorted ascending
  View1<int, Exec> offsets;    // [N+1]
  int n_items, n_rows;
  KOKKOS_INLINE_FUNCTION void operator()(int e) const {
    const int prev = e == 0 ? -1 : row(e - 1);
    const int cur = e == n_items ? n_rows : row(e);
    for (int r = prev + 1; r <= cur; ++r) offsets(r) = e;
  }
};

template <class Exec>
struct SendKeys {
  View1<const int, Exec> send;
  View1<std::int64_t, Exec> keys;
  View1<int, Exec> rows, edges;
  std::int64_t n_edges;
  KOKKOS_INLINE_FUNCTION void operator()(TagForward, int e) const { keys(e) = send(e) * n_edges + e; }
  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, int e) const {
    rows(e) = static_cast<int>(keys(e) / n_edges);
    edges(e) = static_cast<int>(keys(e) % n_edges);
  }
};

}  // namespace impl

// Builds the graph. Allocates (this runs once per neighbour-list rebuild, not per step) and
// fences once: the number of edges must reach the host to size the views.
template <class Exec>
Graph<Exec> build_graph(const Exec& exec, const PairList<Exec>& pairs, Vec3View<const double, Exec> x, int n_nodes,
                        double cutoff) {
  const int n_pairs = static_cast<int>(pairs.i.extent(0));
  const int per_pair = pairs.half ? 2 : 1;
  const std::int64_t slots = std::int64_t(per_pair) * (n_pairs > 0 ? n_pairs : 1);
  View1<int, Exec> first(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "edgeframe::graph_first"), n_pairs);
  impl::PairEmit<Exec> emit{pairs.i, pairs.j, pairs.shift, x, first, {}, cutoff * cutoff, per_pair, slots};
  int n_edges = 0;
  // Host boundary: n_edges sizes the edge views.
  Kokkos::parallel_scan("edgeframe::graph_count", Range<Exec>(exec, 0, n_pairs), emit, n_edges);
  Graph<Exec> g;
  g.n_nodes = n_nodes;
  g.n_edges = n_edges;
  g.revision = next_graph_revision();
  emit.keys = View1<std::int64_t, Exec>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "edgeframe::graph_keys"),
                                        n_edges);
  Kokkos::parallel_for("edgeframe::graph_emit", Range<Exec, TagForward>(exec, 0, n_pairs), emit);
  Kokkos::sort(exec, emit.keys);

  g.recv = View1<int, Exec>(Kokkos::view_alloc(exec, "edgeframe::graph_recv"), n_edges);
  g.send = View1<int, Exec>(Kokkos::view_alloc(exec, "edgeframe::graph_send"), n_edges);
  g.shift = Vec3View<double, Exec>(Kokkos::view_alloc(exec, "edgeframe::graph_shift"), n_edges);
  g.pair = View1<int, Exec>(Kokkos::view_alloc(exec, "edgeframe::graph_pair"), n_edges);
  g.per_pair = per_pair;
  Kokkos::parallel_for("edgeframe::graph_fill", Range<Exec>(exec, 0, n_edges),
                       impl::EdgeFromKey<Exec>{emit.keys, pairs.i, pairs.j, pairs.shift, g.recv, g.send, g.pair,
                                               g.shift, slots, per_pair});
  g.recv_offsets = View1<int, Exec>(Kokkos::view_alloc(exec, "edgeframe::graph_recv_offsets"), n_nodes + 1);
  Kokkos::parallel_for("edgeframe::graph_recv_csr", Range<Exec>(exec, 0, n_edges + 1),
                       impl::CsrOffsets<Exec>{g.recv, g.recv_offsets, n_edges, n_nodes});

  // Sender grouping: sort (send, e) keys, unique because e is.
  View1<int, Exec> send_rows(Kokkos::view_alloc(exec, "edgeframe::graph_send_rows"), n_edges);
  g.send_edges = View1<int, Exec>(Kokkos::view_alloc(exec, "edgeframe::graph_send_edges"), n_edges);
  impl::SendKeys<Exec> sk{g.send, emit.keys, send_rows, g.send_edges, n_edges > 0 ? n_edges : 1};
  Kokkos::parallel_for("edgeframe::graph_send_keys", Range<Exec, TagForward>(exec, 0, n_edges), sk);
  Kokkos::sort(exec, emit.keys);
  Kokkos::parallel_for("edgeframe::graph_send_rows", Range<Exec, TagBackward>(exec, 0, n_edges), sk);
  g.send_offsets = View1<int, Exec>(Kokkos::view_alloc(exec, "edgeframe::graph_send_offsets"), n_nodes + 1);
  Kokkos::parallel_for("edgeframe::graph_send_csr", Range<Exec>(exec, 0, n_edges + 1),
                       impl::CsrOffsets<Exec>{send_rows, g.send_offsets, n_edges, n_nodes});
  return g;
}

// A graph kept between neighbour-list rebuilds (built with cutoff r_cut + skin): its shifts from
// the pairs' current ones (box changes: NPT, fix deform), no allocation, no host boundary. The
// pairs must be the ones the graph was built from (same order); pairs without shifts leave the
// graph's zeros.
template <class Exec>
struct ShiftsFromPairs {
  View1<const int, Exec> pair;
  Vec3View<const double, Exec> pshift;
  Vec3View<double, Exec> shift;
  int per_pair;
  KOKKOS_INLINE_FUNCTION void operator()(int e) const {
    const int p = pair(e) / per_pair;
    const double sign = pair(e) % per_pair == 1 ? -1.0 : 1.0;
    for (int k = 0; k < 3; ++k) shift(e, k) = sign * pshift(p, k);
  }
};

template <class Exec>
void refresh_shifts(const Exec& exec, const Graph<Exec>& g, const PairList<Exec>& pairs) {
  if (pairs.shift.extent(0) == 0) return;
  Kokkos::parallel_for("edgeframe::graph_refresh_shifts", Range<Exec>(exec, 0, g.n_edges),
                       ShiftsFromPairs<Exec>{g.pair, pairs.shift, g.shift, g.per_pair});
}

// r_e = x_j - x_i + shift_e, every step.
template <class Exec>
struct EdgeVectors {
  View1<const int, Exec> recv, send;
  Vec3View<const double, Exec> shift, x;
  Vec3View<double, Exec> vec;  // [E, 3] Angstrom
  KOKKOS_INLINE_FUNCTION void operator()(int e) const {
    const int i = recv(e), j = send(e);
    for (int k = 0; k < 3; ++k) vec(e, k) = x(j, k) - x(i, k) + shift(e, k);
  }
};

template <class Exec>
void compute_edge_vectors(const Exec& exec, const Graph<Exec>& g, Vec3View<const double, Exec> x,
                          Vec3View<double, Exec> vec) {
  Kokkos::parallel_for("edgeframe::edge_vectors", Range<Exec>(exec, 0, g.n_edges),
                       EdgeVectors<Exec>{g.recv, g.send, g.shift, x, vec});
}

}  // namespace edgeframe::kk
