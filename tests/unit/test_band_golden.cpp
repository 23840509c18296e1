// wigner_band against the band golden of the PyTorch reference (tests/data/goldens/band_L3.json):
// two independent constructions of the same rows (jets of directional derivatives there, pole
// derivatives of solid-harmonic jets here) and the reference's autograd Jacobian.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "band_layout.hpp"
#include "wigner_band.hpp"

namespace {

using namespace edgeframe;
using json = nlohmann::json;

// Both sides compute the same O(1) numbers in double through different recursions: agreement to
// a few ulp times the recursion depth (L = 3).
constexpr double kBandGoldenAbsTol = 1e-13;  // dimensionless
// Derivatives are O(L^2 / |r|) with |r| >= 0.5 Angstrom in the golden.
constexpr double kDBandGoldenAbsTol = 1e-12;  // 1/Angstrom

TEST(BandGolden, MatchesThePyTorchReference) {
  std::ifstream in(std::string(EDGEFRAME_GOLDENS_DIR) + "/band_L3.json");
  ASSERT_TRUE(in) << "missing band_L3.json";
  const json g = json::parse(in);
  ASSERT_EQ(g["format"], "edgeframe-band-golden");
  const int lmax = g["lmax"];
  const auto& vecs = g["edge_vectors"];
  const int E = int(vecs.size());
  using Exec = Kokkos::DefaultHostExecutionSpace;
  kk::Vec3View<double, Exec> vec("vec", E);
  for (int e = 0; e < E; ++e)
    for (int k = 0; k < 3; ++k) vec(e, k) = vecs[e][k];
  for (const char* key : {"mmax1", "mmax2"}) {
    const auto& ref = g["bands"][key];
    const int mmax = ref["mmax"];
    const int bs = kk::band_size(lmax, mmax);
    ASSERT_EQ(ref["size"].get<int>(), bs);
    kk::View2<double, Exec> band("band", E, bs);
    kk::View3<double, Exec> dband("dband", E, bs, 3);
    Exec exec;
    kk::compute_wigner_band<Exec, double>(exec, vec, {}, band, dband, lmax, mmax);
    exec.fence("test: band to compare on the host");
    for (int e = 0; e < E; ++e)
      for (int b = 0; b < bs; ++b) {
        ASSERT_NEAR(band(e, b), ref["band"][e][b].get<double>(), kBandGoldenAbsTol)
            << key << " edge " << e << " entry " << b;
        for (int k = 0; k < 3; ++k)
          ASSERT_NEAR(dband(e, b, k), ref["d_band_d_vec"][e][b][k].get<double>(), kDBandGoldenAbsTol)
              << key << " edge " << e << " entry " << b << " d/dr_" << k;
      }
  }
}

}  // namespace
