/* ----------------------------------------------------------------------
   pair_style edgeframe [precision fp64|fp32] [min_distance r] [fold_images yes|no]
                        [ghost_mode exchange|shell] [timing basic|detail]
   pair_coeff * * <potential.safetensors> <element or NULL per type>

   Exactness across MPI ranks (T message-passing layers), two modes:
   - exchange (default): ghost cutoff r_cut + skin; only owned atoms receive
     edges; before every layer but the first, ghost features are overwritten
     from their owners by LAMMPS' forward communication, and in the backward
     pass their gradients are reverse-communicated onto the owners
     (edgeframe_exchange.*).
   - shell: a ghost shell of T*r_cut + skin and a full neighbour list that
     includes the ghosts' neighbours; features computed on ghosts too.
   Either way the energy counts owned atoms only and LAMMPS reverse-
   communicates the forces on ghosts (newton on). One rank folds periodic
   images onto owners instead (fold_images yes). See doc/pair_style.md.
------------------------------------------------------------------------- */

#include "pair_edgeframe.h"

#include "atom.h"
#include "comm.h"
#include "error.h"
#include "force.h"
#include "memory.h"
#include "neigh_list.h"
#include "neighbor.h"
#include "update.h"

#include "edgeframe_lammps_errors.h"
#include "edgeframe_min_distance.h"
#include "evaluator.hpp"
#include "potential.hpp"
#include "runtime.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>

using namespace LAMMPS_NS;
using edgeframe_glue::call_engine;
using edgeframe_glue::Scope;

namespace LAMMPS_NS {
// Positions in the engine's memory space, grown on demand and never shrunk.
struct EdgeframeBuffers {
  edgeframe::kk::Vec3View<double, edgeframe::Exec> x;
  typename edgeframe::kk::Vec3View<double, edgeframe::Exec>::host_mirror_type x_host;
  edgeframe::kk::View1<int, edgeframe::Exec> species;    // [nodes]
  edgeframe::kk::View1<int, edgeframe::Exec> pair_i, pair_j;    // [candidate pairs] node indices
  edgeframe::kk::Vec3View<double, edgeframe::Exec> pair_shift;    // folded mode: [pairs] image offsets, A
  typename edgeframe::kk::Vec3View<double, edgeframe::Exec>::host_mirror_type pair_shift_host;
};
}    // namespace LAMMPS_NS

namespace {
// LAMMPS' 6-component order xx, yy, zz, xy, xz, yz as indices into a row-major 3x3.
constexpr int kVoigt[6] = {0, 4, 8, 1, 2, 5};
// The 9-component centroid order xx, yy, zz, xy, xz, yz, yx, zx, zy.
constexpr int kCentroid[9] = {0, 4, 8, 1, 2, 5, 3, 6, 7};

// The candidate pair with an owned receiver whose atoms are closest (non-owned receivers give
// the largest double, so they never win).
edgeframe_glue::ClosestPair closest_owned_pair(const EdgeframeBuffers &b, int n_pairs, int n_local, bool folded)
{
  auto x = b.x;
  auto pair_i = b.pair_i, pair_j = b.pair_j;
  auto shift = b.pair_shift;    // folded mode: image offsets; empty otherwise
  return edgeframe_glue::closest_pair<edgeframe::Exec>(
      "edgeframe::min_distance", n_pairs, KOKKOS_LAMBDA(int p) {
        const int i = pair_i(p), j = pair_j(p);
        if (i >= n_local) return Kokkos::Experimental::finite_max_v<double>;
        double r2 = 0.0;
        for (int d = 0; d < 3; d++) {
          const double dx = x(j, d) + (folded ? shift(p, d) : 0.0) - x(i, d);
          r2 += dx * dx;
        }
        return r2;
      });
}

void finalize_kokkos_at_exit()
{
  if (Kokkos::is_initialized() && !Kokkos::is_finalized()) Kokkos::finalize();
}
}    // namespace

PairEdgeframe::PairEdgeframe(LAMMPS *lmp) : Pair(lmp)
{
  single_enable = 0;
  restartinfo = 0;
  one_coeff = 1;
  manybody_flag = 1;
  ghostneigh = 1;    // ghost-shell mode needs ghosts' neighbours; init_style decides per run
  no_virial_fdotr_compute = 1;    // the engine's edge virial is exact for ghosts and images
  centroidstressflag = CENTROID_AVAIL;
  m_buffers = nullptr;
}

PairEdgeframe::~PairEdgeframe()
{
  if (copymode) return;
  delete m_buffers;
  if (allocated) {
    memory->destroy(setflag);
    memory->destroy(cutsq);
    memory->destroy(cutghost);
  }
}

void PairEdgeframe::allocate()
{
  allocated = 1;
  const int n = atom->ntypes;
  memory->create(setflag, n + 1, n + 1, "pair:setflag");
  memory->create(cutsq, n + 1, n + 1, "pair:cutsq");
  memory->create(cutghost, n + 1, n + 1, "pair:cutghost");
  for (int i = 1; i <= n; i++)
    for (int j = i; j <= n; j++) setflag[i][j] = 0;
}

