#include "edgeframe_exchange.h"

#include "comm.h"
#include "pair.h"
#include "platform.h"

#include "edgeframe_node_map.h"
#include "edgeframe_peer.h"

#include <Kokkos_Core.hpp>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

using namespace LAMMPS_NS;
using namespace LAMMPS_NS::edgeframe_glue;

namespace {

using EngineExec = Kokkos::DefaultExecutionSpace;
using EngineMem = EngineExec::memory_space;
constexpr bool kEngineMemoryIsHost = Kokkos::SpaceAccessibility<Kokkos::HostSpace, EngineMem>::accessible;

// The host row loops: f(q) for q in [0, n), rows of row_bytes each, on `threads` OpenMP threads
// when they move parallel_bytes or more (ExchangeSettings::threads). Measured on the H200
// machines (bench/results/benchmarks-log.md, two H200s): 8 threads halve the one-rank exchange
// of periodic images (96 -> 43 ms at 110k atoms) but do not help two ranks (91 -> 104 ms):
// mpirun binds each rank to one core, so the threads share it. Hence 1 by default.
struct RowLoop {
  int threads = 1;
  std::size_t parallel_bytes = std::size_t(4) << 20;

  template <class F>
  void operator()(int n, std::size_t row_bytes, F &&f) const
  {
#ifdef _OPENMP
    if (threads > 1 && std::size_t(n) * row_bytes >= parallel_bytes) {
#pragma omp parallel for schedule(static) num_threads(threads)
      for (int q = 0; q < n; q++) f(q);
      return;
    }
#endif
    for (int q = 0; q < n; q++) f(q);
  }
};

// ---- host-memory path: node rows and stage both in host memory --------------------------------

// Node rows [begin, end) into their atoms' stage rows, byte for byte (stage rows are
// stage_words doubles per LAMMPS atom and hold the row's bytes: a float row travels as floats,
// two per double, so no conversion and half the bytes of widening it).
void rows_to_stage(const RowLoop &for_rows, const char *rows, std::size_t row_bytes, const int *atom_of_node, int begin,
                   int end, double *stage, int stage_words)
{
  for_rows(end - begin, row_bytes, [&](int q) {
    const int k = begin + q;
    std::memcpy(stage + std::size_t(atom_of_node[k]) * stage_words, rows + k * row_bytes, row_bytes);
  });
}

// Their atoms' stage rows back into node rows [begin, end).
void stage_to_rows(const RowLoop &for_rows, const double *stage, int stage_words, const int *atom_of_node, int begin,
                   int end, char *rows, std::size_t row_bytes)
{
  for_rows(end - begin, row_bytes, [&](int q) {
    const int k = begin + q;
    std::memcpy(rows + k * row_bytes, stage + std::size_t(atom_of_node[k]) * stage_words, row_bytes);
  });
}

// in[0..n) added onto out[0..n), both the rows' element type stored in doubles' bytes (read and
// written through memcpy: a float lvalue over double storage would break strict aliasing).
template <class T>
void add_row(const double *in, double *out, int n)
{
  const char *a = reinterpret_cast<const char *>(in);
  char *b = reinterpret_cast<char *>(out);
  for (int c = 0; c < n; c++) {
    T x, y;
    std::memcpy(&x, a + c * sizeof(T), sizeof(T));
    std::memcpy(&y, b + c * sizeof(T), sizeof(T));
    y += x;
    std::memcpy(b + c * sizeof(T), &y, sizeof(T));
  }
}

// Stage row of atom a := the sum of the node rows sum_nodes[sum_begin[a] .. sum_begin[a + 1])
// (the first copied, the others added in node order; zero if there are none), for every atom.
template <class T>
void sum_rows_to_atoms(const RowLoop &for_rows, const char *rows, std::size_t row_bytes,
                       const std::vector<int> &sum_begin, const std::vector<int> &sum_nodes, int nall, double *stage,
                       int stage_words, int width)
{
  for_rows(nall, std::size_t(stage_words) * sizeof(double), [&](int a) {
    double *out = stage + std::size_t(a) * stage_words;
    const int b = sum_begin[a], e = sum_begin[a + 1];
    if (b == e) {
      std::memset(out, 0, std::size_t(stage_words) * sizeof(double));
      return;
    }
    std::memcpy(out, rows + std::size_t(sum_nodes[b]) * row_bytes, row_bytes);
    for (int i = b + 1; i < e; i++)
      add_row<T>(reinterpret_cast<const double *>(rows + std::size_t(sum_nodes[i]) * row_bytes), out, width);
  });
}

void check_rows(const edgeframe::NodeRows &r, int n_nodes, int width, edgeframe::RowType type, const char *what)
{
  if (r.rows != n_nodes || (n_nodes > 0 && (r.width != width || r.type != type)))
    throw std::runtime_error("edgeframe exchange: " + std::to_string(r.rows) + " x " + std::to_string(r.width) + " " +
                             what + " rows for " + std::to_string(n_nodes) + " nodes of width " +
                             std::to_string(width) + (r.type != type ? " (and another element type)" : ""));
}

// ---- staged path: node rows in the engine's (device) memory -----------------------------------
// The reordering between engine nodes and LAMMPS atoms runs on the device, into a device copy of
// the stage; only the stage's owned or ghost block crosses the bus, as one contiguous copy.

template <class T>
using DevRows = Kokkos::View<T **, Kokkos::LayoutRight, EngineMem, Kokkos::MemoryUnmanaged>;

// Rows of T viewed over a stage of `words` doubles per atom (the row's bytes, then padding).
template <class T>
DevRows<T> stage_rows(double *stage, int n_atoms, int words)
{
  return DevRows<T>(reinterpret_cast<T *>(stage), n_atoms, words * sizeof(double) / sizeof(T));
}

// stage[atom_of_node[k]] := rows[k] for k in [begin, end).
template <class T>
void gather_to_atoms(const DevRows<T> &rows, const Kokkos::View<const int *, EngineMem> &atom_of_node, int begin,
                     int end, const DevRows<T> &stage, int width)
{
  if (end <= begin) return;
  Kokkos::parallel_for(
      "edgeframe::exchange_rows_to_atoms", Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({begin, 0}, {end, width}),
      KOKKOS_LAMBDA(const int k, const int c) { stage(atom_of_node(k), c) = rows(k, c); });
}

// rows[k] := stage[atom_of_node[k]] (add: +=) for k in [begin, end).
template <class T>
void scatter_to_nodes(const DevRows<T> &stage, const Kokkos::View<const int *, EngineMem> &atom_of_node, int begin,
                      int end, const DevRows<T> &rows, int width, bool add)
{
  if (end <= begin) return;
  Kokkos::parallel_for(
      "edgeframe::exchange_atoms_to_rows", Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({begin, 0}, {end, width}),
      KOKKOS_LAMBDA(const int k, const int c) {
        const T v = stage(atom_of_node(k), c);
        rows(k, c) = add ? T(rows(k, c) + v) : v;
      });
}

// Every atom's stage row for the reverse exchange: the sum of the gradient rows of the nodes
// staged on it (sum_rows_to_atoms' order: the first, then the others added in node order), zero
// for atoms with none (they only relay, or are copies made by swaps to this rank).
template <class T>
void sum_to_atoms(const DevRows<T> &rows, const Kokkos::View<const int *, EngineMem> &sum_begin,
                  const Kokkos::View<const int *, EngineMem> &sum_nodes, int nall, const DevRows<T> &stage, int width)
{
  if (nall <= 0) return;
  Kokkos::parallel_for(
      "edgeframe::exchange_gradients_to_atoms",
      Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({0, 0}, {nall, width}),
      KOKKOS_LAMBDA(const int a, const int c) {
        const int b = sum_begin(a), e = sum_begin(a + 1);
        T v = b < e ? rows(sum_nodes(b), c) : T(0);
        for (int i = b + 1; i < e; i++) v += rows(sum_nodes(i), c);
        stage(a, c) = v;
      });
}

template <class T>
void zero_rows(const DevRows<T> &rows, int begin, int end, int width)
{
  if (end <= begin) return;
  Kokkos::parallel_for(
      "edgeframe::exchange_zero_ghost_rows",
      Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({begin, 0}, {end, width}),
      KOKKOS_LAMBDA(const int k, const int c) { rows(k, c) = T(0); });
}

// Doubles [begin, end) of one stage into the other (one contiguous copy across the bus).
template <class Dst, class Src>
void copy_words(const Dst &dst, const Src &src, std::size_t begin, std::size_t end)
{
  if (end <= begin) return;
  const auto range = std::make_pair(begin, end);
  Kokkos::deep_copy(Kokkos::subview(dst, range), Kokkos::subview(src, range));
}

// Rows of `words` doubles between a stage and a LAMMPS-KOKKOS buffer, in engine memory:
// buf[q] := stage[list ? list[q] : first + q] (pack) or the reverse (unpack).
void copy_stage_rows(double *dst, const double *src, const int *list, int first, int n, int words, bool to_buffer)
{
  if (n <= 0) return;
  Kokkos::parallel_for(
      "edgeframe::exchange_device_pack", Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({0, 0}, {n, words}),
      KOKKOS_LAMBDA(const int q, const int w) {
        const std::size_t atom = std::size_t(list ? list[q] : first + q);
        if (to_buffer)
          dst[std::size_t(q) * words + w] = src[atom * words + w];
        else
          dst[atom * words + w] = src[std::size_t(q) * words + w];
      });
}

// stage[list[q]] += buf[q] for the rows' element type T (the list's atoms are distinct).
template <class T>
void add_buffer_rows(double *stage, const double *buf, const int *list, int n, int words, int width)
{
  if (n <= 0) return;
  const int per_row = int(words * sizeof(double) / sizeof(T));
  Kokkos::parallel_for(
      "edgeframe::exchange_device_unpack_reverse",
      Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({0, 0}, {n, width}), KOKKOS_LAMBDA(const int q, const int c) {
        const T add = reinterpret_cast<const T *>(buf)[std::size_t(q) * per_row + c];
        reinterpret_cast<T *>(stage)[std::size_t(list[q]) * per_row + c] += add;
      });
}

// stage[targets[t]] += sum of recv[qs[i]] for i in [group_begin[t], group_begin[t + 1]), for t
// in [0, n_targets): the reverse adds of one direct MPI swap (distinct targets: no races).
template <class T>
void add_groups(const DevRows<T> &stage, const DevRows<T> &recv, const int *targets, const int *group_begin,
                const int *qs, int n_targets, int width)
{
  if (n_targets <= 0) return;
  Kokkos::parallel_for(
      "edgeframe::exchange_direct_reverse_add",
      Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({0, 0}, {n_targets, width}),
      KOKKOS_LAMBDA(const int t, const int c) {
        T v = T(0);
        for (int i = group_begin[t]; i < group_begin[t + 1]; i++) v += recv(qs[i], c);
        stage(targets[t], c) += v;
      });
}

// count doubles of dst from src, at word offsets (one contiguous copy; deep_copy fences).
template <class Dst, class Src>
void copy_span(const Dst &dst, std::size_t dst_at, const Src &src, std::size_t src_at, std::size_t count)
{
  if (count == 0) return;
  Kokkos::deep_copy(Kokkos::subview(dst, std::make_pair(dst_at, dst_at + count)),
                    Kokkos::subview(src, std::make_pair(src_at, src_at + count)));
}

// An MPI element count, refused where it overflows int.
int mpi_count(std::size_t n)
{
  if (n > std::size_t(std::numeric_limits<int>::max()))
    throw std::runtime_error("edgeframe exchange (direct MPI): a swap of " + std::to_string(n) +
                             " doubles is beyond MPI's int count; use the pair_style keyword exchange_swaps lammps");
  return int(n);
}

constexpr int kDirectTag = 0x6566;    // the direct swaps' MPI tag (LAMMPS' own use 0)

// One MPI swap as LAMMPS' brick makes it: post the receive of recv_count doubles from `from`,
// send send_count doubles to `to`, wait (either side may be empty).
void mpi_swap(const double *send, std::size_t send_count, int to, double *recv, std::size_t recv_count, int from,
              MPI_Comm world)
{
  MPI_Request request;
  if (recv_count) MPI_Irecv(recv, mpi_count(recv_count), MPI_DOUBLE, from, kDirectTag, world, &request);
  if (send_count) MPI_Send(send, mpi_count(send_count), MPI_DOUBLE, to, kDirectTag, world);
  if (recv_count) MPI_Wait(&request, MPI_STATUS_IGNORE);
}

// A view of n elements, not zeroed (every element is written before it is read).
template <class V>
V uninitialised(const std::string &label, std::size_t n)
{
  return V(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), n);
}

}    // namespace

