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

   Where the engine's memory is not host memory (CUDA builds) the node rows
   go through a pinned host copy, and only the rows a step needs cross the
   bus: forward sends the owned rows up and the ghost rows back down.
   EDGEFRAME_STAGE_EXCHANGE=1 takes that staged path on host builds too, so
   that the CPU tests cover the code the GPU runs.
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

    // Before each force call: this step's nodes (nullptr on a rank without nodes), the LAMMPS
    // atom count nlocal + nghost, the row width D * C and the rows' element type.
    void bind(const NodeMap *nodes, int nall, int width, edgeframe::RowType type);

    void forward(const edgeframe::NodeRows &h) override;
    void reverse(const edgeframe::NodeRows &grad) override;

    // Pair::pack_forward_comm & co. (doubles per atom: stage_words(width, type)).
    int pack_forward(int n, const int *list, double *buf) const;
    void unpack_forward(int n, int first, const double *buf);
    int pack_reverse(int n, int first, double *buf) const;
    void unpack_reverse(int n, const int *list, const double *buf);

    long calls() const { return m_calls; }
    bool staged() const { return m_staged; }    // rows copied through a (pinned) host buffer

   private:
    struct PinnedRows;    // the staging buffer (Kokkos::SharedHostPinnedSpace), .cpp
    // Rows [begin, end) of r readable on the host: r's own memory, or copied into the staging
    // buffer (laid out like r). Returns the base of that host copy of all r.rows rows.
    char *rows_to_host(const edgeframe::NodeRows &r, int begin, int end);
    // Rows [begin, end) of the host copy back into r (staged path only).
    void rows_to_engine(const edgeframe::NodeRows &r, const char *host, int begin, int end);

    Comm *m_comm;
    Pair *m_pair;
    const NodeMap *m_nodes = nullptr;
    int m_nall = 0, m_width = 0, m_words = 0;
    edgeframe::RowType m_type = edgeframe::RowType::f64;
    long m_calls = 0;
    std::vector<double> m_stage;        // [nall, words] per LAMMPS atom: the rows' bytes
    std::vector<int> m_non_nodes;       // atoms that are no node: zero rows in reverse()
    bool m_staged = false;                  // see staged()
    std::unique_ptr<PinnedRows> m_pinned;   // staged path: host copy of the node rows
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