void PairEdgeframe::settings(int narg, char **arg)
{
  int iarg = 0;
  while (iarg < narg) {
    const std::string key = arg[iarg];
    if (iarg + 1 >= narg) error->all(FLERR, "pair_style edgeframe: keyword {} needs a value", key);
    const std::string value = arg[iarg + 1];
    if (key == "precision") {
      if (value != "fp64" && value != "fp32" && value != "tf32")
        error->all(FLERR, "pair_style edgeframe: unknown precision '{}' (valid: fp64, fp32, tf32)", value);
      m_precision = value;
    } else if (key == "fold_images") {
      m_fold_images = utils::logical(FLERR, value, false, lmp);
    } else if (key == "ghost_mode") {
      if (value != "exchange" && value != "shell")
        error->all(FLERR, "pair_style edgeframe: unknown ghost_mode '{}' (valid: exchange, shell)", value);
      m_ghost_exchange = value == "exchange";
    } else if (key == "timing") {
      if (value != "basic" && value != "detail")
        error->all(FLERR, "pair_style edgeframe: unknown timing '{}' (valid: basic, detail)", value);
      m_timing_detail = value == "detail";
    } else if (key == "activations") {
      if (value != "auto" && value != "keep" && value != "recompute")
        error->all(FLERR, "pair_style edgeframe: unknown activations '{}' (valid: auto, keep, recompute)", value);
      m_activations = value;
    } else if (key == "memory_budget") {
      m_memory_budget_gb = utils::numeric(FLERR, value, false, lmp);
      if (!(m_memory_budget_gb > 0.0))
        error->all(FLERR, "pair_style edgeframe: memory_budget must be > 0 GB (got {})", value);
    } else if (key == "edge_chunk") {
      m_edge_chunk = utils::inumeric(FLERR, value, false, lmp);
      if (m_edge_chunk < 0) error->all(FLERR, "pair_style edgeframe: edge_chunk must be >= 0 (got {})", value);
    } else if (key == "min_distance") {
      m_min_distance = utils::numeric(FLERR, value, false, lmp);
      if (!(m_min_distance >= 0.0))
        error->all(FLERR, "pair_style edgeframe: min_distance must be >= 0 (got {})", value);
    } else if (key.rfind("exchange_", 0) == 0 || key == "device_comm") {
      exchange_keyword(key, value);
    } else {
      error->all(FLERR,
                 "pair_style edgeframe: unknown keyword '{}' (valid: precision, activations, edge_chunk, "
                 "memory_budget, min_distance, fold_images, ghost_mode, timing, exchange_stage, exchange_self_swaps, "
                 "exchange_swaps, exchange_transport, exchange_threads, exchange_parallel_bytes, device_comm)",
                 key);
    }
    iarg += 2;
  }
  if (m_exchange_settings.swaps == edgeframe_glue::ExchangeSettings::Swaps::direct &&
      !m_exchange_settings.skip_self_swaps)
    error->all(FLERR, "pair_style edgeframe: exchange_swaps direct needs exchange_self_swaps skip");
  m_evaluator.reset();    // a re-issued pair_style (new precision, activations) needs a new evaluator
  m_feature_exchange.reset();    // ... and new exchange settings a new exchange (made and bound at the next run)
  m_model_block_printed = false;    // ... and the model block says what it runs with
  // The plain style runs the engine on Kokkos' default execution space even when LAMMPS was
  // started without "-k on"; then nobody else initialises Kokkos.
  call_engine(error, Scope::ALL, FLERR, "pair_style edgeframe", [] {
    if (edgeframe::ensure_kokkos_initialized()) std::atexit(finalize_kokkos_at_exit);
  });
}

// The ghost exchange's settings (doc/pair_edgeframe.md "Ghost exchange settings").
void PairEdgeframe::exchange_keyword(const std::string &key, const std::string &value)
{
  using Settings = edgeframe_glue::ExchangeSettings;
  Settings &x = m_exchange_settings;
  if (key == "exchange_stage") {
    x.stage = utils::logical(FLERR, value, false, lmp);
  } else if (key == "exchange_self_swaps") {
    if (value != "skip" && value != "lammps")
      error->all(FLERR, "pair_style edgeframe: unknown exchange_self_swaps '{}' (valid: skip, lammps)", value);
    x.skip_self_swaps = value == "skip";
  } else if (key == "exchange_swaps") {
    if (value != "auto" && value != "direct" && value != "lammps")
      error->all(FLERR, "pair_style edgeframe: unknown exchange_swaps '{}' (valid: auto, direct, lammps)", value);
    x.swaps = value == "direct"   ? Settings::Swaps::direct
              : value == "lammps" ? Settings::Swaps::lammps
                                  : Settings::Swaps::automatic;
  } else if (key == "exchange_transport") {
    if (value != "auto" && value != "mpi" && value != "cuda-ipc")
      error->all(FLERR, "pair_style edgeframe: unknown exchange_transport '{}' (valid: auto, mpi, cuda-ipc)", value);
    x.transport = value == "mpi"        ? Settings::Transport::mpi
                  : value == "cuda-ipc" ? Settings::Transport::cuda_ipc
                                        : Settings::Transport::automatic;
  } else if (key == "exchange_threads") {
    x.threads = utils::inumeric(FLERR, value, false, lmp);
    if (x.threads < 1) error->all(FLERR, "pair_style edgeframe: exchange_threads must be >= 1 (got {})", value);
  } else if (key == "exchange_parallel_bytes") {
    const bigint bytes = utils::bnumeric(FLERR, value, false, lmp);
    if (bytes < 0) error->all(FLERR, "pair_style edgeframe: exchange_parallel_bytes must be >= 0 (got {})", value);
    x.parallel_bytes = std::size_t(bytes);
  } else if (key == "device_comm") {
    if (!kokkosable)
      error->all(FLERR, "pair_style edgeframe: device_comm applies to edgeframe/kk only (run with -sf kk, or drop it)");
    m_device_comm_allowed = utils::logical(FLERR, value, false, lmp);
  } else {
    error->all(FLERR,
               "pair_style edgeframe: unknown keyword '{}' (valid: exchange_stage, exchange_self_swaps, "
               "exchange_swaps, exchange_transport, exchange_threads, exchange_parallel_bytes, device_comm)",
               key);
  }
}

