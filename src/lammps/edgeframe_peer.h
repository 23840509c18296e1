/* -*- c++ -*- ----------------------------------------------------------
   CUDA IPC transport for the exchange's direct swaps (issue #8): the
   default where the engine runs on CUDA (exchange_transport mpi
   turns it off, cuda-ipc asks for it by name). Measured on two H200s of
   one node (doc/performance.md "Two H200s: scaling"): the exchange per
   force call takes 13.2 -> 2.7 ms at 2 x 32 768 atoms, weak scaling 83 -> 93 %.

   The direct MPI swaps copy each swap's rows device -> pinned host ->
   MPI -> pinned host -> device. Ranks on one node whose GPUs can reach
   each other's memory (NVLink or PCIe peer access) can skip the host: each
   rank keeps one device buffer, its outbox, exported with
   cudaIpcGetMemHandle, and opens its swap partners' outboxes. One swap:
   the rank fills its outbox with the rows it sends (the same gather as
   before), tells the receiving rank "ready" (a one-double MPI message),
   waits for the sending rank's "ready", copies that rank's outbox straight
   into its own device stage (cudaMemcpyAsync, device to device), and then
   swaps "done" messages, after which each outbox may be refilled. Only the
   receiver reads; nothing writes into another rank's memory.

   bind() is collective and decides on every rank together: IPC only
   where all ranks share one node and every rank could open every
   partner's outbox; otherwise every rank keeps the MPI transport (and
   why() says why). Host builds compile a stand-in that is never usable.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_PEER_H
#define LMP_EDGEFRAME_PEER_H

#include <mpi.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace LAMMPS_NS {
namespace edgeframe_glue {

  class PeerOutbox {
   public:
    explicit PeerOutbox(MPI_Comm world);    // collective
    ~PeerOutbox();
    PeerOutbox(const PeerOutbox &) = delete;
    PeerOutbox &operator=(const PeerOutbox &) = delete;

    // Collective. Room for `words` doubles in this rank's outbox (grown together on all ranks),
    // and the outboxes of `partners` (ranks) opened. Returns the same on every rank: whether
    // every rank can swap with all its partners this way; if not, why() says why.
    bool bind(std::size_t words, const std::vector<int> &partners);
    const std::string &why() const { return m_why; }

    double *outbox() const { return m_outbox; }    // device memory, this rank's

    // One swap, called by this rank, `to` and `from` together (in LAMMPS' swap order): this
    // rank's outbox holds send_words doubles for `to` (written, and the device fenced);
    // recv_words doubles of `from`'s outbox are copied to dst (this rank's device memory).
    void swap(std::size_t send_words, int to, double *dst, std::size_t recv_words, int from);

   private:
    MPI_Comm m_world;
    bool m_one_node = false;    // all ranks share one node
    std::string m_why;
    double *m_outbox = nullptr;
    std::size_t m_capacity = 0;    // words, the same on every rank
    std::vector<char> m_handles;    // every rank's outbox handle, from the last growth
    std::map<int, double *> m_peer;    // opened partner outboxes
    void *m_stream = nullptr;    // cudaStream_t of the copies
    void close_peers();
    void grow(std::size_t words);    // collective
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
