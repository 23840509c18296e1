/* ----------------------------------------------------------------------
   The force call's parts that edgeframe and edgeframe/kk share (the step
   driver): engine setup at init (preconditions, evaluator, model block), the
   step graph from the candidate pairs, the engine call with its error and
   non-finite reporting, energies and virials into LAMMPS' tallies, the
   exchange of a rank without nodes, and the timing report at the end of a
   run. Each style gathers its nodes, pairs and positions in the engine's
   memory and puts the forces where LAMMPS wants them (pair_edgeframe.cpp,
   pair_edgeframe_kokkos.cpp). See doc/pair_style.md.
------------------------------------------------------------------------- */

#include "pair_edgeframe.h"

#include "atom.h"
#include "comm.h"
#include "error.h"
#include "force.h"
#include "neighbor.h"
#include "update.h"

#include "edgeframe_lammps_errors.h"
#include "evaluator.hpp"
#include "potential.hpp"
#include "runtime.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>

using namespace LAMMPS_NS;
using edgeframe_glue::call_engine;
using edgeframe_glue::Scope;

namespace {
// LAMMPS' 6-component order xx, yy, zz, xy, xz, yz as indices into a row-major 3x3.
constexpr int kVoigt[6] = {0, 4, 8, 1, 2, 5};
// The 9-component centroid order xx, yy, zz, xy, xz, yz, yx, zx, zy.
constexpr int kCentroid[9] = {0, 4, 8, 1, 2, 5, 3, 6, 7};
}    // namespace

void PairEdgeframe::set_units()
{
  // The engine works in Angstrom and eV. LAMMPS gives 1 Angstrom in its distance units
  // (force->angstrom) and Boltzmann's constant in its energy units per K (force->boltz), so
  // boltz / boltz(metal) is 1 eV in its energy units: LAMMPS' own constants, for every unit style
  // that has physical units.
  if (strcmp(update->unit_style, "lj") == 0)
    error->all(FLERR,
               "pair_style edgeframe cannot run in 'units lj' (reduced units have no Angstrom or eV; valid: real, "
               "metal, si, cgs, electron, micro, nano)");
  constexpr double kBoltzMetal = 8.617343e-5;    // eV/K: LAMMPS' force->boltz in units metal
  m_to_angstrom = 1.0 / force->angstrom;
  m_energy_from_ev = force->boltz / kBoltzMetal;    // exactly 1 in metal (x / x), and 1 Angstrom is 1.0
  m_force_from_engine = m_energy_from_ev * m_to_angstrom;
  m_min_distance_a = m_min_distance < 0.0 ? 0.3 : m_min_distance * m_to_angstrom;
}

void PairEdgeframe::check_run_preconditions(bool need_newton)
{
  set_units();
  if (need_newton && force->newton_pair == 0)
    error->all(FLERR, "pair_style edgeframe requires 'newton on' (newton pair is off){}",
               lmp->kokkos ? "; LAMMPS-KOKKOS on GPUs turns it off by default: add '-pk kokkos newton on neigh half' "
                             "(edgeframe/kk needs it on several ranks and with fold_images no)"
                           : "");
  if (atom->tag_enable == 0) error->all(FLERR, "pair_style edgeframe requires atom IDs");
  // The model's graph is every pair within r_cut. A pair LAMMPS leaves out of the neighbour list
  // changes the messages of its atoms, and so the forces on every atom the message passing
  // reaches, not only that pair's: refused rather than run with wrong forces.
  // (Neighbor::exclude is set later, in Neighbor::init: its lists' counts are what neigh_modify
  // set.)
  if (neighbor->nex_type > 0 || neighbor->nex_group > 0 || neighbor->nex_mol > 0)
    error->all(FLERR, "pair_style edgeframe needs every pair within the cutoff in its neighbour list: 'neigh_modify "
                      "exclude' removes pairs, which changes the forces on all atoms near them (remove the exclusion; "
                      "to hold atoms in place use fix setforce or leave them out of the integrator's group)");
  if (atom->molecular != Atom::ATOMIC)
    for (int k = 1; k <= 3; k++)
      if (force->special_lj[k] == 0.0 && force->special_coul[k] == 0.0)
        error->all(
            FLERR,
            "pair_style edgeframe needs every pair within the cutoff in its neighbour list: special_bonds "
            "with lj and coul both 0 for 1-{} neighbours removes bonded pairs (use 'special_bonds lj/coul 1 1 1' "
            "or weights above 0)",
            k + 1);
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
                 plan.fits ? "" : ", over the budget even so: the step may run out of memory (fewer atoms per GPU)");
}

