/* -*- c++ -*- ----------------------------------------------------------
   edgeframe: LAMMPS pair style for edge-frame equivariant ML potentials.
   Host-data style. The pair style marshals data and translates errors; the
   physics lives in the engine (src/engine), which never sees a LAMMPS header.
------------------------------------------------------------------------- */

#ifndef LMP_PAIR_EDGEFRAME_H
#define LMP_PAIR_EDGEFRAME_H

#include "pair.h"

#include <string>
#include <vector>

namespace LAMMPS_NS {

class PairEdgeframe : public Pair {
 public:
  PairEdgeframe(class LAMMPS *);
  ~PairEdgeframe() override;

  void compute(int, int) override;
  void settings(int, char **) override;
  void coeff(int, char **) override;
  void init_style() override;
  double init_one(int, int) override;

 protected:
  enum class Precision { FP64, FP32, TF32 };
  static const char *precision_name(Precision p);

  Precision m_precision = Precision::FP32;
  std::string m_potential_file;           // path given to pair_coeff
  std::vector<std::string> m_type_element;  // [ntypes+1], "" for NULL (type 0 unused)

  void allocate();
  void check_run_preconditions();
};

}    // namespace LAMMPS_NS

#endif
