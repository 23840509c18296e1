// The potential file (doc/potential-format.md): a safetensors file whose header metadata holds
// the model config as JSON under the key "edgeframe". This reader parses the bytes itself and
// makes the same rejections as the Python reader (tools/edgeframe_ref/potential_io.py), each a
// FormatError whose message names the file and the defect. It never reads outside the buffer,
// whatever the bytes: every length is checked before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace edgeframe {

// Hyperparameters (doc/model.md "Hyperparameters"); species index = position in `species`.
struct ModelConfig {
  std::vector<std::string> species;
  std::vector<double> e0;  // eV, one per species
  double r_cut = 0;        // Angstrom
  int lmax = 0, mmax = 0, channels = 0, hidden_channels = 0, ffn_channels = 0, layers = 0;
  int n_rbf = 0, envelope_p = 0, edge_emb = 0, radial_hidden = 0, readout_hidden = 0;
  double avg_neighbors = 0, norm_eps = 0;

  int num_coeffs() const { return (lmax + 1) * (lmax + 1); }
  // G = sum_{m=0..mmax} (L+1-m) * 2C, the radial MLP's output width.
  int radial_out() const;
};

// Model v2 (doc/model.md "Model v2": fairchem's eSCN-MD backbone and energy head). One task per
// fairchem dataset (omat, omol, ...): its head, its energy normaliser and element references.
struct TaskV2 {
  std::string name, head, dataset_embedding;
  double rmsd = 1, mean = 0;
  std::vector<double> element_references;  // eV per atomic number, [max_num_elements]; empty: none
  int default_charge = 0, default_spin = 0;
};

struct ModelConfigV2 {
  double r_cut = 0, gaussian_width = 2, norm_eps = 1e-5, edge_degree_rescale = 5;
  int lmax = 0, mmax = 0, channels = 0, hidden_channels = 0, edge_channels = 0, layers = 0;
  int num_gaussians = 0, envelope_p = 5, max_num_elements = 100, experts = 0;
  std::string charge_spin_embedding;  // rand_emb, pos_emb or lin_emb
  bool dataset_embedding = false, composition_embedding = false, composition_mean_include_self = false;
  std::vector<std::string> datasets, heads;
  std::vector<TaskV2> tasks;
  std::string default_task;
  int charge_balanced[2] = {0, 0}, spin_balanced[2] = {0, 0};  // channel ranges [a, b) of l = 0

  const TaskV2* task(const std::string& name) const;  // nullptr if the model has no such task
  std::string task_names() const;                     // "oc20, omat, omol"
  int radial_out() const;                             // SO(2) linear 1's radial multipliers
};

struct TensorData {
  std::vector<std::int64_t> shape;
  std::vector<double> values;  // row-major, widened to double from the stored dtype
};

struct Potential {
  std::string path;
  int format_version = 1;
  // Shared by both versions: species (v2: element symbols of Z = 1 .. max_num_elements - 1, so
  // species index = Z - 1), r_cut, lmax, mmax, channels, hidden_channels and layers.
  ModelConfig config;
  ModelConfigV2 v2;                                         // format_version 2 only
  std::string dtype;                                        // storage dtype: "float64" or "float32"
  std::string trained_precision;                            // as written by the trainer
  std::map<std::string, std::string> provenance;            // data, date, code_version
  std::vector<std::pair<std::string, TensorData>> tensors;  // in parameter_shapes order

  const TensorData& tensor(const std::string& name) const;  // throws InputError if absent
  // pair_coeff mapping: element symbols (one per LAMMPS type, "NULL" allowed) -> species index
  // or -1 for NULL. Throws InputError naming the element and listing the species.
  std::vector<int> species_map(const std::vector<std::string>& elements) const;
  // Species indices given as arrays (the bench's case files, the Python module) must index this
  // potential's species list; the kernels read per-species tables without a bounds check. Throws
  // InputError naming `source`, the first atom outside the range and the valid range.
  void check_species_indices(const int* species, std::size_t n, const std::string& source) const;
};

// Engine limits beyond the format: the kernels are compiled for lmax <= kMaxLmax, and sizes are
// capped so that no product of hyperparameters can overflow.
inline constexpr int kMaxLmax = 8;
inline constexpr int kMaxWidth = 1 << 16;  // channels, hidden sizes, n_rbf, layers, ...

inline constexpr const char* kFormatName = "edgeframe-potential";
inline constexpr int kFormatVersion = 1;
inline constexpr int kFormatVersionV2 = 2;
inline constexpr std::uint64_t kMaxHeaderBytes = 100000000;  // the safetensors package's limit

// Name -> shape of every tensor of the model, in file order (tools/edgeframe_ref/config.py).
std::vector<std::pair<std::string, std::vector<std::int64_t>>> parameter_shapes(const ModelConfig& cfg);

// The same for model v2 (tools/edgeframe_ref/config_v2.py parameter_shapes_v2).
std::vector<std::pair<std::string, std::vector<std::int64_t>>> parameter_shapes_v2(const ModelConfigV2& cfg);

// Reads and validates a potential file. Throws FormatError ("potential file <path>: <defect>")
// or InputError if the file cannot be opened.
Potential read_potential(const std::string& path);
// Same on bytes already in memory; `path` only names the source in messages.
Potential parse_potential(const std::uint8_t* bytes, std::size_t size, const std::string& path);

}  // namespace edgeframe