void PairEdgeframe::coeff(int narg, char **arg)
{
  if (!allocated) allocate();
  const int ntypes = atom->ntypes;
  if (narg != 3 + ntypes)
    error->all(FLERR,
               "pair_coeff edgeframe: expected '* * <potential file> <element or NULL for each of the {} atom types>', "
               "got {} arguments",
               ntypes, narg);
  if (strcmp(arg[0], "*") != 0 || strcmp(arg[1], "*") != 0)
    error->all(FLERR, "pair_coeff edgeframe: the first two arguments must be '* *' (got '{} {}')", arg[0], arg[1]);

  m_potential_file = arg[2];
  m_type_element.assign(1, "");
  for (int t = 1; t <= ntypes; t++) m_type_element.emplace_back(arg[2 + t]);

  auto potential = std::make_unique<edgeframe::Potential>();
  call_engine(error, Scope::ALL, FLERR, "pair_coeff edgeframe", [&] {
    *potential = edgeframe::read_potential(m_potential_file);
    const std::vector<std::string> elements(m_type_element.begin() + 1, m_type_element.end());
    const std::vector<int> map = potential->species_map(elements);
    m_type_species.assign(1, -1);
    m_type_species.insert(m_type_species.end(), map.begin(), map.end());
  });
  int mapped = 0;
  for (int t = 1; t <= ntypes; t++) mapped += m_type_species[t] >= 0;
  if (mapped == 0)
    error->all(FLERR, "pair_coeff edgeframe: every atom type is NULL; map at least one type to an element");
  for (int i = 1; i <= ntypes; i++)
    for (int j = i; j <= ntypes; j++) setflag[i][j] = (m_type_species[i] >= 0 && m_type_species[j] >= 0) ? 1 : 0;
  m_potential = std::move(potential);
  m_evaluator.reset();    // a new potential needs a new evaluator (made in init_style)
  m_model_block_printed = false;
  m_graph.reset();
}

void PairEdgeframe::check_run_preconditions(bool need_newton)
{
  if (strcmp(update->unit_style, "metal") != 0)
    error->all(FLERR, "pair_style edgeframe requires 'units metal' (got units {})", update->unit_style);
  if (need_newton && force->newton_pair == 0)
    error->all(FLERR, "pair_style edgeframe requires 'newton on' (newton pair is off){}",
               lmp->kokkos ? "; LAMMPS-KOKKOS on GPUs turns it off by default: add '-pk kokkos newton on neigh half' "
                             "(edgeframe/kk needs it on several ranks and with fold_images no)"
                           : "");
  if (atom->tag_enable == 0) error->all(FLERR, "pair_style edgeframe requires atom IDs");
  if (!m_potential) error->all(FLERR, "pair_style edgeframe: no pair_coeff given (pair_coeff * * <file> <elements>)");
}

void PairEdgeframe::log_activation_plan()
{
  if (comm->me != 0 || !m_evaluator || m_activations != "auto") return;    // the other modes' plans are fixed
  const edgeframe::ActivationPlan &plan = m_evaluator->activation_plan();
  if (plan.recompute.empty()) return;    // no step with forces yet
  const std::string text = plan.describe();
  if (text == m_plan_logged) return;
  m_plan_logged = text;
  utils::logmesg(lmp, "edgeframe activations {} on rank 0: {} (memory model's peak {:.3g} GB{})\n", m_activations, text,
                 plan.predicted_bytes * 1e-9,
                 plan.fits ? "" : ", over the budget even so: the step may run out of memory");
}

void PairEdgeframe::init_engine(bool need_newton)
{
  check_run_preconditions(need_newton);
  if (m_edge_chunk > 0 && m_activations != "recompute")
    error->all(FLERR,
               "pair_style edgeframe: edge_chunk {} needs 'activations recompute' (kept activations are never "
               "chunked; activations auto sizes its own chunks)",
               m_edge_chunk);
  if (m_memory_budget_gb > 0.0 && m_activations != "auto")
    error->all(FLERR, "pair_style edgeframe: memory_budget is for 'activations auto' (activations is {})",
               m_activations);
  if (m_precision == "tf32" && !edgeframe::tf32_available())
    error->all(FLERR,
               "pair_style edgeframe: precision tf32 needs the CUDA engine; this build ({}) supports fp64 and fp32",
               edgeframe::build_info().execution_space);

  if (!m_evaluator) {
    call_engine(error, Scope::ALL, FLERR, "pair_style edgeframe", [&] {
      edgeframe::EvaluatorOptions options;
      options.precision = edgeframe::parse_precision(m_precision);
      using Activations = edgeframe::EvaluatorOptions::Activations;
      options.activations = m_activations == "keep"        ? Activations::keep
                            : m_activations == "recompute" ? Activations::recompute
                                                           : Activations::automatic;
      options.edge_chunk = m_edge_chunk;
      options.memory_budget = m_memory_budget_gb * 1e9;
      m_evaluator = std::make_unique<edgeframe::Evaluator>(*m_potential, options);
    });
  }
  m_recomputed_at_init = m_evaluator->layers_recomputed();    // the end-of-run line counts this run's
  m_graph.reset();
  m_need_node_map = true;    // rebuild the node map at the first compute
  m_time_graph = m_time_engine = m_time_copy = 0.0;    // the end-of-run split is per run
  m_times = edgeframe::StepTimes();
  m_sum_ghosts = m_sum_nodes = m_sum_ghost_nodes = m_sum_edges = 0.0;
  m_calls = 0;
  std::fill(std::begin(m_first_call), std::end(m_first_call), 0.0);
  if (comm->me == 0 && !m_model_block_printed) print_model_block();
  m_model_block_printed = true;    // once per pair_style / pair_coeff, not at every run
}

