// warp_reduce.hpp's reduce-scatter, emulated on the host: 32 lanes in lock step, each round
// built from the same send / keep helpers and lane-index rules the CUDA code uses, and a
// partner's value read from its lane's array as __shfl_xor_sync would. Every lane must end with
// the full sum over the warp of the slot reduce_scatter_index names, every slot must have
// exactly one writer. (The real shuffles run in PackUnrotateTest.WarpOrderMatchesLanes4 on the
// CUDA build.)
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "warp_reduce.hpp"

namespace {

using namespace edgeframe;

template <int NV>
std::array<double, kk::kWarpLanes> emulate_reduce_scatter(std::array<std::array<double, NV>, kk::kWarpLanes> v) {
  int offset = 16;
  for (int h = NV / 2; h >= 1; h /= 2, offset /= 2) {
    std::array<std::array<double, NV>, kk::kWarpLanes> sent{};
    for (int lane = 0; lane < kk::kWarpLanes; ++lane) {
      double slots[NV];
      for (int i = 0; i < NV; ++i) slots[i] = v[lane][i];
      for (int i = 0; i < h; ++i) sent[lane][i] = kk::reduce_scatter_send<NV>(slots, h, lane & offset, i);
    }
    for (int lane = 0; lane < kk::kWarpLanes; ++lane) {
      double slots[NV];
      for (int i = 0; i < NV; ++i) slots[i] = v[lane][i];
      for (int i = 0; i < h; ++i)
        v[lane][i] = kk::reduce_scatter_keep<NV>(slots, h, lane & offset, i) + sent[lane ^ offset][i];
    }
  }
  std::array<double, kk::kWarpLanes> sum{};
  for (int lane = 0; lane < kk::kWarpLanes; ++lane) sum[lane] = v[lane][0];
  for (; offset >= 1; offset /= 2) {
    const auto before = sum;
    for (int lane = 0; lane < kk::kWarpLanes; ++lane) sum[lane] = before[lane] + before[lane ^ offset];
  }
  return sum;
}

template <int NV>
void check_reduce_scatter(unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::array<std::array<double, NV>, kk::kWarpLanes> v{};
  std::array<double, NV> expected{}, scale{};
  for (int lane = 0; lane < kk::kWarpLanes; ++lane)
    for (int i = 0; i < NV; ++i) {
      v[lane][i] = u(rng);
      expected[i] += v[lane][i];
      scale[i] += std::fabs(v[lane][i]);
    }
  const auto sum = emulate_reduce_scatter<NV>(v);
  std::vector<int> writers(NV, 0);
  for (int lane = 0; lane < kk::kWarpLanes; ++lane) {
    const int t = kk::reduce_scatter_index<NV>(lane);
    ASSERT_GE(t, 0);
    ASSERT_LT(t, NV);
    EXPECT_NEAR(sum[lane], expected[t], 1e-15 * scale[t]) << "NV " << NV << " lane " << lane << " slot " << t;
    if (kk::reduce_scatter_writer<NV>(lane)) ++writers[t];
  }
  for (int t = 0; t < NV; ++t) EXPECT_EQ(writers[t], 1) << "NV " << NV << " slot " << t;
}

TEST(WarpReduceScatter, EveryLaneHoldsTheWarpSumOfItsSlot) {
  check_reduce_scatter<1>(1);
  check_reduce_scatter<4>(2);
  check_reduce_scatter<8>(3);
  check_reduce_scatter<16>(4);
  check_reduce_scatter<32>(5);
}

TEST(WarpReduceScatter, SlotsCoverEveryDegree) {
  // with_pow2_slots gives each count 2l + 1 (l <= 8, band_layout.hpp kMaxL) the smallest power
  // of two that holds it, capped at kMaxSlots (the kernels loop over chunks of that many)
  for (int l = 0; l <= 8; ++l) {
    int nv = 0;
    kk::with_pow2_slots(2 * l + 1, [&](auto slots) { nv = decltype(slots)::value; });
    EXPECT_EQ(nv & (nv - 1), 0) << l;
    if (2 * l + 1 <= kk::kMaxSlots) {
      EXPECT_GE(nv, 2 * l + 1) << l;
      EXPECT_LT(nv / 2, 2 * l + 1) << l;
    } else {
      EXPECT_EQ(nv, kk::kMaxSlots) << l;
    }
  }
}

TEST(WarpReduceScatter, ExactSlotsHoldEachDegreesRows) {
  // with_row_slots<true> gives 2l + 1 itself up to kMaxSlots (the node passes' register arrays
  // when degree 3 and above are not in the kernel), kMaxSlots beyond; <false> is with_pow2_slots.
  for (int l = 0; l <= 8; ++l) {
    int exact = 0, pow2 = 0, plain = 0;
    kk::with_row_slots<true>(2 * l + 1, [&](auto slots) { exact = decltype(slots)::value; });
    kk::with_row_slots<false>(2 * l + 1, [&](auto slots) { pow2 = decltype(slots)::value; });
    kk::with_pow2_slots(2 * l + 1, [&](auto slots) { plain = decltype(slots)::value; });
    EXPECT_EQ(exact, 2 * l + 1 <= kk::kMaxSlots ? 2 * l + 1 : kk::kMaxSlots) << l;
    EXPECT_EQ(pow2, plain) << l;
  }
}

}  // namespace
