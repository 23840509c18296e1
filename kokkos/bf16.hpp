// bfloat16 storage for the kernel outputs that only ever feed bf16 GEMMs (precision bf16: the
// packed rows u, the gated rows x and their gradients, see ops.hpp so2_convolution). A kernel
// computes each value in its compute type Real, as for a Real output, and rounds it at the
// store, to nearest even as torch's own float -> bfloat16 conversion does (c10::BFloat16), so
// that the stored bits equal those of the Real output converted by torch.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <type_traits>

namespace edgeframe::kk {

// One bfloat16 value (torch::kBFloat16 memory; the bridge maps the two).
struct Bf16 {
  std::uint16_t bits;
};

KOKKOS_INLINE_FUNCTION Bf16 to_bf16(float v) {
  if (v != v) return Bf16{0x7FC0};  // NaN stays NaN (rounding its payload could make it Inf)
  const std::uint32_t u = Kokkos::bit_cast<std::uint32_t>(v);
  return Bf16{static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)};
}

KOKKOS_INLINE_FUNCTION float from_bf16(Bf16 b) { return Kokkos::bit_cast<float>(std::uint32_t(b.bits) << 16); }

// The value a kernel stores into an output of element type Out: v itself, or v rounded to
// bfloat16 (float computations only: a double would be rounded twice).
template <class Out, class Real>
KOKKOS_INLINE_FUNCTION Out store_as(Real v) {
  if constexpr (std::is_same_v<Out, Bf16>) {
    static_assert(std::is_same_v<Real, float>, "bf16 outputs are rounded from float");
    return to_bf16(v);
  } else {
    return static_cast<Out>(v);
  }
}

}  // namespace edgeframe::kk
