/* -*- c++ -*- ----------------------------------------------------------
   The exchange's own brick swaps (exchange_swaps auto, the default, takes
   them on the staged path with comm_style brick and the self swaps
   skipped; direct asks for them; lammps goes through LAMMPS' swaps
   instead). The traces (exchange_trace.h) tell each rank what each of its
   swaps sends, where to, and where its ghosts come from; then, swap by
   swap in LAMMPS' order, the rows a swap sends are gathered on the device
   and go to the partner, and the received rows go straight into the
   device stage (exchange_device_stage.h; reverse: the ghost rows go back,
   the rows coming back are added onto their roots on the device). No row
   is copied by the host, and only the swapped rows cross the bus.
   Measured on two H200s (bench/results/benchmarks-log.md): exchange 76.9
   -> 25.6 ms per force call at 110 592 atoms against LAMMPS' swaps.

   Two wires, chosen at each bind on every rank together: MPI from pinned
   host buffers, or, between the GPUs of one node, CUDA IPC
   (edgeframe_peer.h; exchange_transport auto where the engine runs on
   CUDA, cuda-ipc asks for it by name, mpi turns it off).
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_DIRECT_SWAPS_H
#define LMP_EDGEFRAME_EXCHANGE_DIRECT_SWAPS_H

#include "exchange_device_stage.h"
#include "exchange_transport.h"

#include <memory>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace edgeframe_glue {

  class PeerOutbox;    // edgeframe_peer.h

  class DirectSwapTransport final : public ExchangeTransport {
   public:
    DirectSwapTransport(ExchangeContext &x, DeviceStage &stage);
    ~DirectSwapTransport() override;
    const char *name() const override { return "direct swaps"; }
    // Collective: the reverse trace, the swaps and their device lists, and the wire.
    void bind() override;
    void forward(const edgeframe::NodeRows &h) override;
    void reverse(const edgeframe::NodeRows &grad) override;

    bool over_ipc() const { return m_use_peer; }    // the last bind chose CUDA IPC
    // Where CUDA IPC was wanted and the last bind found it not possible, why not; else "".
    std::string ipc_refusal() const;

   private:
    // One LAMMPS brick swap as this rank sees it.
    struct Swap {
      bool self = false;
      int send_to = -1, n_send = 0, send_begin = 0;    // its rows: m_send_roots[send_begin ..)
      int recv_from = -1, n_recv = 0, first = 0;    // ghosts [first, first + n_recv)
      int target_begin = 0, n_targets = 0;    // reverse: m_rev_targets[target_begin ..)
    };
    DeviceStage &m_stage;
    std::vector<Swap> m_swaps;
    // Every MPI swap's send rows (roots), and for the reverse the distinct roots a swap adds
    // into with the received rows of each (m_rev_q[m_rev_group_begin[t] .. m_rev_group_begin[t +
    // 1]) for target t), so that equal roots add without races. Host copies, and on the device.
    std::vector<int> m_send_roots, m_rev_targets, m_rev_group_begin, m_rev_q;
    DeviceInts m_d_send_roots, m_d_rev_targets, m_d_rev_group_begin, m_d_rev_q;
    // One swap's rows in pinned memory (what MPI sends / receives) and on the device.
    PinnedWords m_host_send, m_host_recv;
    DeviceWords m_swap_rows;
    bool m_want_peer = false;    // exchange_transport: try CUDA IPC
    bool m_use_peer = false;    // ... and the last bind could (all ranks)
    std::unique_ptr<PeerOutbox> m_peer;

    void build_swaps();
    void forward_over_mpi();
    void forward_over_ipc();
    void reverse_over_mpi();
    void reverse_over_ipc();
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
