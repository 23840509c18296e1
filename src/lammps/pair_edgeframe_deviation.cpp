/* ----------------------------------------------------------------------
   Model deviation, shared by edgeframe and edgeframe/kk: pair_coeff with
   several potential files evaluates all of them every out_freq steps on the
   step's graph and positions (the first file alone drives the dynamics) and
   writes deepmd-kit's model deviation file; compute pair gives the same
   numbers to LAMMPS (fix halt). Forces on ghost atoms reach their owners
   through LAMMPS' reverse communication, as the dynamics' forces do. The
   statistics: edgeframe_deviation.h. See doc/pair_edgeframe.md.
------------------------------------------------------------------------- */

#include "pair_edgeframe.h"

#include "atom.h"
#include "comm.h"
#include "error.h"
#include "memory.h"
#include "update.h"

#include "edgeframe_lammps_errors.h"
#include "evaluator.hpp"
#include "potential.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>

using namespace LAMMPS_NS;
using edgeframe_glue::call_engine;
using edgeframe_glue::Scope;

namespace {
// pvector (compute pair edgeframe): the columns of the deviation file after the step.
constexpr int kDeviationValues = 7;    // max/min/avg_devi_v, max/min/avg_devi_f, devi_e
}    // namespace

void PairEdgeframe::deviation_keyword(const std::string &key, const std::string &value)
{
  auto &dev = m_deviation;
  dev.any_keyword = true;
  if (key == "out_freq") {
    dev.out_freq = utils::inumeric(FLERR, value, false, lmp);
    if (dev.out_freq < 1) error->all(FLERR, "pair_style edgeframe: out_freq must be >= 1 (got {})", value);
  } else if (key == "out_file") {
    dev.out_file = value;
  } else if (key == "relative" || key == "relative_v") {
    const double level = utils::numeric(FLERR, value, false, lmp);
    // > 0: the level keeps an atom (or virial component) with a zero mean from a 0 / 0
    if (!(level > 0.0))
      error->all(FLERR, "pair_style edgeframe: {} must be > 0 (got {}; it is added to the mean in the denominator)",
                 key, value);
    (key == "relative" ? dev.relative : dev.relative_v) = level;
  }
}

void PairEdgeframe::read_deviation_models(const std::vector<std::string> &files,
                                          const std::vector<std::string> &elements, const edgeframe::Potential &main)
{
  std::vector<DeviationModel> models;
  for (const auto &file : files) {
    DeviationModel m;
    m.file = file;
    m.potential = std::make_unique<edgeframe::Potential>();
    std::vector<int> map;
    call_engine(error, Scope::ALL, FLERR, "pair_coeff edgeframe", [&] {
      *m.potential = edgeframe::read_potential(file);
      map = m.potential->species_map(elements);
    });
    // One graph serves every model: the same cutoff, the same species index per atom type.
    const auto &a = main, &b = *m.potential;
    if (a.format_version != b.format_version)
      error->all(FLERR,
                 "pair_coeff edgeframe: potentials {} and {} are of different model formats (format_version {} and "
                 "{}); a model deviation needs models of one format",
                 m_potential_file, file, a.format_version, b.format_version);
    if (a.config.r_cut != b.config.r_cut)
      error->all(FLERR,
                 "pair_coeff edgeframe: potentials {} and {} have different cutoffs ({} and {} A); a model deviation "
                 "evaluates every model on one graph, so their r_cut must be equal",
                 m_potential_file, file, a.config.r_cut, b.config.r_cut);
    for (std::size_t t = 0; t < map.size(); t++)
      if (map[t] != m_type_species[t + 1]) {
        auto list = [](const edgeframe::Potential &p) {
          std::string s;
          for (const auto &e : p.config.species) s += (s.empty() ? "" : " ") + e;
          return s;
        };
        error->all(FLERR,
                   "pair_coeff edgeframe: potentials {} and {} have different species (elements {} and {}: atom type "
                   "{} = {} is species {} and {}); a model deviation needs the same species in the same order",
                   m_potential_file, file, list(a), list(b), t + 1, elements[t], m_type_species[t + 1], map[t]);
      }
    models.push_back(std::move(m));
  }
  m_deviation_models = std::move(models);
  if (m_deviation_fp) fclose(m_deviation_fp);    // a new ensemble starts a new file
  m_deviation_fp = nullptr;
  // compute pair edgeframe: a vector of the deviation file's columns when there is an ensemble.
  nextra = m_deviation_models.empty() ? 0 : kDeviationValues;
  pvector = m_deviation_models.empty() ? nullptr : m_deviation_values;
  std::fill(std::begin(m_deviation_values), std::end(m_deviation_values), 0.0);
}

