#include "exchange_trace.h"

#include "comm.h"
#include "pair.h"

#include <stdexcept>
#include <string>

using namespace LAMMPS_NS;
using namespace LAMMPS_NS::edgeframe_glue;

void SwapTrace::reset(int nall)
{
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
  m_send_to.clear();
}

// One forward communication of (sending rank, pack call, atom index) per atom instead of rows:
// a received ghost whose sender is this rank is a copy of that atom, so it shares its root; the
// pack call that made it is a swap to this rank, skipped from now on.
void SwapTrace::trace_roots(Comm *comm, Pair *pair)
{
  m_me = comm->me;
  m_mode = Mode::forward;
  reset_callbacks();
  comm->forward_comm(pair);
  m_mode = Mode::off;
  m_self_pack.resize(m_pack_calls, 0);
  m_trace_atoms_begin.push_back(int(m_trace_atoms.size()));    // the end of the last call's atoms
  m_self_lists.clear();
  for (int call = 0; call < m_pack_calls; call++)
    if (m_self_pack[call]) m_self_lists.push_back(m_trace_list[call]);
  std::sort(m_self_lists.begin(), m_self_lists.end());
  m_traced = true;
}

// The reverse trace: each ghost row sends this rank's number back along LAMMPS' reverse swaps,
// so the unpack of swap s learns the rank its forward swap s sends to. LAMMPS' brick
// reverse_comm runs the swaps backwards, one unpack each, with the forward pack's list.
void SwapTrace::trace_destinations(Comm *comm, Pair *pair)
{
  const int nswap = swaps();
  if (m_pack_calls != nswap || m_unpack_calls != nswap)
    throw std::logic_error("edgeframe exchange (direct MPI): " + std::to_string(m_pack_calls) + " pack and " +
                           std::to_string(m_unpack_calls) +
                           " unpack calls in one forward communication, expected one "
                           "each per swap of comm_style brick");
  m_send_to.assign(nswap, -1);
  m_me = comm->me;
  m_mode = Mode::reverse;
  reset_callbacks();
  comm->reverse_comm(pair);
  m_mode = Mode::off;
  if (m_unpack_calls != nswap)
    throw std::logic_error("edgeframe exchange (direct MPI): " + std::to_string(m_unpack_calls) +
                           " reverse unpack calls for " + std::to_string(nswap) + " swaps");
}

int SwapTrace::pack_forward(int n, const int *list, double *buf)
{
  const int call = m_pack_calls++;
  for (int q = 0; q < n; q++) {
    buf[3 * q] = m_me;
    buf[3 * q + 1] = call;
    buf[3 * q + 2] = list[q];
  }
  // What the direct swaps need of each swap's send side.
  m_trace_atoms_begin.push_back(int(m_trace_atoms.size()));
  m_trace_atoms.insert(m_trace_atoms.end(), list, list + n);
  m_trace_list.push_back(list);
  return 3 * n;
}

void SwapTrace::unpack_forward(int n, int first, const double *buf)
{
  const int call = m_unpack_calls++;
  // A swap comes from one rank: the first atom tells whether it is this one.
  const bool self = n > 0 && int(buf[0]) == m_me;
  if (int(m_self_unpack.size()) <= call) m_self_unpack.resize(call + 1, 0);
  m_self_unpack[call] = self;
  m_recv_from.push_back(n > 0 ? int(buf[0]) : -1);
  m_recv_first.push_back(first);
  m_recv_n.push_back(n);
  if (!self) return;    // ghosts received by MPI are their own roots (reset's default)
  const int pack_call = int(buf[1]);
  if (int(m_self_pack.size()) <= pack_call) m_self_pack.resize(pack_call + 1, 0);
  m_self_pack[pack_call] = 1;
  m_has_self = true;
  // The sources come before the ghosts they make, so their roots are final already.
  for (int q = 0; q < n; q++) m_root[first + q] = m_root[int(buf[3 * q + 2])];
}

int SwapTrace::pack_reverse(int n, int, double *buf)
{
  for (int q = 0; q < n; q++) buf[q] = m_me;    // this rank's number, back to the ghosts' sender
  return n;
}

void SwapTrace::unpack_reverse(int n, const int *list, const double *buf)
{
  // brick: the swaps backwards, one unpack each
  const int swap = swaps() - 1 - m_unpack_calls++;
  if (swap < 0 || m_trace_list[swap] != list)
    throw std::logic_error("edgeframe exchange (direct MPI): reverse swap order differs from comm_style brick's");
  if (n > 0) m_send_to[swap] = int(buf[0]);
}
