// edgeframe._engine: the engine from Python (doc/python.md). One class, Model: a potential file
// and its evaluator; compute() takes a structure as arrays (positions, species, the neighbour
// pairs with their periodic image offsets) and returns energy, forces, virial and per-atom
// energies as numpy arrays. The ASE calculator (python/edgeframe/calculator.py) builds the pairs.
// The same Evaluator::compute as the pair styles: no physics here, only marshalling.
#include "errors.hpp"
#include "evaluator.hpp"
#include "potential.hpp"
#include "runtime.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <Kokkos_Core.hpp>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

using Exec = edgeframe::Exec;
using HostDoubles = py::array_t<double, py::array::c_style | py::array::forcecast>;
using HostInts = py::array_t<int, py::array::c_style | py::array::forcecast>;

edgeframe::kk::View1<int, Exec> ints_to_engine(const char* label, const int* data, int n) {
  edgeframe::kk::View1<int, Exec> view(std::string(label), n);
  Kokkos::deep_copy(view, Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(data, n));
  return view;
}

edgeframe::kk::Vec3View<double, Exec> rows3_to_engine(const char* label, const double* data, int n) {
  edgeframe::kk::Vec3View<double, Exec> view(std::string(label), n);
  auto host = Kokkos::create_mirror_view(view);
  for (int k = 0; k < n; k++)
    for (int d = 0; d < 3; d++) host(k, d) = data[3 * k + d];
  Kokkos::deep_copy(view, host);
  return view;
}

void check_shape(const py::array& a, std::vector<py::ssize_t> shape, const char* name) {
  bool ok = a.ndim() == (py::ssize_t)shape.size();
  for (std::size_t d = 0; ok && d < shape.size(); d++) ok = shape[d] < 0 || a.shape(d) == shape[d];
  if (ok) return;
  std::ostringstream msg;
  msg << "edgeframe: " << name << " must have shape (";
  for (std::size_t d = 0; d < shape.size(); d++)
    msg << (d ? ", " : "") << (shape[d] < 0 ? "n" : std::to_string(shape[d]));
  msg << "), got (";
  for (py::ssize_t d = 0; d < a.ndim(); d++) msg << (d ? ", " : "") << a.shape(d);
  msg << ")";
  throw py::value_error(msg.str());
}

class Model {
 public:
  Model(const std::string& path, const std::string& precision) {
    edgeframe::ensure_kokkos_initialized();
    m_potential = std::make_unique<edgeframe::Potential>(edgeframe::read_potential(path));
    edgeframe::EvaluatorOptions options;
    options.precision = edgeframe::parse_precision(precision);
    m_evaluator = std::make_unique<edgeframe::Evaluator>(*m_potential, options);
  }

  std::vector<std::string> elements() const { return m_potential->config.species; }
  double r_cut() const { return m_potential->config.r_cut; }
  int format_version() const { return m_potential->format_version; }
  // Model v2: the length of set_system's atoms_per_z (atomic numbers 0 .. max_num_elements - 1).
  int max_num_elements() const { return m_potential->format_version == 2 ? m_potential->v2.max_num_elements : 0; }
  std::vector<std::string> tasks() const {
    std::vector<std::string> names;
    if (m_potential->format_version == edgeframe::kFormatVersionV2)
      for (const auto& t : m_potential->v2.tasks) names.push_back(t.name);
    return names;
  }

  // Element symbols to species indices (InputError, i.e. ValueError, for an element the model
  // lacks: the message lists the model's elements).
  std::vector<int> species_of(const std::vector<std::string>& symbols) const {
    return m_potential->species_map(symbols);
  }

  // Model v2's system inputs for the next compute() calls; returns the engine's log line.
  std::string set_system(const std::string& task, py::object charge, py::object spin,
                         const std::vector<double>& atoms_per_z) {
    edgeframe::SystemInputs in;
    in.task = task;
    in.charge_set = !charge.is_none();
    in.spin_set = !spin.is_none();
    if (in.charge_set) in.charge = charge.cast<int>();
    if (in.spin_set) in.spin = spin.cast<int>();
    in.atoms_per_z = atoms_per_z;
    return m_evaluator->set_system(in);
  }