bool PairEdgeframe::deviation_due() const
{
  return !m_deviation_models.empty() && update->ntimestep % m_deviation.out_freq == 0;
}

void PairEdgeframe::init_deviation()
{
  if (m_deviation_models.empty()) {
    if (m_deviation.any_keyword)
      error->all(FLERR,
                 "pair_style edgeframe: out_freq, out_file, atomic, relative and relative_v are for a model deviation; "
                 "give several potential files in pair_coeff (pair_coeff * * <file 1> <file 2> ... <elements>)");
    return;
  }
  // On several ranks (or fold_images no) every model runs the same exchanges and sums over ranks
  // in one order (idle ranks replay them without a model: idle_rank_collectives).
  if (comm->nprocs > 1 || !m_fold_images) {
    const auto &a = m_potential->config;
    for (const auto &m : m_deviation_models) {
      const auto &b = m.potential->config;
      const auto &av = m_potential->v2, &bv = m.potential->v2;
      const char *what = a.layers != b.layers                                         ? "layers"
                         : a.num_coeffs() * a.channels != b.num_coeffs() * b.channels ? "features per atom (D x C)"
                         : is_v2() && !std::equal(av.charge_balanced, av.charge_balanced + 2, bv.charge_balanced)
                             ? "charge-balanced channels"
                         : is_v2() && !std::equal(av.spin_balanced, av.spin_balanced + 2, bv.spin_balanced)
                             ? "spin-balanced channels"
                             : nullptr;
      if (what)
        error->all(FLERR,
                   "pair_style edgeframe: potentials {} and {} differ in {}; on several MPI ranks (or with "
                   "fold_images no) a model deviation needs models of one architecture",
                   m_potential_file, m.file, what);
    }
  }
  for (auto &m : m_deviation_models) {
    if (m.evaluator) continue;
    call_engine(error, Scope::ALL, FLERR, "pair_style edgeframe", [&] {
      edgeframe::EvaluatorOptions options = evaluator_options();
      options.cuda_graph = false;    // evaluated every out_freq steps only: nothing to replay
      m.evaluator = std::make_unique<edgeframe::Evaluator>(*m.potential, options);
    });
  }
  if (comm->me == 0 && !m_deviation_fp) {
    m_deviation_fp = fopen(m_deviation.out_file.c_str(), "w");
    if (!m_deviation_fp)
      error->one(FLERR, "pair_style edgeframe: cannot open the model deviation file {} (out_file): {}",
                 m_deviation.out_file, utils::getsyserror());
    fputs(fmt::format("#{:>11}{:>21}{:>21}{:>21}{:>21}{:>21}{:>21}{:>21}{}\n", "step", "max_devi_v", "min_devi_v",
                      "avg_devi_v", "max_devi_f", "min_devi_f", "avg_devi_f", "devi_e",
                      m_deviation.atomic ? "   atm_devi_f(N) in atom ID order" : "")
              .c_str(),
          m_deviation_fp);
    fflush(m_deviation_fp);
  }
  if (comm->me == 0) {
    std::string files = m_potential_file;
    for (const auto &m : m_deviation_models) files += " " + m.file;
    utils::logmesg(lmp,
                   "edgeframe: model deviation of {} potentials ({}; the first drives the dynamics) every {} steps "
                   "to {}{}{}{}\n",
                   m_deviation_models.size() + 1, files, m_deviation.out_freq, m_deviation.out_file,
                   m_deviation.atomic ? ", per atom" : "",
                   m_deviation.relative >= 0 ? fmt::format(", forces relative (level {})", m_deviation.relative) : "",
                   m_deviation.relative_v >= 0 ? fmt::format(", virial relative (level {})", m_deviation.relative_v)
                                               : "");
  }
}

