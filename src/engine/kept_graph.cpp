#include "kept_graph.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "errors.hpp"

namespace edgeframe {

namespace {

// A padded graph is reallocated when its live edges leave [capacity - 2 spare - this, capacity]:
// a few dozen edges more or less than at the last allocation never cost a new capture.
constexpr int kShrinkSlack = 64;
// The largest spare fraction the doubling after an overflow reaches.
constexpr double kMaxSpareFraction = 0.25;

}  // namespace

KeptGraph::KeptGraph(double edge_headroom) : m_headroom(edge_headroom), m_spare_fraction(edge_headroom) {
  if (!(edge_headroom >= 0.0 && edge_headroom <= 1.0))
    throw InputError("edge_headroom " + std::to_string(edge_headroom) + " is outside [0, 1]");
  m_status = kk::CompactStatus("edgeframe::graph_compact_status", 2);
}

int KeptGraph::padded_capacity(int n_nodes, int live) const {
  return n_nodes > 0 ? live + spare(live) : 0;  // no receiver to pad without nodes
}

int KeptGraph::spare(int live) const {
  return m_headroom > 0.0 ? 1 + static_cast<int>(std::ceil(m_spare_fraction * live)) : 0;
}

void KeptGraph::allocate(int n_nodes, int capacity) {
  // Fresh views (new addresses): a captured step holds the old ones (impl::GraphedSteps) until
  // its next key. The node-sized ones only for a new node count, so that growing the edges
  // leaves the species' and offsets' addresses, part of a capture's key, as they were.
  if (n_nodes != m_graph.edges.n_nodes || m_species.extent(0) != std::size_t(n_nodes)) {
    m_graph.edges.recv_offsets = kk::View1<int, Exec>("edgeframe::kept_recv_offsets", n_nodes + 1);
    m_graph.edges.send_offsets = kk::View1<int, Exec>("edgeframe::kept_send_offsets", n_nodes + 1);
    m_species = kk::View1<int, Exec>("edgeframe::kept_species", n_nodes);
    m_graph.species = m_species;
    m_graph.edges.n_nodes = n_nodes;
  }
  if (capacity != int(m_recv.extent(0)) || m_allocations == 0) {
    m_recv = kk::View1<int, Exec>("edgeframe::kept_recv", capacity);
    m_send = kk::View1<int, Exec>("edgeframe::kept_send", capacity);
    m_shift = kk::Vec3View<double, Exec>("edgeframe::kept_shift", capacity);
    m_send_edges = kk::View1<int, Exec>("edgeframe::kept_send_edges", capacity);
  }
  ++m_allocations;
}

kk::CompactEdges<Exec> KeptGraph::kernels(kk::Vec3View<const double, Exec> positions) const {
  const auto& c = m_candidates.edges;
  kk::CompactEdges<Exec> k;
  k.c_recv = c.recv;
  k.c_send = c.send;
  k.c_recv_offsets = c.recv_offsets;
  k.c_send_offsets = c.send_offsets;
  k.c_send_edges = c.send_edges;
  k.c_shift = c.shift;
  k.x = positions;
  k.index = m_index;
  k.send_index = m_send_index;
  k.recv = m_recv;
  k.send = m_send;
  k.shift = m_shift;
  k.recv_offsets = m_graph.edges.recv_offsets;
  k.send_offsets = m_graph.edges.send_offsets;
  k.send_edges = m_send_edges;
  k.status = m_status;
  k.cutoff2 = m_cutoff * m_cutoff;
  k.pad_length = 2.0 * m_cutoff;  // beyond the cutoff: the envelope is zero there
  k.n_nodes = c.n_nodes;
  k.n_cand = c.n_edges;
  k.capacity = static_cast<int>(m_recv.extent(0));
  k.pad = m_headroom > 0.0;
  return k;
}

void KeptGraph::rebuild(const kk::PairList<Exec>& pairs, kk::Vec3View<const double, Exec> positions,
                        kk::View1<const int, Exec> species, int n_local, double candidate_cutoff, double cutoff) {
  if (!(cutoff > 0.0 && cutoff <= candidate_cutoff))
    throw InputError("KeptGraph: cutoff " + std::to_string(cutoff) + " A outside (0, candidate cutoff " +
                     std::to_string(candidate_cutoff) + " A]");
  m_candidates = make_graph(pairs, positions, species, n_local, candidate_cutoff);
  m_cutoff = cutoff;
  const Exec exec;
  const int N = m_candidates.edges.n_nodes, n_cand = m_candidates.edges.n_edges;
  if (int(m_index.extent(0)) < n_cand + 1) m_index = kk::View1<int, Exec>("edgeframe::kept_index", n_cand + 1);
  if (int(m_send_index.extent(0)) < n_cand + 1)
    m_send_index = kk::View1<int, Exec>("edgeframe::kept_send_index", n_cand + 1);
  kk::count_live_edges(exec, kernels(positions));
  int live = 0;
  Kokkos::deep_copy(live, Kokkos::subview(m_index, n_cand));  // host boundary (a rebuild): sizes the storage
  const int capacity = m_recv.extent(0);
  const bool same_nodes = m_allocations > 0 && m_graph.edges.n_nodes == N;
  // Padded: keep the capacity while the live edges fit with at most 2 spare + kShrinkSlack to
  // spare. Exact: room for every candidate, so that no step between rebuilds allocates.
  const bool capacity_fits =
      m_allocations > 0 &&
      (m_headroom > 0.0 ? capacity >= live && capacity <= live + 2 * spare(live) + kShrinkSlack : capacity >= n_cand);
  if (!same_nodes || !capacity_fits)
    allocate(N, capacity_fits ? capacity : (m_headroom > 0.0 ? padded_capacity(N, live) : n_cand));
  Kokkos::deep_copy(exec, m_species, species);
  m_graph.n_local = n_local;
  // The count above still holds (same candidates, same positions): only the compaction is left,
  // with the kernels over the storage just sized.
  auto k = kernels(positions);
  write_counted(k);
}

void KeptGraph::refresh(const kk::PairList<Exec>& pairs, kk::Vec3View<const double, Exec> positions) {
  refresh_graph_shifts(m_candidates, pairs);
  step(positions);
}

void KeptGraph::step(kk::Vec3View<const double, Exec> positions) {
  if (positions.extent(0) != std::size_t(m_candidates.edges.n_nodes))
    throw InputError("KeptGraph::step: " + std::to_string(positions.extent(0)) + " positions for a graph of " +
                     std::to_string(m_candidates.edges.n_nodes) + " nodes");
  auto k = kernels(positions);
  kk::count_live_edges(Exec(), k);
  write_counted(k);
}

void KeptGraph::write_counted(kk::CompactEdges<Exec>& k) {
  const Exec exec;
  int n_edges = k.capacity;
  if (m_headroom == 0.0) {
    Kokkos::deep_copy(m_live, Kokkos::subview(m_index, k.n_cand));  // host boundary (exact): the graph's size
    n_edges = k.capacity = m_live;
  }
  kk::write_compacted_edges(exec, k);
  auto& g = m_graph.edges;
  const auto edges = std::make_pair(0, n_edges);
  g.n_edges = n_edges;
  g.recv = Kokkos::subview(m_recv, edges);
  g.send = Kokkos::subview(m_send, edges);
  g.shift = Kokkos::subview(m_shift, edges, Kokkos::ALL);
  g.send_edges = Kokkos::subview(m_send_edges, edges);
  g.pair = {};
  g.revision = kk::next_graph_revision();
}

bool KeptGraph::held_every_edge() {
  if (m_headroom == 0.0) return true;
  // The status is host-pinned memory the last compaction wrote; the step's results reached the
  // host after it, so this fence has nothing left to wait for.
  Exec().fence("edgeframe::KeptGraph status");
  m_live = m_status(0);
  if (m_status(1) == 0) return true;
  // The edges within the cutoff move by more than the spare slots allow (a compressed box, or
  // a crystal shell right at r_cut whose pairs cross it with the thermal motion): double the
  // spare fraction, so that a few overflows settle it and the rebuilds' resizing, which keeps
  // up to twice the spare, does not take it back.
  m_spare_fraction = std::min(2.0 * m_spare_fraction, std::max(kMaxSpareFraction, m_headroom));
  allocate(m_graph.edges.n_nodes, padded_capacity(m_graph.edges.n_nodes, m_live));
  return false;
}

}  // namespace edgeframe
