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

// Node rows [begin, end) into their atoms' stage rows, byte for byte (stage rows are
// stage_words doubles per LAMMPS atom and hold the row's bytes: a float row travels as floats,
// two per double, so no conversion and half the bytes of widening it).
void rows_to_stage(const char *rows, std::size_t row_bytes, const NodeMap &nodes, int begin, int end, double *stage,
                   int stage_words)
{
  for (int k = begin; k < end; k++)
    std::memcpy(stage + std::size_t(nodes.atom_of_node[k]) * stage_words, rows + k * row_bytes, row_bytes);
}

// Their atoms' stage rows back into node rows [begin, end).
void stage_to_rows(const double *stage, int stage_words, const NodeMap &nodes, int begin, int end, char *rows,
                   std::size_t row_bytes)
{
  for (int k = begin; k < end; k++)
    std::memcpy(rows + k * row_bytes, stage + std::size_t(nodes.atom_of_node[k]) * stage_words, row_bytes);
}

// in[0..n) added onto out[0..n), both the rows' element type stored in doubles' bytes.
template <class T>
void add_row(const double *in, double *out, int n)
{
  const T *a = reinterpret_cast<const T *>(in);
  T *b = reinterpret_cast<T *>(out);
  for (int c = 0; c < n; c++) b[c] += a[c];
}

void check_rows(const edgeframe::NodeRows &r, int n_nodes, int width, edgeframe::RowType type, const char *what)
{
  if (r.rows != n_nodes || (n_nodes > 0 && (r.width != width || r.type != type)))
    throw std::runtime_error("edgeframe exchange: " + std::to_string(r.rows) + " x " + std::to_string(r.width) + " " +
                             what + " rows for " + std::to_string(n_nodes) + " nodes of width " +
                             std::to_string(width) + (r.type != type ? " (and another element type)" : ""));
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

int FeatureExchange::stage_words(int width, edgeframe::RowType type)
{
  edgeframe::NodeRows r;
  r.type = type;
  return int((std::size_t(width) * r.element_size() + sizeof(double) - 1) / sizeof(double));
}

void FeatureExchange::bind(const NodeMap *nodes, int nall, int width, edgeframe::RowType type)
{
  m_nodes = nodes;
  m_nall = nall;
  m_width = width;
  m_type = type;
  m_words = stage_words(width, type);
  m_stage.resize(std::size_t(nall) * m_words);
  // Atoms that are no node (NULL types, pruned ghosts, every atom of a rank without nodes) still
  // relay reverse communication: their stage rows must add nothing.
  m_non_nodes.clear();
  const int mapped = nodes ? std::min<int>(nall, int(nodes->node_of_atom.size())) : 0;
  for (int a = 0; a < nall; a++)
    if (a >= mapped || nodes->node_of_atom[a] < 0) m_non_nodes.push_back(a);
}

void FeatureExchange::forward(const edgeframe::NodeRows &h)
{
  const int n_nodes = m_nodes ? m_nodes->n_nodes() : 0;
  check_rows(h, n_nodes, m_width, m_type, "feature");
  ++m_calls;
  // No clearing: the swaps read owned atoms' rows (written here) and ghosts received by earlier
  // swaps (written by unpack_forward); every ghost row is overwritten by its swap.
  const int n_local = m_nodes ? m_nodes->n_local : 0;
  const std::size_t row_bytes = std::size_t(m_width) * h.element_size();
  char *rows = n_nodes ? rows_to_host(h, 0, n_local) : nullptr;    // only the owned rows are read
  if (n_nodes) rows_to_stage(rows, row_bytes, *m_nodes, 0, n_local, m_stage.data(), m_words);      // owners out
  m_comm->forward_comm(m_pair);
  if (n_nodes) stage_to_rows(m_stage.data(), m_words, *m_nodes, n_local, n_nodes, rows, row_bytes);  // ghosts in
  if (n_nodes) rows_to_engine(h, rows, n_local, n_nodes);    // only the ghost rows changed
}

void FeatureExchange::reverse(const edgeframe::NodeRows &grad)
{
  const int n_nodes = m_nodes ? m_nodes->n_nodes() : 0;
  check_rows(grad, n_nodes, m_width, m_type, "gradient");
  ++m_calls;
  char *rows = n_nodes ? rows_to_host(grad, 0, n_nodes) : nullptr;
  const std::size_t row_bytes = std::size_t(m_width) * grad.element_size();
  const int n_local = m_nodes ? m_nodes->n_local : 0;
  if (n_nodes) rows_to_stage(rows, row_bytes, *m_nodes, 0, n_nodes, m_stage.data(), m_words);   // every row out
  for (int a : m_non_nodes) std::memset(m_stage.data() + std::size_t(a) * m_words, 0, m_words * sizeof(double));
  m_comm->reverse_comm(m_pair);
  if (n_nodes) stage_to_rows(m_stage.data(), m_words, *m_nodes, 0, n_local, rows, row_bytes);  // owners' sums in
  if (n_nodes > n_local) std::memset(rows + n_local * row_bytes, 0, (n_nodes - n_local) * row_bytes);
  if (n_nodes) rows_to_engine(grad, rows, 0, n_nodes);
}

int FeatureExchange::pack_forward(int n, const int *list, double *buf) const
{
  for (int q = 0; q < n; q++)
    std::memcpy(buf + std::size_t(q) * m_words, m_stage.data() + std::size_t(list[q]) * m_words,
                m_words * sizeof(double));
  return n * m_words;
}

void FeatureExchange::unpack_forward(int n, int first, const double *buf)
{
  std::memcpy(m_stage.data() + std::size_t(first) * m_words, buf, std::size_t(n) * m_words * sizeof(double));
}

int FeatureExchange::pack_reverse(int n, int first, double *buf) const
{
  std::memcpy(buf, m_stage.data() + std::size_t(first) * m_words, std::size_t(n) * m_words * sizeof(double));
  return n * m_words;
}

void FeatureExchange::unpack_reverse(int n, const int *list, const double *buf)
{
  for (int q = 0; q < n; q++) {
    double *stage = m_stage.data() + std::size_t(list[q]) * m_words;
    const double *in = buf + std::size_t(q) * m_words;
    if (m_type == edgeframe::RowType::f64) add_row<double>(in, stage, m_width);
    else add_row<float>(in, stage, m_width);
  }
}
