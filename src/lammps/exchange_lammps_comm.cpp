#include "exchange_lammps_comm.h"

#include "comm.h"

#include <algorithm>
#include <cstring>

using namespace LAMMPS_NS;
using namespace LAMMPS_NS::edgeframe_glue;

// ---- the callbacks: swaps to this rank skipped, atoms addressed through their roots -----------

int LammpsCommTransport::pack_forward(int n, const int *list, double *buf)
{
  const SwapTrace &trace = m_x.trace;
  const int words = m_x.layout.words;
  if (n > 0 && trace.self_list(list)) return n * words;    // its unpack is skipped too: nothing to write
  const SplitTimer::Scope timing(m_x.timer, &ExchangeSplit::host_pack);
  const double *stage = host_stage();
  const std::size_t row = std::size_t(words) * sizeof(double);
  m_x.for_rows(n, row, [&](int q) {
    std::memcpy(buf + std::size_t(q) * words, stage + std::size_t(trace.root(list[q])) * words, row);
  });
  m_x.timer.add(&ExchangeSplit::host_rows, n);
  return n * words;
}

void LammpsCommTransport::unpack_forward(int n, int first, const double *buf)
{
  const int words = m_x.layout.words;
  if (n > 0 && m_x.trace.root(first) != first) return;    // a self swap's ghosts: not their own roots
  const SplitTimer::Scope timing(m_x.timer, &ExchangeSplit::host_pack);
  double *stage = host_stage() + std::size_t(first) * words;
  const std::size_t row = std::size_t(words) * sizeof(double);
  m_x.for_rows(n, row, [&](int q) { std::memcpy(stage + std::size_t(q) * words, buf + std::size_t(q) * words, row); });
  m_x.timer.add(&ExchangeSplit::host_rows, n);
}

int LammpsCommTransport::pack_reverse(int n, int first, double *buf)
{
  const int words = m_x.layout.words;
  // A reverse swap to this rank sends back ghosts it made, which are not their own roots.
  if (n > 0 && m_x.trace.root(first) != first) return n * words;
  const SplitTimer::Scope timing(m_x.timer, &ExchangeSplit::host_pack);
  const double *stage = host_stage() + std::size_t(first) * words;
  const std::size_t row = std::size_t(words) * sizeof(double);
  m_x.for_rows(n, row, [&](int q) { std::memcpy(buf + std::size_t(q) * words, stage + std::size_t(q) * words, row); });
  m_x.timer.add(&ExchangeSplit::host_rows, n);
  return n * words;
}

void LammpsCommTransport::unpack_reverse(int n, const int *list, const double *buf)
{
  const SwapTrace &trace = m_x.trace;
  const int words = m_x.layout.words, width = m_x.layout.width;
  if (n > 0 && trace.self_list(list)) return;    // a self swap's list: its pack sent nothing
  const SplitTimer::Scope timing(m_x.timer, &ExchangeSplit::host_pack);
  double *stage = host_stage();
  const bool f64 = m_x.layout.type == edgeframe::RowType::f64;
  const auto add = [&](int q) {
    double *row = stage + std::size_t(trace.root(list[q])) * words;
    const double *in = buf + std::size_t(q) * words;
    if (f64)
      add_row<double>(in, row, width);
    else
      add_row<float>(in, row, width);
  };
  // The atoms of one swap's list are distinct, but with self swaps two of them can share a root
  // (an atom and its periodic image sent in one swap): then the rows add one after another.
  // (The check only where threads would run.)
  const std::size_t row_bytes = std::size_t(words) * sizeof(double);
  if (trace.has_self_swaps() && (!m_x.for_rows.threaded(n, row_bytes) || !distinct_roots(n, list)))
    for (int q = 0; q < n; q++) add(q);
  else
    m_x.for_rows(n, row_bytes, add);
  m_x.timer.add(&ExchangeSplit::host_rows, n);
}

bool LammpsCommTransport::distinct_roots(int n, const int *list)
{
  const SwapTrace &trace = m_x.trace;
  if (m_root_seen.size() < std::size_t(trace.atoms())) m_root_seen.assign(trace.atoms(), 0);
  if (++m_root_stamp == 0) {    // wrapped: old stamps could collide
    std::fill(m_root_seen.begin(), m_root_seen.end(), 0);
    m_root_stamp = 1;
  }
  for (int q = 0; q < n; q++) {
    unsigned &seen = m_root_seen[trace.root(list[q])];
    if (seen == m_root_stamp) return false;
    seen = m_root_stamp;
  }
  return true;
}

// ---- host stage: node rows in host memory -------------------------------------------------------