void PairEdgeframe::close_deviation_file()
{
  if (m_deviation_fp) fclose(m_deviation_fp);
  m_deviation_fp = nullptr;
}

void PairEdgeframe::evaluate_deviation(Positions positions, edgeframe::NodeExchange *exchange,
                                       const edgeframe::Result &main, const int *atom_of_node, int n_nodes,
                                       const char *style)
{
  const int models = 1 + (int) m_deviation_models.size(), stride = deviation_stride();
  std::vector<double> energies(models, 0.0), virials(9 * models, 0.0);
  zero_deviation_forces();
  auto add = [&](int k, const edgeframe::Result &r) {
    auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.forces);
    for (int n = 0; n < n_nodes; n++)
      for (int d = 0; d < 3; d++)
        m_deviation_forces[(std::size_t) atom_of_node[n] * stride + 3 * k + d] += f(n, d) * m_force_from_engine;
    energies[k] = r.energy * m_energy_from_ev;
    for (int c = 0; c < 9; c++) virials[9 * k + c] = r.virial[c] * m_energy_from_ev;
  };
  add(0, main);
  edgeframe::What what;
  what.forces = what.virial = true;
  what.exchange = exchange;
  what.reduce = is_v2() && comm->nprocs > 1 ? &m_reduce : nullptr;
  for (int k = 1; k < models; k++) {
    auto &m = m_deviation_models[k - 1];
    add(k,
        compute_on_step_graph(
            *m.evaluator, positions, what, fmt::format("pair_style {} (model deviation, potential {})", style, m.file),
            true, [&] { return atom_of_node; }, m.file));
  }
  finish_deviation(energies, virials);
}

void PairEdgeframe::deviation_on_idle_rank()
{
  // The collectives of evaluate_deviation with nothing of this rank's own (idle_rank_collectives).
  const int models = 1 + (int) m_deviation_models.size();
  for (int k = 1; k < models; k++)
    if (m_exchange || (is_v2() && comm->nprocs > 1)) idle_rank_collectives();
  zero_deviation_forces();
  finish_deviation(std::vector<double>(models, 0.0), std::vector<double>(9 * models, 0.0));
}

void PairEdgeframe::zero_deviation_forces()
{
  const std::size_t size = (std::size_t)(atom->nlocal + atom->nghost) * deviation_stride();
  m_deviation_forces.assign(size, 0.0);
}

