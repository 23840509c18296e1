/* -*- c++ -*- ----------------------------------------------------------
   Per-layer exchange of node features through LAMMPS' own forward and
   reverse communication (issue #8), for the engine's NodeExchange hook
   (src/engine/exchange.hpp).

   Features are staged per LAMMPS atom (owned and ghost, [nall, words]:
   each row's bytes in stage_words() doubles, so float rows travel as
   floats, two per double, unconverted), because LAMMPS' swaps address
   atoms, not engine nodes: a swap may send ghosts that an earlier swap
   received (multi-hop ghosts, subdomains thinner than the cutoff) and a swap
   to this same rank makes periodic images. Forward: owned node rows ->
   stage -> comm->forward_comm(pair) -> ghost node rows. Reverse: all node
   rows -> stage -> comm->reverse_comm(pair) (ghost rows added onto their
   owners, along the same swaps backwards) -> owned node rows; ghost node
   rows zeroed. The pair style's pack/unpack hooks delegate here.

   Where the engine's memory is not host memory (CUDA builds) the stage has
   a device twin: node rows are reordered into atom order on the device, and
   only the stage's owned block (forward) or ghost block (reverse) crosses
   the bus to the pinned host stage that LAMMPS packs, and only the other
   block comes back. exchange_stage yes takes that staged path on
   host builds too, so that the CPU tests cover the code the GPU runs.

   Swaps to this same rank (periodic images: all swaps on one rank, the
   y and z swaps of an x-split) are not done on the host: a ghost made by
   such a swap is a copy of an earlier atom, its "root" (an owned atom or a
   ghost received by MPI). bind() learns every ghost's root with one small
   forward communication (a trace: sending rank and atom index instead of
   features); the exchanges then skip the self swaps' pack and unpack, give
   ghost nodes their root's row, add ghost gradients onto their root before
   LAMMPS' reverse swaps, and pack and unpack the MPI swaps through roots.
   Same sums, other order: results agree to rounding. The host's pack and
   unpack (the larger part of the two-GPU exchange's LAMMPS time) shrink to
   the MPI swaps' rows. exchange_self_swaps lammps keeps the
   self swaps in LAMMPS (roots are the atoms themselves), for comparison.

   Direct MPI (the default on the staged path with comm_style brick;
   exchange_swaps lammps goes through LAMMPS' swaps instead): the
   exchange makes the MPI swaps itself instead of through LAMMPS' pack and
   unpack. A second trace (reverse) tells each rank where its swaps send;
   then, swap by swap in LAMMPS' order, the rows a swap sends are gathered
   on the device, copied to a pinned buffer that goes to MPI as it is, and
   the received rows go straight back into the device stage (reverse: the
   ghost rows up, the received rows added onto their roots on the device).
   No row is copied by the host, and only the swapped rows cross the bus.
   Between the GPUs of one node the swaps skip the host altogether: CUDA
   IPC (edgeframe_peer.h), the default where the engine runs on CUDA.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_H
#define LMP_EDGEFRAME_EXCHANGE_H

#include "exchange.hpp"

#include <mpi.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
class Comm;
class Pair;

namespace edgeframe_glue {
  struct NodeMap;
  class PeerOutbox;    // edgeframe_peer.h

  // How the per-layer exchange moves rows: pair_style keywords (doc/pair_edgeframe.md
  // "Ghost exchange settings"), the same on every rank because every rank reads the same input.
  struct ExchangeSettings {
    enum class Swaps { automatic, direct, lammps };
    enum class Transport { automatic, mpi, cuda_ipc };
    // exchange_stage yes: reorder rows on the device and stage them through pinned host buffers
    // also where the engine's memory is host memory (CUDA builds always do).
    bool stage = false;
    // exchange_self_swaps skip (default): rows a rank sends to itself (periodic images) are
    // copied in place from their roots; lammps: LAMMPS' comm makes every swap.
    bool skip_self_swaps = true;
    // exchange_swaps: direct = the exchange makes LAMMPS' brick swaps itself from the staged
    // rows; lammps = through LAMMPS' pack/unpack callbacks; automatic = direct where it applies
    // (staged, self swaps skipped, comm_style brick).
    Swaps swaps = Swaps::automatic;
    // exchange_transport of the direct swaps: cuda_ipc between the GPUs of one node
    // (edgeframe_peer.h), mpi from pinned buffers; automatic = CUDA IPC where the engine runs
    // on CUDA and every rank can reach its partners, else MPI.
    Transport transport = Transport::automatic;
    // exchange_threads N: OpenMP threads of the host row loops that move at least
    // exchange_parallel_bytes (default 4 MiB; 0 threads every loop, as the tests do).
    int threads = 1;
    std::size_t parallel_bytes = std::size_t(4) << 20;
  };

  class FeatureExchange : public edgeframe::NodeExchange {
   public:
    FeatureExchange(Comm *comm, Pair *pair, MPI_Comm world, const ExchangeSettings &settings);
    ~FeatureExchange() override;

    // Doubles per atom and exchange for rows of width values of this type (the pair's
    // comm_forward / comm_reverse): width for f64, width / 2 rounded up for f32.
    static int stage_words(int width, edgeframe::RowType type);

    // OpenMP threads of the large host row loops (ExchangeSettings::threads; 1 without OpenMP).
    int host_threads() const;

    // After each neighbour-list build (LAMMPS' swap lists and ghosts change only then): the
    // nodes (nullptr on a rank without nodes), the LAMMPS atom counts nlocal and nall = nlocal +
    // nghost, the row width D * C and the rows' element type. A collective (it traces the swaps):
    // every rank binds at the same force calls.
    void bind(const NodeMap *nodes, int nlocal, int nall, int width, edgeframe::RowType type);

    void forward(const edgeframe::NodeRows &h) override;
    void reverse(const edgeframe::NodeRows &grad) override;

    // Pair::pack_forward_comm & co. (doubles per atom: stage_words(width, type)).
    int pack_forward(int n, const int *list, double *buf) const;
    void unpack_forward(int n, int first, const double *buf);
    int pack_reverse(int n, int first, double *buf) const;
    void unpack_reverse(int n, const int *list, const double *buf);

    // LAMMPS-KOKKOS' device communication for pair styles (CommKokkos::forward_comm_device and
    // reverse_comm_device, which /kk routes here when its execution space is the device and
    // LAMMPS keeps pair communication on the device: GPU-aware MPI, or one rank): the stage
    // lives in the engine's memory only and LAMMPS packs it there; lists and buffers are
    // LAMMPS' device views (engine memory). Set before bind().
    void use_device_comm(bool on);
    // LAMMPS replaces its Comm on `comm_style`: the pair passes the current one every init.
    void set_comm(Comm *comm);
    bool device_comm() const { return m_device_comm; }
    int pack_forward_device(int n, const int *list, double *buf) const;
    void unpack_forward_device(int n, int first, const double *buf);
    int pack_reverse_device(int n, int first, double *buf) const;
    void unpack_reverse_device(int n, const int *list, const double *buf);

    long calls() const { return m_calls; }
    bool staged() const { return m_staged; }    // rows reordered on the device, staged through pinned memory
    bool skipped_self_swaps() const { return m_traced; }    // the last bind traced (file comment)
    // Whether rows of this width and type go by direct MPI swaps (file comment): the setting,
    // the staged path, comm_style brick, and room for the traces. bind() decides by it.
    bool direct_swaps_for(int width, edgeframe::RowType type) const;
    bool made_direct_swaps() const { return m_direct; }    // ... and the last bind chose them
    // ... over CUDA IPC (exchange_transport, edgeframe_peer.h) instead of MPI; where it
    // was tried and not possible, why not; and whether it was asked for by name.
    bool made_peer_swaps() const { return m_direct && m_use_peer; }
    std::string peer_refusal() const;
    bool peer_asked() const { return m_settings.transport == ExchangeSettings::Transport::cuda_ipc; }

    // Where the exchange's time goes (pair_style ... timing detail), seconds summed over calls:
    // reordering node rows <-> the per-atom stage (device kernels, or host copies), copies
    // between device and pinned host memory (with their byte count), and LAMMPS' communication
    // (its pack / MPI / unpack, on the host or on the device). Measuring fences the device
    // between the phases, so it is off unless asked for. host_pack is the part of comm spent in
    // the host pack / unpack callbacks below (row copies and the reverse adds; the rest of comm
    // is MPI and waiting for the partner rank); the device callbacks only launch kernels and are
    // not timed apart.
    struct Split {
      double reorder = 0.0, bus = 0.0, comm = 0.0;
      double bus_bytes = 0.0;
      double host_pack = 0.0;
      double host_rows = 0.0;    // rows the host pack / unpack callbacks moved
      double traces = 0.0;    // bind()'s traces and swap lists (inside "graph build")
      double binds = 0.0;    // bind() calls (the pair binds at neighbour-list builds only)
    };
    // Starts a new split (LAMMPS calls init_style once per run: the split is per run, like the
    // other timing lines).
    void measure_split(bool on)
    {
      m_measure = on;
      m_split = Split();
      m_calls_at_split = m_calls;
    }
    const Split &split() const { return m_split; }
    long split_calls() const { return m_calls - m_calls_at_split; }    // exchanges since measure_split()

   private:
    struct Staged;    // the pinned stage, its device twin and the node map on the device (.cpp)
    double *stage() const;    // what LAMMPS' pack/unpack read and write: [nall, words]
    template <class T>
    void staged_forward(const edgeframe::NodeRows &h, int n_local, int n_nodes);
    template <class T>
    void staged_reverse(const edgeframe::NodeRows &grad, int n_local, int n_nodes);

    Comm *m_comm;
    Pair *m_pair;
    const NodeMap *m_nodes = nullptr;
    int m_nlocal = 0, m_nall = 0, m_width = 0, m_words = 0;
    edgeframe::RowType m_type = edgeframe::RowType::f64;
    long m_calls = 0;
    bool m_staged = false;    // see staged()
    bool m_device_comm = false;    // see use_device_comm()
    std::vector<double> m_stage;    // host path: [nall, words] per LAMMPS atom, the rows' bytes
    std::unique_ptr<Staged> m_dev;    // staged path
    // Self swaps (file comment). m_root[a]: the atom whose stage row stands for atom a (a itself
    // unless a is a ghost made by a swap to this rank). Per force call, from trace_roots().
    std::vector<int> m_root;
    std::vector<int> m_root_of_node;    // [n_nodes] m_root[atom_of_node[k]]: where node k's row is staged
    // Reverse gather: atom a's stage row = the sum of the gradient rows of nodes
    // m_sum_nodes[m_sum_begin[a] .. m_sum_begin[a + 1]) (in node order; zero if none).
    std::vector<int> m_sum_begin, m_sum_nodes;
    // The traces' call counters, and which calls belong to swaps to this rank.
    enum class CallbackMode { rows, trace, trace_reverse };
    CallbackMode m_mode = CallbackMode::rows;
    mutable int m_pack_calls = 0, m_unpack_calls = 0;    // counted in the traces
    std::vector<char> m_self_pack, m_self_unpack;
    std::vector<const int *> m_self_lists;    // sorted: the send lists of swaps to this rank
    bool m_traced = false;    // this force call's roots come from a trace
    bool self_list(const int *list) const { return std::binary_search(m_self_lists.begin(), m_self_lists.end(), list); }
    bool m_has_self = false;    // some swap of this communication goes to this rank
    // Whether the roots of list[0..n) are distinct (then a reverse unpack may add in parallel);
    // one pass with a stamp per call instead of clearing a mark per atom.
    bool distinct_roots(int n, const int *list) const;
    mutable std::vector<unsigned> m_root_seen;
    mutable unsigned m_root_stamp = 0;
    void reset_callbacks() const { m_pack_calls = m_unpack_calls = 0; }
    void trace_roots();    // bind(): m_root, m_self_pack, m_self_unpack (and the swaps' lists)

    // Direct MPI (file comment). One LAMMPS brick swap as this rank sees it.
    struct Swap {
      bool self = false;
      int send_to = -1, n_send = 0, send_begin = 0;    // its rows: m_send_roots[send_begin ..)
      int recv_from = -1, n_recv = 0, first = 0;    // ghosts [first, first + n_recv)
      int target_begin = 0, n_targets = 0;    // reverse: m_rev_targets[target_begin ..)
    };
    MPI_Comm m_world;
    ExchangeSettings m_settings;
    bool m_want_direct = false;    // exchange_swaps direct or automatic (with self swaps skipped)
    bool m_direct = false;    // this force call: staged, brick, traced
    std::vector<Swap> m_swaps;
    bool m_want_peer = false;    // exchange_transport: try CUDA IPC
    bool m_use_peer = false;    // ... and the last build_swaps() could (all ranks)
    std::unique_ptr<PeerOutbox> m_peer;
    // From the traces: per forward pack call its atoms and list pointer, per unpack call its
    // sender and range, per swap its destination.
    std::vector<int> m_trace_atoms, m_trace_atoms_begin;
    std::vector<const int *> m_trace_list;
    std::vector<int> m_recv_from, m_recv_first, m_recv_n, m_send_to;
    // Device copies: every MPI swap's send rows (roots), and for the reverse the distinct
    // roots a swap adds into with the received rows of each (m_rev_q[m_rev_group_begin[t] ..
    // m_rev_group_begin[t + 1]) for target t), so that equal roots add without races.
    std::vector<int> m_send_roots, m_rev_targets, m_rev_group_begin, m_rev_q;
    void trace_destinations();    // bind(), direct mode: m_send_to
    void build_swaps();    // bind(), direct mode: m_swaps and the device lists
    void direct_forward();
    template <class T>
    void direct_reverse();
    bool self_unpack(int call) const { return call < int(m_self_unpack.size()) && m_self_unpack[call]; }
    bool self_pack(int call) const { return call < int(m_self_pack.size()) && m_self_pack[call]; }
    bool m_measure = false;    // see measure_split()
    mutable Split m_split;    // mutable: the const pack callbacks add their time
    // Times one host pack / unpack callback into m_split.host_pack while measuring.
    class PackTimer;
    long m_calls_at_split = 0;
    // Adds the time since the last mark to one Split field (fencing the engine's stream first).
    void mark(double Split::*field);
    double m_mark = 0.0;
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
