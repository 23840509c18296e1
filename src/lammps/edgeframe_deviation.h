/* -*- c++ -*- ----------------------------------------------------------
   Model deviation of an ensemble of potentials (pair_coeff with several
   files): the settings (pair_style keywords out_freq, out_file, atomic,
   relative, relative_v) and the statistics, in the definitions of
   deepmd-kit's model deviation so that active-learning tools (DP-GEN and
   its kind) read our file as theirs. No LAMMPS header: plain arithmetic on
   host arrays. See doc/pair_edgeframe.md "Model deviation".
------------------------------------------------------------------------- */

#ifndef EDGEFRAME_DEVIATION_H
#define EDGEFRAME_DEVIATION_H

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace LAMMPS_NS::edgeframe_glue {

struct DeviationSettings {
  int out_freq = 100;    // steps between deviation evaluations (deepmd's default)
  std::string out_file = "model_devi.out";
  bool atomic = false;    // also write every atom's force deviation (in atom ID order)
  double relative = -1.0;    // >= 0: force deviation / (|mean force| + relative), LAMMPS force units
  double relative_v = -1.0;    // >= 0: virial deviation / (|mean virial| + relative_v), LAMMPS energy units per atom
  bool any_keyword = false;    // one of the keywords above was given
};

// Population variances as sums over pairs of models, (1/K^2) sum_{k<l} (x_k - x_l)^2, which
// equals <(x - <x>)^2> and is exactly zero for bit-identical members (the mean of K equal
// numbers can differ from them in the last bit).

// Force deviation of one atom over K models: sqrt(<|F_k - <F>|^2>), the population standard
// deviation of the force vector, with <.> the mean over models; relative >= 0 divides it by
// |<F>| + relative (in f's units). f: [K][3] with a stride of `stride` doubles between models.
inline double force_deviation(const double *f, int models, int stride, double relative)
{
  double sq = 0.0;
  for (int k = 0; k < models; k++)
    for (int l = k + 1; l < models; l++)
      for (int d = 0; d < 3; d++) {
        const double diff = f[k * stride + d] - f[l * stride + d];
        sq += diff * diff;
      }
  const double devi = std::sqrt(sq) / models;
  if (relative < 0.0) return devi;
  double mean[3] = {0.0, 0.0, 0.0};
  for (int k = 0; k < models; k++)
    for (int d = 0; d < 3; d++) mean[d] += f[k * stride + d] / models;
  return devi / (std::sqrt(mean[0] * mean[0] + mean[1] * mean[1] + mean[2] * mean[2]) + relative);
}

// Population standard deviation of values[k * stride], k < models.
inline double population_std(const double *values, int models, int stride)
{
  double sq = 0.0;
  for (int k = 0; k < models; k++)
    for (int l = k + 1; l < models; l++) {
      const double diff = values[k * stride] - values[l * stride];
      sq += diff * diff;
    }
  return std::sqrt(sq) / models;
}

inline double population_mean(const double *values, int models, int stride)
{
  double mean = 0.0;
  for (int k = 0; k < models; k++) mean += values[k * stride];
  return mean / models;
}

// The virial deviation's three columns from the K models' global virials ([K][9] row-major 3x3,
// LAMMPS energy units) of a system of n_atoms. Per component: the standard deviation over models of the virial
// per atom, divided with relative_v >= 0 by |its mean per atom| + relative_v. Then the max, the
// min and the root mean square over the nine components (deepmd-kit's avg_devi_v).
inline void virial_deviation(const double *virials, int models, double n_atoms, double relative_v, double out[3])
{
  double vmax = 0.0, vmin = std::numeric_limits<double>::max(), sq = 0.0;
  for (int c = 0; c < 9; c++) {
    double devi = population_std(virials + c, models, 9) / n_atoms;
    if (relative_v >= 0.0) devi /= std::fabs(population_mean(virials + c, models, 9)) / n_atoms + relative_v;
    vmax = std::max(vmax, devi);
    vmin = std::min(vmin, devi);
    sq += devi * devi;
  }
  out[0] = vmax;
  out[1] = vmin;
  out[2] = std::sqrt(sq / 9.0);
}

}    // namespace LAMMPS_NS::edgeframe_glue

#endif