void PairEdgeframe::init_style()
{
  init_engine();
  // One rank: every ghost is a periodic image of an owned atom and carries its owner's
  // features, so the graph folds images onto owners and needs no ghost shell. Several ranks
  // (or fold_images no): per-layer exchange of ghost features (ghost cutoff r_cut + skin, the
  // LAMMPS default), or the ghost shell of T r_cut + skin that computes ghost features itself.
  m_folded = m_fold_images && comm->nprocs == 1;
  if (m_folded && atom->map_style == Atom::MAP_NONE)
    error->all(FLERR,
               "pair_style edgeframe requires an atom map to fold periodic images onto their owners: "
               "add 'atom_modify map array' before the box is created (or use pair_style edgeframe fold_images no)");
  m_exchange = !m_folded && m_ghost_exchange;
  const bool shell_mode = !m_folded && !m_exchange;
  ghostneigh = shell_mode ? 1 : 0;
  neighbor->add_request(this, shell_mode ? (NeighConst::REQ_FULL | NeighConst::REQ_GHOST) : NeighConst::REQ_FULL);

  const auto &cfg = m_potential->config;
  // Exchange mode: the features of one atom, D * C values in the compute dtype, travel as their
  // bytes in LAMMPS' double buffers (fp32: two per double); LAMMPS sizes its buffers from
  // comm_forward / comm_reverse in comm->init.
  m_exchange_width = cfg.num_coeffs() * cfg.channels;
  m_exchange_type = m_precision == "fp64" ? edgeframe::RowType::f64 : edgeframe::RowType::f32;
  comm_forward = comm_reverse =
      m_exchange ? edgeframe_glue::FeatureExchange::stage_words(m_exchange_width, m_exchange_type) : 0;
  // Under pair_style hybrid, comm->init sizes the buffers from the hybrid style's sizes, which
  // it took from its sub-styles at pair_style time, before pair_coeff named our potential.
  if (force->pair != this) {
    force->pair->comm_forward = std::max(force->pair->comm_forward, comm_forward);
    force->pair->comm_reverse = std::max(force->pair->comm_reverse, comm_reverse);
  }
  if (m_exchange && !m_feature_exchange)
    m_feature_exchange = std::make_unique<edgeframe_glue::FeatureExchange>(comm, this, world, m_exchange_settings);
  if (m_exchange) m_feature_exchange->set_comm(comm);
  if (m_exchange) m_feature_exchange->use_device_comm(m_exchange_device_comm);
  if (m_exchange) m_feature_exchange->measure_split(m_timing_detail);
  const double shell = cfg.layers * cfg.r_cut + neighbor->skin;
  if (shell_mode && comm->cutghostuser < shell) {
    if (!m_cutghost_raised) m_cutghost_before = comm->cutghostuser;
    m_cutghost_raised = true;
    comm->cutghostuser = shell;
    if (comm->me == 0)
      utils::logmesg(lmp, "edgeframe: ghost cutoff set to {:.4g} A = {} layers x {:.4g} A + skin {:.4g} A\n", shell,
                     cfg.layers, cfg.r_cut, neighbor->skin);
  }
  if (!shell_mode && m_cutghost_raised) {    // an earlier run in shell mode raised it
    comm->cutghostuser = m_cutghost_before;
    m_cutghost_raised = false;
  }
  if (m_exchange && comm->me == 0 && m_feature_exchange->host_threads() > 1 && !m_feature_exchange->device_comm())
    utils::logmesg(lmp, "edgeframe: exchange host copies on {} OpenMP threads (exchange_threads)\n",
                   m_feature_exchange->host_threads());
  if (m_exchange && comm->me == 0)
    utils::logmesg(lmp,
                   "edgeframe: ghost mode exchange: ghost cutoff r_cut + skin = {:.4g} A; {} features per atom "
                   "({} doubles in LAMMPS' buffers) forward-communicated before layers 2..{} and "
                   "reverse-communicated in the backward pass{}\n",
                   cfg.r_cut + neighbor->skin, m_exchange_width, comm_forward, cfg.layers,
                   m_feature_exchange->device_comm()
                       ? " (LAMMPS-KOKKOS device communication: packed on the device, device buffers to MPI)"
                       : (m_feature_exchange->staged()
                              ? (m_feature_exchange->direct_swaps_for(m_exchange_width, m_exchange_type)
                                     ? " (node rows reordered on the device, staged through pinned host memory; "
                                       "MPI swaps made directly)"
                                     : " (node rows reordered on the device, staged through pinned host memory)")
                              : ""));
}

double PairEdgeframe::init_one(int i, int j)
{
  const double rc = m_potential ? m_potential->config.r_cut : 0.0;
  cutghost[i][j] = cutghost[j][i] = rc;
  return rc;
}

void PairEdgeframe::print_model_block()
{
  const auto &cfg = m_potential->config;
  std::size_t n_params = 0;
  for (const auto &named : m_potential->tensors) n_params += named.second.values.size();
  std::string elements;
  for (const auto &s : cfg.species) elements += (elements.empty() ? "" : " ") + s;
  const auto info = edgeframe::build_info();
  utils::logmesg(lmp,
                 "edgeframe {}: potential {}\n"
                 "  elements {} | r_cut {:.4g} A | lmax {} mmax {} | channels {} (hidden {}, ffn {}) | layers {}\n"
                 "  parameters {} (stored {}, trained {}) | precision {} | activations {} | execution space {} | "
                 "Kokkos {} | LibTorch {}\n",
                 info.edgeframe_version, m_potential_file, elements, cfg.r_cut, cfg.lmax, cfg.mmax, cfg.channels,
                 cfg.hidden_channels, cfg.ffn_channels, cfg.layers, n_params, m_potential->dtype,
                 m_potential->trained_precision, m_precision,
                 m_activations == "recompute"
                     ? (m_edge_chunk > 0 ? fmt::format("recompute (edge chunks of {})", m_edge_chunk) : m_activations)
                 : m_activations == "auto"
                     ? (m_memory_budget_gb > 0
                            ? fmt::format("auto (memory budget {:.4g} GB)", m_memory_budget_gb)
                            : std::string("auto (budget: the device's free memory; no limit on the host)"))
                     : m_activations,
                 info.execution_space, info.kokkos_version, info.torch_version);
}