void PairEdgeframe::MpiReduce::sum(double *values, int count)
{
  MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, world);
}

double PairEdgeframe::lammps_r_cut() const
{
  return m_potential->config.r_cut / m_to_angstrom;
}

bool PairEdgeframe::is_v2() const
{
  return m_potential && m_potential->format_version == edgeframe::kFormatVersionV2;
}

int PairEdgeframe::exchanged_layers() const
{
  return m_potential->config.layers - (is_v2() ? 0 : 1);
}

int PairEdgeframe::receptive_layers() const
{
  return m_potential->config.layers + (is_v2() ? 1 : 0);
}

void PairEdgeframe::update_system(const int *type, int nlocal)
{
  if (!is_v2()) return;
  // Atoms per atomic number over all ranks (species index = Z - 1 for model v2).
  std::vector<double> counts(m_potential->v2.max_num_elements, 0.0);
  for (int i = 0; i < nlocal; i++) {
    const int s = m_type_species[type[i]];
    if (s >= 0) counts[s + 1] += 1.0;
  }
  MPI_Allreduce(MPI_IN_PLACE, counts.data(), (int) counts.size(), MPI_DOUBLE, MPI_SUM, world);
  if (counts == m_system_atoms_per_z) return;
  const bool changed = !m_system_atoms_per_z.empty();
  edgeframe::SystemInputs in;
  in.task = m_task;
  in.charge = m_charge;
  in.spin = m_spin;
  in.charge_set = m_charge_set;
  in.spin_set = m_spin_set;
  in.atoms_per_z = counts;
  std::string line;
  call_engine(error, Scope::ALL, FLERR, "pair_style edgeframe", [&] {
    line = m_evaluator->set_system(in);
    for (auto &m : m_deviation_models) m.evaluator->set_system(in);    // the ensemble's same system
  });
  m_system_atoms_per_z = counts;
  if (comm->me == 0) utils::logmesg(lmp, "{}{}\n", changed ? "edgeframe: the composition changed; " : "", line);
}