void HostStageTransport::bind()
{
  m_stage.resize(std::size_t(m_x.layout.nall) * m_x.layout.words);
}

void HostStageTransport::forward(const edgeframe::NodeRows &h)
{
  const ExchangeLayout &l = m_x.layout;
  SplitTimer &timer = m_x.timer;
  // No clearing: the swaps read owned atoms' rows (written here) and ghosts received by earlier
  // swaps (written by unpack_forward); every ghost row is overwritten by its swap.
  const std::size_t row_bytes = std::size_t(l.width) * h.element_size();
  char *rows = static_cast<char *>(h.data);
  timer.mark(nullptr);
  if (l.n_nodes)
    rows_to_stage(m_x.for_rows, rows, row_bytes, l.root_of_node.data(), 0, l.n_local, m_stage.data(),
                  l.words);    // owners out
  timer.mark(&ExchangeSplit::reorder);
  m_x.comm->forward_comm(m_x.pair);
  timer.mark(&ExchangeSplit::comm);
  if (l.n_nodes)
    stage_to_rows(m_x.for_rows, m_stage.data(), l.words, l.root_of_node.data(), l.n_local, l.n_nodes, rows,
                  row_bytes);    // ghosts in (from their roots)
  timer.mark(&ExchangeSplit::reorder);
}

void HostStageTransport::reverse(const edgeframe::NodeRows &grad)
{
  const ExchangeLayout &l = m_x.layout;
  SplitTimer &timer = m_x.timer;
  const std::size_t row_bytes = std::size_t(l.width) * grad.element_size();
  char *rows = static_cast<char *>(grad.data);
  timer.mark(nullptr);
  // Every row out, summed onto its root; zero rows for atoms that only relay.
  sum_rows_to_atoms(m_x.for_rows, l.type, rows, row_bytes, l.sum_begin, l.sum_nodes, l.nall, m_stage.data(), l.words,
                    l.width);
  timer.mark(&ExchangeSplit::reorder);
  m_x.comm->reverse_comm(m_x.pair);
  timer.mark(&ExchangeSplit::comm);
  if (l.n_nodes)
    stage_to_rows(m_x.for_rows, m_stage.data(), l.words, l.root_of_node.data(), 0, l.n_local, rows,
                  row_bytes);    // owners' sums in
  if (l.n_nodes > l.n_local) std::memset(rows + l.n_local * row_bytes, 0, (l.n_nodes - l.n_local) * row_bytes);
  timer.mark(&ExchangeSplit::reorder);
}

// ---- pinned stage: node rows in engine memory, LAMMPS' swaps on a pinned host copy ------------

void PinnedStageTransport::bind()
{
  m_stage.bind();
  const std::size_t words = std::size_t(m_x.layout.nall) * m_x.layout.words;
  if (m_host.extent(0) < words) m_host = uninitialised<PinnedWords>("edgeframe::exchange stage (pinned)", words);
}

void PinnedStageTransport::forward(const edgeframe::NodeRows &h)
{
  const ExchangeLayout &l = m_x.layout;
  SplitTimer &timer = m_x.timer;
  const std::size_t owned = std::size_t(l.nlocal) * l.words, all = std::size_t(l.nall) * l.words;
  m_stage.forward(h, timer, [&] {
    copy_span(m_host, 0, m_stage.view(), 0, owned);    // deep_copy fences: the gather is done
    timer.mark(&ExchangeSplit::bus);
    m_x.comm->forward_comm(m_x.pair);
    timer.mark(&ExchangeSplit::comm);
    copy_span(m_stage.view(), owned, m_host, owned, all - owned);
    timer.mark(&ExchangeSplit::bus);
    timer.add(&ExchangeSplit::bus_bytes, double(all) * sizeof(double));
  });
}

void PinnedStageTransport::reverse(const edgeframe::NodeRows &grad)
{
  const ExchangeLayout &l = m_x.layout;
  SplitTimer &timer = m_x.timer;
  const std::size_t owned = std::size_t(l.nlocal) * l.words, all = std::size_t(l.nall) * l.words;
  m_stage.reverse(grad, timer, [&] {
    copy_span(m_host, 0, m_stage.view(), 0, all);
    timer.mark(&ExchangeSplit::bus);
    m_x.comm->reverse_comm(m_x.pair);
    timer.mark(&ExchangeSplit::comm);
    copy_span(m_stage.view(), 0, m_host, 0, owned);
    timer.mark(&ExchangeSplit::bus);
    timer.add(&ExchangeSplit::bus_bytes, double(all + owned) * sizeof(double));
  });
}
