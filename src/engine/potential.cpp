// Potential file reader: safetensors bytes -> Potential. Check order and messages follow
// tools/edgeframe_ref/potential_io.py so that both readers name the same first defect.
#include "potential.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "errors.hpp"
#include "potential_json.hpp"

namespace edgeframe {

namespace impl {
static_assert(std::endian::native == std::endian::little, "the reader copies little-endian tensor bytes as they are");

const std::array<const char*, 118> kElements = {
    "H",  "He", "Li", "Be", "B",  "C",  "N",  "O",  "F",  "Ne", "Na", "Mg", "Al", "Si", "P",  "S",  "Cl",
    "Ar", "K",  "Ca", "Sc", "Ti", "V",  "Cr", "Mn", "Fe", "Co", "Ni", "Cu", "Zn", "Ga", "Ge", "As", "Se",
    "Br", "Kr", "Rb", "Sr", "Y",  "Zr", "Nb", "Mo", "Tc", "Ru", "Rh", "Pd", "Ag", "Cd", "In", "Sn", "Sb",
    "Te", "I",  "Xe", "Cs", "Ba", "La", "Ce", "Pr", "Nd", "Pm", "Sm", "Eu", "Gd", "Tb", "Dy", "Ho", "Er",
    "Tm", "Yb", "Lu", "Hf", "Ta", "W",  "Re", "Os", "Ir", "Pt", "Au", "Hg", "Tl", "Pb", "Bi", "Po", "At",
    "Rn", "Fr", "Ra", "Ac", "Th", "Pa", "U",  "Np", "Pu", "Am", "Cm", "Bk", "Cf", "Es", "Fm", "Md", "No",
    "Lr", "Rf", "Db", "Sg", "Bh", "Hs", "Mt", "Ds", "Rg", "Cn", "Nh", "Fl", "Mc", "Lv", "Ts", "Og"};

}  // namespace impl

namespace {

using namespace impl;
using json = nlohmann::json;

const std::vector<std::string> kTopKeys = {"format", "format_version",    "units",     "species", "e0", "model",
                                           "dtype",  "trained_precision", "provenance"};
const std::vector<std::string> kModelKeys = {
    "r_cut", "lmax",       "mmax",     "channels",      "hidden_channels", "ffn_channels",  "layers",
    "n_rbf", "envelope_p", "edge_emb", "radial_hidden", "readout_hidden",  "avg_neighbors", "norm_eps"};
const std::vector<std::string> kProvenanceKeys = {"data", "date", "code_version"};

}  // namespace

namespace impl {

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw FormatError("potential file " + path + ": " + msg);
}

// A JSON value for a message, in Python's repr style like the reference reader's messages
// ('C', [4, 8], True), cut short: hostile files can hold megabytes or a nesting millions deep in
// one value, so depth and length are bounded (no recursion beyond kShowDepth).
constexpr int kShowDepth = 3;
constexpr size_t kShowLength = 80;

void show_into(const json& v, std::string& out, int depth) {
  if (out.size() > kShowLength) return;
  switch (v.type()) {
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      out += "'" + s.substr(0, kShowLength) + "'";
      break;
    }
    case json::value_t::boolean:
      out += v.get<bool>() ? "True" : "False";
      break;
    case json::value_t::null:
      out += "None";
      break;
    case json::value_t::array:
    case json::value_t::object: {
      const bool arr = v.is_array();
      if (depth >= kShowDepth) {
        out += arr ? "[...]" : "{...}";
        break;
      }
      out += arr ? "[" : "{";
      bool first = true;
      for (auto it = v.begin(); it != v.end() && out.size() <= kShowLength; ++it) {
        out += first ? "" : ", ";
        first = false;
        if (!arr) out += "'" + it.key().substr(0, kShowLength) + "': ";
        show_into(*it, out, depth + 1);
      }
      out += arr ? "]" : "}";
      break;
    }
    default:
      out += v.dump();
      break;  // numbers, binary
  }
}

std::string show(const json& v) {
  std::string out;
  show_into(v, out, 0);
  if (out.size() > kShowLength) out = out.substr(0, kShowLength - 3) + "...";
  return out;
}