void PairEdgeframe::init_engine(bool need_newton)
{
  check_run_preconditions(need_newton);
  m_reduce.world = world;    // idle ranks use it too (idle_rank_collectives)
  if (!is_v2() && (!m_task.empty() || m_charge_set || m_spin_set))
    error->all(FLERR,
               "pair_style edgeframe: task, charge and spin are model v2 settings; potential {} is a v1 model "
               "(format_version 1)",
               m_potential_file);
  if (is_v2() && !m_task.empty() && !m_potential->v2.task(m_task))
    error->all(FLERR, "pair_style edgeframe: task '{}' is not one of the tasks of potential {}: {}", m_task,
               m_potential_file, m_potential->v2.task_names());
  if (m_edge_chunk > 0 && m_activations != "recompute" && m_activations != "stream")
    error->all(FLERR,
               "pair_style edgeframe: edge_chunk {} needs 'activations recompute' or 'activations stream' (kept "
               "activations are never chunked; activations auto sizes its own chunks)",
               m_edge_chunk);
  if (m_activations == "stream" && !is_v2())
    error->all(FLERR,
               "pair_style edgeframe: activations stream is for model v2 potentials; potential {} is a v1 model "
               "(use activations recompute)",
               m_potential_file);
  if (m_memory_budget_gb > 0.0 && m_activations != "auto")
    error->all(FLERR, "pair_style edgeframe: memory_budget is for 'activations auto' (activations is {})",
               m_activations);
  try {
    edgeframe::require_precision_available(edgeframe::parse_precision(m_precision));
  } catch (const edgeframe::InputError &e) {
    error->all(FLERR, "pair_style edgeframe: {}", e.what());
  }

  if (comm->me == 0 && m_edge_headroom > 0.0 && comm->nprocs > 1)
    error->warning(FLERR,
                   "pair_style edgeframe: edge_headroom {} is for one MPI rank; on {} ranks the graph has "
                   "its exact size (edge_headroom 0)",
                   m_edge_headroom, comm->nprocs);
  if (comm->me == 0 && m_graph_per_rebuild) {
    const double rc = m_potential->config.r_cut, rs = rc + neighbor->skin * m_to_angstrom;
    const double h = edge_headroom();
    utils::logmesg(
        lmp,
        "edgeframe: graph per_rebuild: candidate pairs within r_cut + skin = {:.4g} A kept from "
        "neighbour-list rebuilds; each step evaluates those within r_cut {:.4g} A ({})\n",
        rs, rc,
        h > 0.0 ? fmt::format("in a graph of fixed size with {:.3g} % spare edges, edge_headroom {:.3g}", 100.0 * h, h)
                : std::string("exactly: edge_headroom 0"));
  }
  if (comm->me == 0 && m_cuda_graph && m_graph_per_rebuild && edge_headroom() == 0.0 &&
      edgeframe::build_info().execution_space == "Cuda" && !m_timing_detail)
    error->warning(FLERR,
                   "pair_style edgeframe: cuda_graph yes with edge_headroom 0{}: the graph's size follows the "
                   "edges within r_c, so a step replays only until that count changes and is captured anew "
                   "after; give edge_headroom > 0 (one rank)",
                   comm->nprocs > 1 ? " (several ranks)" : "");
  if (comm->me == 0 && m_cuda_graph) {
    const char *why = edgeframe::build_info().execution_space != "Cuda" ? "this build runs on the host"
                      : m_timing_detail                                 ? "timing detail fences every kernel"
                                                                        : nullptr;
    if (why) error->warning(FLERR, "pair_style edgeframe: cuda_graph yes has no effect here ({})", why);
  }
  if (!m_evaluator) {
    call_engine(error, Scope::ALL, FLERR, "pair_style edgeframe",
                [&] { m_evaluator = std::make_unique<edgeframe::Evaluator>(*m_potential, evaluator_options()); });
    m_system_atoms_per_z.clear();    // a new evaluator has no system inputs yet
  }
  init_deviation();
  m_recomputed_at_init = m_evaluator->layers_recomputed();
  m_graph_counts_at_init[0] = m_evaluator->cuda_graph_captures();
  m_graph_counts_at_init[1] = m_evaluator->cuda_graph_replays();    // the end-of-run line counts this run's
  m_graph.reset();
  // m_kept stays (settings and pair_coeff drop it): its next rebuild keeps its storage when the
  // nodes and edges still fit, so that a step captured as a CUDA graph in one run replays in the
  // next.
  m_need_node_map = true;    // rebuild the node map at the first compute
  m_time_graph = m_time_engine = m_time_copy = 0.0;    // the end-of-run split is per run
  m_times = edgeframe::StepTimes();
  m_sum_ghosts = m_sum_nodes = m_sum_ghost_nodes = m_sum_edges = 0.0;
  m_calls = 0;
  m_graph_regrowths = 0;
  std::fill(std::begin(m_first_call), std::end(m_first_call), 0.0);
  if (comm->me == 0 && !m_model_block_printed) print_model_block();
  m_model_block_printed = true;    // once per pair_style / pair_coeff, not at every run
}

edgeframe::EvaluatorOptions PairEdgeframe::evaluator_options() const
{
  edgeframe::EvaluatorOptions options;
  options.precision = edgeframe::parse_precision(m_precision);
  using Activations = edgeframe::EvaluatorOptions::Activations;
  options.activations = m_activations == "keep"        ? Activations::keep
                        : m_activations == "recompute" ? Activations::recompute
                        : m_activations == "stream"    ? Activations::stream
                                                       : Activations::automatic;
  options.edge_chunk = m_edge_chunk;
  options.memory_budget = m_memory_budget_gb * 1e9;
  options.cuda_graph = m_cuda_graph;
  return options;
}

