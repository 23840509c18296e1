/* ----------------------------------------------------------------------
   edgeframe/kk, current state: the host-data path of pair_style edgeframe
   under LAMMPS-KOKKOS. kokkosable stays 0, so LAMMPS syncs positions to the
   host before compute() and marks forces modified on the host after it; the
   engine itself runs on Kokkos' default execution space as for the plain
   style. Device-resident data (positions, neighbour list and forces never
   leaving the GPU) is issue #7; see doc/pair_style.md.
------------------------------------------------------------------------- */

#include "pair_edgeframe_kokkos.h"

using namespace LAMMPS_NS;

template <class DeviceType>
PairEdgeframeKokkos<DeviceType>::PairEdgeframeKokkos(LAMMPS *lmp) : PairEdgeframe(lmp)
{
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::init_style()
{
  PairEdgeframe::init_style();
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::compute(int eflag, int vflag)
{
  PairEdgeframe::compute(eflag, vflag);
}

namespace LAMMPS_NS {
template class PairEdgeframeKokkos<LMPDeviceType>;
#ifdef LMP_KOKKOS_GPU
template class PairEdgeframeKokkos<LMPHostType>;
#endif
}    // namespace LAMMPS_NS
