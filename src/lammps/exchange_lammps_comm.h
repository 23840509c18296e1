/* -*- c++ -*- ----------------------------------------------------------
   Transports through LAMMPS' own forward and reverse communication on the
   host: comm->forward_comm(pair) and comm->reverse_comm(pair), whose pack
   and unpack callbacks (the pair style's, delegated here) read and write a
   host stage of one row per LAMMPS atom (exchange_transport.h,
   ExchangeLayout).

   Forward: owned node rows -> stage -> comm->forward_comm(pair) -> ghost
   node rows. Reverse: all node rows -> stage (summed onto their roots) ->
   comm->reverse_comm(pair) (ghost rows added onto their owners, along the
   same swaps backwards) -> owned node rows; ghost node rows zeroed. The
   callbacks skip the swaps to this rank and address atoms through their
   roots (exchange_trace.h).

   HostStageTransport: node rows in host memory (CPU builds), reordered
   into the stage by host loops (exchange_host_rows.h).

   PinnedStageTransport: node rows in the engine's memory, reordered on the
   device into its copy of the stage (exchange_device_stage.h); the host
   stage that LAMMPS packs is pinned. Forward: only the owned block goes up
   and only the ghost block comes back. Reverse: the whole stage goes up
   (the owned block by DMA rather than a host memset: the host's time is
   what the exchange waits for) and only the owned block comes back. CUDA
   builds take this path whenever the direct swaps do not apply;
   exchange_stage yes takes it on CPU builds too, so that the CPU tests
   cover the code the GPU runs.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_LAMMPS_COMM_H
#define LMP_EDGEFRAME_EXCHANGE_LAMMPS_COMM_H

#include "exchange_device_stage.h"
#include "exchange_transport.h"

#include <vector>

namespace LAMMPS_NS {
namespace edgeframe_glue {

  // LAMMPS' host pack / unpack callbacks over host_stage(), for the transports below.
  class LammpsCommTransport : public ExchangeTransport {
   public:
    using ExchangeTransport::ExchangeTransport;
    int pack_forward(int n, const int *list, double *buf) override;
    void unpack_forward(int n, int first, const double *buf) override;
    int pack_reverse(int n, int first, double *buf) override;
    void unpack_reverse(int n, const int *list, const double *buf) override;

   protected:
    virtual double *host_stage() = 0;    // [nall * words]: what LAMMPS' pack / unpack read and write

   private:
    // Whether the roots of list[0..n) are distinct (then a reverse unpack may add in parallel);
    // one pass with a stamp per call instead of clearing a mark per atom.
    bool distinct_roots(int n, const int *list);
    std::vector<unsigned> m_root_seen;
    unsigned m_root_stamp = 0;
  };

  class HostStageTransport final : public LammpsCommTransport {
   public:
    using LammpsCommTransport::LammpsCommTransport;
    const char *name() const override { return "LAMMPS' host communication (host stage)"; }
    void bind() override;
    void forward(const edgeframe::NodeRows &h) override;
    void reverse(const edgeframe::NodeRows &grad) override;

   protected:
    double *host_stage() override { return m_stage.data(); }

   private:
    std::vector<double> m_stage;    // [nall * words]
  };

  class PinnedStageTransport final : public LammpsCommTransport {
   public:
    PinnedStageTransport(ExchangeContext &x, DeviceStage &stage) : LammpsCommTransport(x), m_stage(stage) {}
    const char *name() const override { return "LAMMPS' host communication (pinned stage)"; }
    void bind() override;
    void forward(const edgeframe::NodeRows &h) override;
    void reverse(const edgeframe::NodeRows &grad) override;

   protected:
    double *host_stage() override { return m_host.data(); }

   private:
    DeviceStage &m_stage;
    PinnedWords m_host;    // [nall * words], grown on demand, never shrunk
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
