#include "edgeframe_peer.h"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <stdexcept>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

using namespace LAMMPS_NS::edgeframe_glue;

namespace {

// Whether every rank says yes (collective).
bool all_ranks(bool mine, MPI_Comm world)
{
  int in = mine ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, world);
  return out == 1;
}

#if defined(KOKKOS_ENABLE_CUDA)
constexpr int kReadyTag = 0x6567, kDoneTag = 0x6568;    // after kDirectTag 0x6566 (exchange_direct_swaps.cpp)

// A one-double message to `to` and one from `from` (either may be -1: none), as mpi_swap
// (exchange_direct_swaps.cpp).
void handshake(int to, int from, int tag, MPI_Comm world)
{
  double token = 1.0, got = 0.0;
  MPI_Request request;
  if (from >= 0) MPI_Irecv(&got, 1, MPI_DOUBLE, from, tag, world, &request);
  if (to >= 0) MPI_Send(&token, 1, MPI_DOUBLE, to, tag, world);
  if (from >= 0) MPI_Wait(&request, MPI_STATUS_IGNORE);
}

void check(cudaError_t err, const char *what)
{
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("edgeframe exchange (CUDA IPC): ") + what + ": " + cudaGetErrorString(err));
}
#endif

}    // namespace

PeerOutbox::PeerOutbox(MPI_Comm world) : m_world(world)
{
  // One node: the ranks of the shared-memory split are all ranks (fixed for the run).
  MPI_Comm node;
  MPI_Comm_split_type(m_world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0, world_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_size(m_world, &world_size);
  MPI_Comm_free(&node);
  m_one_node = node_size == world_size;    // the same on every rank
}

PeerOutbox::~PeerOutbox()
{
#if defined(KOKKOS_ENABLE_CUDA)
  // No collective here (destructors may run on one rank's error path): close what this rank
  // opened and free its own outbox; the driver keeps an allocation another process still maps.
  for (auto &p : m_peer) cudaIpcCloseMemHandle(p.second);
  if (m_outbox) cudaFree(m_outbox);
  if (m_stream) cudaStreamDestroy(static_cast<cudaStream_t>(m_stream));
#endif
}

void PeerOutbox::close_peers()
{
#if defined(KOKKOS_ENABLE_CUDA)
  for (auto &p : m_peer) check(cudaIpcCloseMemHandle(p.second), "closing a partner's outbox");
#endif
  m_peer.clear();
}

void PeerOutbox::grow(std::size_t words)
{
#if defined(KOKKOS_ENABLE_CUDA)
  // Every rank closes its mappings before any rank frees the buffer behind them.
  close_peers();
  MPI_Barrier(m_world);
  if (m_outbox) check(cudaFree(m_outbox), "freeing the outbox");
  m_outbox = nullptr;
  const std::size_t capacity = words + words / 4;    // headroom: the swaps grow a little between builds
  check(cudaMalloc(reinterpret_cast<void **>(&m_outbox), capacity * sizeof(double)), "allocating the outbox");
  cudaIpcMemHandle_t handle;
  check(cudaIpcGetMemHandle(&handle, m_outbox), "exporting the outbox");
  int nprocs = 1;
  MPI_Comm_size(m_world, &nprocs);
  m_handles.resize(std::size_t(nprocs) * sizeof(handle));
  MPI_Allgather(&handle, int(sizeof(handle)), MPI_BYTE, m_handles.data(), int(sizeof(handle)), MPI_BYTE, m_world);
  m_capacity = capacity;
#else
  (void) words;
#endif
}

bool PeerOutbox::bind(std::size_t words, const std::vector<int> &partners)
{
  m_why.clear();
#if defined(KOKKOS_ENABLE_CUDA)
  if (!m_one_node) {
    m_why = "the ranks are on more than one node";
    return false;
  }
  unsigned long long need = words, most = 0;
  MPI_Allreduce(&need, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, m_world);
  if (most > m_capacity) grow(std::size_t(most));
  if (!m_stream) {
    cudaStream_t s;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating the copy stream");
    m_stream = s;
  }
  // Open the partners' outboxes not yet open; an error (no peer access between the GPUs, a GPU
  // this process cannot see) makes every rank fall back.
  std::string error;
  for (int r : partners) {
    if (m_peer.count(r)) continue;
    cudaIpcMemHandle_t handle;
    std::copy_n(m_handles.data() + std::size_t(r) * sizeof(handle), sizeof(handle), reinterpret_cast<char *>(&handle));
    void *ptr = nullptr;
    const cudaError_t err = cudaIpcOpenMemHandle(&ptr, handle, cudaIpcMemLazyEnablePeerAccess);
    if (err != cudaSuccess) {
      cudaGetLastError();    // clear it: the MPI transport goes on
      error = "rank " + std::to_string(r) + "'s outbox could not be opened (" + cudaGetErrorString(err) + ")";
      break;
    }
    m_peer[r] = static_cast<double *>(ptr);
  }
  if (!all_ranks(error.empty(), m_world)) {
    m_why = error.empty() ? "another rank could not open a partner's outbox" : error;
    return false;
  }
  return true;
#else
  (void) words;
  (void) partners;
  m_why = "not a CUDA build";
  return all_ranks(false, m_world);
#endif
}

void PeerOutbox::swap(std::size_t send_words, int to, double *dst, std::size_t recv_words, int from)
{
#if defined(KOKKOS_ENABLE_CUDA)
  handshake(send_words ? to : -1, recv_words ? from : -1, kReadyTag, m_world);
  if (recv_words) {
    const auto it = m_peer.find(from);
    if (it == m_peer.end())
      throw std::logic_error("edgeframe exchange (CUDA IPC): rank " + std::to_string(from) + "'s outbox is not open");
    auto stream = static_cast<cudaStream_t>(m_stream);
    check(cudaMemcpyAsync(dst, it->second, recv_words * sizeof(double), cudaMemcpyDeviceToDevice, stream),
          "copying a partner's rows");
    check(cudaStreamSynchronize(stream), "waiting for a partner's rows");
  }
  handshake(recv_words ? from : -1, send_words ? to : -1, kDoneTag, m_world);
#else
  (void) send_words;
  (void) to;
  (void) dst;
  (void) recv_words;
  (void) from;
  throw std::logic_error("edgeframe exchange (CUDA IPC): not a CUDA build");
#endif
}
