/* -*- c++ -*- ----------------------------------------------------------
   edgeframe: LAMMPS pair style for edge-frame equivariant ML potentials.
   Host-data style. It marshals LAMMPS' atoms and neighbour list into the
   engine's graph and translates errors; the physics lives in the engine
   (src/engine), which never sees a LAMMPS header.
------------------------------------------------------------------------- */

#ifndef LMP_PAIR_EDGEFRAME_H
#define LMP_PAIR_EDGEFRAME_H

#include "pair.h"

#include "edgeframe_deviation.h"
#include "edgeframe_exchange.h"
#include "edgeframe_node_map.h"
#include "evaluator.hpp"
#include "kept_graph.hpp"
#include "step_times.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace edgeframe {
class Evaluator;
struct Potential;
struct AtomGraph;
struct Result;
class NonFiniteError;
}    // namespace edgeframe

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
  void finish() override;

  // Per-layer exchange mode: node features (and, backwards, their gradients) per atom.
  int pack_forward_comm(int, int *, double *, int, int *) override;
  void unpack_forward_comm(int, int, double *) override;
  int pack_reverse_comm(int, int, double *) override;
  void unpack_reverse_comm(int, int *, double *) override;

 protected:
  std::string m_precision = "fp32";    // pair_style keyword precision
  std::string m_activations = "auto";    // keyword activations: auto | keep | recompute (EvaluatorOptions)
  int m_edge_chunk = 0;    // keyword edge_chunk: edges per recomputed chunk, 0 = all
  double m_memory_budget_gb = 0.0;    // keyword memory_budget: GB for auto, 0 = the device's free memory
  std::string m_plan_logged;    // the activations plan last written to the log (rank 0)
  long m_recomputed_at_init = 0;    // the evaluator's layers_recomputed() when this run started
  double m_min_distance = -1.0;    // keyword min_distance, LAMMPS distance units; < 0: 0.3 Angstrom
  // LAMMPS' unit style at the boundary (doc/pair_edgeframe.md "Units"): the engine works in
  // Angstrom and eV. Set from LAMMPS' own constants by check_run_preconditions.
  double m_to_angstrom = 1.0;    // Angstrom per LAMMPS distance unit (1 / force->angstrom)
  double m_energy_from_ev = 1.0;    // LAMMPS energy units per eV
  double m_force_from_engine = 1.0;    // LAMMPS force units per eV/Angstrom
  double m_min_distance_a = 0.3;    // min_distance in Angstrom, for the engine-side positions
  // Model v2's system inputs (keywords task, charge, spin; doc/pair_edgeframe.md "Model v2").
  std::string m_task;    // empty: the model's default task
  int m_charge = 0, m_spin = 0;
  bool m_charge_set = false, m_spin_set = false;
  std::vector<double> m_system_atoms_per_z;    // the composition the engine's experts were merged for
  struct MpiReduce : edgeframe::GlobalReduce {
    MPI_Comm world;
    void sum(double *values, int count) override;
  } m_reduce;
  bool m_fold_images = true;    // keyword fold_images: fold periodic images on one rank
  bool m_folded = false;    // this run folds images (one rank and fold_images yes)
  bool m_ghost_exchange = true;    // keyword ghost_mode: exchange (true) | shell (false)
  bool m_exchange = false;    // this run exchanges ghost features per layer
  bool m_timing_detail = false;    // keyword timing: basic | detail (fenced engine split)
  // keyword graph: per_step (false: the edges within r_cut, filtered and sorted every step) |
  // per_rebuild (true: candidates within r_cut + skin built at neighbour-list rebuilds, the
  // edges within r_cut compacted from them every step: edgeframe::KeptGraph)
  bool m_graph_per_rebuild = false;
  double m_edge_headroom = -1.0;    // keyword edge_headroom (per_rebuild's spare slots); < 0: automatic
  // The automatic edge_headroom with cuda_graph on a GPU: spare slots for 0.5 % more edges than
  // at the graph's last (re)allocation (doc/pair_edgeframe.md, "Keyword graph").
  static constexpr double kAutomaticEdgeHeadroom = 0.005;
  long m_graph_regrowths = 0;    // steps run again because their edges outgrew the kept graph
  bool m_cuda_graph = false;    // keyword cuda_graph: replay the engine's step as a CUDA graph
  long m_graph_counts_at_init[2] = {0, 0};    // the evaluator's CUDA graph captures and replays at init
  bool m_cutghost_raised = false;    // the shell mode raised comm->cutghostuser ...
  double m_cutghost_before = 0.0;    // ... from this value (restored in exchange mode)
  std::string m_potential_file;    // pair_coeff file
  std::vector<std::string> m_type_element;    // [ntypes+1] element per LAMMPS type, "NULL" allowed
  std::vector<int> m_type_species;    // [ntypes+1] potential species index, -1 for NULL

  std::unique_ptr<edgeframe::Potential> m_potential;
  std::unique_ptr<edgeframe::Evaluator> m_evaluator;
  std::unique_ptr<edgeframe::AtomGraph> m_graph;    // graph per_step
  std::unique_ptr<edgeframe::KeptGraph> m_kept;    // graph per_rebuild
  const edgeframe::AtomGraph &step_graph() const { return m_kept ? m_kept->graph() : *m_graph; }
  double edge_headroom() const;    // per_rebuild: m_edge_headroom, or its automatic value
  edgeframe_glue::NodeMap m_nodes;    // LAMMPS atom <-> engine node, rebuilt with the graph
  bool m_need_node_map = true;    // node map stale: rebuild at the next compute
  struct EdgeframeBuffers *m_buffers;    // engine-side positions and species (pair_edgeframe.cpp)
  std::unique_ptr<edgeframe_glue::FeatureExchange> m_feature_exchange;    // exchange mode
  bool m_exchange_device_comm = false;    // exchange through LAMMPS-KOKKOS' device communication (/kk sets it)
  edgeframe_glue::ExchangeSettings m_exchange_settings;    // keywords exchange_*
  bool m_device_comm_allowed = true;    // keyword device_comm (edgeframe/kk only): yes | no
  int m_exchange_width = 0;    // D * C values per atom and exchange
  edgeframe::RowType m_exchange_type = edgeframe::RowType::f32;    // their element type (precision)

  double m_time_graph = 0.0, m_time_engine = 0.0, m_time_copy = 0.0;    // seconds, this rank
  bigint m_calls = 0;
  edgeframe::StepTimes m_times;    // timing detail: the engine's fenced split, this rank
  double m_split_sum[8] = {}, m_split_max[8] = {};    // timing detail: exchange split over ranks
  void reduce_exchange_split();    // collective, from finish()
  void print_exchange_split();    // rank 0, after reduce_exchange_split()
  void print_transport();    // rank 0, first force call of a run: CUDA IPC or why not
  // Timing detail of the run's first force call alone (setup: it carries the run's first graph
  // rebuild, node map and swap traces), so that finish() can give the loop's per-call split.
  double m_first_call[7] = {};    // detail_times() after the first force call; [6]: exchange's MPI part
  void detail_times(double out[7]) const;    // graph, geometry, kernels, dense, exchange, copy, MPI
  void note_first_call();    // end of every force call; records only after the first
  void print_split_after_first_call();    // collective, from finish()
  // Per-call sums for the end-of-run graph line: LAMMPS ghosts, nodes, ghost nodes, edges.
  double m_sum_ghosts = 0.0, m_sum_nodes = 0.0, m_sum_ghost_nodes = 0.0, m_sum_edges = 0.0;
  bool m_model_block_printed = false;

  void allocate();
  void exchange_keyword(const std::string &key, const std::string &value);    // settings(): exchange_*, device_comm
  // need_newton: forces land on ghost atoms and must be reverse-communicated (every path but
  // the device path of /kk, whose folded graph puts every force on an owned atom).
  void check_run_preconditions(bool need_newton);
  void set_units();    // m_to_angstrom and friends from LAMMPS' unit style (lj refused)
  void init_engine(bool need_newton = true);    // preconditions, evaluator, model block, per-run timers
  // After m_folded / m_exchange are set: LAMMPS' buffer sizes for the exchange, the exchange
  // object and its settings, the ghost cutoff of the shell mode, the log lines.
  void init_ghost_mode();
  // Rank 0: writes the evaluator's activations plan to the log when it changes (activations
  // auto picks one per graph size; doc/pair_style.md).
  void log_activation_plan();
  // Per-atom energy and virial (6 and centroid 9) of engine nodes onto LAMMPS atoms.
  void accumulate_per_atom(const edgeframe::Result &result, const int *atom_of_node, int n_nodes, int n_local);
  // A check of this step's inputs that runs on the device during the engine and is read after it
  // (edgeframe/kk's min_distance): done first when the engine reports a non-finite result, whose
  // cause it may name better.
  virtual void check_deferred_min_distance() {}
  // A non-finite energy or force from the engine: error->one with the step and the atom ID
  // (atom_of_node: host array, engine node -> LAMMPS local index; atom->tag read on the host).
  void report_non_finite(const edgeframe::NonFiniteError &e, const int *atom_of_node,
                         const std::string &potential_file = "");
  void print_model_block();
  void idle_rank_collectives();
  // Exchange mode, at a neighbour-list rebuild: the exchange traces LAMMPS' swaps against the
  // node map (collectives; valid until the next rebuild); the first call of a run logs the transport.
  void bind_exchange(const char *style);
  // Model v2: T layers read exchanged ghost features (v1: T - 1, its first layer reads only the
  // species), and a ghost shell must reach T + 1 cutoffs (the edge-degree embedding is one
  // more hop); v1: T.
  bool is_v2() const;
  double lammps_r_cut() const;    // the model's r_cut in LAMMPS distance units
  int exchanged_layers() const;
  int receptive_layers() const;
  // Model v2: the composition of the whole system (owned atoms of every rank: collective) and
  // the keywords to the engine whenever they changed since the last call, with a log line.
  void update_system(const int *type, int nlocal);

  // ---- the step driver both styles share (pair_edgeframe_step.cpp) ----
  using Positions = edgeframe::kk::Vec3View<const double, edgeframe::Exec>;    // [nodes, 3] Angstrom
  using Species = edgeframe::kk::View1<const int, edgeframe::Exec>;    // [nodes]
  // step_graph() from the candidate pairs at these positions: graph per_step, the edges with
  // r < r_cut, built anew (m_graph); graph per_rebuild, the edges with r < r_cut compacted from
  // candidates within r_cut + skin (m_kept), built when the pairs were (rebuilt: a
  // neighbour-list rebuild or a new node map) and otherwise kept, with only their shifts
  // refreshed. style names the pair style in error messages.
  void make_step_graph(const edgeframe::kk::PairList<edgeframe::Exec> &pairs, Positions positions, Species species,
                       int n_local, bool rebuilt, const char *style);
  // The engine call on step_graph(): forces always, energies and virials as LAMMPS asks this step
  // (ev_init first). results_to_host: fence before returning (the caller reads them on the
  // host). A non-finite energy or force stops the run naming the atom (atom_of_node_on_host:
  // engine node -> LAMMPS local index, asked for only then); logs a changed activations plan.
  edgeframe::Result evaluate_step(Positions positions, edgeframe::NodeExchange *exchange, bool results_to_host,
                                  const char *style, const std::function<const int *()> &atom_of_node_on_host);
  // One evaluator's call on step_graph(), shared by the step and the model deviation: engine errors to
  // error->one with `where`; a non-finite result stops the run naming the atom (and
  // potential_file, a deviation model's); results_to_host fences before returning.
  edgeframe::Result compute_on_step_graph(edgeframe::Evaluator &evaluator, Positions positions,
                                          const edgeframe::What &what, const std::string &where, bool results_to_host,
                                          const std::function<const int *()> &atom_of_node_on_host,
                                          const std::string &potential_file = "");
  // Energy and global virial into LAMMPS' tallies; per-atom ones onto atoms (accumulate_per_atom).
  void add_energy_and_virials(const edgeframe::Result &result, const int *atom_of_node, int n_nodes, int n_local);

  // ---- model deviation (pair_edgeframe_deviation.cpp; doc/pair_edgeframe.md "Model deviation") ----
  edgeframe_glue::DeviationSettings m_deviation;    // keywords out_freq, out_file, atomic, relative, relative_v
  struct DeviationModel {
    std::string file;
    std::unique_ptr<edgeframe::Potential> potential;
    std::unique_ptr<edgeframe::Evaluator> evaluator;    // made at init, as m_evaluator
  };
  std::vector<DeviationModel> m_deviation_models;    // pair_coeff's second and later files
  FILE *m_deviation_fp = nullptr;    // rank 0: the out_file, opened at the first init with an ensemble
  // [nlocal + nghost][3 * models] every model's forces on LAMMPS atoms, LAMMPS force units
  std::vector<double> m_deviation_forces;
  bool m_reverse_deviation = false;    // pack/unpack_reverse_comm carry m_deviation_forces
  double m_deviation_values[7] = {};    // pvector: the deviation file's columns of the last deviation step
  void deviation_keyword(const std::string &key, const std::string &value);
  // pair_coeff: the ensemble's other files, checked against the first (format, r_cut, species).
  void read_deviation_models(const std::vector<std::string> &files, const std::vector<std::string> &elements,
                             const edgeframe::Potential &main);
  void init_deviation();    // init: architecture on several ranks, evaluators, the file (rank 0)
  bool deviation_due() const;    // an ensemble, and this step a multiple of out_freq
  // Every other model on step_graph() and the positions of the step whose main result is `main`;
  // forces of engine nodes to LAMMPS atoms (atom_of_node, host); then finish_deviation.
  void evaluate_deviation(Positions positions, edgeframe::NodeExchange *exchange, const edgeframe::Result &main,
                          const int *atom_of_node, int n_nodes, const char *style);
  void deviation_on_idle_rank();    // a rank without nodes: the same collectives
  void zero_deviation_forces();
  // Collective: ghost forces to owners, the statistics over all ranks, the file line, pvector.
  void finish_deviation(std::vector<double> energies, std::vector<double> virials);
  int pack_deviation_forces(int n, int first, double *buf) const;
  void unpack_deviation_forces(int n, const int *list, const double *buf);
  int deviation_stride() const;    // doubles per atom in m_deviation_forces: 3 per model
  int deviation_reverse_words() const;    // per atom in the reverse communication, 0 without an ensemble
  void close_deviation_file();
  edgeframe::EvaluatorOptions evaluator_options() const;    // from the keywords

 private:
  // The plain style's graph upkeep and positions (host-data path, also /kk's).
  void rebuild_graph();
  void check_min_distance();
  void copy_positions();
  void build_step_graph(Positions positions, bool rebuilt);
};

}    // namespace LAMMPS_NS

#endif
