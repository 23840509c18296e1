#include "edgeframe_exchange.h"

#include "comm.h"

#include "edgeframe_node_map.h"
#include "exchange_device_comm.h"
#include "exchange_device_stage.h"
#include "exchange_direct_swaps.h"
#include "exchange_lammps_comm.h"
#include "exchange_transport.h"

#include <stdexcept>
#include <string>

using namespace LAMMPS_NS;
using namespace LAMMPS_NS::edgeframe_glue;

namespace {

void check_rows(const edgeframe::NodeRows &r, int n_nodes, int width, edgeframe::RowType type, const char *what)
{
  if (r.rows != n_nodes || (n_nodes > 0 && (r.width != width || r.type != type)))
    throw std::runtime_error("edgeframe exchange: " + std::to_string(r.rows) + " x " + std::to_string(r.width) + " " +
                             what + " rows for " + std::to_string(n_nodes) + " nodes of width " +
                             std::to_string(width) + (r.type != type ? " (and another element type)" : ""));
}

}    // namespace

FeatureExchange::FeatureExchange(Comm *comm, Pair *pair, MPI_Comm world, const ExchangeSettings &settings) :
    m_x(std::make_unique<ExchangeContext>(comm, pair, world, settings)),
    m_device_stage(std::make_unique<DeviceStage>(m_x->layout)),
    m_host_stage(std::make_unique<HostStageTransport>(*m_x)),
    m_pinned_stage(std::make_unique<PinnedStageTransport>(*m_x, *m_device_stage)),
    m_device_comm_transport(std::make_unique<DeviceCommTransport>(*m_x, *m_device_stage)),
    m_direct_swaps(std::make_unique<DirectSwapTransport>(*m_x, *m_device_stage)),
    m_staged(!kEngineMemoryIsHost || settings.stage),
    // automatic: direct where it applies (staged path, self swaps skipped, brick; measured on two
    // H200s, bench/results/benchmarks-log.md: exchange 76.9 -> 25.6 ms per force call at 110 592
    // atoms). The direct swaps need the traces of skipped self swaps (the pair style's settings()
    // refuses direct with exchange_self_swaps lammps).
    m_want_direct(settings.swaps != ExchangeSettings::Swaps::lammps && settings.skip_self_swaps)
{
}

FeatureExchange::~FeatureExchange() = default;

int FeatureExchange::stage_words(int width, edgeframe::RowType type)
{
  edgeframe::NodeRows r;
  r.type = type;
  return int((std::size_t(width) * r.element_size() + sizeof(double) - 1) / sizeof(double));
}

int FeatureExchange::host_threads() const
{
  return m_x->for_rows.threads;
}

void FeatureExchange::use_device_comm(bool on)
{
  m_device_comm = on;
}

void FeatureExchange::set_comm(Comm *comm)
{
  m_x->comm = comm;
}

bool FeatureExchange::direct_swaps_for(int width, edgeframe::RowType type) const
{
  return m_want_direct && m_staged && !m_device_comm && stage_words(width, type) >= 3 &&
         m_x->comm->style == Comm::BRICK;
}

// The transport of this bind. Its conditions are the same on every rank (pair_style keywords,
// build, comm_style), so all ranks take the same one and make the same collective calls.
ExchangeTransport &FeatureExchange::transport_for(int width, edgeframe::RowType type)
{
  if (m_device_comm) return *m_device_comm_transport;
  if (direct_swaps_for(width, type)) return *m_direct_swaps;
  if (m_staged) return *m_pinned_stage;
  return *m_host_stage;
}

ExchangeTransport &FeatureExchange::bound() const
{
  if (!m_transport) throw std::logic_error("edgeframe exchange: rows exchanged before the first bind");
  return *m_transport;
}

