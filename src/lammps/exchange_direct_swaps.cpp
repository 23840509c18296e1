#include "exchange_direct_swaps.h"

#include "edgeframe_peer.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

using namespace LAMMPS_NS;
using namespace LAMMPS_NS::edgeframe_glue;

namespace {

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

}    // namespace

DirectSwapTransport::DirectSwapTransport(ExchangeContext &x, DeviceStage &stage) : ExchangeTransport(x), m_stage(stage)
{
  using Transport = ExchangeSettings::Transport;
  // automatic: CUDA IPC where the engine runs on CUDA (measured on two H200s: weak scaling 83 ->
  // 93 %, 110 592 atoms 1.71x -> 1.89x one GPU); cuda_ipc asks for it on any build (and the
  // pair style says why not where it cannot be).
  m_want_peer = x.settings.transport == Transport::cuda_ipc ||
                (x.settings.transport == Transport::automatic && !kEngineMemoryIsHost);
}

DirectSwapTransport::~DirectSwapTransport() = default;

std::string DirectSwapTransport::ipc_refusal() const
{
  if (!m_want_peer || m_use_peer) return "";
  return m_peer ? m_peer->why() : "not bound";
}

void DirectSwapTransport::bind()
{
  m_x.trace.trace_destinations(m_x.comm, m_x.pair);
  m_stage.bind();
  build_swaps();
}

void DirectSwapTransport::build_swaps()
{
  const SwapTrace &trace = m_x.trace;
  const int nswap = trace.swaps(), words = m_x.layout.words;
  m_swaps.assign(nswap, Swap());
  m_send_roots.clear();
  m_rev_targets.clear();
  m_rev_group_begin.clear();
  m_rev_q.clear();
  std::size_t max_rows = 0;
  std::vector<int> order;
  for (int w = 0; w < nswap; w++) {
    Swap &sw = m_swaps[w];
    sw.self = trace.self_swap(w);
    if (sw.self) continue;
    const int *atoms = trace.send_atoms(w);
    sw.n_send = trace.n_send(w);
    sw.send_to = trace.send_to(w);
    sw.send_begin = int(m_send_roots.size());
    for (int q = 0; q < sw.n_send; q++) m_send_roots.push_back(trace.root(atoms[q]));
    sw.n_recv = trace.n_recv(w);
    sw.recv_from = trace.recv_from(w);
    sw.first = trace.recv_first(w);
    if ((sw.n_send > 0 && sw.send_to < 0) || (sw.n_recv > 0 && sw.recv_from < 0))
      throw std::logic_error("edgeframe exchange (direct MPI): swap " + std::to_string(w) + " has no partner rank");
    // Reverse: the received rows q add onto root(atoms[q]); group equal roots.
    order.resize(sw.n_send);
    for (int q = 0; q < sw.n_send; q++) order[q] = q;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return trace.root(atoms[a]) < trace.root(atoms[b]); });
    sw.target_begin = int(m_rev_targets.size());
    for (int i = 0; i < sw.n_send; i++) {
      const int root = trace.root(atoms[order[i]]);
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
  const std::size_t buffer_words = max_rows * words;
  if (m_host_send.extent(0) < buffer_words) {
    m_host_send = uninitialised<PinnedWords>("edgeframe::exchange direct send (pinned)", buffer_words);
    m_host_recv = uninitialised<PinnedWords>("edgeframe::exchange direct recv (pinned)", buffer_words);
    m_swap_rows = uninitialised<DeviceWords>("edgeframe::exchange direct rows", buffer_words);
  }
  upload(m_d_send_roots, m_send_roots, "edgeframe::exchange direct send_roots");
  upload(m_d_rev_targets, m_rev_targets, "edgeframe::exchange direct rev_targets");
  upload(m_d_rev_group_begin, m_rev_group_begin, "edgeframe::exchange direct rev_group_begin");
  upload(m_d_rev_q, m_rev_q, "edgeframe::exchange direct rev_q");
  // CUDA IPC (collective: every rank with direct swaps builds them at the same bind).
  m_use_peer = false;
  if (m_want_peer) {
    if (!m_peer) m_peer = std::make_unique<PeerOutbox>(m_x.world);
    std::vector<int> partners;
    for (const Swap &sw : m_swaps) {
      if (sw.self) continue;
      if (sw.n_send) partners.push_back(sw.send_to);
      if (sw.n_recv) partners.push_back(sw.recv_from);
    }
    std::sort(partners.begin(), partners.end());
    partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
    m_use_peer = m_peer->bind(buffer_words, partners);
  }
}

void DirectSwapTransport::forward(const edgeframe::NodeRows &h)
{
  m_stage.forward(h, m_x.timer, [&] {
    if (m_use_peer)
      forward_over_ipc();
    else
      forward_over_mpi();
  });
}

void DirectSwapTransport::reverse(const edgeframe::NodeRows &grad)
{
  m_stage.reverse(grad, m_x.timer, [&] {
    if (m_use_peer)
      reverse_over_ipc();
    else
      reverse_over_mpi();
  });
}

