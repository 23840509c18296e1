// Potential files of format version 2 (model v2): the config check and the parameter table, in
// the order and wording of tools/edgeframe_ref/potential_io_v2.py and config_v2.py.
#include <algorithm>
#include <cmath>

#include "errors.hpp"
#include "potential_json.hpp"

namespace edgeframe {

namespace impl {
namespace {

const std::vector<std::string> kTopKeysV2 = {"format", "format_version", "units", "model", "dtype", "provenance"};
// clang-format off
const std::vector<std::string> kModelKeysV2 = {
    "r_cut", "lmax", "mmax", "channels", "hidden_channels", "edge_channels", "layers", "num_gaussians", "tasks",
    "default_task", "gaussian_width", "envelope_p", "norm_eps", "edge_degree_rescale", "max_num_elements",
    "charge_spin_embedding", "dataset_embedding", "datasets", "heads", "experts", "composition_embedding",
    "composition_mean_include_self", "charge_balanced_channels", "spin_balanced_channels"};
// clang-format on
const std::vector<std::string> kChargeSpinEmbeddings = {"rand_emb", "pos_emb", "lin_emb"};

// Typed access to model.<key>: a missing key or a wrong type is a FormatError naming it.
struct ModelJson {
  const json& model;
  const std::string& path;

  const json& at(const char* key) const {
    if (!model.contains(key)) fail(path, std::string("model hyperparameter(s) missing: ") + key);
    return model.at(key);
  }
  bool flag(const char* key) const {
    const json& v = at(key);
    if (!v.is_boolean()) fail(path, std::string("invalid model hyperparameters: ") + key + " must be true or false");
    return v.get<bool>();
  }
  int integer(const char* key, int lo, int hi) const {
    const json& v = at(key);
    if (!is_int(v) || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
      fail(path, std::string("invalid model hyperparameters: ") + key + " must be an integer in [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "], got " + show(v));
    return static_cast<int>(v.get<std::int64_t>());
  }
  double positive(const char* key) const {
    at(key);  // a missing key is named with the file, as at() does
    double out = 0;
    check_positive_number(model, key, out, path);
    return out;
  }
  std::string text(const json& v, const std::string& what) const {
    if (!v.is_string()) fail(path, "invalid model hyperparameters: " + what + " must be a string, got " + show(v));
    return v.get<std::string>();
  }
  std::vector<std::string> names(const char* key) const {
    const json& v = at(key);
    if (!v.is_array()) fail(path, std::string("invalid model hyperparameters: ") + key + " must be a list of names");
    std::vector<std::string> out;
    for (const json& s : v) out.push_back(text(s, key));
    return out;
  }
  void channel_range(const char* key, int (&out)[2], int channels) const {
    const json& v = at(key);
    if (!v.is_array() || v.size() != 2 || !is_int(v[0]) || !is_int(v[1]))
      fail(path, std::string("invalid model hyperparameters: ") + key + " must be [a, b], got " + show(v));
    out[0] = static_cast<int>(v[0].get<std::int64_t>());
    out[1] = static_cast<int>(v[1].get<std::int64_t>());
    if (!(0 <= out[0] && out[0] <= out[1] && out[1] <= channels))
      fail(path, std::string("invalid model hyperparameters: ") + key +
                     " must be a channel range [a, b) within C, got " + show(v));
  }
};

TaskV2 check_task(const std::string& name, const json& t, const ModelConfigV2& cfg, const std::string& path) {
  const std::string where = "task " + name.substr(0, 80);
  if (!t.is_object()) fail(path, "invalid model hyperparameters: " + where + " is not an object");
  auto need = [&](const char* key) -> const json& {
    if (!t.contains(key)) fail(path, "invalid model hyperparameters: " + where + " has no " + key);
    return t.at(key);
  };
  TaskV2 task;
  task.name = name;
  if (!need("head").is_string() ||
      std::find(cfg.heads.begin(), cfg.heads.end(), need("head").get<std::string>()) == cfg.heads.end())
    fail(path, "invalid model hyperparameters: " + where + ": head " + show(need("head")) + " is not one of " +
                   join(cfg.heads));
  task.head = need("head").get<std::string>();
  for (const auto& [key, dst] : {std::pair<const char*, double*>{"rmsd", &task.rmsd}, {"mean", &task.mean}}) {
    if (!is_number(need(key))) fail(path, "invalid model hyperparameters: " + where + ": " + key + " must be a number");
    *dst = need(key).get<double>();
  }
  // The energy head's output is scaled by rmsd: 0 would give zero forces everywhere, silently.
  if (!(task.rmsd > 0) || !std::isfinite(task.rmsd))
    fail(path, "invalid model hyperparameters: " + where + ": rmsd must be a finite positive number, got " +
                   show(need("rmsd")));
  const json& refs = need("element_references");
  if (!refs.is_null()) {
    if (!refs.is_array() || int(refs.size()) != cfg.max_num_elements)
      fail(path, "invalid model hyperparameters: " + where + ": element_references must list " +
                     std::to_string(cfg.max_num_elements) + " numbers");
    for (const json& v : refs) {
      if (!is_number(v)) fail(path, "invalid model hyperparameters: " + where + ": element_references has " + show(v));
      task.element_references.push_back(v.get<double>());
    }
  }
  if (cfg.dataset_embedding) {
    const json& d = need("dataset_embedding");
    if (!d.is_string() ||
        std::find(cfg.datasets.begin(), cfg.datasets.end(), d.get<std::string>()) == cfg.datasets.end())
      fail(path, "invalid model hyperparameters: " + where + ": dataset_embedding " + show(d) + " is not one of " +
                     join(cfg.datasets));
    task.dataset_embedding = d.get<std::string>();
  }
  for (const auto& [key, dst] :
       {std::pair<const char*, int*>{"default_charge", &task.default_charge}, {"default_spin", &task.default_spin}}) {
    if (!t.contains(key)) continue;
    if (!is_int(t.at(key))) fail(path, "invalid model hyperparameters: " + where + ": " + key + " must be an integer");
    *dst = static_cast<int>(t.at(key).get<std::int64_t>());
  }
  return task;
}

}  // namespace

ModelConfig check_config_v2(const json& meta, Potential& pot, const std::string& path) {
  std::vector<std::string> missing;
  for (const auto& k : kTopKeysV2)
    if (!meta.contains(k)) missing.push_back(k);
  if (!missing.empty()) fail(path, "config is missing key(s): " + join(missing));
  std::vector<std::string> unknown;
  for (const auto& [k, v] : meta.items())
    if (std::find(kTopKeysV2.begin(), kTopKeysV2.end(), k) == kTopKeysV2.end()) unknown.push_back(k);
  if (!unknown.empty())
    fail(path, "config has unknown key(s): " + join(unknown) + " (a model hyperparameter belongs under 'model')");
  if (!meta.at("provenance").is_object()) fail(path, "provenance must be an object");
  if (meta.at("units") != json("metal"))
    fail(path, "units are " + show(meta.at("units")) + "; only 'metal' is supported");
  const json& dtype = meta.at("dtype");
  if (dtype != json("float64") && dtype != json("float32"))
    fail(path, "dtype " + show(dtype) + " is not one of float64, float32");
  pot.dtype = dtype.get<std::string>();
  pot.trained_precision = "fairchem";
  for (const auto& [k, v] : meta.at("provenance").items())
    if (v.is_string()) pot.provenance[k] = v.get<std::string>();
  const json& model = meta.at("model");
  if (!model.is_object()) fail(path, "config 'model' is not a JSON object");
  std::vector<std::string> extra;
  for (const auto& [k, v] : model.items())
    if (std::find(kModelKeysV2.begin(), kModelKeysV2.end(), k) == kModelKeysV2.end()) extra.push_back(k.substr(0, 80));
  std::sort(extra.begin(), extra.end());
  if (!extra.empty())
    fail(path, "unknown model hyperparameter(s): " + join(extra) + " (valid: " + join_all(kModelKeysV2) + ")");
  const ModelJson m{model, path};
  ModelConfigV2& cfg = pot.v2;
  cfg.lmax = m.integer("lmax", 1, kMaxLmax);
  cfg.mmax = m.integer("mmax", 1, 2);
  if (cfg.mmax > cfg.lmax) fail(path, "invalid model hyperparameters: mmax must be 1 or 2 and <= lmax");
  cfg.channels = m.integer("channels", 1, kMaxWidth);
  cfg.hidden_channels = m.integer("hidden_channels", 1, kMaxWidth);
  cfg.edge_channels = m.integer("edge_channels", 1, kMaxWidth);
  cfg.layers = m.integer("layers", 1, kMaxWidth);
  cfg.num_gaussians = m.integer("num_gaussians", 2, kMaxWidth);
  cfg.envelope_p = m.integer("envelope_p", 2, 64);
  cfg.max_num_elements = m.integer("max_num_elements", 2, 119);
  cfg.experts = m.integer("experts", 0, 4096);
  cfg.r_cut = m.positive("r_cut");
  cfg.gaussian_width = m.positive("gaussian_width");
  cfg.norm_eps = m.positive("norm_eps");
  cfg.edge_degree_rescale = m.positive("edge_degree_rescale");
  cfg.charge_spin_embedding = m.text(m.at("charge_spin_embedding"), "charge_spin_embedding");
  if (std::find(kChargeSpinEmbeddings.begin(), kChargeSpinEmbeddings.end(), cfg.charge_spin_embedding) ==
      kChargeSpinEmbeddings.end())
    fail(path, "invalid model hyperparameters: charge_spin_embedding " + show(m.at("charge_spin_embedding")) +
                   " is not one of " + join(kChargeSpinEmbeddings));
  if (cfg.charge_spin_embedding == "pos_emb" && cfg.channels % 2 != 0)
    fail(path, "invalid model hyperparameters: pos_emb needs an even number of channels");
  cfg.dataset_embedding = m.flag("dataset_embedding");
  cfg.composition_embedding = m.flag("composition_embedding");
  cfg.composition_mean_include_self = m.flag("composition_mean_include_self");
  cfg.datasets = m.names("datasets");
  cfg.heads = m.names("heads");
  if (cfg.heads.empty()) fail(path, "invalid model hyperparameters: heads is empty");
  m.channel_range("charge_balanced_channels", cfg.charge_balanced, cfg.channels);
  m.channel_range("spin_balanced_channels", cfg.spin_balanced, cfg.channels);
  const json& tasks = m.at("tasks");
  if (!tasks.is_object() || tasks.empty())
    fail(path, "invalid model hyperparameters: tasks must be a non-empty object");
  for (const auto& [name, t] : tasks.items()) cfg.tasks.push_back(check_task(name, t, cfg, path));
  cfg.default_task = m.text(m.at("default_task"), "default_task");
  if (!cfg.task(cfg.default_task))
    fail(path, "invalid model hyperparameters: default_task '" + cfg.default_task.substr(0, 80) +
                   "' is not one of the tasks " + cfg.task_names());

  ModelConfig shared;
  for (int z = 1; z < cfg.max_num_elements; ++z) shared.species.push_back(kElements[z - 1]);
  shared.e0.assign(shared.species.size(), 0.0);
  shared.r_cut = cfg.r_cut;
  shared.lmax = cfg.lmax;
  shared.mmax = cfg.mmax;
  shared.channels = cfg.channels;
  shared.hidden_channels = cfg.hidden_channels;
  shared.layers = cfg.layers;
  shared.envelope_p = cfg.envelope_p;
  shared.norm_eps = cfg.norm_eps;
  return shared;
}

}  // namespace impl

const TaskV2* ModelConfigV2::task(const std::string& name) const {
  for (const auto& t : tasks)
    if (t.name == name) return &t;
  return nullptr;
}

std::string ModelConfigV2::task_names() const {
  std::vector<std::string> names;
  for (const auto& t : tasks) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  return impl::join_all(names);
}

int ModelConfigV2::radial_out() const {
  int g = 0;
  for (int m = 0; m <= mmax; ++m) g += lmax + 1 - m;
  return g * 2 * channels;
}

std::vector<std::pair<std::string, std::vector<std::int64_t>>> parameter_shapes_v2(const ModelConfigV2& cfg) {
  using Shape = std::vector<std::int64_t>;
  const std::int64_t Z = cfg.max_num_elements, C = cfg.channels, H = cfg.hidden_channels, Ce = cfg.edge_channels,
                     L = cfg.lmax, M = cfg.mmax, K = cfg.experts, G = cfg.num_gaussians;
  const std::int64_t edge_in = G + 2 * Ce;
  std::vector<std::pair<std::string, Shape>> out;
  auto add = [&](const std::string& name, Shape s) { out.emplace_back(name, std::move(s)); };
  auto lead = [&](Shape s) {
    if (K > 0) s.insert(s.begin(), K);
    return s;
  };
  auto radial = [&](const std::string& p, std::int64_t c_out) {
    add(p + ".lin0.weight", {Ce, edge_in});
    add(p + ".lin0.bias", {Ce});
    add(p + ".ln0.weight", {Ce});
    add(p + ".ln0.bias", {Ce});
    add(p + ".lin1.weight", {Ce, Ce});
    add(p + ".lin1.bias", {Ce});
    add(p + ".ln1.weight", {Ce});
    add(p + ".ln1.bias", {Ce});
    add(p + ".lin2.weight", {c_out, Ce});
    add(p + ".lin2.bias", {c_out});
  };
  auto so2 = [&](const std::string& p, std::int64_t c_in, std::int64_t c_out, bool gates) {
    const std::int64_t m0_out = (L + 1) * c_out + (gates ? L * c_out : 0);
    add(p + ".m0.weight", lead({m0_out, (L + 1) * c_in}));
    add(p + ".m0.bias", {m0_out});
    for (std::int64_t m = 1; m <= M; ++m)
      for (const char* c : {"r", "i"})
        add(p + ".m" + std::to_string(m) + ".weight_" + c, lead({(L + 1 - m) * c_out, (L + 1 - m) * c_in}));
  };
  add("atom_embedding", {Z, C});
  add("edge.source_embedding", {Z, Ce});
  add("edge.target_embedding", {Z, Ce});
  if (cfg.charge_spin_embedding == "rand_emb") {
    add("system.charge_table", {201, C});
    add("system.spin_table", {101, C});
  } else if (cfg.charge_spin_embedding == "pos_emb") {
    add("system.charge_frequencies", {C / 2});
    add("system.spin_frequencies", {C / 2});
  } else {
    for (const char* which : {"charge", "spin"}) {
      add(std::string("system.") + which + "_linear.weight", {C, 1});
      add(std::string("system.") + which + "_linear.bias", {C});
    }
  }
  if (cfg.dataset_embedding)
    for (const auto& d : cfg.datasets) add("system.dataset." + d, {C});
  add("system.mix.weight", {C, (cfg.dataset_embedding ? 3 : 2) * C});
  add("system.mix.bias", {C});
  if (K > 0) {
    const std::int64_t route_in = (cfg.composition_embedding ? 2 : 1) * C;
    const std::int64_t dims[3][2] = {{2 * K, route_in}, {2 * K, 2 * K}, {K, 2 * K}};
    for (int k = 0; k < 3; ++k) {
      add("mole.routing." + std::to_string(k) + ".weight", {dims[k][0], dims[k][1]});
      add("mole.routing." + std::to_string(k) + ".bias", {dims[k][0]});
    }
    if (cfg.composition_embedding) add("mole.composition_embedding", {Z, C});
  }
  radial("edge_degree.radial", (L + 1) * C);
  for (int t = 0; t < cfg.layers; ++t) {
    const std::string p = "layers." + std::to_string(t);
    add(p + ".norm1.weight", {L + 1, C});
    add(p + ".norm1.bias", {C});
    radial(p + ".radial", cfg.radial_out());
    so2(p + ".so2_1", 2 * C, H, true);
    so2(p + ".so2_2", H, C, false);
    add(p + ".norm2.weight", {L + 1, C});
    add(p + ".norm2.bias", {C});
    add(p + ".ffn.gate.weight", {L * H, C});
    add(p + ".ffn.gate.bias", {L * H});
    add(p + ".ffn.lin1.weight", {L + 1, H, C});
    add(p + ".ffn.lin1.bias", {H});
    add(p + ".ffn.lin2.weight", {L + 1, C, H});
    add(p + ".ffn.lin2.bias", {C});
  }
  add("final_norm.weight", {L + 1, C});
  add("final_norm.bias", {C});
  for (const auto& h : cfg.heads) {
    const std::int64_t dims[3][2] = {{H, C}, {H, H}, {1, H}};
    for (int k = 0; k < 3; ++k) {
      add("heads." + h + ".lin" + std::to_string(k) + ".weight", {dims[k][0], dims[k][1]});
      add("heads." + h + ".lin" + std::to_string(k) + ".bias", {dims[k][0]});
    }
  }
  return out;
}

}  // namespace edgeframe
