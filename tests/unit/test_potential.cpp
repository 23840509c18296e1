// The potential-file reader on valid, corrupt and hostile input: every defect is a FormatError
// naming the file and the defect; no byte sequence crashes it (this binary also runs under
// AddressSanitizer, -DEDGEFRAME_ENABLE_ASAN=ON).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "errors.hpp"
#include "potential.hpp"

namespace {

using edgeframe::FormatError;
using edgeframe::InputError;
using json = nlohmann::json;
using Bytes = std::vector<std::uint8_t>;

json small_meta() {
  return json{{"format", "edgeframe-potential"},
              {"format_version", 1},
              {"units", "metal"},
              {"species", {"C", "Cu"}},
              {"e0", {{"C", -1.5}, {"Cu", -3.25}}},
              {"model",
               {{"r_cut", 4.5},
                {"lmax", 2},
                {"mmax", 1},
                {"channels", 4},
                {"hidden_channels", 3},
                {"ffn_channels", 5},
                {"layers", 2},
                {"n_rbf", 3},
                {"envelope_p", 5},
                {"edge_emb", 2},
                {"radial_hidden", 6},
                {"readout_hidden", 3},
                {"avg_neighbors", 12.0},
                {"norm_eps", 1e-6}}},
              {"dtype", "float64"},
              {"trained_precision", "float64"},
              {"provenance", {{"data", "unit test"}, {"date", "2026-11-29"}, {"code_version", "test"}}}};
}

edgeframe::ModelConfig config_of(const json& meta) {
  edgeframe::ModelConfig c;
  for (const auto& s : meta["species"]) c.species.push_back(s);
  const json& m = meta["model"];
  c.r_cut = m["r_cut"];
  c.lmax = m["lmax"];
  c.mmax = m["mmax"];
  c.channels = m["channels"];
  c.hidden_channels = m["hidden_channels"];
  c.ffn_channels = m["ffn_channels"];
  c.layers = m["layers"];
  c.n_rbf = m["n_rbf"];
  c.envelope_p = m["envelope_p"];
  c.edge_emb = m["edge_emb"];
  c.radial_hidden = m["radial_hidden"];
  c.readout_hidden = m["readout_hidden"];
  return c;
}

// Value of flat element q of tensor number t: distinct, exactly representable in float32.
double weight_value(size_t t, size_t q) { return double(int((t * 131 + q * 7) % 997) - 498) / 64.0; }

// A safetensors file like the Python writer's. `edit` may change the header JSON (tensor entries
// and __metadata__) before it is serialised.
Bytes make_file(const json& meta, const std::function<void(json&)>& edit = {},
                const std::function<void(std::string&)>& edit_text = {}) {
  const bool f64 = meta["dtype"] == "float64";
  const size_t item = f64 ? 8 : 4;
  json header;
  header["__metadata__"] = {{"edgeframe", meta.dump()}};
  Bytes data;
  size_t t = 0;
  for (const auto& [name, shape] : edgeframe::parameter_shapes(config_of(meta))) {
    size_t count = 1;
    for (auto s : shape) count *= size_t(s);
    const size_t begin = data.size();
    for (size_t q = 0; q < count; ++q) {
      std::uint8_t buf[8];
      if (f64) {
        const double v = weight_value(t, q);
        std::memcpy(buf, &v, 8);
      } else {
        const float v = float(weight_value(t, q));
        std::memcpy(buf, &v, 4);
      }
      data.insert(data.end(), buf, buf + item);
    }
    header[name] = {{"dtype", f64 ? "F64" : "F32"}, {"shape", shape}, {"data_offsets", {begin, data.size()}}};
    ++t;
  }
  if (edit) edit(header);
  std::string text = header.dump();
  if (edit_text) edit_text(text);
  Bytes out(8 + text.size() + data.size());
  const std::uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::copy(text.begin(), text.end(), out.begin() + 8);
  std::copy(data.begin(), data.end(), out.begin() + 8 + std::ptrdiff_t(text.size()));
  return out;
}

edgeframe::Potential parse(const Bytes& b) {
  return edgeframe::parse_potential(b.data(), b.size(), "test.safetensors");
}

// Parses and expects a FormatError whose message names the file and contains `needle`.
void expect_rejected(const Bytes& b, const std::string& needle) {
  try {
    parse(b);
    ADD_FAILURE() << "accepted; expected an error containing: " << needle;
  } catch (const FormatError& err) {
    const std::string msg = err.what();
    EXPECT_EQ(msg.rfind("potential file test.safetensors: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected to contain: " << needle;
  }
}

void expect_meta_rejected(const std::function<void(json&)>& edit_meta, const std::string& needle) {
  json meta = small_meta();
  edit_meta(meta);
  // shapes follow the unedited config so that only the edit differs
  const json good = small_meta();
  expect_rejected(make_file(good, [&](json& h) { h["__metadata__"]["edgeframe"] = meta.dump(); }), needle);
}

// Anything but a FormatError (or success) is a failure: crashes show up as test crashes, and
// ASan builds catch out-of-bounds reads.
void parse_must_not_crash(const Bytes& b) {
  try {
    parse(b);
  } catch (const FormatError&) {
  } catch (const std::exception& err) {
    ADD_FAILURE() << "unexpected exception type: " << err.what();
  }
}

TEST(Potential, ReadsAValidFile) {
  for (const char* dtype : {"float64", "float32"}) {
    json meta = small_meta();
    meta["dtype"] = dtype;
    const auto pot = parse(make_file(meta));
    const auto& c = pot.config;
    EXPECT_EQ(c.species, (std::vector<std::string>{"C", "Cu"}));
    EXPECT_EQ(c.e0, (std::vector<double>{-1.5, -3.25}));
    EXPECT_EQ(c.r_cut, 4.5);
    EXPECT_EQ(c.lmax, 2);
    EXPECT_EQ(c.mmax, 1);
    EXPECT_EQ(c.channels, 4);
    EXPECT_EQ(c.hidden_channels, 3);
    EXPECT_EQ(c.ffn_channels, 5);
    EXPECT_EQ(c.layers, 2);
    EXPECT_EQ(c.n_rbf, 3);
    EXPECT_EQ(c.envelope_p, 5);
    EXPECT_EQ(c.edge_emb, 2);
    EXPECT_EQ(c.radial_hidden, 6);
    EXPECT_EQ(c.readout_hidden, 3);
    EXPECT_EQ(c.avg_neighbors, 12.0);
    EXPECT_EQ(c.norm_eps, 1e-6);
    EXPECT_EQ(c.radial_out(), (3 + 2) * 2 * 4);
    EXPECT_EQ(pot.dtype, dtype);
    EXPECT_EQ(pot.provenance.at("data"), "unit test");
    const auto shapes = edgeframe::parameter_shapes(c);
    ASSERT_EQ(pot.tensors.size(), shapes.size());
    for (size_t t = 0; t < shapes.size(); ++t) {
      EXPECT_EQ(pot.tensors[t].first, shapes[t].first);
      EXPECT_EQ(pot.tensors[t].second.shape, shapes[t].second);
      const auto& v = pot.tensors[t].second.values;
      for (size_t q = 0; q < v.size(); ++q) ASSERT_EQ(v[q], weight_value(t, q));
    }
    EXPECT_EQ(pot.tensor("layers.1.so2_1.m1.weight_i").shape, (std::vector<std::int64_t>{2 * 3, 2 * 2 * 4}));
    EXPECT_THROW(pot.tensor("nope"), InputError);
  }
}

TEST(Potential, SpeciesMapNamesTheMissingElementAndListsTheValidOnes) {
  const auto pot = parse(make_file(small_meta()));
  EXPECT_EQ(pot.species_map({"Cu", "NULL", "C"}), (std::vector<int>{1, -1, 0}));
  try {
    pot.species_map({"C", "Si"});
    ADD_FAILURE();
  } catch (const InputError& err) {
    EXPECT_STREQ(err.what(), "potential test.safetensors has no element Si (it has: C, Cu)");
  }
}

TEST(Potential, RejectsTruncationAtEveryOffset) {
  const Bytes good = make_file(small_meta());
  std::uint64_t n_header = 0;
  std::memcpy(&n_header, good.data(), 8);
  // every offset through the header and the first tensors, then every 5th byte
  for (size_t cut = 0; cut < good.size(); cut += (cut < 8 + n_header + 256 ? 1 : 5)) {
    Bytes b(good.begin(), good.begin() + cut);
    EXPECT_THROW(parse(b), FormatError) << "cut at " << cut;
  }
  expect_rejected(Bytes(good.begin(), good.begin() + 5), "truncated: 5 bytes");
  expect_rejected(Bytes(good.begin(), good.begin() + 20), "truncated: header claims");
  expect_rejected(Bytes(good.begin(), good.end() - 3), "extends past the end of the data section");
}

TEST(Potential, SurvivesRandomBitFlips) {
  const Bytes good = make_file(small_meta());
  std::mt19937_64 rng(2026);
  std::uniform_int_distribution<size_t> pos(0, good.size() - 1);
  std::uniform_int_distribution<size_t> header_pos(0, 8 + 2000);
  std::uniform_int_distribution<int> bit(0, 7), nflips(1, 4);
  for (int trial = 0; trial < 3000; ++trial) {
    Bytes b = good;
    const int n = nflips(rng);
    for (int f = 0; f < n; ++f) {
      // half of the flips aim at the length and header, where the parser has to cope
      const size_t p = (trial % 2 ? pos(rng) : std::min(header_pos(rng), good.size() - 1));
      b[p] ^= std::uint8_t(1u << bit(rng));
    }
    parse_must_not_crash(b);
  }
}

TEST(Potential, RejectsHugeDeclaredSizes) {
  const Bytes good = make_file(small_meta());
  for (std::uint64_t n : {std::uint64_t(100000001), std::uint64_t(1) << 40, std::numeric_limits<std::uint64_t>::max(),
                          std::uint64_t(1) << 63}) {
    Bytes b = good;
    std::memcpy(b.data(), &n, 8);
    expect_rejected(b, "exceeds 100000000 bytes");
  }
  {
    Bytes b = good;
    const std::uint64_t n = 99999999;
    std::memcpy(b.data(), &n, 8);
    expect_rejected(b, "truncated: header claims 99999999 bytes");
  }
  expect_rejected(make_file(small_meta(),
                            [](json& h) {
                              h["readout.1.bias"]["data_offsets"] = {0, std::numeric_limits<std::uint64_t>::max()};
                            }),
                  "tensor readout.1.bias: data_offsets span");
  expect_rejected(make_file(small_meta(),
                            [](json& h) {
                              h["readout.1.bias"]["data_offsets"] = {1ull << 62, (1ull << 62) + 8};
                            }),
                  "extends past the end of the data section");
  expect_rejected(make_file(small_meta(),
                            [](json& h) {
                              h["readout.1.bias"]["data_offsets"] = {-8, 0};
                            }),
                  "bad data_offsets");
  expect_meta_rejected([](json& m) { m["model"]["channels"] = 1000000000; }, "exceeds this engine's limit");
  expect_meta_rejected([](json& m) { m["model"]["channels"] = std::numeric_limits<std::uint64_t>::max(); },
                       "exceeds this engine's limit");
  expect_meta_rejected([](json& m) { m["model"]["lmax"] = 9; }, "lmax = 9 exceeds this engine's limit 8");
}

TEST(Potential, RejectsHeadersThatAreNotTheFormat) {
  auto with_header = [](const std::string& text) {
    Bytes b(8 + text.size());
    const std::uint64_t n = text.size();
    std::memcpy(b.data(), &n, 8);
    std::copy(text.begin(), text.end(), b.begin() + 8);
    return b;
  };
  expect_rejected(with_header("not json at all"), "header is not JSON");
  expect_rejected(with_header(""), "header is not JSON");
  expect_rejected(with_header("{\"a\": 1, \"a\": 2}"), "duplicate key 'a'");
  expect_rejected(with_header("[1, 2, 3]"), "header is not a JSON object");
  expect_rejected(with_header("{\"x\": \"\xff\xfe\"}"), "header is not JSON");
  // The bytes the JSON parser stopped at are shown escaped: no raw bytes in a message (or a log).
  try {
    parse(with_header("{\"x\": \"\xff\xfe\"}"));
    ADD_FAILURE() << "accepted";
  } catch (const FormatError& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("\\xff"), std::string::npos) << msg;
    EXPECT_TRUE(std::all_of(msg.begin(), msg.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) << msg;
  }
  expect_rejected(with_header(std::string(200000, '[') + std::string(200000, ']')), "header is not a JSON object");
  expect_rejected(with_header("{}"), "no 'edgeframe' entry");
  expect_rejected(with_header("{\"__metadata__\": {\"other\": \"x\"}}"), "no 'edgeframe' entry");
  expect_rejected(with_header("{\"__metadata__\": {\"edgeframe\": 5}}"), "metadata 'edgeframe' is not JSON");
  expect_rejected(with_header("{\"__metadata__\": {\"edgeframe\": \"{oops\"}}"), "metadata 'edgeframe' is not JSON");
  expect_rejected(with_header("{\"__metadata__\": {\"edgeframe\": \"{\\\"a\\\":1,\\\"a\\\":1}\"}}"),
                  "duplicate key 'a'");
  expect_rejected(with_header("{\"__metadata__\": {\"edgeframe\": \"[]\"}}"), "is not a JSON object");
}

TEST(Potential, RejectsBadConfigs) {
  expect_meta_rejected([](json& m) { m["format"] = "safetensors"; },
                       "config 'format' is 'safetensors', expected 'edgeframe-potential'");
  expect_meta_rejected([](json& m) { m["format_version"] = 3; }, "unknown format version 3 (this reader knows: 1, 2)");
  expect_meta_rejected([](json& m) { m["format_version"] = "1"; }, "unknown format version '1'");
  expect_meta_rejected([](json& m) { m["format_version"] = 1.0; }, "unknown format version 1.0");
  expect_meta_rejected([](json& m) { m["format_version"] = true; }, "unknown format version True");
  expect_meta_rejected([](json& m) { m.erase("provenance"); }, "config is missing key(s): provenance");
  expect_meta_rejected([](json& m) { m["extra"] = 1; }, "config has unknown key(s): extra");
  expect_meta_rejected([](json& m) { m["units"] = "real"; }, "units are 'real'; only 'metal' is supported");
  expect_meta_rejected(
      [](json& m) {
        m["e0"] = {{"C", 1.0}};
      },
      "e0 must give one energy per species ['C', 'Cu'], got {'C': 1.0}");
  expect_meta_rejected([](json& m) { m["species"] = json::array(); }, "species must be a non-empty list");
  expect_meta_rejected(
      [](json& m) {
        m["species"] = {"C", "Xx"};
      },
      "unknown species 'Xx' (not a chemical element symbol)");
  expect_meta_rejected([](json& m) { m["species"] = {"C", 6}; }, "unknown species 6");
  expect_meta_rejected(
      [](json& m) {
        m["species"] = {"Cu", "Cu"};
      },
      "duplicate species 'Cu' in species list ['Cu', 'Cu']");
  expect_meta_rejected([](json& m) { m["e0"] = {{"C", 1.0}}; }, "e0 must give one energy per species");
  expect_meta_rejected([](json& m) { m["e0"]["Cu"] = "x"; }, "e0[Cu] = 'x' is not a finite number");
  expect_meta_rejected([](json& m) { m["model"] = 3; }, "config 'model' is not a JSON object");
  expect_meta_rejected([](json& m) { m["model"].erase("n_rbf"); }, "model hyperparameter(s) missing: n_rbf");
  expect_meta_rejected([](json& m) { m["model"]["lmin"] = 0; }, "unknown model hyperparameter(s): lmin");
  expect_meta_rejected([](json& m) { m["dtype"] = "float16"; }, "dtype 'float16' is not one of float64, float32");
  expect_meta_rejected([](json& m) { m["trained_precision"] = 32; }, "trained_precision must be a string");
  expect_meta_rejected([](json& m) { m["provenance"].erase("date"); }, "provenance must be an object");
  expect_meta_rejected([](json& m) { m["model"]["channels"] = 0; }, "channels must be a positive integer, got 0");
  expect_meta_rejected([](json& m) { m["model"]["channels"] = 4.0; }, "channels must be a positive integer, got 4.0");
  expect_meta_rejected([](json& m) { m["model"]["layers"] = -1; }, "layers must be a positive integer");
  expect_meta_rejected([](json& m) { m["model"]["mmax"] = 3; }, "mmax must be 1 or 2");
  expect_meta_rejected(
      [](json& m) {
        m["model"]["lmax"] = 1;
        m["model"]["mmax"] = 2;
      },
      "mmax must be 1 or 2 and <= lmax (1)");
  expect_meta_rejected([](json& m) { m["model"]["envelope_p"] = 1; }, "envelope_p must be >= 2");
  expect_meta_rejected([](json& m) { m["model"]["r_cut"] = -4.5; }, "r_cut must be a finite positive number");
  expect_meta_rejected([](json& m) { m["model"]["avg_neighbors"] = "12"; }, "avg_neighbors must be a finite positive");
  expect_meta_rejected([](json& m) { m["model"]["norm_eps"] = 0; }, "norm_eps must be a finite positive number");
}

TEST(Potential, RejectsBadTensors) {
  const json meta = small_meta();
  expect_rejected(make_file(meta, [](json& h) { h.erase("layers.0.ffn.gate.bias"); }),
                  "missing tensor(s): layers.0.ffn.gate.bias");
  expect_rejected(make_file(meta, [](json& h) { h["bonus"] = h["readout.1.bias"]; }), "unexpected tensor(s): bonus");
  expect_rejected(make_file(meta, [](json& h) { h["readout.0.bias"]["shape"] = {4}; }),
                  "tensor readout.0.bias has shape [4] but the config implies [3]");
  expect_rejected(make_file(meta, [](json& h) { h["readout.0.bias"]["shape"] = {3.0}; }), "has shape [3.0]");
  expect_rejected(make_file(meta, [](json& h) { h["readout.0.bias"]["dtype"] = "F32"; }),
                  "tensor readout.0.bias has dtype 'F32' but the config declares float64 (F64)");
  // deeply nested junk where a shape belongs: the message stays short, nothing recurses deeply
  expect_rejected(make_file(
                      meta, [](json& h) { h["readout.0.bias"]["shape"] = "@DEEP@"; },
                      [](std::string& text) {
                        const size_t at = text.find("\"@DEEP@\"");
                        text.replace(at, 8, std::string(1000000, '[') + std::string(1000000, ']'));
                      }),
                  "has shape [[[[...]]]] but the config implies [3]");
  expect_rejected(make_file(meta, [](json& h) { h["readout.0.bias"]["extra"] = 1; }),
                  "header entry must have exactly dtype, shape, data_offsets");
  expect_rejected(make_file(meta, [](json& h) { h["readout.0.bias"] = 7; }), "header entry must have exactly");
  // readout.1.bias (8 bytes) pointed at the start of species_embedding: overlap, and a gap at its old place
  expect_rejected(make_file(meta,
                            [](json& h) {
                              h["readout.1.bias"]["data_offsets"] = {0, 8};
                            }),
                  "leave a gap or overlap");
  Bytes extra = make_file(meta);
  extra.push_back(0);
  expect_rejected(extra, "1 trailing byte(s) after the last tensor");
}

TEST(Potential, RejectsNonFiniteWeights) {
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    Bytes b = make_file(small_meta());
    // last tensor readout.1.bias (1 value) sits at the very end of the file
    std::memcpy(b.data() + b.size() - 8, &bad, 8);
    expect_rejected(b, "tensor readout.1.bias has 1 non-finite value(s) (first at flat index 0)");
  }
  json meta = small_meta();
  meta["dtype"] = "float32";
  Bytes b = make_file(meta);
  const float nanf = std::nanf("");
  std::memcpy(b.data() + b.size() - 4, &nanf, 4);
  expect_rejected(b, "tensor readout.1.bias has 1 non-finite value(s)");
}

TEST(Potential, ReadPotentialNamesAMissingFile) {
  try {
    edgeframe::read_potential("/nonexistent/dir/C.safetensors");
    ADD_FAILURE();
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("/nonexistent/dir/C.safetensors"), std::string::npos);
  }
}

TEST(Potential, ADirectoryIsNamedAsNotAPotentialFile) {
  const std::string dir = ::testing::TempDir();
  try {
    edgeframe::read_potential(dir);
    ADD_FAILURE() << "a directory was read as a potential";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("potential file " + dir + " is not a regular file"), std::string::npos)
        << err.what();
  }
}

