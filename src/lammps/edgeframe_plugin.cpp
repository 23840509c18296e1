// Registers pair_style edgeframe (host data) and, in builds against a LAMMPS with KOKKOS,
// edgeframe/kk, edgeframe/kk/device and edgeframe/kk/host.

#include "lammpsplugin.h"
#include "version.h"

#include "pair_edgeframe.h"
#ifdef EDGEFRAME_WITH_KOKKOS_STYLE
#include "pair_edgeframe_kokkos.h"
#endif

using namespace LAMMPS_NS;

namespace {
Pair *make_edgeframe(LAMMPS *lmp)
{
  return new PairEdgeframe(lmp);
}
#ifdef EDGEFRAME_WITH_KOKKOS_STYLE
Pair *make_edgeframe_kk_device(LAMMPS *lmp)
{
  return new PairEdgeframeKokkos<LMPDeviceType>(lmp);
}
Pair *make_edgeframe_kk_host(LAMMPS *lmp)
{
  return new PairEdgeframeKokkos<LMPHostType>(lmp);
}
#endif

void add(lammpsplugin_regfunc reg, void *lmp, void *handle, const char *name, const char *info,
         Pair *(*creator)(LAMMPS *) )
{
  lammpsplugin_t plugin;
  plugin.version = LAMMPS_VERSION;
  plugin.style = "pair";
  plugin.name = name;
  plugin.info = info;
  plugin.author = "edgeframe developers";
  plugin.creator.v1 = (lammpsplugin_factory1 *) creator;
  plugin.handle = handle;
  (*reg)(&plugin, lmp);
}
}    // namespace

extern "C" void lammpsplugin_init(void *lmp, void *handle, void *regfunc)
{
  auto reg = (lammpsplugin_regfunc) regfunc;
  add(reg, lmp, handle, "edgeframe", "edgeframe equivariant ML potential (host data)", &make_edgeframe);
#ifdef EDGEFRAME_WITH_KOKKOS_STYLE
  add(reg, lmp, handle, "edgeframe/kk", "edgeframe equivariant ML potential (Kokkos)", &make_edgeframe_kk_device);
  add(reg, lmp, handle, "edgeframe/kk/device", "edgeframe equivariant ML potential (Kokkos, device)",
      &make_edgeframe_kk_device);
  add(reg, lmp, handle, "edgeframe/kk/host", "edgeframe equivariant ML potential (Kokkos, host)",
      &make_edgeframe_kk_host);
#endif
}