struct FeatureExchange::Staged {
  Kokkos::View<double *, Kokkos::SharedHostPinnedSpace> host;    // [nall * words]: what LAMMPS packs
  Kokkos::View<double *, EngineMem> device;    // [nall * words]: its device twin
  Kokkos::View<int *, EngineMem> atom_of_node;    // m_root_of_node, uploaded in bind()
  Kokkos::View<int *, EngineMem> sum_begin, sum_nodes;    // m_sum_begin, m_sum_nodes, likewise
  // Direct MPI: one swap's rows in pinned memory (what MPI sends / receives) and on the device.
  Kokkos::View<double *, Kokkos::SharedHostPinnedSpace> host_send, host_recv;
  Kokkos::View<double *, EngineMem> swap_rows;
  Kokkos::View<int *, EngineMem> send_roots, rev_targets, rev_group_begin, rev_q;
};

namespace {
// A host vector into a device view of at least its size (grown on demand, never shrunk).
void upload(Kokkos::View<int *, EngineMem> &dst, const std::vector<int> &src, const char *label)
{
  const int n = int(src.size());
  if (int(dst.extent(0)) < n) dst = uninitialised<Kokkos::View<int *, EngineMem>>(label, n);
  if (n)
    Kokkos::deep_copy(Kokkos::subview(dst, std::make_pair(0, n)),
                      Kokkos::View<const int *, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(src.data(), n));
}
}    // namespace

