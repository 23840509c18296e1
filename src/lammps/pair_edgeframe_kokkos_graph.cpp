/* ----------------------------------------------------------------------
   edgeframe/kk: the device graph, rebuilt once per neighbour list (see
   pair_edgeframe_kokkos.cpp for the per-step path). Local atoms of mapped
   types become nodes (a scan; in exchange mode also the mapped ghosts next to
   an owned node), each full-list neighbour j of a node becomes a candidate
   pair (receiver node, node of j's owner or of j itself, j), with the owner
   from the device atom map when periodic images are folded on one rank.
------------------------------------------------------------------------- */

#include "pair_edgeframe_kokkos.h"

#include "atom_kokkos.h"
#include "comm.h"
#include "error.h"
#include "neigh_list_kokkos.h"

using namespace LAMMPS_NS;

namespace {
// LAMMPS index of the atom that owns atom j: j itself when local, else through the atom map
// (on one rank every ghost is a periodic image of a local atom). -1 when the map has none.
template <class DeviceType>
struct OwnerOf {
  typename ArrayTypes<DeviceType>::t_tagint_1d tag;
  DAT::tdual_int_1d map_array;
  dual_hash_type map_hash;
  int map_style, nlocal;
  KOKKOS_INLINE_FUNCTION int operator()(int j) const
  {
    return j < nlocal ? j : AtomKokkos::map_kokkos<DeviceType>(tag(j), map_style, map_array, map_hash);
  }
};
}    // namespace

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::rebuild_device_graph()
{
  const int nlocal = atom->nlocal;
  // Folded: nodes are local atoms only. Exchange: also every ghost within the list of an owned
  // node (its features arrive through the exchange before each layer that reads them).
  const int n_atoms = m_folded ? nlocal : nlocal + atom->nghost;
  auto type = atomKK->k_type.view<DeviceType>();
  auto tag = atomKK->k_tag.view<DeviceType>();
  auto type_species = d_type_species;
  auto *k_list = static_cast<NeighListKokkos<DeviceType> *>(list);
  auto d_ilist = k_list->d_ilist;
  auto d_numneigh = k_list->d_numneigh;
  auto d_neighbors = k_list->d_neighbors;
  const int inum = list->inum;

  // Nodes: mapped owned atoms in local order, then (exchange) the mapped ghosts next to one of
  // them in LAMMPS order, numbered by a scan over the node marks.
  if ((int) d_node_of_atom.extent(0) < n_atoms) d_node_of_atom = View1<int>("edgeframe/kk::node_of_atom", n_atoms);
  auto node_of_atom = d_node_of_atom;
  Kokkos::parallel_for(
      "edgeframe/kk::mark_owned_nodes", Kokkos::RangePolicy<DeviceType>(0, n_atoms),
      KOKKOS_LAMBDA(int i) { node_of_atom(i) = i < nlocal && type_species(type(i)) >= 0 ? 1 : 0; });
  if (!m_folded)
    Kokkos::parallel_for(
        "edgeframe/kk::mark_ghost_nodes", Kokkos::RangePolicy<DeviceType>(0, inum), KOKKOS_LAMBDA(int ii) {
          const int i = d_ilist(ii);
          if (i >= nlocal || type_species(type(i)) < 0) return;
          for (int jj = 0; jj < d_numneigh(i); jj++) {
            const int j = d_neighbors(i, jj) & NEIGHMASK;
            if (j >= nlocal && type_species(type(j)) >= 0) Kokkos::atomic_store(&node_of_atom(j), 1);
          }
        });
  int n_nodes = 0, n_local_nodes = 0;
  Kokkos::parallel_scan(
      "edgeframe/kk::number_nodes", Kokkos::RangePolicy<DeviceType>(0, n_atoms),
      KOKKOS_LAMBDA(int i, int &offset, bool final) {
        const int mark = node_of_atom(i);
        if (final) node_of_atom(i) = mark ? offset : -1;
        offset += mark;
      },
      n_nodes);
  Kokkos::parallel_reduce(
      "edgeframe/kk::count_owned_nodes", Kokkos::RangePolicy<DeviceType>(0, nlocal),
      KOKKOS_LAMBDA(int i, int &count) { count += type_species(type(i)) >= 0; }, n_local_nodes);
  m_n_nodes = n_nodes;
  m_n_local_nodes = n_local_nodes;
  d_atom_of_node = View1<int>("edgeframe/kk::atom_of_node", n_nodes);
  d_species = View1<int>("edgeframe/kk::species", n_nodes);
  auto atom_of_node = d_atom_of_node;
  auto species = d_species;
  Kokkos::parallel_for(
      "edgeframe/kk::node_tables", Kokkos::RangePolicy<DeviceType>(0, n_atoms), KOKKOS_LAMBDA(int i) {
        const int k = node_of_atom(i);
        if (k >= 0) {
          atom_of_node(k) = i;
          species(k) = type_species(type(i));
        }
      });
  h_atom_of_node = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d_atom_of_node);
  if ((int) d_positions.extent(0) < n_nodes) d_positions = Vec3("edgeframe/kk::positions", n_nodes);
  if (m_exchange) {
    // The exchange traces LAMMPS' swaps against the node map on the host (bind, per rebuild).
    m_nodes.atom_of_node.assign(h_atom_of_node.data(), h_atom_of_node.data() + n_nodes);
    m_nodes.n_local = n_local_nodes;
  }

  // Candidate pairs from the full list: count per listed atom, scan, fill. Folded: a ghost
  // neighbour is an image of an owned atom, found through the device atom map.
  const int map_style = atom->map_style;
  if (m_folded) {
    if (map_style == Atom::MAP_ARRAY)
      atomKK->k_map_array.template sync<DeviceType>();
    else
      atomKK->k_map_hash.template sync<DeviceType>();
  }
  const OwnerOf<DeviceType> owner_of{tag, atomKK->k_map_array, atomKK->k_map_hash, map_style, nlocal};
  const bool folded = m_folded;

  View1<int> first("edgeframe/kk::pair_first", inum + 1);
  int n_pairs = 0, n_orphans = 0;
  if (folded)
    Kokkos::parallel_reduce(
        "edgeframe/kk::count_orphans", Kokkos::RangePolicy<DeviceType>(0, inum),
        KOKKOS_LAMBDA(int ii, int &orphans) {
          const int i = d_ilist(ii);
          if (node_of_atom(i) < 0) return;
          for (int jj = 0; jj < d_numneigh(i); jj++) {
            const int j = d_neighbors(i, jj) & NEIGHMASK;
            if (type_species(type(j)) >= 0 && owner_of(j) < 0) orphans++;
          }
        },
        n_orphans);
  if (n_orphans > 0)
    error->one(FLERR,
               "edgeframe/kk: {} neighbours are images of atoms this rank does not own; "
               "folding periodic images needs one MPI rank",
               n_orphans);
  Kokkos::parallel_scan(
      "edgeframe/kk::count_pairs", Kokkos::RangePolicy<DeviceType>(0, inum),
      KOKKOS_LAMBDA(int ii, int &offset, bool final) {
        const int i = d_ilist(ii);
        int count = 0;
        if (i < nlocal && node_of_atom(i) >= 0)
          for (int jj = 0; jj < d_numneigh(i); jj++) count += type_species(type(d_neighbors(i, jj) & NEIGHMASK)) >= 0;
        if (final) first(ii) = offset;
        offset += count;
      },
      n_pairs);
  m_n_pairs = n_pairs;
  d_pair_i = View1<int>("edgeframe/kk::pair_i", n_pairs);
  d_pair_j = View1<int>("edgeframe/kk::pair_j", n_pairs);
  d_pair_image = View1<int>("edgeframe/kk::pair_image", n_pairs);
  d_pair_owner = View1<int>("edgeframe/kk::pair_owner", folded ? n_pairs : 0);
  d_shift = Vec3("edgeframe/kk::pair_shift", folded ? n_pairs : 0);
  auto pair_i = d_pair_i, pair_j = d_pair_j, pair_image = d_pair_image, pair_owner = d_pair_owner;
  Kokkos::parallel_for(
      "edgeframe/kk::fill_pairs", Kokkos::RangePolicy<DeviceType>(0, inum), KOKKOS_LAMBDA(int ii) {
        const int i = d_ilist(ii);
        if (i >= nlocal) return;
        const int ni = node_of_atom(i);
        if (ni < 0) return;
        int p = first(ii);
        for (int jj = 0; jj < d_numneigh(i); jj++) {
          const int j = d_neighbors(i, jj) & NEIGHMASK;
          if (type_species(type(j)) < 0) continue;
          // Folded: the sender is the owner's node at the image's position. Exchange: the
          // neighbour itself is a node (owned, or a ghost marked above).
          const int sender = folded ? owner_of(j) : j;
          pair_i(p) = ni;
          pair_j(p) = node_of_atom(sender);
          pair_image(p) = j;
          if (folded) pair_owner(p) = sender;
          p++;
        }
      });
  if (m_need_node_map && comm->me == 0)
    utils::logmesg(lmp, "edgeframe/kk: graph on {}: {} nodes ({} owned), {} candidate pairs (rank 0)\n", Exec::name(),
                   n_nodes, n_local_nodes, n_pairs);
  m_need_node_map = false;
}

namespace LAMMPS_NS {
template void PairEdgeframeKokkos<LMPDeviceType>::rebuild_device_graph();
#ifdef LMP_KOKKOS_GPU
template void PairEdgeframeKokkos<LMPHostType>::rebuild_device_graph();
#endif
}    // namespace LAMMPS_NS