void FeatureExchange::bind(const NodeMap *nodes, int nlocal, int nall, int width, edgeframe::RowType type)
{
  ExchangeLayout &l = m_x->layout;
  l.nlocal = nlocal;
  l.nall = nall;
  l.width = width;
  l.type = type;
  l.words = stage_words(width, type);
  l.n_local = nodes ? nodes->n_local : 0;
  l.n_nodes = nodes ? nodes->n_nodes() : 0;
  SwapTrace &trace = m_x->trace;
  trace.reset(nall);
  {
    const SplitTimer::Scope timing(m_x->timer, &ExchangeSplit::traces);
    // Every rank traces (a collective), also one without nodes: its ghosts may be relays. With
    // LAMMPS' device communication LAMMPS packs on the device itself and all atoms are their own
    // roots; fewer than 3 words per atom cannot carry the trace.
    if (m_x->settings.skip_self_swaps && !m_device_comm && l.words >= 3) trace.trace_roots(m_x->comm, m_x->pair);

    // Node rows are staged on their atom's root. Reverse gather lists, by counting sort: the
    // nodes staged on each atom, in node order.
    const int n_nodes = l.n_nodes;
    l.root_of_node.resize(n_nodes);
    for (int k = 0; k < n_nodes; k++) l.root_of_node[k] = trace.root(nodes->atom_of_node[k]);
    l.sum_begin.assign(nall + 1, 0);
    for (int k = 0; k < n_nodes; k++) l.sum_begin[l.root_of_node[k] + 1]++;
    for (int a = 0; a < nall; a++) l.sum_begin[a + 1] += l.sum_begin[a];
    l.sum_nodes.resize(n_nodes);
    std::vector<int> next(l.sum_begin.begin(), l.sum_begin.end() - 1);
    for (int k = 0; k < n_nodes; k++) l.sum_nodes[next[l.root_of_node[k]]++] = k;

    m_transport = &transport_for(width, type);
    m_transport->bind();
  }
  m_x->timer.add(&ExchangeSplit::binds, 1.0);
}

void FeatureExchange::forward(const edgeframe::NodeRows &h)
{
  const ExchangeLayout &l = m_x->layout;
  check_rows(h, l.n_nodes, l.width, l.type, "feature");
  ++m_calls;
  bound().forward(h);
}

void FeatureExchange::reverse(const edgeframe::NodeRows &grad)
{
  const ExchangeLayout &l = m_x->layout;
  check_rows(grad, l.n_nodes, l.width, l.type, "gradient");
  ++m_calls;
  bound().reverse(grad);
}

int FeatureExchange::pack_forward(int n, const int *list, double *buf)
{
  if (m_x->trace.tracing()) return m_x->trace.pack_forward(n, list, buf);
  return bound().pack_forward(n, list, buf);
}

void FeatureExchange::unpack_forward(int n, int first, const double *buf)
{
  if (m_x->trace.tracing())
    m_x->trace.unpack_forward(n, first, buf);
  else
    bound().unpack_forward(n, first, buf);
}

int FeatureExchange::pack_reverse(int n, int first, double *buf)
{
  if (m_x->trace.tracing()) return m_x->trace.pack_reverse(n, first, buf);
  return bound().pack_reverse(n, first, buf);
}

void FeatureExchange::unpack_reverse(int n, const int *list, const double *buf)
{
  if (m_x->trace.tracing())
    m_x->trace.unpack_reverse(n, list, buf);
  else
    bound().unpack_reverse(n, list, buf);
}

int FeatureExchange::pack_forward_device(int n, const int *list, double *buf)
{
  return bound().pack_forward_device(n, list, buf);
}

void FeatureExchange::unpack_forward_device(int n, int first, const double *buf)
{
  bound().unpack_forward_device(n, first, buf);
}

int FeatureExchange::pack_reverse_device(int n, int first, double *buf)
{
  return bound().pack_reverse_device(n, first, buf);
}

void FeatureExchange::unpack_reverse_device(int n, const int *list, const double *buf)
{
  bound().unpack_reverse_device(n, list, buf);
}

bool FeatureExchange::skipped_self_swaps() const
{
  return m_x->trace.traced();
}

bool FeatureExchange::made_direct_swaps() const
{
  return m_transport != nullptr && m_transport == m_direct_swaps.get();
}

bool FeatureExchange::made_peer_swaps() const
{
  return made_direct_swaps() && m_direct_swaps->over_ipc();
}

bool FeatureExchange::peer_asked() const
{
  return m_x->settings.transport == ExchangeSettings::Transport::cuda_ipc;
}

std::string FeatureExchange::peer_refusal() const
{
  return made_direct_swaps() ? m_direct_swaps->ipc_refusal() : "";
}

void FeatureExchange::measure_split(bool on)
{
  m_x->timer.start(on);
  m_calls_at_split = m_calls;
}

const ExchangeSplit &FeatureExchange::split() const
{
  return m_x->timer.split();
}
