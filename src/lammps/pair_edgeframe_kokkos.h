/* -*- c++ -*- ----------------------------------------------------------
   edgeframe/kk: the Kokkos variant of pair_style edgeframe.

   Device-resident path: positions, LAMMPS' Kokkos neighbour list and forces
   stay in the DeviceType memory space, which must be the engine's (Kokkos'
   default execution space: the GPU on CUDA builds, the host threads
   otherwise). Per step only scalars cross to the host (energy, virial, the
   two checks). Two graphs:
   - one rank: periodic images folded onto their owners (nodes are the owned
     atoms; newton off is fine);
   - several ranks (or fold_images no): the per-layer exchange. Nodes are the
     owned atoms and the ghosts in their lists; ghost features arrive before
     each layer through LAMMPS-KOKKOS' device communication where LAMMPS keeps
     pair communication on the device (one rank, GPU-aware MPI, CPU builds),
     else through LAMMPS' host buffers with the node rows reordered on the
     device (src/lammps/edgeframe_exchange.h); forces on ghosts go to their
     owners in LAMMPS' reverse communication (newton on).
   The host-data path of the plain style (graph and node map on the host,
   atom data staged through it) remains for the ghost shell, comm_style
   tiled and a model deviation with the exchange.
------------------------------------------------------------------------- */

#ifndef LMP_PAIR_EDGEFRAME_KOKKOS_H
#define LMP_PAIR_EDGEFRAME_KOKKOS_H

#include "kokkos_base.h"
#include "kokkos_type.h"
#include "edgeframe_min_distance.h"
#include "pair_edgeframe.h"

#include "evaluator.hpp"
#include "kernel_common.hpp"

#include <Kokkos_Core.hpp>
#include <type_traits>

namespace LAMMPS_NS {

template <class DeviceType>
class PairEdgeframeKokkos : public PairEdgeframe, public KokkosBase {
 public:
  using device_type = DeviceType;
  using AT = ArrayTypes<DeviceType>;
  using Exec = Kokkos::DefaultExecutionSpace;    // the engine's execution space
  // The device path hands LAMMPS' views to the engine without copies between memory spaces.
  static constexpr bool kSharesEngineMemory =
      std::is_same_v<typename DeviceType::memory_space, typename Exec::memory_space>;

  PairEdgeframeKokkos(class LAMMPS *);
  ~PairEdgeframeKokkos() override = default;

  void compute(int, int) override;
  void init_style() override;

  // The per-layer exchange through LAMMPS-KOKKOS' device communication (host-data path, when
  // LAMMPS keeps pair communication on the device): lists and buffers are LAMMPS' device views.
  int pack_forward_comm_kokkos(int n, DAT::tdual_int_1d list, DAT::tdual_double_1d &buf, int, int *) override;
  void unpack_forward_comm_kokkos(int n, int first, DAT::tdual_double_1d &buf) override;
  int pack_reverse_comm_kokkos(int n, int first, DAT::tdual_double_1d &buf) override;
  void unpack_reverse_comm_kokkos(int n, DAT::tdual_int_1d list, DAT::tdual_double_1d &buf) override;

  // Public only because CUDA lambdas may not live in private or protected member functions.
  void rebuild_device_graph();
  void gather_positions_and_shifts();
  // min_distance on the device: the closest pair's reduction starts before the engine and is
  // read after it, when the step's results have reached the host anyway (no wait of its own).
  void start_min_distance_device();
  void finish_min_distance_device();
  void check_deferred_min_distance() override { finish_min_distance_device(); }
  void scatter_forces_device(const edgeframe::Result &result);

 private:
  bool m_device_path = false;    // this run keeps atom data on DeviceType (see the file comment)
  int m_n_nodes = 0, m_n_local_nodes = 0, m_n_pairs = 0;    // nodes, the owned ones first, pairs
  Kokkos::View<edgeframe_glue::ClosestPair, Kokkos::SharedHostPinnedSpace> m_closest;    // the step's closest pair
  bool m_min_distance_pending = false;    // m_closest is being computed for this step

  template <class T>
  using View1 = edgeframe::kk::View1<T, Exec>;
  using Vec3 = edgeframe::kk::Vec3View<double, Exec>;

  // Rebuilt with the neighbour list: which atoms are nodes and the candidate pairs (receiver
  // node, sender node, the LAMMPS atom whose position is the sender's: its image when folded).
  View1<int> d_type_species;    // [ntypes+1] potential species per LAMMPS type, -1 for NULL
  View1<int> d_node_of_atom;    // [nlocal (folded) or nlocal + nghost] node index, -1 if none
  View1<int> d_atom_of_node;    // [nodes] LAMMPS index (owned, or a ghost with the exchange)
  View1<int> d_species;    // [nodes]
  View1<int> d_pair_i, d_pair_j;    // [pairs] node indices
  View1<int> d_pair_image;    // [pairs] LAMMPS index of the sender's position
  View1<int> d_pair_owner;    // [pairs] folded: LAMMPS index of the image's owner (else extent 0)
  // Every step.
  Vec3 d_positions;    // [nodes] Angstrom
  Vec3 d_shift;    // folded: [pairs] image offsets x[image] - x[owner], Angstrom (else extent 0)
  typename View1<int>::host_mirror_type h_atom_of_node;
};

}    // namespace LAMMPS_NS

#endif
