/* -*- c++ -*- ----------------------------------------------------------
   Per-layer exchange of node features through LAMMPS' own forward and
   reverse communication (issue #8), for the engine's NodeExchange hook
   (src/engine/exchange.hpp).

   Features are staged per LAMMPS atom (owned and ghost, [nall, width] in
   double, so float features travel exactly), because LAMMPS' swaps address
   atoms, not engine nodes: a swap may send ghosts that an earlier swap
   received (multi-hop ghosts, subdomains thinner than the cutoff) and a swap
   to this same rank makes periodic images. Forward: owned node rows ->
   stage -> comm->forward_comm(pair) -> ghost node rows. Reverse: all node
   rows -> stage -> comm->reverse_comm(pair) (ghost rows added onto their
   owners, along the same swaps backwards) -> owned node rows; ghost node
   rows zeroed. The pair style's pack/unpack hooks delegate here.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_H
#define LMP_EDGEFRAME_EXCHANGE_H

#include "exchange.hpp"

#include <vector>

namespace LAMMPS_NS {
class Comm;
class Pair;

namespace edgeframe_glue {
  struct NodeMap;

  class FeatureExchange : public edgeframe::NodeExchange {
   public:
    FeatureExchange(Comm *comm, Pair *pair) : m_comm(comm), m_pair(pair) {}

    // Before each force call: this step's nodes (nullptr on a rank without nodes), the LAMMPS
    // atom count nlocal + nghost, and the row width D * C (the pair's comm_forward/comm_reverse).
    void bind(const NodeMap *nodes, int nall, int width);

    void forward(const edgeframe::NodeRows &h) override;
    void reverse(const edgeframe::NodeRows &grad) override;

    // Pair::pack_forward_comm & co. (doubles per atom: width).
    int pack_forward(int n, const int *list, double *buf) const;
    void unpack_forward(int n, int first, const double *buf);
    int pack_reverse(int n, int first, double *buf) const;
    void unpack_reverse(int n, const int *list, const double *buf);

    long calls() const { return m_calls; }

   private:
    Comm *m_comm;
    Pair *m_pair;
    const NodeMap *m_nodes = nullptr;
    int m_nall = 0, m_width = 0;
    long m_calls = 0;
    std::vector<double> m_stage;    // [nall, width] per LAMMPS atom
    std::vector<char> m_host;       // host copy of the rows on builds whose engine memory is not host
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
