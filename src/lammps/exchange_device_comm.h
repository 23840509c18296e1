/* -*- c++ -*- ----------------------------------------------------------
   The transport through LAMMPS-KOKKOS' device communication for pair
   styles (CommKokkos::forward_comm_device and reverse_comm_device), which
   edgeframe/kk routes the exchange to when its execution space is the
   device and LAMMPS keeps pair communication on the device (GPU-aware
   MPI, or one rank). The stage lives in the engine's memory only
   (exchange_device_stage.h) and LAMMPS packs and unpacks it there through
   the device callbacks; their lists and buffers are LAMMPS' device views
   (engine memory). Nothing crosses the bus here (MPI gets device
   buffers). No trace: LAMMPS makes every swap, and every atom is its own
   root.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_DEVICE_COMM_H
#define LMP_EDGEFRAME_EXCHANGE_DEVICE_COMM_H

#include "exchange_device_stage.h"
#include "exchange_transport.h"

namespace LAMMPS_NS {
namespace edgeframe_glue {

  class DeviceCommTransport final : public ExchangeTransport {
   public:
    DeviceCommTransport(ExchangeContext &x, DeviceStage &stage) : ExchangeTransport(x), m_stage(stage) {}
    const char *name() const override { return "LAMMPS-KOKKOS' device communication"; }
    void bind() override { m_stage.bind(); }
    void forward(const edgeframe::NodeRows &h) override;
    void reverse(const edgeframe::NodeRows &grad) override;

    int pack_forward_device(int n, const int *list, double *buf) override;
    void unpack_forward_device(int n, int first, const double *buf) override;
    int pack_reverse_device(int n, int first, double *buf) override;
    void unpack_reverse_device(int n, const int *list, const double *buf) override;

   private:
    DeviceStage &m_stage;
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