// Model v2 files: the shipped carbon v2 potential with its config edited (the tensors as they are).
Bytes shipped_v2_edited(const std::function<void(json&)>& edit_meta) {
  std::ifstream in(std::string(EDGEFRAME_POTENTIALS_DIR) + "/C-diamond-v2.safetensors", std::ios::binary);
  const Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GT(file.size(), 8u);
  std::uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  json header = json::parse(file.begin() + 8, file.begin() + 8 + std::ptrdiff_t(n));
  json meta = json::parse(header["__metadata__"]["edgeframe"].get<std::string>());
  edit_meta(meta);
  header["__metadata__"]["edgeframe"] = meta.dump();
  const std::string text = header.dump();
  Bytes out(8 + text.size());
  const std::uint64_t m = text.size();
  std::memcpy(out.data(), &m, 8);
  std::copy(text.begin(), text.end(), out.begin() + 8);
  out.insert(out.end(), file.begin() + 8 + std::ptrdiff_t(n), file.end());
  return out;
}

// A missing hyperparameter is named with the file, whichever check reads it first.
TEST(Potential, ModelV2MissingHyperparametersAreNamedWithTheFile) {
  ASSERT_NO_THROW(parse(shipped_v2_edited([](json&) {})));
  for (const char* key : {"r_cut", "gaussian_width", "norm_eps", "edge_degree_rescale", "lmax", "tasks"})
    expect_rejected(shipped_v2_edited([&](json& m) { m["model"].erase(key); }),
                    std::string("model hyperparameter(s) missing: ") + key);
}