FeatureExchange::FeatureExchange(Comm *comm, Pair *pair, MPI_Comm world, const ExchangeSettings &settings) :
    m_comm(comm), m_pair(pair), m_dev(std::make_unique<Staged>()), m_world(world), m_settings(settings)
{
  using Swaps = ExchangeSettings::Swaps;
  using Transport = ExchangeSettings::Transport;
  m_staged = !kEngineMemoryIsHost || settings.stage;
  // automatic: direct where it applies (staged path, self swaps skipped, brick; measured on two
  // H200s, bench/results/benchmarks-log.md: exchange 76.9 -> 25.6 ms per force call at 110 592
  // atoms). The direct swaps need the traces of skipped self swaps (the pair style's settings()
  // refuses direct with exchange_self_swaps lammps).
  m_want_direct = settings.swaps != Swaps::lammps && settings.skip_self_swaps;
  // automatic: CUDA IPC where the engine runs on CUDA (measured on two H200s: weak scaling 83 ->
  // 93 %, 110 592 atoms 1.71x -> 1.89x one GPU); cuda_ipc asks for it on any build (and the
  // pair style says why not where it cannot be).
  m_want_peer =
      settings.transport == Transport::cuda_ipc || (settings.transport == Transport::automatic && !kEngineMemoryIsHost);
}

void FeatureExchange::set_comm(Comm *comm)
{
  m_comm = comm;
}

bool FeatureExchange::direct_swaps_for(int width, edgeframe::RowType type) const
{
  return m_want_direct && m_staged && !m_device_comm && stage_words(width, type) >= 3 && m_comm->style == Comm::BRICK;
}

FeatureExchange::~FeatureExchange() = default;

std::string FeatureExchange::peer_refusal() const
{
  if (!m_want_peer || m_use_peer || !m_direct) return "";
  return m_peer ? m_peer->why() : "not bound";
}

int FeatureExchange::host_threads() const
{
#ifdef _OPENMP
  return std::max(1, m_settings.threads);
#else
  return 1;
#endif
}

int FeatureExchange::stage_words(int width, edgeframe::RowType type)
{
  edgeframe::NodeRows r;
  r.type = type;
  return int((std::size_t(width) * r.element_size() + sizeof(double) - 1) / sizeof(double));
}

void FeatureExchange::use_device_comm(bool on)
{
  m_device_comm = on;
}

double *FeatureExchange::stage() const
{
  if (m_device_comm)    // LAMMPS calls the *_device functions in this mode, never these
    throw std::logic_error("edgeframe exchange: host pack/unpack called in device communication mode");
  return m_staged ? m_dev->host.data() : const_cast<double *>(m_stage.data());
}