  // positions [N, 3] Angstrom; species [N]; pair_i, pair_j [P]: directed pairs (receiver i,
  // sender j), each once; shifts [P, 3] Angstrom: the sender's image offset (x_j + shift - x_i).
  py::dict compute(HostDoubles positions, HostInts species, HostInts pair_i, HostInts pair_j, HostDoubles shifts,
                   bool energies, bool virial, bool atom_virial) {
    const int n = (int)positions.shape(0);
    check_shape(positions, {-1, 3}, "positions");
    check_shape(species, {n}, "species");
    const int p = (int)pair_i.shape(0);
    check_shape(pair_i, {p}, "pair_i");
    check_shape(pair_j, {p}, "pair_j");
    check_shape(shifts, {p, 3}, "shifts");
    m_potential->check_species_indices(species.data(), std::size_t(n), "Model.compute species");
    // The kernels index atoms by these without a bounds check.
    for (const auto& [arr, name] : {std::pair{&pair_i, "pair_i"}, std::pair{&pair_j, "pair_j"}})
      for (int k = 0; k < p; ++k)
        if (arr->data()[k] < 0 || arr->data()[k] >= n)
          throw edgeframe::InputError(std::string("Model.compute ") + name + ": pair " + std::to_string(k) +
                                      " has atom index " + std::to_string(arr->data()[k]) + ", outside 0.." +
                                      std::to_string(n - 1));

    // The engine's autograd must run without the GIL (torch's Python engine refuses it otherwise,
    // when torch is imported in this process); the numpy arrays are read and made with it.
    edgeframe::Result r;
    {
      py::gil_scoped_release no_gil;
      const auto x = rows3_to_engine("edgeframe::python positions", positions.data(), n);
      const auto s = ints_to_engine("edgeframe::python species", species.data(), n);
      edgeframe::kk::PairList<Exec> pairs;
      pairs.i = ints_to_engine("edgeframe::python pair_i", pair_i.data(), p);
      pairs.j = ints_to_engine("edgeframe::python pair_j", pair_j.data(), p);
      pairs.shift = rows3_to_engine("edgeframe::python shifts", shifts.data(), p);
      pairs.half = false;
      const auto graph = edgeframe::make_graph(pairs, x, s, n, m_potential->config.r_cut);

      edgeframe::What what;
      what.forces = true;
      what.energies = energies;
      what.virial = virial;
      what.atom_virial = atom_virial;
      r = m_evaluator->compute(graph, x, what);
      Kokkos::fence("edgeframe::python results to host");
    }

    py::dict out;
    out["energy"] = r.energy;
    auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.forces);
    py::array_t<double> forces({n, 3});
    auto fw = forces.mutable_unchecked<2>();
    for (int k = 0; k < n; k++)
      for (int d = 0; d < 3; d++) fw(k, d) = f(k, d);
    out["forces"] = forces;
    if (virial) {
      py::array_t<double> w({3, 3});
      auto ww = w.mutable_unchecked<2>();
      for (int c = 0; c < 9; c++) ww(c / 3, c % 3) = r.virial[c];
      out["virial"] = w;
    }
    if (energies) {
      auto e = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.energies);
      py::array_t<double> per_atom(n);
      auto ew = per_atom.mutable_unchecked<1>();
      for (int k = 0; k < n; k++) ew(k) = e(k);
      out["energies"] = per_atom;
    }
    if (atom_virial) {
      auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.atom_virial);
      py::array_t<double> per_atom({n, 3, 3});
      auto ww = per_atom.mutable_unchecked<3>();
      for (int k = 0; k < n; k++)
        for (int c = 0; c < 9; c++) ww(k, c / 3, c % 3) = w(k, c);
      out["atom_virial"] = per_atom;
    }
    return out;
  }

 private:
  std::unique_ptr<edgeframe::Potential> m_potential;
  std::unique_ptr<edgeframe::Evaluator> m_evaluator;
};

}  // namespace

PYBIND11_MODULE(_engine, m) {
  m.doc() = "edgeframe's engine (doc/python.md); use edgeframe.Calculator for ASE";
  // The engine's input errors (a bad file, an element or task the model lacks) are the caller's.
  py::register_exception<edgeframe::InputError>(m, "InputError", PyExc_ValueError);
  py::register_exception<edgeframe::ComputeError>(m, "ComputeError", PyExc_RuntimeError);
  m.def(
      "execution_space", [] { return edgeframe::build_info().execution_space; },
      "Kokkos' default execution space of this build: Serial, OpenMP, Cuda, ...");
  m.def("version", [] { return edgeframe::build_info().edgeframe_version; });
  py::class_<Model>(m, "Model")
      .def(py::init<const std::string&, const std::string&>(), py::arg("path"), py::arg("precision") = "fp64")
      .def_property_readonly("elements", &Model::elements)
      .def_property_readonly("r_cut", &Model::r_cut)
      .def_property_readonly("format_version", &Model::format_version)
      .def_property_readonly("tasks", &Model::tasks)
      .def_property_readonly("max_num_elements", &Model::max_num_elements)
      .def("species_of", &Model::species_of, py::arg("symbols"))
      .def("set_system", &Model::set_system, py::arg("task"), py::arg("charge"), py::arg("spin"),
           py::arg("atoms_per_z"))
      .def("compute", &Model::compute, py::arg("positions"), py::arg("species"), py::arg("pair_i"), py::arg("pair_j"),
           py::arg("shifts"), py::arg("energies") = false, py::arg("virial") = true, py::arg("atom_virial") = false);
}
