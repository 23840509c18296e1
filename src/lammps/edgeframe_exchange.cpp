#include "edgeframe_exchange.h"

#include "comm.h"
#include "pair.h"

#include "edgeframe_node_map.h"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

using namespace LAMMPS_NS;
using namespace LAMMPS_NS::edgeframe_glue;

namespace {

using EngineMem = Kokkos::DefaultExecutionSpace::memory_space;
constexpr bool kEngineMemoryIsHost = Kokkos::SpaceAccessibility<Kokkos::HostSpace, EngineMem>::accessible;

// The rows as host memory: the engine's own pointer on host builds, else a staged copy.
char *host_rows(const edgeframe::NodeRows &r, std::vector<char> &copy)
{
  const std::size_t bytes = std::size_t(r.rows) * r.width * r.element_size();
  if constexpr (kEngineMemoryIsHost) {
    (void) copy;
    (void) bytes;
    return static_cast<char *>(r.data);
  } else {
    copy.resize(bytes);
    Kokkos::deep_copy(Kokkos::View<char *, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(copy.data(), bytes),
                      Kokkos::View<char *, EngineMem, Kokkos::MemoryUnmanaged>(static_cast<char *>(r.data), bytes));
    return copy.data();
  }
}

void rows_back(const edgeframe::NodeRows &r, const std::vector<char> &copy)
{
  if constexpr (!kEngineMemoryIsHost) {
    const std::size_t bytes = std::size_t(r.rows) * r.width * r.element_size();
    Kokkos::deep_copy(Kokkos::View<char *, EngineMem, Kokkos::MemoryUnmanaged>(static_cast<char *>(r.data), bytes),
                      Kokkos::View<const char *, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(copy.data(), bytes));
  } else {
    (void) r;
    (void) copy;
  }
}

template <class T>
void to_stage(const T *row, double *stage, int width)
{
  for (int c = 0; c < width; c++) stage[c] = static_cast<double>(row[c]);
}

// Values that came through the stage from float rows are floats widened exactly, except sums of
// several ghosts' gradients (reverse), which round once here.
template <class T>
void from_stage(const double *stage, T *row, int width)
{
  for (int c = 0; c < width; c++) row[c] = static_cast<T>(stage[c]);
}

}    // namespace

void FeatureExchange::bind(const NodeMap *nodes, int nall, int width)
{
  m_nodes = nodes;
  m_nall = nall;
  m_width = width;
  m_stage.resize(std::size_t(nall) * width);
}

void FeatureExchange::forward(const edgeframe::NodeRows &h)
{
  const int n_nodes = m_nodes ? m_nodes->n_nodes() : 0;
  if (h.rows != n_nodes || (n_nodes > 0 && h.width != m_width))
    throw std::runtime_error("edgeframe exchange: " + std::to_string(h.rows) + " x " + std::to_string(h.width) +
                             " feature rows for " + std::to_string(n_nodes) + " nodes of width " +
                             std::to_string(m_width));
  ++m_calls;
  std::fill(m_stage.begin(), m_stage.end(), 0.0);
  char *rows = n_nodes ? host_rows(h, m_host) : nullptr;
  const std::size_t row_bytes = std::size_t(h.width) * h.element_size();
  const int n_local = m_nodes ? m_nodes->n_local : 0;
  for (int k = 0; k < n_local; k++) {
    double *stage = m_stage.data() + std::size_t(m_nodes->atom_of_node[k]) * m_width;
    if (h.type == edgeframe::RowType::f64)
      to_stage(reinterpret_cast<const double *>(rows + k * row_bytes), stage, m_width);
    else
      to_stage(reinterpret_cast<const float *>(rows + k * row_bytes), stage, m_width);
  }
  m_comm->forward_comm(m_pair);
  for (int k = n_local; k < n_nodes; k++) {
    const double *stage = m_stage.data() + std::size_t(m_nodes->atom_of_node[k]) * m_width;
    if (h.type == edgeframe::RowType::f64)
      from_stage(stage, reinterpret_cast<double *>(rows + k * row_bytes), m_width);
    else
      from_stage(stage, reinterpret_cast<float *>(rows + k * row_bytes), m_width);
  }
  if (n_nodes) rows_back(h, m_host);
}

void FeatureExchange::reverse(const edgeframe::NodeRows &grad)
{
  const int n_nodes = m_nodes ? m_nodes->n_nodes() : 0;
  if (grad.rows != n_nodes || (n_nodes > 0 && grad.width != m_width))
    throw std::runtime_error("edgeframe exchange: " + std::to_string(grad.rows) + " x " + std::to_string(grad.width) +
                             " gradient rows for " + std::to_string(n_nodes) + " nodes of width " +
                             std::to_string(m_width));
  ++m_calls;
  std::fill(m_stage.begin(), m_stage.end(), 0.0);
  char *rows = n_nodes ? host_rows(grad, m_host) : nullptr;
  const std::size_t row_bytes = std::size_t(grad.width) * grad.element_size();
  const int n_local = m_nodes ? m_nodes->n_local : 0;
  for (int k = 0; k < n_nodes; k++) {
    double *stage = m_stage.data() + std::size_t(m_nodes->atom_of_node[k]) * m_width;
    if (grad.type == edgeframe::RowType::f64)
      to_stage(reinterpret_cast<const double *>(rows + k * row_bytes), stage, m_width);
    else
      to_stage(reinterpret_cast<const float *>(rows + k * row_bytes), stage, m_width);
  }
  m_comm->reverse_comm(m_pair);
  for (int k = 0; k < n_local; k++) {
    const double *stage = m_stage.data() + std::size_t(m_nodes->atom_of_node[k]) * m_width;
    if (grad.type == edgeframe::RowType::f64)
      from_stage(stage, reinterpret_cast<double *>(rows + k * row_bytes), m_width);
    else
      from_stage(stage, reinterpret_cast<float *>(rows + k * row_bytes), m_width);
  }
  if (n_nodes > n_local) std::memset(rows + n_local * row_bytes, 0, (n_nodes - n_local) * row_bytes);
  if (n_nodes) rows_back(grad, m_host);
}

int FeatureExchange::pack_forward(int n, const int *list, double *buf) const
{
  for (int q = 0; q < n; q++)
    std::memcpy(buf + std::size_t(q) * m_width, m_stage.data() + std::size_t(list[q]) * m_width,
                m_width * sizeof(double));
  return n * m_width;
}

void FeatureExchange::unpack_forward(int n, int first, const double *buf)
{
  std::memcpy(m_stage.data() + std::size_t(first) * m_width, buf, std::size_t(n) * m_width * sizeof(double));
}

int FeatureExchange::pack_reverse(int n, int first, double *buf) const
{
  std::memcpy(buf, m_stage.data() + std::size_t(first) * m_width, std::size_t(n) * m_width * sizeof(double));
  return n * m_width;
}

void FeatureExchange::unpack_reverse(int n, const int *list, const double *buf)
{
  for (int q = 0; q < n; q++) {
    double *stage = m_stage.data() + std::size_t(list[q]) * m_width;
    const double *in = buf + std::size_t(q) * m_width;
    for (int c = 0; c < m_width; c++) stage[c] += in[c];
  }
}
