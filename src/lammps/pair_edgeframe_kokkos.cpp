/* ----------------------------------------------------------------------
   edgeframe/kk: see pair_edgeframe_kokkos.h for what stays where.

   Device path, per neighbour-list rebuild: the candidate pairs of the device
   graph (pair_edgeframe_kokkos_graph.cpp, rebuild_device_graph). Per step: gather the
   node positions and image offsets from atomKK->k_x, filter the pairs to
   edges (r < r_cut, the engine's make_graph), check the distance floor,
   evaluate, check the forces, add them to atomKK->k_f. Everything above runs
   on DeviceType; energy and virial come back as scalars.
------------------------------------------------------------------------- */

#include "pair_edgeframe_kokkos.h"

#include "edgeframe_min_distance.h"

#include "atom_kokkos.h"
#include "atom_masks.h"
#include "comm.h"
#include "error.h"
#include "kokkos.h"
#include "neigh_list_kokkos.h"
#include "neigh_request.h"
#include "neighbor.h"
#include "update.h"

#include "edgeframe_lammps_errors.h"
#include "potential.hpp"

#include <cmath>
#include <cstdlib>

using namespace LAMMPS_NS;
using edgeframe_glue::call_engine;
using edgeframe_glue::Scope;

template <class DeviceType>
PairEdgeframeKokkos<DeviceType>::PairEdgeframeKokkos(LAMMPS *lmp) : PairEdgeframe(lmp)
{
  kokkosable = 1;
  atomKK = (AtomKokkos *) atom;
  execution_space = ExecutionSpaceFromDevice<DeviceType>::space;
  // compute() syncs and marks what it touches itself (two paths with different needs).
  datamask_read = EMPTY_MASK;
  datamask_modify = EMPTY_MASK;
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::init_style()
{
  // Device path: one rank with periodic images folded onto their owners, or the per-layer
  // exchange (several ranks, or fold_images no) with LAMMPS' brick communication. The ghost
  // shell, comm_style tiled (CommTiledKokkos packs pair communication on the host) and a model
  // deviation with the exchange (its ghost forces travel in the host reverse communication)
  // stay on the host-data path.
  const bool folded = m_fold_images && comm->nprocs == 1;
  // The per-layer exchange goes through LAMMPS-KOKKOS' device communication where LAMMPS keeps
  // pair communication on the device (GPU-aware MPI, or one rank; it moves it to the host
  // otherwise, e.g. several ranks without GPU-aware MPI), else through LAMMPS' host buffers
  // (the node rows reordered on the device). The keyword device_comm no forces the host buffers.
  // comm_style tiled: CommTiledKokkos sends pair communication to the host functions always.
  const bool forward_legacy = lmp->kokkos->forward_pair_comm_legacy,
             reverse_legacy = lmp->kokkos->reverse_pair_comm_legacy;
  m_exchange_device_comm = kSharesEngineMemory && m_ghost_exchange && !folded && comm->style == Comm::BRICK &&
                           !forward_legacy && !reverse_legacy && m_device_comm_allowed;
  // CommKokkos sends a device style's forward communication to the *_kokkos functions unless
  // LAMMPS keeps it on the host (forward_comm(Pair *)), so on GPU builds the device path can
  // take the host buffers (device_comm no, `comm/pair/forward device` with `comm/pair/reverse
  // host`) only where LAMMPS moved forward pair communication to the host itself.
  const bool device_style_forward_on_device = ExecutionSpaceFromDevice<DeviceType>::space == Device && !forward_legacy;
  const bool exchange = !folded && m_ghost_exchange && comm->style == Comm::BRICK && m_deviation_models.empty() &&
                        (m_exchange_device_comm || !device_style_forward_on_device);
  m_device_path = kSharesEngineMemory && (folded || exchange);
  // LAMMPS-KOKKOS routes a pair style's forward/reverse communication (the per-layer feature
  // exchange) by execution_space: Host means CommBrick's host buffers and our pack functions;
  // the device means CommKokkos' device buffers and the *_kokkos pack functions below.
  execution_space = m_device_path ? ExecutionSpaceFromDevice<DeviceType>::space : Host;
  reverse_comm_device = 0;
  if (m_exchange_device_comm) {
    // Device, not ExecutionSpaceFromDevice (HostKK on CPU builds, which CommKokkos sends to
    // the host functions): CPU builds then run the same device communication, in host memory.
    execution_space = Device;
    reverse_comm_device = 1;
  }
  if (!m_device_path) {
    // Host-data path: the plain style's node map, ghost exchange or shell, host neighbour list.
    PairEdgeframe::init_style();
    if (comm->me == 0)
      utils::logmesg(lmp, "edgeframe/kk: {}; atom data is staged through the host\n",
                     !kSharesEngineMemory          ? "host instantiation of a device build"
                     : !m_ghost_exchange           ? "ghost_mode shell"
                     : comm->style != Comm::BRICK  ? "comm_style tiled"
                     : !m_deviation_models.empty() ? "a model deviation with the per-layer exchange"
                                                   : "the exchange through LAMMPS' host buffers on a GPU build");
    return;
  }
  // Folded: newton off is fine (LAMMPS-KOKKOS on GPUs defaults to it with full lists), every
  // force lands on an owned atom. Exchange: forces land on ghost nodes too and LAMMPS' reverse
  // communication of forces (newton on) brings them to their owners.
  init_engine(!folded);
  m_folded = folded;
  m_exchange = !folded;
  if (m_folded && atom->map_style == Atom::MAP_NONE)
    error->all(FLERR, "pair_style edgeframe/kk requires an atom map to fold periodic images onto their owners: "
                      "add 'atom_modify map array' before the box is created");
  ghostneigh = 0;
  auto request = neighbor->add_request(this, NeighConst::REQ_FULL);
  request->set_kokkos_host(std::is_same_v<DeviceType, LMPHostType> && !std::is_same_v<DeviceType, LMPDeviceType>);
  request->set_kokkos_device(std::is_same_v<DeviceType, LMPDeviceType>);
  init_ghost_mode();    // folded: no exchange, and a ghost cutoff an earlier shell-mode run raised goes back

  const int ntypes = atom->ntypes;
  d_type_species = View1<int>("edgeframe/kk::type_species", ntypes + 1);
  auto h = Kokkos::create_mirror_view(d_type_species);
  for (int t = 0; t <= ntypes; t++) h(t) = m_type_species[t];
  Kokkos::deep_copy(d_type_species, h);
  if (comm->me == 0)
    utils::logmesg(lmp, "edgeframe/kk: device-resident path on {} ({})\n", Exec::name(),
                   m_folded ? "periodic images folded onto owners"
                            : fmt::format("per-layer exchange, {} rank(s): positions, forces and features stay on "
                                          "the device",
                                          comm->nprocs));
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::gather_positions_and_shifts()
{
  // Image offsets from the current image and owner positions, so that box changes between
  // neighbour-list rebuilds (NPT, fix deform) are followed exactly, as in the host path.
  auto x = atomKK->k_x.view<DeviceType>();
  auto positions = d_positions;
  auto atom_of_node = d_atom_of_node;
  const double to_a = m_to_angstrom;    // the engine works in Angstrom
  Kokkos::parallel_for(
      "edgeframe/kk::gather_positions", Kokkos::RangePolicy<DeviceType>(0, m_n_nodes), KOKKOS_LAMBDA(int k) {
        const int i = atom_of_node(k);
        for (int d = 0; d < 3; d++) positions(k, d) = x(i, d) * to_a;
      });
  if (!m_folded) return;    // the exchange: ghosts are nodes at their own positions
  auto shift = d_shift;
  auto pair_image = d_pair_image, pair_owner = d_pair_owner;
  Kokkos::parallel_for(
      "edgeframe/kk::image_shifts", Kokkos::RangePolicy<DeviceType>(0, m_n_pairs), KOKKOS_LAMBDA(int p) {
        for (int d = 0; d < 3; d++) shift(p, d) = (x(pair_image(p), d) - x(pair_owner(p), d)) * to_a;
      });
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::start_min_distance_device()
{
  // The closest candidate pair, by a min-loc reduction into host-pinned memory.
  m_min_distance_pending = false;
  if (m_n_pairs == 0) return;
  if (!m_closest.data())
    m_closest = Kokkos::View<edgeframe_glue::ClosestPair, Kokkos::SharedHostPinnedSpace>("edgeframe/kk::closest");
  auto x = atomKK->k_x.view<DeviceType>();
  auto pair_image = d_pair_image, pair_i = d_pair_i, atom_of_node = d_atom_of_node;
  edgeframe_glue::closest_pair_into<DeviceType>(
      "edgeframe/kk::min_distance", m_n_pairs,
      KOKKOS_LAMBDA(int p) {
        const int i = atom_of_node(pair_i(p)), j = pair_image(p);
        double r2 = 0.0;
        for (int d = 0; d < 3; d++) r2 += (x(j, d) - x(i, d)) * (x(j, d) - x(i, d));
        return r2;
      },
      m_closest);
  m_min_distance_pending = true;
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::finish_min_distance_device()
{
  // After the engine (or its non-finite error, which the closeness may have caused and which
  // this message then explains better): only a violation goes further to the host.
  if (!m_min_distance_pending) return;
  m_min_distance_pending = false;
  DeviceType().fence("edgeframe/kk::min_distance read");    // the step's results reached the host: nothing left
  const edgeframe_glue::ClosestPair closest = m_closest();
  const double floor = m_min_distance_a / m_to_angstrom;    // LAMMPS distance units, as x
  if (closest.val >= floor * floor) return;
  auto h_pair_i = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Kokkos::subview(d_pair_i, closest.loc));
  auto h_image = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Kokkos::subview(d_pair_image, closest.loc));
  atomKK->sync(Host, TAG_MASK);
  error->one(FLERR,
             "pair_style edgeframe: atoms {} and {} are {:.4g} A apart at step {}, closer than min_distance {:.4g} A",
             atom->tag[h_atom_of_node(h_pair_i())], atom->tag[h_image()], std::sqrt(closest.val) * m_to_angstrom,
             update->ntimestep, m_min_distance_a);
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::scatter_forces_device(const edgeframe::Result &result)
{
  // Every force is finite here: the engine's step sums check them with the energy and virial
  // (kokkos/forces.hpp GlobalSums) and a non-finite one stopped the run in evaluate_step.
  auto forces = result.forces;
  auto atom_of_node = d_atom_of_node;
  auto f = atomKK->k_f.view<DeviceType>();
  const double scale = m_force_from_engine;    // eV/Angstrom to LAMMPS force units
  Kokkos::parallel_for(
      "edgeframe/kk::add_forces", Kokkos::RangePolicy<DeviceType>(0, m_n_nodes), KOKKOS_LAMBDA(int k) {
        const int i = atom_of_node(k);    // one node per atom: no two threads write one atom
        for (int d = 0; d < 3; d++) f(i, d) += forces(k, d) * scale;
      });
  atomKK->modified(execution_space, F_MASK);
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::compute(int eflag, int vflag)
{
  if (!m_device_path) {
    atomKK->sync(Host, X_MASK | F_MASK | TYPE_MASK | TAG_MASK);
    PairEdgeframe::compute(eflag, vflag);
    atomKK->modified(Host, F_MASK);
    // With device communication LAMMPS takes this style for a device style: VerletKokkos neither
    // merges host forces nor keeps them from being cleared (allow_overlap with host bond or
    // kspace styles), and CommKokkos' device reverse communication sends device forces without
    // a sync. So the forces go to the device here.
    if (execution_space == Device) atomKK->sync(Device, F_MASK);
    return;
  }
  if constexpr (kSharesEngineMemory) {
    // Per-atom energies and virials (rare: dump and compute steps) go through the host
    // arrays that Pair allocates, exactly as in the plain style.
    ev_init(eflag, vflag);
    m_calls++;
    atomKK->sync(execution_space, X_MASK | F_MASK | TYPE_MASK | TAG_MASK);

    double t0 = platform::walltime();
    if (is_v2()) {    // the composition is read on the host (atom types change rarely)
      atomKK->sync(Host, TYPE_MASK);
      update_system(atom->type, atom->nlocal);
    }
    const bool rebuilt = m_need_node_map || neighbor->ago == 0;
    if (rebuilt) rebuild_device_graph();
    m_sum_ghosts += atom->nghost;    // the end-of-run graph line, as in the plain style
    if (m_exchange && rebuilt) bind_exchange("edgeframe/kk");
    if (m_n_local_nodes == 0) {
      // A rank that owns no mapped atom still takes part in every exchange (its ghosts may be
      // relays) and in model v2's sums over ranks.
      if (m_exchange || (is_v2() && comm->nprocs > 1)) idle_rank_collectives();
      note_first_call();
      return;
    }
    gather_positions_and_shifts();
    edgeframe::kk::PairList<Exec> pairs;
    pairs.i = d_pair_i;
    pairs.j = d_pair_j;
    pairs.shift = d_shift;    // extent 0 with the exchange: ghosts are nodes at their own positions
    pairs.half = false;
    const Positions positions = Kokkos::subview(d_positions, std::make_pair(0, m_n_nodes), Kokkos::ALL);
    make_step_graph(pairs, positions, d_species, m_n_local_nodes, rebuilt, "edgeframe/kk");
    start_min_distance_device();
    double t1 = platform::walltime();
    m_time_graph += t1 - t0;

    // Forces stay on the device (scatter_forces_device): no fence here.
    const edgeframe::Result result =
        evaluate_step(positions, m_exchange ? m_feature_exchange.get() : nullptr, false, "edgeframe/kk", [&] {
          atomKK->sync(Host, TAG_MASK);
          return h_atom_of_node.data();
        });
    finish_min_distance_device();    // before anything reaches LAMMPS' forces
    double t2 = platform::walltime();
    m_time_engine += t2 - t1;

    // Forces on ghost nodes (exchange) go to their owners in LAMMPS' reverse communication.
    scatter_forces_device(result);
    add_energy_and_virials(result, h_atom_of_node.data(), m_n_nodes, m_n_local_nodes);
    m_time_copy += platform::walltime() - t2;
    if (deviation_due()) {
      atomKK->sync(Host, TYPE_MASK | TAG_MASK);    // the statistics read types and IDs on the host
      evaluate_deviation(positions, nullptr, result, h_atom_of_node.data(), m_n_nodes, "edgeframe/kk");
    }
    note_first_call();
  }
}

// LAMMPS-KOKKOS' device communication of the per-layer exchange (init_style chose it; LAMMPS
// synced the list and, for unpacking, the buffer to the device and marks the packed buffer
// modified itself).
template <class DeviceType>
int PairEdgeframeKokkos<DeviceType>::pack_forward_comm_kokkos(int n, DAT::tdual_int_1d list, DAT::tdual_double_1d &buf,
                                                              int, int *)
{
  return m_feature_exchange->pack_forward_device(n, list.view_device().data(), buf.view_device().data());
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::unpack_forward_comm_kokkos(int n, int first, DAT::tdual_double_1d &buf)
{
  m_feature_exchange->unpack_forward_device(n, first, buf.view_device().data());
}

template <class DeviceType>
int PairEdgeframeKokkos<DeviceType>::pack_reverse_comm_kokkos(int n, int first, DAT::tdual_double_1d &buf)
{
  return m_feature_exchange->pack_reverse_device(n, first, buf.view_device().data());
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::unpack_reverse_comm_kokkos(int n, DAT::tdual_int_1d list,
                                                                 DAT::tdual_double_1d &buf)
{
  m_feature_exchange->unpack_reverse_device(n, list.view_device().data(), buf.view_device().data());
}

namespace LAMMPS_NS {
template class PairEdgeframeKokkos<LMPDeviceType>;
#ifdef LMP_KOKKOS_GPU
template class PairEdgeframeKokkos<LMPHostType>;
#endif
}    // namespace LAMMPS_NS