void FeatureExchange::bind(const NodeMap *nodes, int nlocal, int nall, int width, edgeframe::RowType type)
{
  m_nodes = nodes;
  m_nlocal = nlocal;
  m_nall = nall;
  m_width = width;
  m_type = type;
  m_words = stage_words(width, type);
  const int n_nodes = nodes ? nodes->n_nodes() : 0;
  if (!m_staged && !m_device_comm) m_stage.resize(std::size_t(nall) * m_words);
  // Every rank traces (a collective), also one without nodes: its ghosts may be relays. With
  // LAMMPS' device communication LAMMPS packs on the device itself and all atoms are their own
  // roots; fewer than 3 words per atom cannot carry the trace.
  m_root.resize(nall);
  for (int a = 0; a < nall; a++) m_root[a] = a;
  m_self_pack.clear();
  m_self_unpack.clear();
  m_has_self = false;
  m_traced = false;
  m_self_lists.clear();
  m_trace_atoms.clear();
  m_trace_atoms_begin.clear();
  m_trace_list.clear();
  m_recv_from.clear();
  m_recv_first.clear();
  m_recv_n.clear();
  const double t_trace = m_measure ? platform::walltime() : 0.0;
  if (m_settings.skip_self_swaps && !m_device_comm && m_words >= 3) trace_roots();
  // Direct MPI where it applies; the conditions are the same on every rank (pair_style keywords, build,
  // comm_style), so all ranks take the same path.
  m_direct = direct_swaps_for(width, type);
  if (m_direct) trace_destinations();

  m_root_of_node.resize(n_nodes);
  for (int k = 0; k < n_nodes; k++) m_root_of_node[k] = m_root[nodes->atom_of_node[k]];
  // Reverse gather lists, by counting sort: the nodes staged on each atom, in node order.
  m_sum_begin.assign(nall + 1, 0);
  for (int k = 0; k < n_nodes; k++) m_sum_begin[m_root_of_node[k] + 1]++;
  for (int a = 0; a < nall; a++) m_sum_begin[a + 1] += m_sum_begin[a];
  m_sum_nodes.resize(n_nodes);
  {
    std::vector<int> next(m_sum_begin.begin(), m_sum_begin.end() - 1);
    for (int k = 0; k < n_nodes; k++) m_sum_nodes[next[m_root_of_node[k]]++] = k;
  }
  if (m_staged || m_device_comm) {
    Staged &s = *m_dev;
    const std::size_t words = std::size_t(nall) * m_words;
    if (s.device.extent(0) < words)    // grown on demand, never shrunk
      s.device = uninitialised<decltype(s.device)>("edgeframe::exchange stage", words);
    if (!m_device_comm && !m_direct && s.host.extent(0) < words)    // direct MPI: per-swap buffers instead
      s.host = uninitialised<decltype(s.host)>("edgeframe::exchange stage (pinned)", words);
    upload(s.atom_of_node, m_root_of_node, "edgeframe::exchange atom_of_node");
    upload(s.sum_begin, m_sum_begin, "edgeframe::exchange sum_begin");
    upload(s.sum_nodes, m_sum_nodes, "edgeframe::exchange sum_nodes");
  }
  if (m_direct) build_swaps();
  if (m_measure) {
    m_split.traces += platform::walltime() - t_trace;
    m_split.binds += 1.0;
  }
}

// The reverse trace (direct MPI): each ghost row sends this rank's number back along LAMMPS'
// reverse swaps, so the unpack of swap s learns the rank its forward swap s sends to. LAMMPS'
// brick reverse_comm runs the swaps backwards, one unpack each, with the forward pack's list.
void FeatureExchange::trace_destinations()
{
  const int nswap = int(m_trace_list.size());
  if (m_pack_calls != nswap || m_unpack_calls != nswap)
    throw std::logic_error("edgeframe exchange (direct MPI): " + std::to_string(m_pack_calls) + " pack and " +
                           std::to_string(m_unpack_calls) +
                           " unpack calls in one forward communication, expected one "
                           "each per swap of comm_style brick");
  m_send_to.assign(nswap, -1);
  m_mode = CallbackMode::trace_reverse;
  reset_callbacks();
  m_comm->reverse_comm(m_pair);
  m_mode = CallbackMode::rows;
  if (m_unpack_calls != nswap)
    throw std::logic_error("edgeframe exchange (direct MPI): " + std::to_string(m_unpack_calls) +
                           " reverse unpack calls for " + std::to_string(nswap) + " swaps");
}