// As the Python reader (tests/python/test_potential_io.py): a model key put at the top level, a
// provenance that is not an object, an rmsd of 0 (every force 0) are refused.
TEST(Potential, ModelV2RejectsAMisplacedKeyATextProvenanceAndAZeroRmsd) {
  expect_rejected(shipped_v2_edited([](json& m) { m["default_task"] = "default"; }),
                  "config has unknown key(s): default_task");
  expect_rejected(shipped_v2_edited([](json& m) { m["provenance"] = "trained here"; }), "provenance must be an object");
  expect_rejected(shipped_v2_edited([](json& m) { m["model"]["tasks"]["default"]["rmsd"] = 0.0; }),
                  "rmsd must be a finite positive number, got 0.0");
}

TEST(Potential, ReadPotentialReadsAFileFromDisk) {
  const Bytes good = make_file(small_meta());
  const std::string path = ::testing::TempDir() + "edgeframe_test_potential.safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(good.data()), std::streamsize(good.size()));
  }
  const auto pot = edgeframe::read_potential(path);
  EXPECT_EQ(pot.path, path);
  EXPECT_EQ(pot.config.species.size(), 2u);
}

}  // namespace

namespace {

// The potential files written by the Python reference (tools/make_goldens.py) read back with the
// shapes their golden index promises.
TEST(Potential, ReadsThePythonWrittenGoldenModels) {
  const std::string dir = EDGEFRAME_GOLDENS_DIR;
  std::ifstream in(dir + "/index.json");
  ASSERT_TRUE(in) << "missing " << dir << "/index.json";
  const json index = json::parse(in);
  ASSERT_EQ(index["models"].size(), 4u);
  for (const auto& [key, m] : index["models"].items()) {
    const auto pot = edgeframe::read_potential(dir + "/" + m["file"].get<std::string>());
    EXPECT_EQ(pot.config.mmax, m["mmax"].get<int>()) << key;
    EXPECT_EQ(pot.config.channels, m["channels"].get<int>()) << key;
    EXPECT_EQ(pot.config.layers, m["layers"].get<int>()) << key;
    EXPECT_EQ(pot.config.radial_hidden, m["radial_hidden"].get<int>()) << key;
    EXPECT_EQ(pot.dtype, m["storage"].get<std::string>()) << key;
    EXPECT_EQ(pot.config.species, (std::vector<std::string>{"C", "Cu"})) << key;
    EXPECT_EQ(pot.tensors.size(), edgeframe::parameter_shapes(pot.config).size()) << key;
    EXPECT_EQ(pot.provenance.count("generator"), 1u) << key;  // an extra provenance field
  }
}

}  // namespace

TEST(Potential, SpeciesIndicesOutsideTheSpeciesListAreAnInputErrorNamingTheAtom) {
  const auto pot = parse(make_file(small_meta()));  // species C, Cu
  const std::vector<int> good{0, 1, 1, 0};
  EXPECT_NO_THROW(pot.check_species_indices(good.data(), good.size(), "case file x.case"));
  for (const int bad : {2, -1}) {
    const std::vector<int> species{0, 1, bad, 0};
    try {
      pot.check_species_indices(species.data(), species.size(), "case file x.case");
      ADD_FAILURE() << bad;
    } catch (const InputError& err) {
      EXPECT_EQ(std::string(err.what()), "case file x.case: atom 2 has species index " + std::to_string(bad) +
                                             ", but potential test.safetensors has species 0..1");
    }
  }
}
