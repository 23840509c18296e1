/* -*- c++ -*- ----------------------------------------------------------
   The interface of the exchange's transports: each moves node rows
   between owners and ghost copies one way (edgeframe_exchange.h lists
   them; FeatureExchange picks one at each bind and delegates to it), and
   the state they share, which FeatureExchange owns.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_TRANSPORT_H
#define LMP_EDGEFRAME_EXCHANGE_TRANSPORT_H

#include "exchange.hpp"
#include "exchange_host_rows.h"
#include "exchange_settings.h"
#include "exchange_split.h"
#include "exchange_trace.h"

#include <mpi.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace LAMMPS_NS {
class Comm;
class Pair;

namespace edgeframe_glue {

  // The rows of one neighbour list and how the stage holds them (FeatureExchange::bind). The
  // stage has one row per LAMMPS atom, owned and ghost: LAMMPS' swaps address atoms, not engine
  // nodes, and a swap may send ghosts that an earlier swap received (multi-hop ghosts,
  // subdomains thinner than the cutoff).
  struct ExchangeLayout {
    int nlocal = 0, nall = 0;    // LAMMPS atoms: owned, owned + ghost (the stage's rows)
    int width = 0;    // D * C values per node row
    edgeframe::RowType type = edgeframe::RowType::f64;
    int words = 0;    // doubles per stage row: FeatureExchange::stage_words(width, type)
    int n_local = 0, n_nodes = 0;    // engine nodes: owned (first), all
    std::vector<int> root_of_node;    // [n_nodes] node k's stage row: the root of its atom
    // Reverse gather: atom a's stage row = the sum of the gradient rows of nodes
    // sum_nodes[sum_begin[a] .. sum_begin[a + 1]) (in node order; zero if none).
    std::vector<int> sum_begin, sum_nodes;    // [nall + 1], [n_nodes]
  };

  // What the transports of one FeatureExchange share; each keeps a reference.
  struct ExchangeContext {
    ExchangeContext(Comm *comm, Pair *pair, MPI_Comm world, const ExchangeSettings &settings) :
        comm(comm), pair(pair), world(world), settings(settings), for_rows(settings)
    {
    }
    Comm *comm;    // LAMMPS replaces its Comm on comm_style: FeatureExchange::set_comm
    Pair *pair;    // whose pack / unpack callbacks LAMMPS' communication calls
    MPI_Comm world;
    const ExchangeSettings settings;
    const RowLoop for_rows;    // the host row loops under these settings
    ExchangeLayout layout;    // of the last bind
    SwapTrace trace;    // of the last bind
    SplitTimer timer;
  };

  class ExchangeTransport {
   public:
    explicit ExchangeTransport(ExchangeContext &x) : m_x(x) {}
    virtual ~ExchangeTransport() = default;
    ExchangeTransport(const ExchangeTransport &) = delete;
    ExchangeTransport &operator=(const ExchangeTransport &) = delete;

    // How this transport moves the rows, for messages.
    virtual const char *name() const = 0;
    // At each bind, after the layout and the trace: this transport's lists and buffers.
    // Collective where the transport's swaps are (every rank binds the same transport at the
    // same force calls).
    virtual void bind() = 0;
    // NodeExchange::forward / reverse (exchange.hpp), rows already checked against the layout.
    virtual void forward(const edgeframe::NodeRows &h) = 0;
    virtual void reverse(const edgeframe::NodeRows &grad) = 0;

    // LAMMPS' pair communication callbacks outside the traces (doubles per atom: layout.words):
    // the host ones (Pair::pack_forward_comm & co.) and LAMMPS-KOKKOS' device ones (lists and
    // buffers in engine memory). A transport takes those of the communication it calls and
    // refuses the others.
    virtual int pack_forward(int, const int *, double *) { refuse("host"); }
    virtual void unpack_forward(int, int, const double *) { refuse("host"); }
    virtual int pack_reverse(int, int, double *) { refuse("host"); }
    virtual void unpack_reverse(int, const int *, const double *) { refuse("host"); }
    virtual int pack_forward_device(int, const int *, double *) { refuse("device"); }
    virtual void unpack_forward_device(int, int, const double *) { refuse("device"); }
    virtual int pack_reverse_device(int, int, double *) { refuse("device"); }
    virtual void unpack_reverse_device(int, const int *, const double *) { refuse("device"); }

   protected:
    ExchangeContext &m_x;

   private:
    [[noreturn]] void refuse(const char *kind) const
    {
      throw std::logic_error(std::string("edgeframe exchange: LAMMPS' ") + kind +
                             " pack/unpack called, but the rows go by " + name());
    }
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
