/* -*- c++ -*- ----------------------------------------------------------
   Settings of the per-layer ghost exchange (edgeframe_exchange.h): the
   pair_style keywords exchange_*, parsed in pair_edgeframe_settings.cpp and
   documented in doc/pair_edgeframe.md "Ghost exchange settings". Every rank
   reads the same input, so every rank picks the same transport and makes
   the same collective calls.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_SETTINGS_H
#define LMP_EDGEFRAME_EXCHANGE_SETTINGS_H

#include <cstddef>

namespace LAMMPS_NS {
namespace edgeframe_glue {

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

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