void PairEdgeframe::rebuild_graph()
{
  // At a neighbour-list rebuild: which atoms are nodes, and the candidate pairs (r_cut + skin).
  const int nlocal = atom->nlocal, nall = atom->nlocal + atom->nghost;
  if (m_folded) {
    Atom *a = atom;
    m_nodes.build_folded(atom->type, nlocal, m_type_species, list, [a](int j) { return a->map(a->tag[j]); });
  } else if (m_exchange) {
    m_nodes.build_exchange(atom->type, nlocal, nall, m_type_species, list);
  } else {
    m_nodes.build(atom->type, nlocal, nall, m_type_species, list, m_potential->config.layers);
  }
  const int n = m_nodes.n_nodes();
  const int p = (int) m_nodes.pair_i.size();

  if (!m_buffers) m_buffers = new EdgeframeBuffers;
  auto &b = *m_buffers;
  if ((int) b.x.extent(0) < n) {
    b.x = decltype(b.x)("edgeframe::positions", n);
    b.x_host = Kokkos::create_mirror_view(b.x);
  }
  // Species and pairs change only here: plain deep copies.
  b.species = decltype(b.species)("edgeframe::species", n);
  auto species_h = Kokkos::create_mirror_view(b.species);
  for (int k = 0; k < n; k++) species_h(k) = m_nodes.species[k];
  Kokkos::deep_copy(b.species, species_h);
  using HostInts = Kokkos::View<const int *, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  b.pair_i = decltype(b.pair_i)("edgeframe::pair_i", p);
  b.pair_j = decltype(b.pair_j)("edgeframe::pair_j", p);
  Kokkos::deep_copy(b.pair_i, HostInts(m_nodes.pair_i.data(), p));
  Kokkos::deep_copy(b.pair_j, HostInts(m_nodes.pair_j.data(), p));
  if (m_folded) {
    b.pair_shift = decltype(b.pair_shift)("edgeframe::pair_shift", p);
    b.pair_shift_host = Kokkos::create_mirror_view(b.pair_shift);
  } else {
    b.pair_shift = decltype(b.pair_shift)();
  }

  if (m_need_node_map && comm->me == 0)
    utils::logmesg(
        lmp,
        "edgeframe: rank 0 graph ({}): {} nodes ({} owned, {} ghosts kept of {} mapped atoms), {} candidate pairs\n",
        m_folded ? "periodic images folded onto owners" : (m_exchange ? "per-layer exchange" : "ghost shell"), n,
        m_nodes.n_local, n - m_nodes.n_local, m_nodes.n_candidates, p);
  m_need_node_map = false;
}

void PairEdgeframe::build_step_graph()
{
  // Every step: the directed edges with r < r_cut at the current positions. The candidate
  // pairs of the neighbour list reach r_cut + skin, which at LAMMPS' metal default skin of
  // 2 A is (7/5)^3 = 2.7x more pairs than edges for r_cut 5 A; filtering them here costs one
  // pass and a sort, far less than evaluating the model on edges whose envelope is zero.
  auto &b = *m_buffers;
  edgeframe::kk::PairList<edgeframe::Exec> pairs;
  pairs.i = b.pair_i;
  pairs.j = b.pair_j;
  pairs.shift = b.pair_shift;    // extent 0 in ghost-shell mode: ghosts carry their own positions
  pairs.half = false;    // a full list: each entry is one directed edge (i <- j)
  const int n = m_nodes.n_nodes();
  auto positions = Kokkos::subview(b.x, std::make_pair(0, n), Kokkos::ALL);
  call_engine(error, Scope::ONE, FLERR, "pair_style edgeframe (graph)", [&] {
    m_graph = std::make_unique<edgeframe::AtomGraph>(
        edgeframe::make_graph(pairs, positions, b.species, m_nodes.n_local, m_potential->config.r_cut));
  });
}

void PairEdgeframe::copy_positions()
{
  auto &b = *m_buffers;
  double **x = atom->x;
  const int n = m_nodes.n_nodes();
  for (int k = 0; k < n; k++) {
    const int i = m_nodes.atom_of_node[k];
    for (int d = 0; d < 3; d++) b.x_host(k, d) = x[i][d];
  }
  Kokkos::deep_copy(b.x, b.x_host);
  if (m_folded) {
    // Image offsets from the current ghost and owner positions, so that box changes (NPT,
    // fix deform) between neighbour-list rebuilds are followed exactly.
    const std::size_t p = m_nodes.pair_image.size();
    for (std::size_t e = 0; e < p; e++) {
      const int img = m_nodes.pair_image[e], owner = m_nodes.atom_of_node[m_nodes.pair_j[e]];
      for (int d = 0; d < 3; d++) b.pair_shift_host(e, d) = x[img][d] - x[owner][d];
    }
    Kokkos::deep_copy(b.pair_shift, b.pair_shift_host);
  }
}

void PairEdgeframe::check_min_distance()
{
  // Two atoms closer than min_distance: the model was never trained there and the forces
  // would be meaningless. Only owned receivers are checked, so each pair is reported once.
  // The closest candidate pair by a min-loc reduction where the pairs and positions already
  // are (the engine's memory space: the GPU in CUDA builds), as edgeframe/kk's device path
  // does; only a violation is looked up on the host. A host loop over every candidate pair
  // ran here at every step of the multi-rank path (~2 M pairs per rank at 32 768 atoms).
  auto &b = *m_buffers;
  const int n_pairs = (int) m_nodes.pair_i.size(), n_local = m_nodes.n_local;
  if (n_pairs == 0) return;
  const auto closest = closest_owned_pair(b, n_pairs, n_local, m_folded);
  if (closest.val >= m_min_distance * m_min_distance) return;
  const int p = closest.loc;
  const int i = m_nodes.atom_of_node[m_nodes.pair_i[p]];
  const int j = m_folded ? m_nodes.pair_image[p] : m_nodes.atom_of_node[m_nodes.pair_j[p]];
  error->one(FLERR,
             "pair_style edgeframe: atoms {} and {} are {:.4g} A apart at step {}, closer than min_distance {:.4g} A",
             atom->tag[i], atom->tag[j], std::sqrt(closest.val), update->ntimestep, m_min_distance);
}