void FeatureExchange::build_swaps()
{
  const int nswap = int(m_trace_list.size());
  m_swaps.assign(nswap, Swap());
  m_send_roots.clear();
  m_rev_targets.clear();
  m_rev_group_begin.clear();
  m_rev_q.clear();
  std::size_t max_rows = 0;
  std::vector<int> order;
  for (int w = 0; w < nswap; w++) {
    Swap &sw = m_swaps[w];
    sw.self = self_pack(w) || self_unpack(w);
    if (sw.self) continue;
    const int *atoms = m_trace_atoms.data() + m_trace_atoms_begin[w];
    sw.n_send = m_trace_atoms_begin[w + 1] - m_trace_atoms_begin[w];
    sw.send_to = m_send_to[w];
    sw.send_begin = int(m_send_roots.size());
    for (int q = 0; q < sw.n_send; q++) m_send_roots.push_back(m_root[atoms[q]]);
    sw.n_recv = m_recv_n[w];
    sw.recv_from = m_recv_from[w];
    sw.first = m_recv_first[w];
    if ((sw.n_send > 0 && sw.send_to < 0) || (sw.n_recv > 0 && sw.recv_from < 0))
      throw std::logic_error("edgeframe exchange (direct MPI): swap " + std::to_string(w) + " has no partner rank");
    // Reverse: the received rows q add onto m_root[atoms[q]]; group equal roots.
    order.resize(sw.n_send);
    for (int q = 0; q < sw.n_send; q++) order[q] = q;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return m_root[atoms[a]] < m_root[atoms[b]]; });
    sw.target_begin = int(m_rev_targets.size());
    for (int i = 0; i < sw.n_send; i++) {
      const int root = m_root[atoms[order[i]]];
      if (i == 0 || root != m_rev_targets.back()) {
        m_rev_targets.push_back(root);
        m_rev_group_begin.push_back(int(m_rev_q.size()));
      }
      m_rev_q.push_back(order[i]);
    }
    sw.n_targets = int(m_rev_targets.size()) - sw.target_begin;
    max_rows = std::max<std::size_t>(max_rows, std::max(sw.n_send, sw.n_recv));
  }
  m_rev_group_begin.push_back(int(m_rev_q.size()));
  Staged &s = *m_dev;
  const std::size_t words = max_rows * m_words;
  if (s.host_send.extent(0) < words) {
    s.host_send = uninitialised<decltype(s.host_send)>("edgeframe::exchange direct send (pinned)", words);
    s.host_recv = uninitialised<decltype(s.host_recv)>("edgeframe::exchange direct recv (pinned)", words);
    s.swap_rows = uninitialised<decltype(s.swap_rows)>("edgeframe::exchange direct rows", words);
  }
  upload(s.send_roots, m_send_roots, "edgeframe::exchange direct send_roots");
  upload(s.rev_targets, m_rev_targets, "edgeframe::exchange direct rev_targets");
  upload(s.rev_group_begin, m_rev_group_begin, "edgeframe::exchange direct rev_group_begin");
  upload(s.rev_q, m_rev_q, "edgeframe::exchange direct rev_q");
  // CUDA IPC (collective: every rank in direct mode builds its swaps at the same bind).
  m_use_peer = false;
  if (m_want_peer) {
    if (!m_peer) m_peer = std::make_unique<PeerOutbox>(m_world);
    std::vector<int> partners;
    for (const Swap &sw : m_swaps) {
      if (sw.self) continue;
      if (sw.n_send) partners.push_back(sw.send_to);
      if (sw.n_recv) partners.push_back(sw.recv_from);
    }
    std::sort(partners.begin(), partners.end());
    partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
    m_use_peer = m_peer->bind(max_rows * m_words, partners);
  }
}

// Forward, swap by swap in LAMMPS' order (later swaps send ghosts that earlier ones brought):
// the swap's rows gathered on the device -> pinned -> MPI -> the received rows into the device
// stage's ghost rows. Swaps to this rank are the roots' business.
void FeatureExchange::direct_forward()
{
  Staged &s = *m_dev;
  const std::size_t words = m_words;
  if (m_use_peer) {    // the rows gathered into this rank's outbox; the partner copies them over
    for (const Swap &sw : m_swaps) {
      if (sw.self) continue;
      copy_stage_rows(m_peer->outbox(), s.device.data(), s.send_roots.data() + sw.send_begin, 0, sw.n_send, m_words,
                      true);
      Kokkos::fence("edgeframe::exchange outbox filled");    // before the partner is told "ready"
      mark(&Split::reorder);
      m_peer->swap(sw.n_send * words, sw.send_to, s.device.data() + std::size_t(sw.first) * words, sw.n_recv * words,
                   sw.recv_from);
      mark(&Split::comm);
    }
    return;
  }
  for (const Swap &sw : m_swaps) {
    if (sw.self) continue;
    if (sw.n_send) {
      copy_stage_rows(s.swap_rows.data(), s.device.data(), s.send_roots.data() + sw.send_begin, 0, sw.n_send, m_words,
                      true);
      mark(&Split::reorder);
      copy_span(s.host_send, 0, s.swap_rows, 0, sw.n_send * words);
      mark(&Split::bus);
    }
    mpi_swap(s.host_send.data(), sw.n_send * words, sw.send_to, s.host_recv.data(), sw.n_recv * words, sw.recv_from,
             m_world);
    mark(&Split::comm);
    copy_span(s.device, std::size_t(sw.first) * words, s.host_recv, 0, sw.n_recv * words);
    mark(&Split::bus);
    if (m_measure) m_split.bus_bytes += double(sw.n_send + sw.n_recv) * words * sizeof(double);
  }
}

// Reverse, swaps backwards: the swap's ghost rows (their own sums plus what later swaps added)
// up and to the rank they came from; the rows coming back for the atoms this rank sent, down
// and added onto those atoms' roots.
template <class T>
void FeatureExchange::direct_reverse()
{
  Staged &s = *m_dev;
  const std::size_t words = m_words;
  const auto stage = stage_rows<T>(s.device.data(), m_nall, m_words);
  for (auto it = m_swaps.rbegin(); it != m_swaps.rend() && m_use_peer; ++it) {    // CUDA IPC
    const Swap &sw = *it;
    if (sw.self) continue;
    copy_stage_rows(m_peer->outbox(), s.device.data(), nullptr, sw.first, sw.n_recv, m_words, true);
    Kokkos::fence("edgeframe::exchange outbox filled");
    mark(&Split::reorder);
    m_peer->swap(sw.n_recv * words, sw.recv_from, s.swap_rows.data(), sw.n_send * words, sw.send_to);
    mark(&Split::comm);
    if (sw.n_send) {
      add_groups<T>(stage, stage_rows<T>(s.swap_rows.data(), sw.n_send, m_words),
                    s.rev_targets.data() + sw.target_begin, s.rev_group_begin.data() + sw.target_begin, s.rev_q.data(),
                    sw.n_targets, m_width);
      mark(&Split::reorder);
    }
  }
  for (auto it = m_swaps.rbegin(); it != m_swaps.rend() && !m_use_peer; ++it) {
    const Swap &sw = *it;
    if (sw.self) continue;
    copy_span(s.host_send, 0, s.device, std::size_t(sw.first) * words, sw.n_recv * words);
    mark(&Split::bus);
    // Backwards: the ghost rows go to the rank they came from, the sent atoms' rows come back.
    mpi_swap(s.host_send.data(), sw.n_recv * words, sw.recv_from, s.host_recv.data(), sw.n_send * words, sw.send_to,
             m_world);
    mark(&Split::comm);
    if (sw.n_send) {
      copy_span(s.swap_rows, 0, s.host_recv, 0, sw.n_send * words);
      mark(&Split::bus);
      add_groups<T>(stage, stage_rows<T>(s.swap_rows.data(), sw.n_send, m_words),
                    s.rev_targets.data() + sw.target_begin, s.rev_group_begin.data() + sw.target_begin, s.rev_q.data(),
                    sw.n_targets, m_width);
      mark(&Split::reorder);
    }
    if (m_measure) m_split.bus_bytes += double(sw.n_send + sw.n_recv) * words * sizeof(double);
  }
}

