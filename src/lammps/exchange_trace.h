/* -*- c++ -*- ----------------------------------------------------------
   What LAMMPS' swaps do, learned by tracing them at each bind (the swap
   lists and ghosts change only at neighbour-list builds, in
   Comm::borders, and the order of LAMMPS' pack and unpack calls is the
   same for every communication until then).

   Swaps to this same rank (periodic images: all swaps on one rank, the
   y and z swaps of an x-split) need no host work: a ghost made by such a
   swap is a copy of an earlier atom, its "root" (an owned atom or a ghost
   received by MPI). One small forward communication (the trace: sending
   rank, pack call and atom index instead of features) gives every ghost
   its root and tells which pack and unpack calls are swaps to this rank.
   The transports then skip those swaps' pack and unpack, give ghost nodes
   their root's row, add ghost gradients onto their root before the
   reverse swaps, and pack and unpack the MPI swaps through roots. Same
   sums, other order: results agree to rounding. The host's pack and
   unpack (the larger part of the two-GPU exchange's LAMMPS time) shrink to
   the MPI swaps' rows. exchange_self_swaps lammps keeps the self swaps in
   LAMMPS (no trace: every atom is its own root), for comparison.

   The direct swaps (exchange_direct_swaps.h) need each swap's partners as
   well: the forward trace records what each swap sends and where each
   received block comes from, and a second trace (reverse) where each swap
   sends to.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_TRACE_H
#define LMP_EDGEFRAME_EXCHANGE_TRACE_H

#include <algorithm>
#include <vector>

namespace LAMMPS_NS {
class Comm;
class Pair;

namespace edgeframe_glue {

  class SwapTrace {
   public:
    // Before the traces of a bind: every one of nall atoms its own root, nothing traced.
    void reset(int nall);
    // Collective: the forward trace (roots, swaps to this rank, what each swap sends and
    // receives). Needs 3 doubles per atom in LAMMPS' buffers.
    void trace_roots(Comm *comm, Pair *pair);
    // Collective, after trace_roots and with comm_style brick only: the reverse trace (where
    // each swap sends to).
    void trace_destinations(Comm *comm, Pair *pair);

    // While a trace runs, LAMMPS' host pack / unpack callbacks belong to it: the forward ones
    // to trace_roots, the reverse ones to trace_destinations.
    bool tracing() const { return m_mode != Mode::off; }
    int pack_forward(int n, const int *list, double *buf);
    void unpack_forward(int n, int first, const double *buf);
    int pack_reverse(int n, int first, double *buf);
    void unpack_reverse(int n, const int *list, const double *buf);

    // What the last bind learned. root(a): the atom whose stage row stands for atom a (a itself
    // unless a is a ghost made by a swap to this rank).
    bool traced() const { return m_traced; }
    int root(int atom) const { return m_root[atom]; }
    int atoms() const { return int(m_root.size()); }
    bool has_self_swaps() const { return m_has_self; }    // some swap goes to this rank
    // Whether `list` is the send list of a swap to this rank. The callbacks outside the traces
    // recognise a self swap by its list (forward pack, reverse unpack) or by its ghosts not
    // being their own roots (forward unpack, reverse pack), not by the order of the calls.
    bool self_list(const int *list) const { return std::binary_search(m_self_lists.begin(), m_self_lists.end(), list); }

    // Per swap w, in LAMMPS' order (comm_style brick: one pack and one unpack call each): the
    // atoms it sends and the rank they go to, the rank it receives from and its ghosts
    // [recv_first, recv_first + n_recv); -1 for a side without rows.
    int swaps() const { return int(m_trace_list.size()); }
    bool self_swap(int w) const { return self_pack(w) || self_unpack(w); }
    const int *send_atoms(int w) const { return m_trace_atoms.data() + m_trace_atoms_begin[w]; }
    int n_send(int w) const { return m_trace_atoms_begin[w + 1] - m_trace_atoms_begin[w]; }
    int send_to(int w) const { return m_send_to[w]; }
    int recv_from(int w) const { return m_recv_from[w]; }
    int recv_first(int w) const { return m_recv_first[w]; }
    int n_recv(int w) const { return m_recv_n[w]; }

   private:
    enum class Mode { off, forward, reverse };
    Mode m_mode = Mode::off;
    int m_me = 0;    // this rank, what the traces send
    int m_pack_calls = 0, m_unpack_calls = 0;    // counted in the traces
    std::vector<int> m_root;    // [nall]
    bool m_traced = false;
    bool m_has_self = false;
    std::vector<char> m_self_pack, m_self_unpack;    // per pack / unpack call: a swap to this rank
    std::vector<const int *> m_self_lists;    // sorted: the send lists of swaps to this rank
    // Per forward pack call its atoms (m_trace_atoms[m_trace_atoms_begin[w] ..
    // m_trace_atoms_begin[w + 1])) and list pointer; per unpack call its sender and range; per
    // swap its destination.
    std::vector<int> m_trace_atoms, m_trace_atoms_begin;
    std::vector<const int *> m_trace_list;
    std::vector<int> m_recv_from, m_recv_first, m_recv_n, m_send_to;
    bool self_unpack(int call) const { return call < int(m_self_unpack.size()) && m_self_unpack[call]; }
    bool self_pack(int call) const { return call < int(m_self_pack.size()) && m_self_pack[call]; }
    void reset_callbacks() { m_pack_calls = m_unpack_calls = 0; }
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
