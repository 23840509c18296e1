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
  close_deviation_file();
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
  init_ghost_mode();
}

void PairEdgeframe::init_ghost_mode()
{
  const bool shell_mode = !m_folded && !m_exchange;
  const auto &cfg = m_potential->config;
  // Exchange mode: the features of one atom, D * C values in the compute dtype, travel as their
  // bytes in LAMMPS' double buffers (fp32: two per double); LAMMPS sizes its buffers from
  // comm_forward / comm_reverse in comm->init.
  m_exchange_width = cfg.num_coeffs() * cfg.channels;
  m_exchange_type = m_precision == "fp64" ? edgeframe::RowType::f64 : edgeframe::RowType::f32;
  comm_forward = comm_reverse =
      m_exchange ? edgeframe_glue::FeatureExchange::stage_words(m_exchange_width, m_exchange_type) : 0;
  // A model deviation's forces on ghosts go to their owners in the same buffers.
  if (!m_folded) comm_reverse = std::max(comm_reverse, deviation_reverse_words());
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
  const double shell = receptive_layers() * lammps_r_cut() + neighbor->skin;    // LAMMPS distance units
  if (shell_mode && comm->cutghostuser < shell) {
    if (!m_cutghost_raised) m_cutghost_before = comm->cutghostuser;
    m_cutghost_raised = true;
    comm->cutghostuser = shell;
    if (comm->me == 0)
      utils::logmesg(lmp, "edgeframe: ghost cutoff set to {:.4g} = {} hops x r_cut {:.4g} + skin {:.4g} (units {})\n",
                     shell, receptive_layers(), lammps_r_cut(), neighbor->skin, update->unit_style);
  }
  if (!shell_mode && m_cutghost_raised) {    // an earlier run in shell mode raised it
    comm->cutghostuser = m_cutghost_before;
    m_cutghost_raised = false;
  }
  if (m_exchange && comm->me == 0 && m_feature_exchange->host_threads() > 1 && !m_feature_exchange->device_comm())
    utils::logmesg(lmp, "edgeframe: exchange host copies on {} OpenMP threads (exchange_threads)\n",
                   m_feature_exchange->host_threads());
  if (m_exchange && comm->me == 0)
    utils::logmesg(
        lmp,
        "edgeframe: ghost mode exchange: ghost cutoff r_cut + skin = {:.4g} (units {}); {} features per atom "
        "({} doubles in LAMMPS' buffers) forward-communicated before layers {}..{} and "
        "reverse-communicated in the backward pass{}\n",
        lammps_r_cut() + neighbor->skin, update->unit_style, m_exchange_width, comm_forward,
        cfg.layers - exchanged_layers() + 1, cfg.layers,
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
  const double rc = m_potential ? lammps_r_cut() : 0.0;    // init_style set the units
  cutghost[i][j] = cutghost[j][i] = rc;
  return rc;
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
    m_nodes.build(atom->type, nlocal, nall, m_type_species, list, receptive_layers());
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

void PairEdgeframe::build_step_graph(Positions positions, bool rebuilt)
{
  // graph per_step (the default): every step the directed edges with r < r_cut at the current
  // positions. The candidate pairs of the neighbour list reach r_cut + skin, which at LAMMPS'
  // metal default skin of 2 A is (7/5)^3 = 2.7x more pairs than edges for r_cut 5 A; filtering
  // them costs one pass and a sort, far less than evaluating the model on edges whose envelope
  // is zero. graph per_rebuild keeps them all between rebuilds (make_step_graph).
  auto &b = *m_buffers;
  edgeframe::kk::PairList<edgeframe::Exec> pairs;
  pairs.i = b.pair_i;
  pairs.j = b.pair_j;
  pairs.shift = b.pair_shift;    // extent 0 in ghost-shell mode: ghosts carry their own positions
  pairs.half = false;    // a full list: each entry is one directed edge (i <- j)
  make_step_graph(pairs, positions, b.species, m_nodes.n_local, rebuilt, "edgeframe");
}

void PairEdgeframe::copy_positions()
{
  auto &b = *m_buffers;
  double **x = atom->x;
  const int n = m_nodes.n_nodes();
  for (int k = 0; k < n; k++) {
    const int i = m_nodes.atom_of_node[k];
    for (int d = 0; d < 3; d++) b.x_host(k, d) = x[i][d] * m_to_angstrom;
  }
  Kokkos::deep_copy(b.x, b.x_host);
  if (m_folded) {
    // Image offsets from the current ghost and owner positions, so that box changes (NPT,
    // fix deform) between neighbour-list rebuilds are followed exactly.
    const std::size_t p = m_nodes.pair_image.size();
    for (std::size_t e = 0; e < p; e++) {
      const int img = m_nodes.pair_image[e], owner = m_nodes.atom_of_node[m_nodes.pair_j[e]];
      for (int d = 0; d < 3; d++) b.pair_shift_host(e, d) = (x[img][d] - x[owner][d]) * m_to_angstrom;
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
  if (closest.val >= m_min_distance_a * m_min_distance_a) return;    // Angstrom^2: engine-side positions
  const int p = closest.loc;
  const int i = m_nodes.atom_of_node[m_nodes.pair_i[p]];
  const int j = m_folded ? m_nodes.pair_image[p] : m_nodes.atom_of_node[m_nodes.pair_j[p]];
  error->one(FLERR,
             "pair_style edgeframe: atoms {} and {} are {:.4g} A apart at step {}, closer than min_distance {:.4g} A",
             atom->tag[i], atom->tag[j], std::sqrt(closest.val), update->ntimestep, m_min_distance_a);
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
  if (m_exchange && rebuilt) bind_exchange("edgeframe");
  // A rank that owns no mapped atom has no energy and so exerts no force: nothing to compute
  // (ranks of an open box beyond the atoms, or every owned type NULL under hybrid). In
  // exchange mode it still takes part in every communication: its ghosts may be relays.
  update_system(atom->type, atom->nlocal);    // collective (model v2)
  if (m_nodes.n_local == 0) {
    if (m_exchange || (is_v2() && comm->nprocs > 1)) idle_rank_collectives();
    if (deviation_due()) deviation_on_idle_rank();
    note_first_call();
    return;
  }
  copy_positions();
  const int n = m_nodes.n_nodes();
  const Positions positions = Kokkos::subview(m_buffers->x, std::make_pair(0, n), Kokkos::ALL);
  build_step_graph(positions, rebuilt);
  check_min_distance();
  double t1 = platform::walltime();
  m_time_graph += t1 - t0;

  const edgeframe::Result result = evaluate_step(positions, m_exchange ? m_feature_exchange.get() : nullptr, true,
                                                 "edgeframe", [&] { return m_nodes.atom_of_node.data(); });
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
      f[i][d] += fk * m_force_from_engine;
    }
  }
  add_energy_and_virials(result, m_nodes.atom_of_node.data(), n, m_nodes.n_local);
  m_time_copy += platform::walltime() - t2;
  if (deviation_due())
    evaluate_deviation(positions, m_exchange ? m_feature_exchange.get() : nullptr, result, m_nodes.atom_of_node.data(),
                       n, "edgeframe");
  note_first_call();
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
  if (m_reverse_deviation) return pack_deviation_forces(n, first, buf);
  return m_feature_exchange->pack_reverse(n, first, buf);
}

void PairEdgeframe::unpack_reverse_comm(int n, int *list, double *buf)
{
  if (m_reverse_deviation) return unpack_deviation_forces(n, list, buf);
  m_feature_exchange->unpack_reverse(n, list, buf);
}