// One forward communication of (sending rank, pack call, atom index) per atom instead of rows:
// a received ghost whose sender is this rank is a copy of that atom, so it shares its root; the
// pack call that made it is a swap to this rank, skipped from now on. The order of LAMMPS' pack
// and unpack calls is the same for every communication until the lists change, which happens
// only at neighbour-list builds (Comm::borders): the pair style binds, and so traces, only then.
void FeatureExchange::trace_roots()
{
  m_mode = CallbackMode::trace;
  reset_callbacks();
  m_comm->forward_comm(m_pair);
  m_mode = CallbackMode::rows;
  m_self_pack.resize(m_pack_calls, 0);
  m_trace_atoms_begin.push_back(int(m_trace_atoms.size()));    // the end of the last call's atoms
  // The self swaps' lists: the rows-mode callbacks recognise a self swap by its list (forward
  // pack, reverse unpack) or by its ghosts not being their own roots (forward unpack, reverse
  // pack), not by the order of the calls.
  m_self_lists.clear();
  for (int call = 0; call < m_pack_calls; call++)
    if (m_self_pack[call]) m_self_lists.push_back(m_trace_list[call]);
  std::sort(m_self_lists.begin(), m_self_lists.end());
  m_traced = true;
}

void FeatureExchange::forward(const edgeframe::NodeRows &h)
{
  const int n_nodes = m_nodes ? m_nodes->n_nodes() : 0;
  check_rows(h, n_nodes, m_width, m_type, "feature");
  ++m_calls;
  // No clearing: the swaps read owned atoms' rows (written here) and ghosts received by earlier
  // swaps (written by unpack_forward); every ghost row is overwritten by its swap.
  const int n_local = m_nodes ? m_nodes->n_local : 0;
  if (m_staged || m_device_comm) {
    if (m_type == edgeframe::RowType::f64)
      staged_forward<double>(h, n_local, n_nodes);
    else
      staged_forward<float>(h, n_local, n_nodes);
    return;
  }
  const std::size_t row_bytes = std::size_t(m_width) * h.element_size();
  char *rows = static_cast<char *>(h.data);
  mark(nullptr);
  if (n_nodes)
    rows_to_stage(RowLoop{host_threads(), m_settings.parallel_bytes}, rows, row_bytes, m_root_of_node.data(), 0,
                  n_local, m_stage.data(), m_words);    // owners out
  mark(&Split::reorder);
  m_comm->forward_comm(m_pair);
  mark(&Split::comm);
  if (n_nodes)
    stage_to_rows(RowLoop{host_threads(), m_settings.parallel_bytes}, m_stage.data(), m_words, m_root_of_node.data(),
                  n_local, n_nodes, rows, row_bytes);    // ghosts in (from their roots)
  mark(&Split::reorder);
}

void FeatureExchange::reverse(const edgeframe::NodeRows &grad)
{
  const int n_nodes = m_nodes ? m_nodes->n_nodes() : 0;
  check_rows(grad, n_nodes, m_width, m_type, "gradient");
  ++m_calls;
  const int n_local = m_nodes ? m_nodes->n_local : 0;
  if (m_staged || m_device_comm) {
    if (m_type == edgeframe::RowType::f64)
      staged_reverse<double>(grad, n_local, n_nodes);
    else
      staged_reverse<float>(grad, n_local, n_nodes);
    return;
  }
  const std::size_t row_bytes = std::size_t(m_width) * grad.element_size();
  char *rows = static_cast<char *>(grad.data);
  mark(nullptr);
  // Every row out, summed onto its root; zero rows for atoms that only relay.
  if (m_type == edgeframe::RowType::f64)
    sum_rows_to_atoms<double>(RowLoop{host_threads(), m_settings.parallel_bytes}, rows, row_bytes, m_sum_begin,
                              m_sum_nodes, m_nall, m_stage.data(), m_words, m_width);
  else
    sum_rows_to_atoms<float>(RowLoop{host_threads(), m_settings.parallel_bytes}, rows, row_bytes, m_sum_begin,
                             m_sum_nodes, m_nall, m_stage.data(), m_words, m_width);
  mark(&Split::reorder);
  m_comm->reverse_comm(m_pair);
  mark(&Split::comm);
  if (n_nodes)
    stage_to_rows(RowLoop{host_threads(), m_settings.parallel_bytes}, m_stage.data(), m_words, m_root_of_node.data(), 0,
                  n_local, rows, row_bytes);    // owners' sums in
  if (n_nodes > n_local) std::memset(rows + n_local * row_bytes, 0, (n_nodes - n_local) * row_bytes);
  mark(&Split::reorder);
}

void FeatureExchange::mark(double Split::*field)
{
  if (!m_measure) return;
  EngineExec().fence("edgeframe::exchange timing");
  const double now = platform::walltime();
  if (field) m_split.*field += now - m_mark;
  m_mark = now;
}

