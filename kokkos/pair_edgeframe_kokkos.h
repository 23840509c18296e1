/* -*- c++ -*- ----------------------------------------------------------
   edgeframe/kk: the Kokkos variant of pair_style edgeframe. Positions, the
   neighbour list and forces stay in the DeviceType memory space.
------------------------------------------------------------------------- */

#ifndef LMP_PAIR_EDGEFRAME_KOKKOS_H
#define LMP_PAIR_EDGEFRAME_KOKKOS_H

#include "kokkos_type.h"
#include "pair_edgeframe.h"

namespace LAMMPS_NS {

template <class DeviceType>
class PairEdgeframeKokkos : public PairEdgeframe {
 public:
  using device_type = DeviceType;
  using AT = ArrayTypes<DeviceType>;

  PairEdgeframeKokkos(class LAMMPS *);
  ~PairEdgeframeKokkos() override = default;

  void compute(int, int) override;
  void init_style() override;
};

}    // namespace LAMMPS_NS

#endif
