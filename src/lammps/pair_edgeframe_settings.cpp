/* ----------------------------------------------------------------------
   pair_style edgeframe keywords (settings) and pair_coeff (coeff), shared by
   edgeframe and edgeframe/kk. The keywords: doc/pair_edgeframe.md.
------------------------------------------------------------------------- */

#include "pair_edgeframe.h"

#include "atom.h"
#include "error.h"

#include "edgeframe_lammps_errors.h"
#include "evaluator.hpp"
#include "potential.hpp"
#include "runtime.hpp"

#include <Kokkos_Core.hpp>

#include <cctype>
#include <cstdlib>
#include <cstring>

using namespace LAMMPS_NS;
using edgeframe_glue::call_engine;
using edgeframe_glue::Scope;

namespace {
void finalize_kokkos_at_exit()
{
  if (Kokkos::is_initialized() && !Kokkos::is_finalized()) Kokkos::finalize();
}
}    // namespace

void PairEdgeframe::settings(int narg, char **arg)
{
  m_deviation = edgeframe_glue::DeviationSettings();    // a new pair_style gives its own (or none)
  m_edge_headroom = -1.0;    // ... and its own edge_headroom (or the automatic one): graph may change
  close_deviation_file();    // ... and a deviation run then starts its file anew
  int iarg = 0;
  while (iarg < narg) {
    const std::string key = arg[iarg];
    if (iarg + 1 >= narg && key != "atomic") error->all(FLERR, "pair_style edgeframe: keyword {} needs a value", key);
    const std::string value = iarg + 1 < narg ? arg[iarg + 1] : "";
    if (key == "precision") {
      try {
        edgeframe::parse_precision(value);
      } catch (const edgeframe::InputError &e) {
        error->all(FLERR, "pair_style edgeframe: {}", e.what());
      }
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
    } else if (key == "graph") {
      if (value != "per_step" && value != "per_rebuild")
        error->all(FLERR, "pair_style edgeframe: unknown graph '{}' (valid: per_step, per_rebuild)", value);
      m_graph_per_rebuild = value == "per_rebuild";
    } else if (key == "cuda_graph") {
      m_cuda_graph = utils::logical(FLERR, value, false, lmp);
    } else if (key == "edge_headroom") {
      m_edge_headroom = utils::numeric(FLERR, value, false, lmp);
      if (!(m_edge_headroom >= 0.0 && m_edge_headroom <= 1.0))
        error->all(FLERR, "pair_style edgeframe: edge_headroom must be in [0, 1] (got {})", value);
    } else if (key == "activations") {
      if (value != "auto" && value != "keep" && value != "recompute" && value != "stream")
        error->all(FLERR, "pair_style edgeframe: unknown activations '{}' (valid: auto, keep, recompute, stream)",
                   value);
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
    } else if (key == "task") {
      m_task = value;
    } else if (key == "charge") {
      m_charge = utils::inumeric(FLERR, value, false, lmp);
      m_charge_set = true;
    } else if (key == "spin") {
      m_spin = utils::inumeric(FLERR, value, false, lmp);
      m_spin_set = true;
    } else if (key == "atomic") {    // deepmd-kit's flag: no value
      m_deviation.atomic = m_deviation.any_keyword = true;
      iarg += 1;
      continue;
    } else if (key == "out_freq" || key == "out_file" || key == "relative" || key == "relative_v") {
      deviation_keyword(key, value);
    } else if (key.rfind("exchange_", 0) == 0 || key == "device_comm") {
      exchange_keyword(key, value);
    } else {
      error->all(FLERR,
                 "pair_style edgeframe: unknown keyword '{}' (valid: precision, graph, cuda_graph, edge_headroom, "
                 "activations, "
                 "edge_chunk, memory_budget, min_distance, fold_images, ghost_mode, timing, task, charge, spin, "
                 "out_freq, out_file, atomic, relative, relative_v, "
                 "exchange_stage, "
                 "exchange_self_swaps, "
                 "exchange_swaps, exchange_transport, exchange_threads, exchange_parallel_bytes, device_comm)",
                 key);
    }
    iarg += 2;
  }
  if (m_cuda_graph && !m_graph_per_rebuild)
    error->all(FLERR, "pair_style edgeframe: cuda_graph yes needs graph per_rebuild (a graph built every step has new "
                      "addresses every step, so a captured step could never be replayed)");
  if (m_edge_headroom >= 0.0 && !m_graph_per_rebuild)
    error->all(FLERR, "pair_style edgeframe: edge_headroom is for graph per_rebuild (graph per_step builds the "
                      "step's graph at its exact size every step)");
  if (m_exchange_settings.swaps == edgeframe_glue::ExchangeSettings::Swaps::direct &&
      !m_exchange_settings.skip_self_swaps)
    error->all(FLERR, "pair_style edgeframe: exchange_swaps direct needs exchange_self_swaps skip");
  m_kept.reset();    // a re-issued pair_style may change graph or edge_headroom
  m_evaluator.reset();    // a re-issued pair_style (new precision, activations) needs a new evaluator
  for (auto &m : m_deviation_models) m.evaluator.reset();
  m_feature_exchange.reset();    // ... and new exchange settings a new exchange (made and bound at the next run)
  m_model_block_printed = false;    // ... and the model block says what it runs with
  m_system_atoms_per_z.clear();    // ... and model v2 its system inputs again
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
  // One potential file, or several for a model deviation: the first drives the dynamics.
  const int n_files = narg - 2 - ntypes;
  if (n_files < 1)
    error->all(FLERR,
               "pair_coeff edgeframe: expected '* * <potential file(s)> <element or NULL for each of the {} atom "
               "types>', got {} arguments",
               ntypes, narg);
  if (strcmp(arg[0], "*") != 0 || strcmp(arg[1], "*") != 0)
    error->all(FLERR, "pair_coeff edgeframe: the first two arguments must be '* *' (got '{} {}')", arg[0], arg[1]);

  // A second "file" that is no file but reads as an element: more elements than atom types.
  for (int f = 1; f < n_files; f++) {
    const std::string name = arg[2 + f];
    const bool symbol_like = name == "NULL" || (name.size() <= 3 && std::isupper((unsigned char) name[0]));
    if (symbol_like && !platform::file_is_readable(name))
      error->all(FLERR,
                 "pair_coeff edgeframe: expected '* * <potential file(s)> <element or NULL for each of the {} atom "
                 "types>', got {} arguments: '{}' is neither a potential file nor one of the last {}",
                 ntypes, narg, name, ntypes);
  }

  m_potential_file = arg[2];
  m_type_element.assign(1, "");
  for (int t = 1; t <= ntypes; t++) m_type_element.emplace_back(arg[1 + n_files + t]);
  const std::vector<std::string> elements(m_type_element.begin() + 1, m_type_element.end());

  auto potential = std::make_unique<edgeframe::Potential>();
  call_engine(error, Scope::ALL, FLERR, "pair_coeff edgeframe", [&] {
    *potential = edgeframe::read_potential(m_potential_file);
    const std::vector<int> map = potential->species_map(elements);
    m_type_species.assign(1, -1);
    m_type_species.insert(m_type_species.end(), map.begin(), map.end());
  });
  read_deviation_models(std::vector<std::string>(arg + 3, arg + 2 + n_files), elements, *potential);
  int mapped = 0;
  for (int t = 1; t <= ntypes; t++) mapped += m_type_species[t] >= 0;
  if (mapped == 0)
    error->all(FLERR, "pair_coeff edgeframe: every atom type is NULL; map at least one type to an element");
  for (int i = 1; i <= ntypes; i++)
    for (int j = i; j <= ntypes; j++) setflag[i][j] = (m_type_species[i] >= 0 && m_type_species[j] >= 0) ? 1 : 0;
  m_potential = std::move(potential);
  m_evaluator.reset();    // a new potential needs a new evaluator (made in init_style)
  m_model_block_printed = false;
  m_system_atoms_per_z.clear();
  m_graph.reset();
  m_kept.reset();
}