// Forward, swap by swap in LAMMPS' order (later swaps send ghosts that earlier ones brought):
// the swap's rows gathered on the device -> pinned -> MPI -> the received rows into the device
// stage's ghost rows. Swaps to this rank are the roots' business.
void DirectSwapTransport::forward_over_mpi()
{
  SplitTimer &timer = m_x.timer;
  const std::size_t words = m_x.layout.words;
  for (const Swap &sw : m_swaps) {
    if (sw.self) continue;
    if (sw.n_send) {
      m_stage.pack(m_swap_rows.data(), m_d_send_roots.data() + sw.send_begin, 0, sw.n_send);
      timer.mark(&ExchangeSplit::reorder);
      copy_span(m_host_send, 0, m_swap_rows, 0, sw.n_send * words);
      timer.mark(&ExchangeSplit::bus);
    }
    mpi_swap(m_host_send.data(), sw.n_send * words, sw.send_to, m_host_recv.data(), sw.n_recv * words, sw.recv_from,
             m_x.world);
    timer.mark(&ExchangeSplit::comm);
    copy_span(m_stage.view(), std::size_t(sw.first) * words, m_host_recv, 0, sw.n_recv * words);
    timer.mark(&ExchangeSplit::bus);
    timer.add(&ExchangeSplit::bus_bytes, double(sw.n_send + sw.n_recv) * words * sizeof(double));
  }
}

// The same over CUDA IPC: the rows gathered into this rank's outbox; the partner copies them
// over into its device stage.
void DirectSwapTransport::forward_over_ipc()
{
  SplitTimer &timer = m_x.timer;
  const std::size_t words = m_x.layout.words;
  for (const Swap &sw : m_swaps) {
    if (sw.self) continue;
    m_stage.pack(m_peer->outbox(), m_d_send_roots.data() + sw.send_begin, 0, sw.n_send);
    Kokkos::fence("edgeframe::exchange outbox filled");    // before the partner is told "ready"
    timer.mark(&ExchangeSplit::reorder);
    m_peer->swap(sw.n_send * words, sw.send_to, m_stage.data() + std::size_t(sw.first) * words, sw.n_recv * words,
                 sw.recv_from);
    timer.mark(&ExchangeSplit::comm);
  }
}

// Reverse, swaps backwards: the swap's ghost rows (their own sums plus what later swaps added)
// up and to the rank they came from; the rows coming back for the atoms this rank sent, down
// and added onto those atoms' roots.
void DirectSwapTransport::reverse_over_mpi()
{
  SplitTimer &timer = m_x.timer;
  const std::size_t words = m_x.layout.words;
  for (auto it = m_swaps.rbegin(); it != m_swaps.rend(); ++it) {
    const Swap &sw = *it;
    if (sw.self) continue;
    copy_span(m_host_send, 0, m_stage.view(), std::size_t(sw.first) * words, sw.n_recv * words);
    timer.mark(&ExchangeSplit::bus);
    // Backwards: the ghost rows go to the rank they came from, the sent atoms' rows come back.
    mpi_swap(m_host_send.data(), sw.n_recv * words, sw.recv_from, m_host_recv.data(), sw.n_send * words, sw.send_to,
             m_x.world);
    timer.mark(&ExchangeSplit::comm);
    if (sw.n_send) {
      copy_span(m_swap_rows, 0, m_host_recv, 0, sw.n_send * words);
      timer.mark(&ExchangeSplit::bus);
      m_stage.add_groups(m_swap_rows.data(), sw.n_send, m_d_rev_targets.data() + sw.target_begin,
                         m_d_rev_group_begin.data() + sw.target_begin, m_d_rev_q.data(), sw.n_targets);
      timer.mark(&ExchangeSplit::reorder);
    }
    timer.add(&ExchangeSplit::bus_bytes, double(sw.n_send + sw.n_recv) * words * sizeof(double));
  }
}

void DirectSwapTransport::reverse_over_ipc()
{
  SplitTimer &timer = m_x.timer;
  const std::size_t words = m_x.layout.words;
  for (auto it = m_swaps.rbegin(); it != m_swaps.rend(); ++it) {
    const Swap &sw = *it;
    if (sw.self) continue;
    m_stage.pack(m_peer->outbox(), nullptr, sw.first, sw.n_recv);
    Kokkos::fence("edgeframe::exchange outbox filled");
    timer.mark(&ExchangeSplit::reorder);
    m_peer->swap(sw.n_recv * words, sw.recv_from, m_swap_rows.data(), sw.n_send * words, sw.send_to);
    timer.mark(&ExchangeSplit::comm);
    if (sw.n_send) {
      m_stage.add_groups(m_swap_rows.data(), sw.n_send, m_d_rev_targets.data() + sw.target_begin,
                         m_d_rev_group_begin.data() + sw.target_begin, m_d_rev_q.data(), sw.n_targets);
      timer.mark(&ExchangeSplit::reorder);
    }
  }
}