// Comma-separated, at most 10 names (a hostile header can hold a million keys).
std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < 10; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > 10) out += ", ... (" + std::to_string(v.size()) + " in all)";
  return out;
}

std::string join_all(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

bool is_int(const json& v) { return v.is_number_integer(); }
bool is_number(const json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

// Parses JSON text; on a duplicate key anywhere in it, reports that instead of keeping the last.
json parse_json_strict(const char* first, const char* last, std::string& error) {
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) keys.emplace_back();
    if (ev == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (ev == json::parse_event_t::key && !keys.empty() && parsed.is_string()) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  json out;
  try {
    out = json::parse(first, last, cb, true);
  } catch (const json::exception& err) {
    // nlohmann quotes the bytes it stopped at: bytes outside printable ASCII as \xNN, so that a
    // binary file's header does not put raw bytes into the message (and the LAMMPS log).
    error.clear();
    for (const unsigned char c : std::string(err.what())) {
      if (c >= 0x20 && c < 0x7f) {
        error += char(c);
      } else {
        static const char* hex = "0123456789abcdef";
        error += std::string("\\x") + hex[c >> 4] + hex[c & 15];
      }
    }
    return json();
  }
  if (!duplicate.empty()) {
    error = "duplicate key '" + duplicate.substr(0, kShowLength) + "'";
    return json();
  }
  return out;
}

void check_positive_int(const json& model, const std::string& key, int& out, int limit, const std::string& path) {
  const json& v = model.at(key);
  const bool positive =
      v.is_number_unsigned() ? v.get<std::uint64_t>() >= 1 : (v.is_number_integer() && v.get<std::int64_t>() >= 1);
  if (!positive) fail(path, "invalid model hyperparameters: " + key + " must be a positive integer, got " + show(v));
  if (v.get<std::uint64_t>() > std::uint64_t(limit))
    fail(path,
         "model hyperparameter " + key + " = " + show(v) + " exceeds this engine's limit " + std::to_string(limit));
  out = static_cast<int>(v.get<std::int64_t>());
}

void check_positive_number(const json& model, const std::string& key, double& out, const std::string& path) {
  const json& v = model.at(key);
  if (!is_number(v) || !(v.get<double>() > 0))
    fail(path, "invalid model hyperparameters: " + key + " must be a finite positive number, got " + show(v));
  out = v.get<double>();
}

}  // namespace impl

namespace {

ModelConfig check_config(const json& meta, Potential& pot, const std::string& path) {
  if (!meta.is_object()) fail(path, "config under metadata key 'edgeframe' is not a JSON object");
  const auto get = [&](const char* k) { return meta.contains(k) ? meta.at(k) : json(); };
  if (get("format") != json(kFormatName))
    fail(path, "config 'format' is " + show(get("format")) + ", expected '" + kFormatName + "'");
  const json version = get("format_version");
  if (!is_int(version) ||
      (version.get<std::int64_t>() != kFormatVersion && version.get<std::int64_t>() != kFormatVersionV2))
    fail(path, "unknown format version " + show(version) + " (this reader knows: " + std::to_string(kFormatVersion) +
                   ", " + std::to_string(kFormatVersionV2) + ")");
  if (version.get<std::int64_t>() == kFormatVersionV2) {
    pot.format_version = kFormatVersionV2;
    return check_config_v2(meta, pot, path);
  }
  std::vector<std::string> missing, extra;
  for (const auto& k : kTopKeys)
    if (!meta.contains(k)) missing.push_back(k);
  for (const auto& [k, v] : meta.items())
    if (std::find(kTopKeys.begin(), kTopKeys.end(), k) == kTopKeys.end()) extra.push_back(k.substr(0, 80));
  std::sort(extra.begin(), extra.end());
  if (!missing.empty()) fail(path, "config is missing key(s): " + join(missing));
  if (!extra.empty()) fail(path, "config has unknown key(s): " + join(extra) + " (valid: " + join(kTopKeys) + ")");
  if (meta.at("units") != json("metal"))
    fail(path, "units are " + show(meta.at("units")) + "; only 'metal' is supported");

  ModelConfig cfg;
  const json& species = meta.at("species");
  if (!species.is_array() || species.empty()) fail(path, "species must be a non-empty list of element symbols");
  for (const json& s : species) {
    if (!s.is_string() || std::find(kElements.begin(), kElements.end(), s.get<std::string>()) == kElements.end())
      fail(path, "unknown species " + show(s) + " (not a chemical element symbol)");
    const auto& name = s.get_ref<const std::string&>();
    if (std::find(cfg.species.begin(), cfg.species.end(), name) != cfg.species.end())
      fail(path, "duplicate species " + show(s) + " in species list " + show(species));
    cfg.species.push_back(name);
  }
  const json& e0 = meta.at("e0");
  bool e0_ok = e0.is_object() && e0.size() == cfg.species.size();
  if (e0_ok)
    for (const auto& s : cfg.species) e0_ok = e0_ok && e0.contains(s);
  if (!e0_ok) fail(path, "e0 must give one energy per species " + show(species) + ", got " + show(e0));
  for (const auto& s : cfg.species) {
    const json& v = e0.at(s);
    if (!is_number(v)) fail(path, "e0[" + s + "] = " + show(v) + " is not a finite number");
    cfg.e0.push_back(v.get<double>());
  }
  const json& model = meta.at("model");
  if (!model.is_object()) fail(path, "config 'model' is not a JSON object");
  missing.clear();
  extra.clear();
  for (const auto& k : kModelKeys)
    if (!model.contains(k)) missing.push_back(k);
  for (const auto& [k, v] : model.items())
    if (std::find(kModelKeys.begin(), kModelKeys.end(), k) == kModelKeys.end()) extra.push_back(k.substr(0, 80));
  std::sort(extra.begin(), extra.end());
  if (!missing.empty()) fail(path, "model hyperparameter(s) missing: " + join(missing));
  if (!extra.empty())
    fail(path, "unknown model hyperparameter(s): " + join(extra) + " (valid: " + join(kModelKeys) + ")");
  const json& dtype = meta.at("dtype");
  if (dtype != json("float64") && dtype != json("float32"))
    fail(path, "dtype " + show(dtype) + " is not one of float64, float32");
  pot.dtype = dtype.get<std::string>();
  if (!meta.at("trained_precision").is_string()) fail(path, "trained_precision must be a string");
  pot.trained_precision = meta.at("trained_precision").get<std::string>();
  const json& prov = meta.at("provenance");
  bool prov_ok = prov.is_object();
  for (const auto& k : kProvenanceKeys) prov_ok = prov_ok && prov.contains(k) && prov.at(k).is_string();
  if (!prov_ok) fail(path, "provenance must be an object with string fields " + join(kProvenanceKeys));
  for (const auto& [k, v] : prov.items())
    if (v.is_string()) pot.provenance[k] = v.get<std::string>();  // extra string fields are allowed

  // ModelConfig.validate(), in its order.
  const std::pair<const char*, int*> ints[] = {{"lmax", &cfg.lmax},
                                               {"channels", &cfg.channels},
                                               {"hidden_channels", &cfg.hidden_channels},
                                               {"ffn_channels", &cfg.ffn_channels},
                                               {"layers", &cfg.layers},
                                               {"n_rbf", &cfg.n_rbf},
                                               {"envelope_p", &cfg.envelope_p},
                                               {"edge_emb", &cfg.edge_emb},
                                               {"radial_hidden", &cfg.radial_hidden},
                                               {"readout_hidden", &cfg.readout_hidden}};
  for (const auto& [key, dst] : ints)
    check_positive_int(model, key, *dst, std::string(key) == "lmax" ? kMaxLmax : kMaxWidth, path);
  const json& mmax = model.at("mmax");
  if (!is_int(mmax) || (mmax.get<std::int64_t>() != 1 && mmax.get<std::int64_t>() != 2) ||
      mmax.get<std::int64_t>() > cfg.lmax)
    fail(path, "invalid model hyperparameters: mmax must be 1 or 2 and <= lmax (" + std::to_string(cfg.lmax) +
                   "), got " + show(mmax));
  cfg.mmax = static_cast<int>(mmax.get<std::int64_t>());
  if (cfg.envelope_p < 2)
    fail(path, "invalid model hyperparameters: envelope_p must be >= 2 (u'' must vanish), got " +
                   std::to_string(cfg.envelope_p));
  check_positive_number(model, "r_cut", cfg.r_cut, path);
  check_positive_number(model, "avg_neighbors", cfg.avg_neighbors, path);
  check_positive_number(model, "norm_eps", cfg.norm_eps, path);
  return cfg;
}

}  // namespace

int ModelConfig::radial_out() const {
  int g = 0;
  for (int m = 0; m <= mmax; ++m) g += lmax + 1 - m;
  return g * 2 * channels;
}

std::vector<std::pair<std::string, std::vector<std::int64_t>>> parameter_shapes(const ModelConfig& cfg) {
  using Shape = std::vector<std::int64_t>;
  const std::int64_t S = std::int64_t(cfg.species.size()), C = cfg.channels, Ch = cfg.hidden_channels,
                     Cf = cfg.ffn_channels, L = cfg.lmax, M = cfg.mmax, Hr = cfg.radial_hidden, Ho = cfg.readout_hidden;
  std::vector<std::pair<std::string, Shape>> out;
  out.push_back({"species_embedding", {S, C}});
  for (int t = 0; t < cfg.layers; ++t) {
    const std::string p = "layers." + std::to_string(t) + ".";
    out.push_back({p + "norm_scale", {L + 1, C}});
    out.push_back({p + "edge_embedding", {S, cfg.edge_emb}});
    out.push_back({p + "radial.0.weight", {Hr, cfg.n_rbf + 2 * cfg.edge_emb}});
    out.push_back({p + "radial.0.bias", {Hr}});
    out.push_back({p + "radial.1.weight", {Hr, Hr}});
    out.push_back({p + "radial.1.bias", {Hr}});
    out.push_back({p + "radial.2.weight", {cfg.radial_out(), Hr}});
    out.push_back({p + "radial.2.bias", {cfg.radial_out()}});
    out.push_back({p + "so2_1.m0.weight", {(L + 1) * Ch + L * Ch, (L + 1) * 2 * C}});
    out.push_back({p + "so2_1.m0.bias", {(L + 1) * Ch + L * Ch}});
    for (std::int64_t m = 1; m <= M; ++m) {
      out.push_back({p + "so2_1.m" + std::to_string(m) + ".weight_r", {(L + 1 - m) * Ch, (L + 1 - m) * 2 * C}});
      out.push_back({p + "so2_1.m" + std::to_string(m) + ".weight_i", {(L + 1 - m) * Ch, (L + 1 - m) * 2 * C}});
    }
    out.push_back({p + "so2_2.m0.weight", {(L + 1) * C, (L + 1) * Ch}});
    out.push_back({p + "so2_2.m0.bias", {(L + 1) * C}});
    for (std::int64_t m = 1; m <= M; ++m) {
      out.push_back({p + "so2_2.m" + std::to_string(m) + ".weight_r", {(L + 1 - m) * C, (L + 1 - m) * Ch}});
      out.push_back({p + "so2_2.m" + std::to_string(m) + ".weight_i", {(L + 1 - m) * C, (L + 1 - m) * Ch}});
    }
    out.push_back({p + "ffn_norm_scale", {L + 1, C}});
    out.push_back({p + "ffn.lin1.weight", {L + 1, Cf, C}});
    out.push_back({p + "ffn.lin1.bias", {Cf}});
    out.push_back({p + "ffn.gate.weight", {L * Cf, C}});
    out.push_back({p + "ffn.gate.bias", {L * Cf}});
    out.push_back({p + "ffn.lin2.weight", {L + 1, C, Cf}});
    out.push_back({p + "ffn.lin2.bias", {C}});
  }
  out.push_back({"readout.norm_scale", {C}});
  out.push_back({"readout.0.weight", {Ho, C}});
  out.push_back({"readout.0.bias", {Ho}});
  out.push_back({"readout.1.weight", {1, Ho}});
  out.push_back({"readout.1.bias", {1}});
  return out;
}

Potential parse_potential(const std::uint8_t* bytes, std::size_t size, const std::string& path) {
  if (size < 8) fail(path, "truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  std::uint64_t n_header = 0;
  std::memcpy(&n_header, bytes, 8);  // little-endian (static_assert above)
  if (n_header > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(n_header) + " exceeds " + std::to_string(kMaxHeaderBytes) +
                   " bytes (corrupt file?)");
  if (8 + n_header > size)
    fail(path, "truncated: header claims " + std::to_string(n_header) + " bytes but only " + std::to_string(size - 8) +
                   " follow");
  std::string error;
  const char* text = reinterpret_cast<const char*>(bytes + 8);
  json header = parse_json_strict(text, text + n_header, error);
  if (!error.empty()) fail(path, "header is not JSON: " + error);
  if (!header.is_object()) fail(path, "header is not a JSON object");
  json raw_meta;
  if (header.contains("__metadata__")) {
    raw_meta = std::move(header["__metadata__"]);
    header.erase("__metadata__");
  }
  if (!raw_meta.is_object() || !raw_meta.contains("edgeframe"))
    fail(path, "no 'edgeframe' entry in the header's __metadata__ (not an edgeframe potential)");
  const json& meta_text = raw_meta.at("edgeframe");
  if (!meta_text.is_string()) fail(path, "metadata 'edgeframe' is not JSON: it is not a string");
  const auto& mt = meta_text.get_ref<const std::string&>();
  json meta = parse_json_strict(mt.data(), mt.data() + mt.size(), error);
  if (!error.empty()) fail(path, "metadata 'edgeframe' is not JSON: " + error);

  Potential pot;
  pot.path = path;
  pot.config = check_config(meta, pot, path);
  const auto expected =
      pot.format_version == kFormatVersionV2 ? parameter_shapes_v2(pot.v2) : parameter_shapes(pot.config);
  std::vector<std::string> missing, extra;
  for (const auto& [name, shape] : expected)
    if (!header.contains(name)) missing.push_back(name);
  for (const auto& [k, v] : header.items()) {
    const bool known = std::any_of(expected.begin(), expected.end(), [&](const auto& p) { return p.first == k; });
    if (!known) extra.push_back(k.substr(0, 80));
  }
  std::sort(extra.begin(), extra.end());
  if (!missing.empty()) fail(path, "missing tensor(s): " + join(missing));
  if (!extra.empty()) fail(path, "unexpected tensor(s): " + join(extra));

  const bool f64 = pot.dtype == "float64";
  const std::string st_dtype = f64 ? "F64" : "F32";
  const std::uint64_t itemsize = f64 ? 8 : 4;
  const std::uint8_t* data = bytes + 8 + n_header;
  const std::uint64_t data_size = size - 8 - n_header;
  struct Span {
    std::uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (const auto& [name, shape] : expected) {
    const json& info = header.at(name);
    if (!info.is_object() || info.size() != 3 || !info.contains("dtype") || !info.contains("shape") ||
        !info.contains("data_offsets"))
      fail(path, "tensor " + name + ": header entry must have exactly dtype, shape, data_offsets");
    const json& got_shape = info.at("shape");
    bool shape_ok = got_shape.is_array() && got_shape.size() == shape.size();
    for (size_t d = 0; shape_ok && d < shape.size(); ++d)
      shape_ok = is_int(got_shape[d]) && got_shape[d].get<std::int64_t>() == shape[d];
    if (!shape_ok) {
      std::string want = "[";
      for (size_t d = 0; d < shape.size(); ++d) want += (d ? ", " : "") + std::to_string(shape[d]);
      fail(path, "tensor " + name + " has shape " + show(got_shape) + " but the config implies " + want + "]");
    }
    if (info.at("dtype") != json(st_dtype))
      fail(path, "tensor " + name + " has dtype " + show(info.at("dtype")) + " but the config declares " + pot.dtype +
                     " (" + st_dtype + ")");
    const json& offs = info.at("data_offsets");
    if (!(offs.is_array() && offs.size() == 2 && offs[0].is_number_unsigned() && offs[1].is_number_unsigned() &&
          offs[0].get<std::uint64_t>() <= offs[1].get<std::uint64_t>()))
      fail(path, "tensor " + name + ": bad data_offsets " + show(offs));
    const std::uint64_t begin = offs[0].get<std::uint64_t>(), end = offs[1].get<std::uint64_t>();
    std::uint64_t count = 1;  // shapes are bounded by kMaxWidth etc.: no overflow
    for (auto s : shape) count *= std::uint64_t(s);
    const std::uint64_t nbytes = count * itemsize;
    if (end - begin != nbytes)
      fail(path, "tensor " + name + ": data_offsets span " + std::to_string(end - begin) + " bytes, shape needs " +
                     std::to_string(nbytes));
    if (end > data_size)
      fail(path, "truncated: tensor " + name + " data [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") extends past the end of the data section (" + std::to_string(data_size) + " bytes)");
    spans.push_back({begin, end, name});
    TensorData t;
    t.shape = shape;
    t.values.resize(count);
    std::uint64_t bad = 0, first_bad = 0;
    for (std::uint64_t q = 0; q < count; ++q) {
      double v;
      if (f64) {
        std::memcpy(&v, data + begin + 8 * q, 8);
      } else {
        float f;
        std::memcpy(&f, data + begin + 4 * q, 4);
        v = f;
      }
      if (!std::isfinite(v) && bad++ == 0) first_bad = q;
      t.values[q] = v;
    }
    if (bad)
      fail(path, "tensor " + name + " has " + std::to_string(bad) + " non-finite value(s) (first at flat index " +
                     std::to_string(first_bad) + ")");
    pot.tensors.emplace_back(name, std::move(t));
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t pos = 0;
  for (const auto& s : spans) {
    if (s.begin != pos)
      fail(path, "tensor " + s.name + ": data_offsets leave a gap or overlap at byte " + std::to_string(pos));
    pos = s.end;
  }
  if (pos != data_size) fail(path, std::to_string(data_size - pos) + " trailing byte(s) after the last tensor");
  return pot;
}

Potential read_potential(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw InputError("potential file " + path + " is not a regular file (a directory?)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open potential file " + path);
  std::vector<std::uint8_t> bytes;
  try {
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::exception& err) {  // libstdc++ throws from the stream buffer on read errors
    throw InputError("cannot read potential file " + path + ": " + err.what());
  }
  if (in.bad()) throw InputError("cannot read potential file " + path);
  return parse_potential(bytes.data(), bytes.size(), path);
}

const TensorData& Potential::tensor(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  throw InputError("potential " + path + " has no tensor " + name);
}

std::vector<int> Potential::species_map(const std::vector<std::string>& elements) const {
  std::vector<int> out;
  for (const auto& el : elements) {
    if (el == "NULL") {
      out.push_back(-1);
      continue;
    }
    const auto it = std::find(config.species.begin(), config.species.end(), el);
    if (it == config.species.end())
      throw InputError("potential " + path + " has no element " + el + " (it has: " + join_all(config.species) + ")");
    out.push_back(static_cast<int>(it - config.species.begin()));
  }
  return out;
}

void Potential::check_species_indices(const int* species, std::size_t n, const std::string& source) const {
  const std::size_t n_species = config.species.size();
  for (std::size_t a = 0; a < n; ++a)
    if (species[a] < 0 || static_cast<std::size_t>(species[a]) >= n_species)
      throw InputError(source + ": atom " + std::to_string(a) + " has species index " + std::to_string(species[a]) +
                       ", but potential " + path + " has species 0.." + std::to_string(n_species - 1) +
                       (format_version == kFormatVersionV2 ? " (model v2: index = Z - 1)" : ""));
}

}  // namespace edgeframe
