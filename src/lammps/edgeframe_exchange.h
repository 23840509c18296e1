/* -*- c++ -*- ----------------------------------------------------------
   Per-layer exchange of node features between an atom's owner and its
   ghost copies (issue #8), for the engine's NodeExchange hook
   (src/engine/exchange.hpp). FeatureExchange checks the rows, traces
   LAMMPS' swaps at each bind (exchange_trace.h: roots, swaps to this same
   rank skipped) and delegates to one transport (exchange_transport.h),
   picked at each bind from the settings (exchange_settings.h), the build
   and comm_style, the same on every rank:

   - LAMMPS-KOKKOS' device communication, where edgeframe/kk hands it the
     exchange (exchange_device_comm.h);
   - else the direct swaps, MPI or CUDA IPC, on the staged path with
     comm_style brick, self swaps skipped and exchange_swaps auto or
     direct (exchange_direct_swaps.h);
   - else LAMMPS' host communication on a pinned stage, on the staged path
     (CUDA builds, or exchange_stage yes) (exchange_lammps_comm.h);
   - else LAMMPS' host communication on a host stage (exchange_lammps_comm.h).

   The pair style's pack / unpack hooks delegate here: to the trace while
   one runs, else to the transport.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_H
#define LMP_EDGEFRAME_EXCHANGE_H

#include "exchange.hpp"
#include "exchange_settings.h"
#include "exchange_split.h"

#include <mpi.h>

#include <memory>
#include <string>

namespace LAMMPS_NS {
class Comm;
class Pair;

namespace edgeframe_glue {
  struct NodeMap;
  struct ExchangeContext;
  class ExchangeTransport;
  class DeviceStage;
  class HostStageTransport;
  class PinnedStageTransport;
  class DeviceCommTransport;
  class DirectSwapTransport;

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
    int pack_forward(int n, const int *list, double *buf);
    void unpack_forward(int n, int first, const double *buf);
    int pack_reverse(int n, int first, double *buf);
    void unpack_reverse(int n, const int *list, const double *buf);

    // LAMMPS-KOKKOS' device communication for pair styles (exchange_device_comm.h): lists and
    // buffers are LAMMPS' device views (engine memory). Set before bind().
    void use_device_comm(bool on);
    // LAMMPS replaces its Comm on `comm_style`: the pair passes the current one every init.
    void set_comm(Comm *comm);
    bool device_comm() const { return m_device_comm; }
    int pack_forward_device(int n, const int *list, double *buf);
    void unpack_forward_device(int n, int first, const double *buf);
    int pack_reverse_device(int n, int first, double *buf);
    void unpack_reverse_device(int n, const int *list, const double *buf);

    long calls() const { return m_calls; }
    bool staged() const { return m_staged; }    // rows reordered on the device, staged through pinned memory
    bool skipped_self_swaps() const;    // the last bind traced the swaps (exchange_trace.h)
    // Whether rows of this width and type go by direct swaps (exchange_direct_swaps.h): the
    // setting, the staged path, comm_style brick, and room for the traces. bind() decides by it.
    bool direct_swaps_for(int width, edgeframe::RowType type) const;
    bool made_direct_swaps() const;    // ... and the last bind chose them
    // ... over CUDA IPC (exchange_transport, edgeframe_peer.h) instead of MPI; where it was tried
    // and not possible, why not; and whether it was asked for by name.
    bool made_peer_swaps() const;
    std::string peer_refusal() const;
    bool peer_asked() const;

    // Where the exchange's time goes (pair_style ... timing detail; exchange_split.h). Starts a
    // new split, measured or not.
    void measure_split(bool on);
    const ExchangeSplit &split() const;
    long split_calls() const { return m_calls - m_calls_at_split; }    // exchanges since measure_split()

   private:
    std::unique_ptr<ExchangeContext> m_x;    // what the transports share, the settings among them
    std::unique_ptr<DeviceStage> m_device_stage;    // the stage in engine memory, for the transports with one
    std::unique_ptr<HostStageTransport> m_host_stage;
    std::unique_ptr<PinnedStageTransport> m_pinned_stage;
    std::unique_ptr<DeviceCommTransport> m_device_comm_transport;
    std::unique_ptr<DirectSwapTransport> m_direct_swaps;
    ExchangeTransport *m_transport = nullptr;    // the last bind's choice
    const bool m_staged;    // see staged()
    const bool m_want_direct;    // exchange_swaps direct or automatic (with self swaps skipped)
    bool m_device_comm = false;    // see use_device_comm()
    long m_calls = 0, m_calls_at_split = 0;
    ExchangeTransport &transport_for(int width, edgeframe::RowType type);
    ExchangeTransport &bound() const;    // the transport, or std::logic_error before the first bind
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
