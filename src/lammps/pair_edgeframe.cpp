/* ----------------------------------------------------------------------
   pair_style edgeframe [precision fp64|fp32|tf32]
   pair_coeff * * <potential.safetensors> <element or NULL per type>
------------------------------------------------------------------------- */

#include "pair_edgeframe.h"

#include "atom.h"
#include "comm.h"
#include "error.h"
#include "force.h"
#include "memory.h"
#include "neighbor.h"
#include "update.h"
#include "utils.h"

#include "runtime.hpp"

#include <cstring>
#include <fstream>

using namespace LAMMPS_NS;

PairEdgeframe::PairEdgeframe(LAMMPS *lmp) : Pair(lmp)
{
  single_enable = 0;
  restartinfo = 0;
  one_coeff = 1;
  manybody_flag = 1;
  centroidstressflag = CENTROID_NOTAVAIL;
}

PairEdgeframe::~PairEdgeframe()
{
  if (copymode) return;
  if (allocated) {
    memory->destroy(setflag);
    memory->destroy(cutsq);
  }
}

const char *PairEdgeframe::precision_name(Precision p)
{
  switch (p) {
    case Precision::FP64: return "fp64";
    case Precision::FP32: return "fp32";
    case Precision::TF32: return "tf32";
  }
  return "?";
}

void PairEdgeframe::allocate()
{
  allocated = 1;
  const int n = atom->ntypes;
  memory->create(setflag, n + 1, n + 1, "pair:setflag");
  memory->create(cutsq, n + 1, n + 1, "pair:cutsq");
  for (int i = 1; i <= n; i++)
    for (int j = i; j <= n; j++) setflag[i][j] = 0;
}

void PairEdgeframe::settings(int narg, char **arg)
{
  int iarg = 0;
  while (iarg < narg) {
    const std::string key = arg[iarg];
    if (key == "precision") {
      if (iarg + 1 >= narg) error->all(FLERR, "pair_style edgeframe: keyword precision needs a value (fp64, fp32 or tf32)");
      const std::string v = arg[iarg + 1];
      if (v == "fp64") m_precision = Precision::FP64;
      else if (v == "fp32") m_precision = Precision::FP32;
      else if (v == "tf32") m_precision = Precision::TF32;
      else error->all(FLERR, "pair_style edgeframe: unknown precision '{}' (valid: fp64, fp32, tf32)", v);
      iarg += 2;
    } else {
      error->all(FLERR, "pair_style edgeframe: unknown keyword '{}' (valid: precision)", key);
    }
  }
}

void PairEdgeframe::coeff(int narg, char **arg)
{
  if (!allocated) allocate();
  const int ntypes = atom->ntypes;
  if (narg != 3 + ntypes)
    error->all(FLERR, "pair_coeff edgeframe: expected '* * <potential file> <element or NULL for each of the {} atom types>', got {} arguments",
               ntypes, narg);
  if (strcmp(arg[0], "*") != 0 || strcmp(arg[1], "*") != 0)
    error->all(FLERR, "pair_coeff edgeframe: the first two arguments must be '* *' (got '{} {}')", arg[0], arg[1]);

  m_potential_file = arg[2];
  {
    std::ifstream probe(m_potential_file, std::ios::binary);
    if (!probe) error->all(FLERR, "pair_coeff edgeframe: cannot open potential file '{}'", m_potential_file);
  }
  m_type_element.assign(ntypes + 1, "");
  int mapped = 0;
  for (int t = 1; t <= ntypes; t++) {
    const std::string el = arg[2 + t];
    if (el != "NULL") { m_type_element[t] = el; mapped++; }
  }
  if (mapped == 0) error->all(FLERR, "pair_coeff edgeframe: every atom type is NULL; map at least one type to an element");
  for (int i = 1; i <= ntypes; i++)
    for (int j = i; j <= ntypes; j++)
      setflag[i][j] = (!m_type_element[i].empty() && !m_type_element[j].empty()) ? 1 : 0;
}

void PairEdgeframe::check_run_preconditions()
{
  if (strcmp(update->unit_style, "metal") != 0)
    error->all(FLERR, "pair_style edgeframe requires 'units metal' (got units {})", update->unit_style);
  if (force->newton_pair == 0)
    error->all(FLERR, "pair_style edgeframe requires 'newton on' (newton pair is off)");
  if (atom->tag_enable == 0) error->all(FLERR, "pair_style edgeframe requires atom IDs");
}

void PairEdgeframe::init_style()
{
  check_run_preconditions();
  const auto info = edgeframe::build_info();
  if (!info.evaluator_available)
    error->all(FLERR, "pair_style edgeframe: the evaluator engine is not built into this plugin (edgeframe {}); "
               "refusing to run without forces", info.edgeframe_version);
  neighbor->add_request(this, NeighConst::REQ_FULL | NeighConst::REQ_GHOST);
}

double PairEdgeframe::init_one(int, int)
{
  error->all(FLERR, "pair_style edgeframe: the evaluator engine is not built into this plugin");
  return 0.0;
}

void PairEdgeframe::compute(int, int)
{
  error->one(FLERR, "pair_style edgeframe: the evaluator engine is not built into this plugin; no forces computed");
}