void PairEdgeframe::finish_deviation(std::vector<double> energies, std::vector<double> virials)
{
  const int models = 1 + (int) m_deviation_models.size(), stride = deviation_stride();
  if (!m_folded) {
    // Forces on ghosts to their owners. CommKokkos picks its host or device path by
    // reverse_comm_device at each call; these rows are host rows.
    const int device = reverse_comm_device;
    reverse_comm_device = 0;
    m_reverse_deviation = true;
    comm->reverse_comm(this);
    m_reverse_deviation = false;
    reverse_comm_device = device;
  }
  // Force deviation of each owned atom of a mapped type (NULL types under hybrid have none).
  const int nlocal = atom->nlocal;
  std::vector<tagint> tags;
  std::vector<double> devi;
  double local[3] = {0.0, std::numeric_limits<double>::max(), 0.0};    // max, min, sum
  for (int i = 0; i < nlocal; i++) {
    if (m_type_species[atom->type[i]] < 0) continue;
    const double d =
        edgeframe_glue::force_deviation(&m_deviation_forces[(std::size_t) i * stride], models, 3, m_deviation.relative);
    local[0] = std::max(local[0], d);
    local[1] = std::min(local[1], d);
    local[2] += d;
    tags.push_back(atom->tag[i]);
    devi.push_back(d);
  }
  double f_max, f_min, f_sum, counted, count = (double) devi.size();
  MPI_Allreduce(&local[0], &f_max, 1, MPI_DOUBLE, MPI_MAX, world);
  MPI_Allreduce(&local[1], &f_min, 1, MPI_DOUBLE, MPI_MIN, world);
  MPI_Allreduce(&local[2], &f_sum, 1, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(&count, &counted, 1, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(MPI_IN_PLACE, energies.data(), models, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(MPI_IN_PLACE, virials.data(), 9 * models, MPI_DOUBLE, MPI_SUM, world);
  const double n_atoms = std::max(counted, 1.0);
  double v[3];
  edgeframe_glue::virial_deviation(virials.data(), models, n_atoms, m_deviation.relative_v, v);
  for (auto &e : energies) e /= n_atoms;    // deepmd-kit's devi_e: of the energy per atom
  const double devi_e = edgeframe_glue::population_std(energies.data(), models, 1);
  const double values[kDeviationValues] = {v[0], v[1], v[2], f_max, counted > 0 ? f_min : 0.0, f_sum / n_atoms, devi_e};
  // compute pair sums pvector over ranks: rank 0 holds the values, the others zeros.
  for (int c = 0; c < kDeviationValues; c++) m_deviation_values[c] = comm->me == 0 ? values[c] : 0.0;

  std::vector<std::pair<tagint, double>> per_atom;
  if (m_deviation.atomic) {
    // Every atom's deviation to rank 0, written in atom ID order.
    int n = (int) devi.size();
    std::vector<int> counts(comm->nprocs), offsets(comm->nprocs, 0);
    MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, world);
    if (comm->me == 0) std::partial_sum(counts.begin(), counts.end() - 1, offsets.begin() + 1);
    const int total = comm->me == 0 ? offsets.back() + counts.back() : 0;
    std::vector<tagint> all_tags(total);
    std::vector<double> all_devi(total);
    MPI_Gatherv(tags.data(), n, MPI_LMP_TAGINT, all_tags.data(), counts.data(), offsets.data(), MPI_LMP_TAGINT, 0,
                world);
    MPI_Gatherv(devi.data(), n, MPI_DOUBLE, all_devi.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0, world);
    for (int k = 0; k < total; k++) per_atom.emplace_back(all_tags[k], all_devi[k]);
    std::sort(per_atom.begin(), per_atom.end());
  }
  if (comm->me != 0) return;
  std::string line = fmt::format("{:>12}", update->ntimestep);
  for (double value : values) line += fmt::format(" {:>20.12e}", value);
  for (const auto &a : per_atom) line += fmt::format(" {:>20.12e}", a.second);
  line += "\n";
  fputs(line.c_str(), m_deviation_fp);    // fmt::print: not declared by LAMMPS' headers in the CUDA build
  fflush(m_deviation_fp);
}

int PairEdgeframe::pack_deviation_forces(int n, int first, double *buf) const
{
  const int stride = deviation_stride();
  for (int i = first; i < first + n; i++)
    for (int c = 0; c < stride; c++) *buf++ = m_deviation_forces[(std::size_t) i * stride + c];
  return n * stride;
}

void PairEdgeframe::unpack_deviation_forces(int n, const int *list, const double *buf)
{
  const int stride = deviation_stride();
  for (int k = 0; k < n; k++)
    for (int c = 0; c < stride; c++) m_deviation_forces[(std::size_t) list[k] * stride + c] += *buf++;
}

int PairEdgeframe::deviation_stride() const
{
  return 3 * (1 + (int) m_deviation_models.size());
}

int PairEdgeframe::deviation_reverse_words() const
{
  return m_deviation_models.empty() ? 0 : deviation_stride();
}
