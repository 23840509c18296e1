// The engine's optional time split (What::times), in a header without Kokkos or torch so that
// callers can keep one as a member.
#pragma once

namespace edgeframe {

// Wall-clock split of compute() calls, seconds, accumulated (never reset by the engine). Only
// filled when What::times is set: each part is bracketed by fences, which cost time on a GPU
// (they serialise the stream), so it is off by default. Dense torch work (GEMMs, radial MLPs,
// norms, gates, readout, autograd bookkeeping) is total minus the named parts.
struct StepTimes {
  double geometry = 0.0;    // edge vectors, band + radial basis (forward and backward), force and virial sums
  double edge_frame = 0.0;  // edge_frame_pack and unrotate_aggregate, forward and backward
  double exchange = 0.0;    // NodeExchange forward and reverse (communication and waiting for partners)
  double total = 0.0;       // all of compute()
  long calls = 0;
  double dense() const { return total - geometry - edge_frame - exchange; }
};

}  // namespace edgeframe