void PairEdgeframe::report_non_finite(const edgeframe::NonFiniteError &e, const int *atom_of_node)
{
  // The engine names a node; the user needs the atom and the step. Callers report before
  // adding anything to f, eng_vdwl or the virial, and error->one stops before LAMMPS integrates on.
  const int k = e.node();
  if (k < 0)
    error->one(FLERR, "pair_style edgeframe: {} at step {}; stopping instead of integrating on", e.summary(),
               update->ntimestep);
  error->one(FLERR,
             "pair_style edgeframe: {} at step {}: atom {} is the first atom with a non-finite energy or force "
             "({}; {} atom(s) of this rank's graph affected); stopping instead of integrating on",
             e.summary(), update->ntimestep, atom->tag[atom_of_node[k]], e.detail(), e.count());
}

void PairEdgeframe::compute(int eflag, int vflag)
{
  ev_init(eflag, vflag);
  m_calls++;

  double t0 = platform::walltime();
  // Ghosts and LAMMPS' swap lists change only where the neighbour lists are built (Comm::borders
  // comes right before; neighbor->ago is the same on every rank).
  const bool rebuilt = m_need_node_map || neighbor->ago == 0;
  if (rebuilt) rebuild_graph();
  m_sum_ghosts += atom->nghost;
  // bind() traces the swaps (collectives): an error there must stop every rank cleanly. Between
  // builds the traces, roots and swap lists stay valid.
  if (m_exchange && rebuilt) {
    call_engine(error, Scope::ONE, FLERR, "pair_style edgeframe (exchange setup)", [&] {
      m_feature_exchange->bind(&m_nodes, atom->nlocal, atom->nlocal + atom->nghost, m_exchange_width, m_exchange_type);
    });
    if (m_calls == 1 && comm->me == 0) print_transport();
  }
  // A rank that owns no mapped atom has no energy and so exerts no force: nothing to compute
  // (ranks of an open box beyond the atoms, or every owned type NULL under hybrid). In
  // exchange mode it still takes part in every communication: its ghosts may be relays.
  if (m_nodes.n_local == 0) {
    if (m_exchange) idle_exchange();
    note_first_call();
    return;
  }
  copy_positions();
  build_step_graph();
  check_min_distance();
  double t1 = platform::walltime();
  m_time_graph += t1 - t0;
  m_sum_nodes += m_nodes.n_nodes();
  m_sum_ghost_nodes += m_nodes.n_nodes() - m_nodes.n_local;
  m_sum_edges += m_graph->edges.n_edges;

  edgeframe::What what;
  what.forces = true;
  what.energies = eflag_atom;
  what.virial = vflag_global;
  what.atom_virial = vflag_atom || cvflag_atom;
  what.exchange = m_exchange ? m_feature_exchange.get() : nullptr;
  what.times = m_timing_detail ? &m_times : nullptr;
  const int n = m_nodes.n_nodes();
  auto positions = Kokkos::subview(m_buffers->x, std::make_pair(0, n), Kokkos::ALL);
  edgeframe::Result result;
  std::optional<edgeframe::NonFiniteError> non_finite;    // reported below, outside call_engine's catch
  // The size in the prefix: an allocation failure then says how much this rank asked for.
  const std::string where = fmt::format("pair_style edgeframe ({} nodes, {} edges on rank {}, step {})", n,
                                        m_graph->edges.n_edges, comm->me, update->ntimestep);
  call_engine(error, Scope::ONE, FLERR, where, [&] {
    try {
      result = m_evaluator->compute(*m_graph, positions, what);
    } catch (const edgeframe::NonFiniteError &e) {
      non_finite.emplace(e);
      return;
    }
    Kokkos::fence("edgeframe::compute results to host");    // LAMMPS reads them on the host next
  });
  if (non_finite) report_non_finite(*non_finite, m_nodes.atom_of_node.data());
  log_activation_plan();
  double t2 = platform::walltime();
  m_time_engine += t2 - t1;

  auto f_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), result.forces);
  double **f = atom->f;
  for (int k = 0; k < n; k++) {
    const int i = m_nodes.atom_of_node[k];
    for (int d = 0; d < 3; d++) {
      const double fk = f_h(k, d);
      if (!std::isfinite(fk))
        error->one(FLERR,
                   "pair_style edgeframe: non-finite force on atom {} at step {}; stopping instead of integrating on",
                   atom->tag[i], update->ntimestep);
      f[i][d] += fk;
    }
  }
  if (eflag_global) eng_vdwl += result.energy;
  if (vflag_global)
    for (int c = 0; c < 6; c++) virial[c] += result.virial[kVoigt[c]];
  accumulate_per_atom(result, m_nodes.atom_of_node.data(), n, m_nodes.n_local);
  m_time_copy += platform::walltime() - t2;
  note_first_call();
}

void PairEdgeframe::accumulate_per_atom(const edgeframe::Result &result, const int *atom_of_node, int n_nodes,
                                        int n_local)
{
  if (eflag_atom) {
    auto e_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), result.energies);
    for (int k = 0; k < n_local; k++) eatom[atom_of_node[k]] += e_h(k);
  }
  if (vflag_atom || cvflag_atom) {
    // Ghost entries are folded back onto their owners by compute stress/atom (newton on).
    auto w_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), result.atom_virial);
    for (int k = 0; k < n_nodes; k++) {
      const int i = atom_of_node[k];
      if (vflag_atom)
        for (int c = 0; c < 6; c++) vatom[i][c] += w_h(k, kVoigt[c]);
      if (cvflag_atom)
        for (int c = 0; c < 9; c++) cvatom[i][c] += w_h(k, kCentroid[c]);
    }
  }
}