void PairEdgeframe::print_model_block()
{
  const auto &cfg = m_potential->config;
  std::size_t n_params = 0;
  for (const auto &named : m_potential->tensors) n_params += named.second.values.size();
  std::string elements;
  for (const auto &s : cfg.species) elements += (elements.empty() ? "" : " ") + s;
  const auto info = edgeframe::build_info();
  if (is_v2()) {
    const auto &v2 = m_potential->v2;
    std::string mapped;
    for (std::size_t t = 1; t < m_type_element.size(); t++) mapped += (t > 1 ? " " : "") + m_type_element[t];
    utils::logmesg(lmp,
                   "edgeframe {}: potential {} (model v2: fairchem eSCN-MD, {})\n"
                   "  elements Z 1..{} (types map to: {}) | r_cut {:.4g} A | lmax {} mmax {} | channels {} (hidden {}, "
                   "edge {}) | layers {} | experts {} | tasks {}\n"
                   "  parameters {} (stored {}) | precision {} | execution space {} | Kokkos {} | LibTorch {}\n",
                   info.edgeframe_version, m_potential_file,
                   m_potential->provenance.count("model_id") && !m_potential->provenance.at("model_id").empty()
                       ? m_potential->provenance.at("model_id")
                       : "converted",
                   v2.max_num_elements - 1, mapped, v2.r_cut, v2.lmax, v2.mmax, v2.channels, v2.hidden_channels,
                   v2.edge_channels, v2.layers, v2.experts, v2.task_names(), n_params, m_potential->dtype, m_precision,
                   info.execution_space, info.kokkos_version, info.torch_version);
    return;
  }
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

void PairEdgeframe::report_non_finite(const edgeframe::NonFiniteError &e, const int *atom_of_node,
                                      const std::string &potential_file)
{
  // The engine names a node; the user needs the atom and the step. Callers report before
  // adding anything to f, eng_vdwl or the virial, and error->one stops before LAMMPS integrates on.
  // potential_file: a model deviation's other potential (the dynamics' own goes unnamed).
  const std::string whose =
      potential_file.empty() ? "" : fmt::format(" (model deviation, potential {})", potential_file);
  const int k = e.node();
  if (k < 0)
    error->one(FLERR, "pair_style edgeframe{}: {} at step {}; stopping instead of integrating on", whose, e.summary(),
               update->ntimestep);
  error->one(FLERR,
             "pair_style edgeframe{}: {} at step {}: atom {} is the first atom with a non-finite energy or force "
             "({}; {} atom(s) of this rank's graph affected); stopping instead of integrating on",
             whose, e.summary(), update->ntimestep, atom->tag[atom_of_node[k]], e.detail(), e.count());
}

void PairEdgeframe::accumulate_per_atom(const edgeframe::Result &result, const int *atom_of_node, int n_nodes,
                                        int n_local)
{
  if (eflag_atom) {
    auto e_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), result.energies);
    for (int k = 0; k < n_local; k++) eatom[atom_of_node[k]] += e_h(k) * m_energy_from_ev;
  }
  if (vflag_atom || cvflag_atom) {
    // Ghost entries are folded back onto their owners by compute stress/atom (newton on).
    auto w_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), result.atom_virial);
    for (int k = 0; k < n_nodes; k++) {
      const int i = atom_of_node[k];
      if (vflag_atom)
        for (int c = 0; c < 6; c++) vatom[i][c] += w_h(k, kVoigt[c]) * m_energy_from_ev;
      if (cvflag_atom)
        for (int c = 0; c < 9; c++) cvatom[i][c] += w_h(k, kCentroid[c]) * m_energy_from_ev;
    }
  }
}

void PairEdgeframe::bind_exchange(const char *style)
{
  // An error in bind() must stop every rank cleanly (call_engine).
  call_engine(error, Scope::ONE, FLERR, fmt::format("pair_style {} (exchange setup)", style), [&] {
    m_feature_exchange->bind(&m_nodes, atom->nlocal, atom->nlocal + atom->nghost, m_exchange_width, m_exchange_type);
  });
  if (m_calls == 1 && comm->me == 0) print_transport();
}

