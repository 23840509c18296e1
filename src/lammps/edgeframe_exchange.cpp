#include "edgeframe_exchange.h"

#include "comm.h"
#include "pair.h"

#include "edgeframe_node_map.h"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

using namespace LAMMPS_NS;
using namespace LAMMPS_NS::edgeframe_glue;

namespace {

using EngineMem = Kokkos::DefaultExecutionSpace::memory_space;
constexpr bool kEngineMemoryIsHost = Kokkos::SpaceAccessibility<Kokkos::HostSpace, EngineMem>::accessible;

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

// Node rows [begin, end) into their atoms' stage rows (stage is [nall, width], per LAMMPS atom).
void rows_to_stage(const edgeframe::NodeRows &r, const char *rows, const NodeMap &nodes, int begin, int end,
                   double *stage, int width)
{
  const std::size_t row_bytes = std::size_t(r.width) * r.element_size();
  for (int k = begin; k < end; k++) {
    double *out = stage + std::size_t(nodes.atom_of_node[k]) * width;
    if (r.type == edgeframe::RowType::f64)
      to_stage(reinterpret_cast<const double *>(rows + k * row_bytes), out, width);
    else
      to_stage(reinterpret_cast<const float *>(rows + k * row_bytes), out, width);
  }
}

// Their atoms' stage rows back into node rows [begin, end).
void stage_to_rows(const double *stage, const NodeMap &nodes, int begin, int end, const edgeframe::NodeRows &r,
                   char *rows, int width)
{
  const std::size_t row_bytes = std::size_t(r.width) * r.element_size();
  for (int k = begin; k < end; k++) {
    const double *in = stage + std::size_t(nodes.atom_of_node[k]) * width;
    if (r.type == edgeframe::RowType::f64)
      from_stage(in, reinterpret_cast<double *>(rows + k * row_bytes), width);
    else
      from_stage(in, reinterpret_cast<float *>(rows + k * row_bytes), width);
  }
}

void check_rows(const edgeframe::NodeRows &r, int n_nodes, int width, const char *what)
{
  if (r.rows != n_nodes || (n_nodes > 0 && r.width != width))
    throw std::runtime_error("edgeframe exchange: " + std::to_string(r.rows) + " x " + std::to_string(r.width) + " " +
                             what + " rows for " + std::to_string(n_nodes) + " nodes of width " +
                             std::to_string(width));
}

}    // namespace

struct FeatureExchange::PinnedRows {
  Kokkos::View<char *, Kokkos::SharedHostPinnedSpace> bytes;    // grown on demand, never shrunk
};

FeatureExchange::FeatureExchange(Comm *comm, Pair *pair) :
    m_comm(comm), m_pair(pair), m_pinned(std::make_unique<PinnedRows>())
{
  const char *force = std::getenv("EDGEFRAME_STAGE_EXCHANGE");
  m_staged = !kEngineMemoryIsHost || (force != nullptr && std::strcmp(force, "1") == 0);
}

FeatureExchange::~FeatureExchange() = default;

char *FeatureExchange::rows_to_host(const edgeframe::NodeRows &r, int begin, int end)
{
  if (!m_staged) return static_cast<char *>(r.data);
  const std::size_t row_bytes = std::size_t(r.width) * r.element_size(), all = std::size_t(r.rows) * row_bytes;
  if (m_pinned->bytes.extent(0) < all)
    m_pinned->bytes = Kokkos::View<char *, Kokkos::SharedHostPinnedSpace>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "edgeframe::exchange pinned rows"), all);
  if (end > begin) {
    const auto range = std::make_pair(begin * row_bytes, end * row_bytes);
    Kokkos::deep_copy(Kokkos::subview(m_pinned->bytes, range),
                      Kokkos::subview(Kokkos::View<const char *, EngineMem, Kokkos::MemoryUnmanaged>(
                                          static_cast<const char *>(r.data), all), range));
  }
  return m_pinned->bytes.data();
}

void FeatureExchange::rows_to_engine(const edgeframe::NodeRows &r, const char *host, int begin, int end)
{
  if (!m_staged || end <= begin) return;
  const std::size_t row_bytes = std::size_t(r.width) * r.element_size(), all = std::size_t(r.rows) * row_bytes;
  const auto range = std::make_pair(begin * row_bytes, end * row_bytes);
  Kokkos::deep_copy(
      Kokkos::subview(Kokkos::View<char *, EngineMem, Kokkos::MemoryUnmanaged>(static_cast<char *>(r.data), all), range),
      Kokkos::subview(Kokkos::View<const char *, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(host, all), range));
}

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
  check_rows(h, n_nodes, m_width, "feature");
  ++m_calls;
  std::fill(m_stage.begin(), m_stage.end(), 0.0);
  const int n_local = m_nodes ? m_nodes->n_local : 0;
  char *rows = n_nodes ? rows_to_host(h, 0, n_local) : nullptr;    // only the owned rows are read
  if (n_nodes) rows_to_stage(h, rows, *m_nodes, 0, n_local, m_stage.data(), m_width);      // owners out
  m_comm->forward_comm(m_pair);
  if (n_nodes) stage_to_rows(m_stage.data(), *m_nodes, n_local, n_nodes, h, rows, m_width);  // ghosts in
  if (n_nodes) rows_to_engine(h, rows, n_local, n_nodes);    // only the ghost rows changed
}

void FeatureExchange::reverse(const edgeframe::NodeRows &grad)
{
  const int n_nodes = m_nodes ? m_nodes->n_nodes() : 0;
  check_rows(grad, n_nodes, m_width, "gradient");
  ++m_calls;
  std::fill(m_stage.begin(), m_stage.end(), 0.0);
  char *rows = n_nodes ? rows_to_host(grad, 0, n_nodes) : nullptr;
  const std::size_t row_bytes = std::size_t(grad.width) * grad.element_size();
  const int n_local = m_nodes ? m_nodes->n_local : 0;
  if (n_nodes) rows_to_stage(grad, rows, *m_nodes, 0, n_nodes, m_stage.data(), m_width);   // every row out
  m_comm->reverse_comm(m_pair);
  if (n_nodes) stage_to_rows(m_stage.data(), *m_nodes, 0, n_local, grad, rows, m_width);  // owners' sums in
  if (n_nodes > n_local) std::memset(rows + n_local * row_bytes, 0, (n_nodes - n_local) * row_bytes);
  if (n_nodes) rows_to_engine(grad, rows, 0, n_nodes);
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