void PairEdgeframe::idle_exchange()
{
  // The same sequence as the engine makes on ranks with atoms (exchange.hpp): T-1 forward
  // exchanges, then T-1 reverse ones, with no rows of this rank's own.
  const double t0 = platform::walltime();
  const int exchanges = m_potential->config.layers - 1;
  call_engine(error, Scope::ONE, FLERR, "pair_style edgeframe (exchange)", [&] {
    for (int k = 0; k < exchanges; k++) m_feature_exchange->forward(edgeframe::NodeRows());
    for (int k = 0; k < exchanges; k++) m_feature_exchange->reverse(edgeframe::NodeRows());
  });
  const double dt = platform::walltime() - t0;
  m_time_engine += dt;
  if (m_timing_detail) {
    m_times.exchange += dt;
    m_times.total += dt;
  }
}

int PairEdgeframe::pack_forward_comm(int n, int *list, double *buf, int, int *)
{
  return m_feature_exchange->pack_forward(n, list, buf);
}

void PairEdgeframe::unpack_forward_comm(int n, int first, double *buf)
{
  m_feature_exchange->unpack_forward(n, first, buf);
}

int PairEdgeframe::pack_reverse_comm(int n, int first, double *buf)
{
  return m_feature_exchange->pack_reverse(n, first, buf);
}

void PairEdgeframe::unpack_reverse_comm(int n, int *list, double *buf)
{
  m_feature_exchange->unpack_reverse(n, list, buf);
}

void PairEdgeframe::detail_times(double out[7]) const
{
  out[0] = m_time_graph;
  out[1] = m_times.geometry;
  out[2] = m_times.edge_frame;
  out[3] = m_times.dense();
  out[4] = m_times.exchange;
  out[5] = m_time_copy;
  out[6] = m_feature_exchange ? m_feature_exchange->split().comm : 0.0;
}

void PairEdgeframe::note_first_call()
{
  if (m_timing_detail && m_calls == 1) detail_times(m_first_call);
}