void PairEdgeframe::idle_rank_collectives()
{
  // The same sequence of collective calls as the engine makes on ranks with atoms, with no rows
  // of this rank's own: in exchange mode the forward exchanges before the layers that read ghost
  // features (exchange.hpp), then the reverse ones in the backward pass; in every ghost mode
  // model v2's charge-balance sums after each layer, forward and backward.
  const double t0 = platform::walltime();
  const int exchanges = m_exchange ? exchanged_layers() : 0;
  const int layers = m_potential->config.layers;
  // Model v2 balances charge after every layer with a sum over all ranks, forward and backward
  // (fairchem balance_channels): this rank adds zeros, in the order the engine makes the calls.
  const auto &v2 = m_potential->v2;
  std::vector<int> balanced;
  if (is_v2() && comm->nprocs > 1) {
    if (v2.charge_balanced[1] > v2.charge_balanced[0])
      balanced.push_back(v2.charge_balanced[1] - v2.charge_balanced[0]);
    if (v2.spin_balanced[1] > v2.spin_balanced[0]) balanced.push_back(v2.spin_balanced[1] - v2.spin_balanced[0]);
  }
  call_engine(error, Scope::ONE, FLERR, "pair_style edgeframe (idle rank)", [&] {
    // Layer t reads exchanged ghost features from layer layers - exchanges on.
    for (int t = 0; t < layers; t++) {
      if (t >= layers - exchanges) m_feature_exchange->forward(edgeframe::NodeRows());
      for (int width : balanced) {
        std::vector<double> zeros(width, 0.0);
        m_reduce.sum(zeros.data(), width);
      }
    }
    for (int t = layers - 1; t >= 0; t--) {
      for (auto it = balanced.rbegin(); it != balanced.rend(); ++it) {
        std::vector<double> zeros(*it, 0.0);
        m_reduce.sum(zeros.data(), *it);
      }
      if (t >= layers - exchanges) m_feature_exchange->reverse(edgeframe::NodeRows());
    }
  });
  const double dt = platform::walltime() - t0;
  m_time_engine += dt;
  if (m_timing_detail) {
    m_times.exchange += dt;
    m_times.total += dt;
  }
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
    if (m_kept && edge_headroom() > 0.0)
      utils::logmesg(lmp,
                     "edgeframe graph per_rebuild on rank 0: {} edges held (edges within r_cut and spare, "
                     "spare fraction {:.3g}), {} step(s) run again after their edges outgrew the graph\n",
                     m_kept->capacity(), m_kept->spare_fraction(), m_graph_regrowths);
    if (m_timing_detail && m_exchange) print_exchange_split();
    if (m_evaluator && m_evaluator->layers_recomputed() > m_recomputed_at_init)
      utils::logmesg(lmp,
                     "edgeframe activations {}: {} edge parts (layers x edge chunks) run again in the backward "
                     "pass over {} force calls (rank 0)\n",
                     m_activations, m_evaluator->layers_recomputed() - m_recomputed_at_init, m_calls);
    if (m_evaluator && m_cuda_graph)
      utils::logmesg(lmp, "edgeframe cuda_graph: {} capture(s), {} replayed step(s) of {} force calls (rank 0)\n",
                     m_evaluator->cuda_graph_captures() - m_graph_counts_at_init[0],
                     m_evaluator->cuda_graph_replays() - m_graph_counts_at_init[1], m_calls);
  }
  if (m_timing_detail && m_calls > 1) print_split_after_first_call();    // collective
}

void PairEdgeframe::make_step_graph(const edgeframe::kk::PairList<edgeframe::Exec> &pairs, Positions positions,
                                    Species species, int n_local, bool rebuilt, const char *style)
{
  call_engine(error, Scope::ONE, FLERR, fmt::format("pair_style {} (graph)", style), [&] {
    const double r_cut = m_potential->config.r_cut;
    if (!m_graph_per_rebuild) {
      m_graph =
          std::make_unique<edgeframe::AtomGraph>(edgeframe::make_graph(pairs, positions, species, n_local, r_cut));
      return;
    }
    if (!rebuilt && m_kept) {
      // The pairs are those the candidates were built from (LAMMPS keeps its lists between
      // rebuilds): the same pairs, now at other positions and, with a changing box, other
      // image shifts.
      m_kept->refresh(pairs, positions);
      return;
    }
    // Every candidate pair LAMMPS may bring within r_cut before its next rebuild (its lists
    // reach r_cut + skin).
    if (!m_kept) m_kept = std::make_unique<edgeframe::KeptGraph>(edge_headroom());
    m_kept->rebuild(pairs, positions, species, n_local, r_cut + neighbor->skin * m_to_angstrom, r_cut);
  });
  const int n_nodes = (int) positions.extent(0);
  m_sum_nodes += n_nodes;
  m_sum_ghost_nodes += n_nodes - n_local;
}

