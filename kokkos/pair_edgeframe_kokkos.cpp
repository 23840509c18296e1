#include "pair_edgeframe_kokkos.h"

#include "atom_kokkos.h"
#include "atom_masks.h"
#include "error.h"
#include "kokkos.h"

using namespace LAMMPS_NS;

template <class DeviceType>
PairEdgeframeKokkos<DeviceType>::PairEdgeframeKokkos(LAMMPS *lmp) : PairEdgeframe(lmp)
{
  kokkosable = 1;
  atomKK = (AtomKokkos *) atom;
  execution_space = ExecutionSpaceFromDevice<DeviceType>::space;
  datamask_read = X_MASK | F_MASK | TYPE_MASK | ENERGY_MASK | VIRIAL_MASK;
  datamask_modify = F_MASK | ENERGY_MASK | VIRIAL_MASK;
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::init_style()
{
  // Same checks and the same refusal as the host style until the engine is built in.
  PairEdgeframe::init_style();
}

template <class DeviceType>
void PairEdgeframeKokkos<DeviceType>::compute(int, int)
{
  error->one(FLERR, "pair_style edgeframe/kk: the evaluator engine is not built into this plugin; no forces computed");
}

namespace LAMMPS_NS {
template class PairEdgeframeKokkos<LMPDeviceType>;
#ifdef LMP_KOKKOS_GPU
template class PairEdgeframeKokkos<LMPHostType>;
#endif
}    // namespace LAMMPS_NS
