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
   block comes back. EDGEFRAME_STAGE_EXCHANGE=1 takes that staged path on
   host builds too, so that the CPU tests cover the code the GPU runs.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_H
#define LMP_EDGEFRAME_EXCHANGE_H

#include "exchange.hpp"

#include <memory>
#include <vector>

namespace LAMMPS_NS {
class Comm;
class Pair;

namespace edgeframe_glue {
  struct NodeMap;

  class FeatureExchange : public edgeframe::NodeExchange {
   public:
    FeatureExchange(Comm *comm, Pair *pair);
    ~FeatureExchange() override;

    // Doubles per atom and exchange for rows of width values of this type (the pair's
    // comm_forward / comm_reverse): width for f64, width / 2 rounded up for f32.
    static int stage_words(int width, edgeframe::RowType type);

    // OpenMP threads of the large host row loops (EDGEFRAME_EXCHANGE_THREADS; 1 without OpenMP).
    static int host_threads();

    // Before each force call: this step's nodes (nullptr on a rank without nodes), the LAMMPS
    // atom counts nlocal and nall = nlocal + nghost, the row width D * C and the rows' element
    // type.
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
    bool device_comm() const { return m_device_comm; }
    int pack_forward_device(int n, const int *list, double *buf) const;
    void unpack_forward_device(int n, int first, const double *buf);
    int pack_reverse_device(int n, int first, double *buf) const;
    void unpack_reverse_device(int n, const int *list, const double *buf);

    long calls() const { return m_calls; }
    bool staged() const { return m_staged; }    // rows reordered on the device, staged through pinned memory

    // Where the exchange's time goes (pair_style ... timing detail), seconds summed over calls:
    // reordering node rows <-> the per-atom stage (device kernels, or host copies), copies
    // between device and pinned host memory (with their byte count), and LAMMPS' communication
    // (its pack / MPI / unpack, on the host or on the device). Measuring fences the device
    // between the phases, so it is off unless asked for.
    struct Split {
      double reorder = 0.0, bus = 0.0, comm = 0.0;
      double bus_bytes = 0.0;
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
    bool m_staged = false;                // see staged()
    bool m_device_comm = false;           // see use_device_comm()
    std::vector<double> m_stage;          // host path: [nall, words] per LAMMPS atom, the rows' bytes
    std::vector<int> m_non_nodes;         // host path: atoms that are no node (zero rows in reverse())
    std::vector<int> m_node_of_atom;      // staged path: NodeMap's, -1 padded to nall (uploaded)
    std::unique_ptr<Staged> m_dev;        // staged path
    bool m_measure = false;               // see measure_split()
    Split m_split;
    long m_calls_at_split = 0;
    // Adds the time since the last mark to one Split field (fencing the engine's stream first).
    void mark(double Split::*field);
    double m_mark = 0.0;
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