// Staged forward: owned node rows -> device stage (reordered on the device) -> the stage's owned
// block up -> LAMMPS' swaps on the pinned stage -> its ghost block down -> ghost node rows.
// (Ghost node rows read their root's row: ghosts made by swaps to this rank are never filled.)
// Device communication: LAMMPS' swaps run on the device stage itself, nothing crosses the bus
// here (MPI gets device buffers).
template <class T>
void FeatureExchange::staged_forward(const edgeframe::NodeRows &h, int n_local, int n_nodes)
{
  Staged &s = *m_dev;
  const auto dev = stage_rows<T>(s.device.data(), m_nall, m_words);
  const DevRows<T> rows(static_cast<T *>(h.data), n_nodes, m_width);
  const std::size_t owned = std::size_t(m_nlocal) * m_words, all = std::size_t(m_nall) * m_words;
  mark(nullptr);
  gather_to_atoms<T>(rows, s.atom_of_node, 0, n_local, dev, m_width);
  mark(&Split::reorder);
  if (m_direct) {
    direct_forward();
  } else if (m_device_comm) {    // LAMMPS packs the device stage itself (pack_forward_device & co.)
    EngineExec().fence("edgeframe::exchange gather");
    m_comm->forward_comm(m_pair);
    mark(&Split::comm);
  } else {
    copy_words(s.host, s.device, 0, owned);    // deep_copy fences: the gather is done
    mark(&Split::bus);
    m_comm->forward_comm(m_pair);
    mark(&Split::comm);
    copy_words(s.device, s.host, owned, all);
    mark(&Split::bus);
    if (m_measure) m_split.bus_bytes += double(all) * sizeof(double);
  }
  scatter_to_nodes<T>(dev, s.atom_of_node, n_local, n_nodes, rows, m_width, false);
  EngineExec().fence("edgeframe::exchange forward");    // the engine reads the rows on its own stream
  mark(&Split::reorder);
}

// Staged reverse: every node row summed onto its root's stage row on the device (zero rows for
// atoms that only relay or were made by swaps to this rank) -> the whole stage up (the owned
// block by DMA rather than a host memset: the host's time is what the exchange waits for) ->
// LAMMPS' reverse swaps add the ghosts' rows onto their owners there -> the owned block down ->
// the owned node rows; ghost node rows zeroed.
template <class T>
void FeatureExchange::staged_reverse(const edgeframe::NodeRows &grad, int n_local, int n_nodes)
{
  Staged &s = *m_dev;
  const auto dev = stage_rows<T>(s.device.data(), m_nall, m_words);
  const DevRows<T> rows(static_cast<T *>(grad.data), n_nodes, m_width);
  const std::size_t owned = std::size_t(m_nlocal) * m_words, all = std::size_t(m_nall) * m_words;
  mark(nullptr);
  sum_to_atoms<T>(rows, s.sum_begin, s.sum_nodes, m_nall, dev, m_width);
  mark(&Split::reorder);
  if (m_direct) {
    direct_reverse<T>();
  } else if (m_device_comm) {
    EngineExec().fence("edgeframe::exchange gather");
    m_comm->reverse_comm(m_pair);
    mark(&Split::comm);
  } else {
    copy_words(s.host, s.device, 0, all);
    mark(&Split::bus);
    m_comm->reverse_comm(m_pair);
    mark(&Split::comm);
    copy_words(s.device, s.host, 0, owned);
    mark(&Split::bus);
    if (m_measure) m_split.bus_bytes += double(all + owned) * sizeof(double);
  }
  scatter_to_nodes<T>(dev, s.atom_of_node, 0, n_local, rows, m_width, false);
  zero_rows<T>(rows, n_local, n_nodes, m_width);
  EngineExec().fence("edgeframe::exchange reverse");
  mark(&Split::reorder);
}

class FeatureExchange::PackTimer {
 public:
  explicit PackTimer(const FeatureExchange &x) : m_x(x), m_t0(x.m_measure ? platform::walltime() : 0.0) {}
  ~PackTimer()
  {
    if (m_x.m_measure) m_x.m_split.host_pack += platform::walltime() - m_t0;
  }
  PackTimer(const PackTimer &) = delete;
  PackTimer &operator=(const PackTimer &) = delete;

 private:
  const FeatureExchange &m_x;
  double m_t0;
};

// The host callbacks. In trace mode (trace_roots) they carry (sending rank, pack call, atom)
// instead of rows; in rows mode they skip the swaps to this rank and address atoms through their
// roots (file comment of the header).
int FeatureExchange::pack_forward(int n, const int *list, double *buf) const
{
  if (m_mode == CallbackMode::trace) {
    const int call = m_pack_calls++;
    for (int q = 0; q < n; q++) {
      buf[3 * q] = m_comm->me;
      buf[3 * q + 1] = call;
      buf[3 * q + 2] = list[q];
    }
    // What direct MPI needs of each swap's send side (pack is const to LAMMPS, not to the trace).
    auto &self = const_cast<FeatureExchange &>(*this);
    self.m_trace_atoms_begin.push_back(int(m_trace_atoms.size()));
    self.m_trace_atoms.insert(self.m_trace_atoms.end(), list, list + n);
    self.m_trace_list.push_back(list);
    return 3 * n;
  }
  if (n > 0 && self_list(list)) return n * m_words;    // its unpack is skipped too: nothing to write
  const PackTimer timer(*this);
  const double *st = stage();
  const std::size_t row = std::size_t(m_words) * sizeof(double);
  RowLoop{host_threads(), m_settings.parallel_bytes}(n, row, [&](int q) {
    std::memcpy(buf + std::size_t(q) * m_words, st + std::size_t(m_root[list[q]]) * m_words, row);
  });
  if (m_measure) m_split.host_rows += n;
  return n * m_words;
}