double PairEdgeframe::edge_headroom() const
{
  // Several ranks: exact. A step found too small afterwards is run again, and on several ranks
  // every rank would have to run it again (the exchange and model v2's sums are collective).
  if (comm->nprocs > 1) return 0.0;
  if (m_edge_headroom >= 0.0) return m_edge_headroom;
  // Automatic: spare slots where a CUDA graph replays the step (a graph of fixed size stays
  // valid across steps and rebuilds); elsewhere the exact size (one read of the count per step).
  const bool replays = m_cuda_graph && edgeframe::build_info().execution_space == "Cuda" && !m_timing_detail;
  return replays ? kAutomaticEdgeHeadroom : 0.0;
}

edgeframe::Result PairEdgeframe::evaluate_step(Positions positions, edgeframe::NodeExchange *exchange,
                                               bool results_to_host, const char *style,
                                               const std::function<const int *()> &atom_of_node_on_host)
{
  edgeframe::What what;
  what.forces = true;
  what.energies = eflag_atom;
  // A captured step replays only the same request: with cuda_graph the virial is computed at
  // every step (a sum over the edges the forces need anyway) and tallied when LAMMPS asks.
  what.virial = vflag_global || m_cuda_graph;
  what.atom_virial = vflag_atom || cvflag_atom;
  what.exchange = exchange;
  what.times = m_timing_detail ? &m_times : nullptr;
  what.reduce = is_v2() && comm->nprocs > 1 ? &m_reduce : nullptr;
  // The size in the prefix: an allocation failure then says how much this rank asked for.
  const std::string where = fmt::format("pair_style {} ({} nodes, {} edges on rank {}, step {})", style,
                                        positions.extent(0), step_graph().edges.n_edges, comm->me, update->ntimestep);
  edgeframe::Result result =
      compute_on_step_graph(*m_evaluator, positions, what, where, results_to_host, atom_of_node_on_host);
  // graph per_rebuild with spare edges: a step whose edges within r_cut outgrew the graph ran
  // on part of them; the graph has grown since (held_every_edge), so the step runs again.
  auto held = [&] {
    bool all = true;
    call_engine(error, Scope::ONE, FLERR, where, [&] { all = !m_kept || m_kept->held_every_edge(); });
    return all;
  };
  while (!held()) {
    ++m_graph_regrowths;
    call_engine(error, Scope::ONE, FLERR, where, [&] { m_kept->step(positions); });
    result = compute_on_step_graph(*m_evaluator, positions, what, where, results_to_host, atom_of_node_on_host);
  }
  m_sum_edges += m_kept ? m_kept->live_edges() : step_graph().edges.n_edges;
  log_activation_plan();
  return result;
}

edgeframe::Result PairEdgeframe::compute_on_step_graph(edgeframe::Evaluator &evaluator, Positions positions,
                                                       const edgeframe::What &what, const std::string &where,
                                                       bool results_to_host,
                                                       const std::function<const int *()> &atom_of_node_on_host,
                                                       const std::string &potential_file)
{
  edgeframe::Result result;
  std::optional<edgeframe::NonFiniteError> non_finite;    // reported below, outside call_engine's catch
  call_engine(error, Scope::ONE, FLERR, where, [&] {
    try {
      result = evaluator.compute(step_graph(), positions, what);
    } catch (const edgeframe::NonFiniteError &e) {
      non_finite.emplace(e);
      return;
    }
    if (results_to_host) Kokkos::fence("edgeframe::compute results to host");    // LAMMPS reads them there next
  });
  if (non_finite) {
    check_deferred_min_distance();
    report_non_finite(*non_finite, atom_of_node_on_host(), potential_file);
  }
  return result;
}

void PairEdgeframe::add_energy_and_virials(const edgeframe::Result &result, const int *atom_of_node, int n_nodes,
                                           int n_local)
{
  if (eflag_global) eng_vdwl += result.energy * m_energy_from_ev;
  if (vflag_global)
    for (int c = 0; c < 6; c++) virial[c] += result.virial[kVoigt[c]] * m_energy_from_ev;
  accumulate_per_atom(result, atom_of_node, n_nodes, n_local);
}