// The loop's split: every part per force call after the first, and the first (setup) call
// apart. The end-of-run sums mix them, and in a short benchmark run the setup call's rebuild and
// traces are a visible share. Collective, from finish().
void PairEdgeframe::print_split_after_first_call()
{
  double now[7], after[7], first_sum[7], first_max[7], after_sum[7], after_max[7];
  detail_times(now);
  const double later = (double) (m_calls - 1);
  for (int k = 0; k < 7; k++) after[k] = (now[k] - m_first_call[k]) / later;
  MPI_Allreduce(m_first_call, first_sum, 7, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(m_first_call, first_max, 7, MPI_DOUBLE, MPI_MAX, world);
  MPI_Allreduce(after, after_sum, 7, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(after, after_max, 7, MPI_DOUBLE, MPI_MAX, world);
  if (comm->me != 0) return;
  const double ms = 1e3 / comm->nprocs, ms_max = 1e3;
  auto parts = [&](const double *sum, const double *max) {
    return fmt::format("graph build + upload {:.4g} / {:.4g} | band + radial + edge vectors + force sums {:.4g} / "
                       "{:.4g} | edge-frame kernels {:.4g} / {:.4g} | GEMMs + dense torch ops {:.4g} / {:.4g} | "
                       "feature exchange {:.4g} / {:.4g} (MPI and waiting, or LAMMPS communication: {:.4g} / {:.4g}) | "
                       "results to LAMMPS {:.4g} / {:.4g}",
                       sum[0] * ms, max[0] * ms_max, sum[1] * ms, max[1] * ms_max, sum[2] * ms, max[2] * ms_max,
                       sum[3] * ms, max[3] * ms_max, sum[4] * ms, max[4] * ms_max, sum[6] * ms, max[6] * ms_max,
                       sum[5] * ms, max[5] * ms_max);
  };
  utils::logmesg(lmp,
                 "edgeframe timing detail per force call after the first ({} calls; ms, mean / max over ranks): {}\n",
                 m_calls - 1, parts(after_sum, after_max));
  utils::logmesg(lmp,
                 "edgeframe timing detail of the first force call (the run's setup; ms, mean / max over ranks): {}\n",
                 parts(first_sum, first_max));
}

// The exchange's own split (timing detail): every rank calls this collective from finish().
void PairEdgeframe::reduce_exchange_split()
{
  const auto &x = m_feature_exchange->split();
  double v[8] = {x.reorder, x.bus, x.comm, x.bus_bytes, x.host_pack, x.host_rows, x.traces, x.binds};
  MPI_Allreduce(v, m_split_sum, 8, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(v, m_split_max, 8, MPI_DOUBLE, MPI_MAX, world);
}

// Which transport the direct swaps took (exchange_transport), once per run, rank 0.
void PairEdgeframe::print_transport()
{
  if (m_feature_exchange->made_peer_swaps())
    utils::logmesg(lmp,
                   "edgeframe: direct swaps over CUDA IPC (each rank copies its partners' rows device to device)\n");
  else if (!m_feature_exchange->peer_refusal().empty())
    utils::logmesg(lmp, "edgeframe: {} not possible here ({}): direct MPI swaps\n",
                   m_feature_exchange->peer_asked() ? "exchange_transport cuda-ipc" : "CUDA IPC",
                   m_feature_exchange->peer_refusal());
}

void PairEdgeframe::print_exchange_split()
{
  const double p = comm->nprocs;
  utils::logmesg(lmp,
                 "edgeframe exchange split (seconds, mean / max over ranks; {} exchanges on rank 0): reordering rows "
                 "{:.4g} / {:.4g} | device <-> pinned host copies {:.4g} / {:.4g} ({:.3g} GB per rank) | {} "
                 "{:.4g} / {:.4g}, of which host pack + unpack {:.4g} / {:.4g} ({:.0f} "
                 "rows per rank and exchange; swaps to the same rank {}) | traces of the swaps (in graph build) "
                 "{:.4g} / {:.4g} ({:.0f} traced neighbour-list builds)\n",
                 m_feature_exchange->split_calls(), m_split_sum[0] / p, m_split_max[0], m_split_sum[1] / p,
                 m_split_max[1], m_split_sum[3] / p / 1e9,
                 m_feature_exchange->made_peer_swaps()
                     ? "direct swaps over CUDA IPC (handshakes, device copies, waiting)"
                 : m_feature_exchange->made_direct_swaps() ? "direct MPI swaps (MPI, waiting)"
                                                           : "LAMMPS communication (pack, MPI, unpack)",
                 m_split_sum[2] / p, m_split_max[2], m_split_sum[4] / p, m_split_max[4],
                 m_split_sum[5] / p / std::max(1L, m_feature_exchange->split_calls()),
                 m_feature_exchange->device_comm()          ? "done by LAMMPS-KOKKOS on the device"
                 : m_feature_exchange->skipped_self_swaps() ? "skipped"
                                                            : "by LAMMPS",
                 m_split_sum[6] / p, m_split_max[6], m_split_max[7]);
}

void PairEdgeframe::finish()
{
  if (m_calls == 0) return;
  const double calls = (double) m_calls;
  double local[3] = {m_time_graph, m_time_engine, m_time_copy}, sum[3];
  MPI_Allreduce(local, sum, 3, MPI_DOUBLE, MPI_SUM, world);
  // Graph size per force call on each rank: mean and max over ranks.
  double g[4] = {m_sum_ghosts / calls, m_sum_nodes / calls, m_sum_ghost_nodes / calls, m_sum_edges / calls};
  double g_sum[4], g_max[4];
  MPI_Allreduce(g, g_sum, 4, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(g, g_max, 4, MPI_DOUBLE, MPI_MAX, world);
  double d[6] = {m_time_graph, m_times.geometry, m_times.edge_frame, m_times.dense(), m_times.exchange, m_time_copy};
  double d_sum[6], d_max[6];
  if (m_timing_detail) {
    MPI_Allreduce(d, d_sum, 6, MPI_DOUBLE, MPI_SUM, world);
    MPI_Allreduce(d, d_max, 6, MPI_DOUBLE, MPI_MAX, world);
    if (m_exchange) reduce_exchange_split();
  }
  if (comm->me == 0) {
    const double p = comm->nprocs;
    utils::logmesg(lmp,
                   "edgeframe timing over {} force calls (seconds, mean over {} ranks): graph build + position "
                   "upload {:.4g} | engine (band, edge-frame kernels, GEMMs) {:.4g} | results to LAMMPS {:.4g}\n",
                   m_calls, comm->nprocs, sum[0] / p, sum[1] / p, sum[2] / p);
    if (m_timing_detail)
      utils::logmesg(lmp,
                     "edgeframe timing detail (seconds, mean / max over ranks): graph build + upload {:.4g} / {:.4g} | "
                     "band + radial + edge vectors + force sums {:.4g} / {:.4g} | edge-frame kernels {:.4g} / {:.4g} | "
                     "GEMMs + dense torch ops {:.4g} / {:.4g} | feature exchange {:.4g} / {:.4g} | results to LAMMPS "
                     "{:.4g} / {:.4g}\n",
                     d_sum[0] / p, d_max[0], d_sum[1] / p, d_max[1], d_sum[2] / p, d_max[2], d_sum[3] / p, d_max[3],
                     d_sum[4] / p, d_max[4], d_sum[5] / p, d_max[5]);
    // GPU builds: the device memory the engine has used (tools/gate.py reads this line).
    const std::size_t torch_peak = edgeframe::Evaluator::torch_device_peak_bytes();
    if (m_evaluator && torch_peak > 0) {
      const double torch_mib = torch_peak / 1048576.0;
      const double ws_mib = m_evaluator->workspace_bytes() / 1048576.0;
      utils::logmesg(lmp,
                     "edgeframe device memory on rank 0: peak {:.0f} MiB (LibTorch allocator peak {:.0f} MiB + "
                     "Kokkos workspace {:.0f} MiB)\n",
                     torch_mib + ws_mib, torch_mib, ws_mib);
    }
    utils::logmesg(
        lmp,
        "edgeframe graph per rank and force call ({}; mean / max over ranks): LAMMPS ghosts {:.1f} / {:.0f} | "
        "nodes {:.1f} / {:.0f} | ghost nodes {:.1f} / {:.0f} | edges {:.1f} / {:.0f}\n",
        m_folded ? "images folded" : (m_exchange ? "per-layer exchange" : "ghost shell"), g_sum[0] / p, g_max[0],
        g_sum[1] / p, g_max[1], g_sum[2] / p, g_max[2], g_sum[3] / p, g_max[3]);
    if (m_timing_detail && m_exchange) print_exchange_split();
    if (m_evaluator && m_evaluator->layers_recomputed() > m_recomputed_at_init)
      utils::logmesg(lmp,
                     "edgeframe activations {}: {} edge parts (layers x edge chunks) run again in the backward "
                     "pass over {} force calls (rank 0)\n",
                     m_activations, m_evaluator->layers_recomputed() - m_recomputed_at_init, m_calls);
  }
  if (m_timing_detail && m_calls > 1) print_split_after_first_call();    // collective
}