void FeatureExchange::unpack_forward(int n, int first, const double *buf)
{
  if (m_mode == CallbackMode::trace) {
    const int call = m_unpack_calls++;
    // A swap comes from one rank: the first atom tells whether it is this one.
    const bool self = n > 0 && int(buf[0]) == m_comm->me;
    if (int(m_self_unpack.size()) <= call) m_self_unpack.resize(call + 1, 0);
    m_self_unpack[call] = self;
    m_recv_from.push_back(n > 0 ? int(buf[0]) : -1);
    m_recv_first.push_back(first);
    m_recv_n.push_back(n);
    if (!self) return;    // ghosts received by MPI are their own roots (bind's default)
    const int pack_call = int(buf[1]);
    if (int(m_self_pack.size()) <= pack_call) m_self_pack.resize(pack_call + 1, 0);
    m_self_pack[pack_call] = 1;
    m_has_self = true;
    // The sources come before the ghosts they make, so their roots are final already.
    for (int q = 0; q < n; q++) m_root[first + q] = m_root[int(buf[3 * q + 2])];
    return;
  }
  if (n > 0 && m_root[first] != first) return;    // a self swap's ghosts: not their own roots
  const PackTimer timer(*this);
  double *st = stage() + std::size_t(first) * m_words;
  const std::size_t row = std::size_t(m_words) * sizeof(double);
  RowLoop{host_threads(), m_settings.parallel_bytes}(
      n, row, [&](int q) { std::memcpy(st + std::size_t(q) * m_words, buf + std::size_t(q) * m_words, row); });
  if (m_measure) m_split.host_rows += n;
}

int FeatureExchange::pack_reverse(int n, int first, double *buf) const
{
  if (m_mode == CallbackMode::trace_reverse) {    // this rank's number, back to the ghosts' sender
    for (int q = 0; q < n; q++) buf[q] = m_comm->me;
    return n;
  }
  // A reverse swap to this rank sends back ghosts it made, which are not their own roots.
  if (n > 0 && m_root[first] != first) return n * m_words;
  const PackTimer timer(*this);
  const double *st = stage() + std::size_t(first) * m_words;
  const std::size_t row = std::size_t(m_words) * sizeof(double);
  RowLoop{host_threads(), m_settings.parallel_bytes}(
      n, row, [&](int q) { std::memcpy(buf + std::size_t(q) * m_words, st + std::size_t(q) * m_words, row); });
  if (m_measure) m_split.host_rows += n;
  return n * m_words;
}

void FeatureExchange::unpack_reverse(int n, const int *list, const double *buf)
{
  if (m_mode == CallbackMode::trace_reverse) {    // brick: the swaps backwards, one unpack each
    const int nswap = int(m_trace_list.size()), swap = nswap - 1 - m_unpack_calls++;
    if (swap < 0 || m_trace_list[swap] != list)
      throw std::logic_error("edgeframe exchange (direct MPI): reverse swap order differs from comm_style brick's");
    if (n > 0) m_send_to[swap] = int(buf[0]);
    return;
  }
  if (n > 0 && self_list(list)) return;    // a self swap's list: its pack sent nothing
  const PackTimer timer(*this);
  double *st = stage();
  const bool f64 = m_type == edgeframe::RowType::f64;
  const auto add = [&](int q) {
    double *row = st + std::size_t(m_root[list[q]]) * m_words;
    const double *in = buf + std::size_t(q) * m_words;
    if (f64)
      add_row<double>(in, row, m_width);
    else
      add_row<float>(in, row, m_width);
  };
  // The atoms of one swap's list are distinct, but with self swaps two of them can share a root
  // (an atom and its periodic image sent in one swap): then the rows add one after another.
  // (The check only where threads would run.)
  if (m_has_self && (host_threads() == 1 || std::size_t(n) * m_words * sizeof(double) < m_settings.parallel_bytes ||
                     !distinct_roots(n, list)))
    for (int q = 0; q < n; q++) add(q);
  else
    RowLoop{host_threads(), m_settings.parallel_bytes}(n, std::size_t(m_words) * sizeof(double), add);
  if (m_measure) m_split.host_rows += n;
}

bool FeatureExchange::distinct_roots(int n, const int *list) const
{
  if (m_root_seen.size() < m_root.size()) m_root_seen.assign(m_root.size(), 0);
  if (++m_root_stamp == 0) {    // wrapped: old stamps could collide
    std::fill(m_root_seen.begin(), m_root_seen.end(), 0);
    m_root_stamp = 1;
  }
  for (int q = 0; q < n; q++) {
    unsigned &seen = m_root_seen[m_root[list[q]]];
    if (seen == m_root_stamp) return false;
    seen = m_root_stamp;
  }
  return true;
}

int FeatureExchange::pack_forward_device(int n, const int *list, double *buf) const
{
  copy_stage_rows(buf, m_dev->device.data(), list, 0, n, m_words, true);
  return n * m_words;
}

void FeatureExchange::unpack_forward_device(int n, int first, const double *buf)
{
  copy_stage_rows(m_dev->device.data(), buf, nullptr, first, n, m_words, false);
}

int FeatureExchange::pack_reverse_device(int n, int first, double *buf) const
{
  copy_stage_rows(buf, m_dev->device.data(), nullptr, first, n, m_words, true);
  return n * m_words;
}

void FeatureExchange::unpack_reverse_device(int n, const int *list, const double *buf)
{
  if (m_type == edgeframe::RowType::f64)
    add_buffer_rows<double>(m_dev->device.data(), buf, list, n, m_words, m_width);
  else
    add_buffer_rows<float>(m_dev->device.data(), buf, list, n, m_words, m_width);
}
