// A step takes its Kokkos workspace before its torch ops (ops.hpp reserve_edge_geometry,
// take_step_outputs): Kokkos allocates outside torch's caching allocator, so a slot that grew
// in the middle of a step on a full card would fail once torch's pool had taken the memory. Here:
// after the reservation, the geometry of every chunk up to the reserved size, forward and
// backward, and the step's outputs with dE/dr_e allocate nothing more.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "bridge.hpp"
#include "ops.hpp"
#include "workspace.hpp"

namespace {

using namespace edgeframe;

// Edge vectors of length 1-4 A (inside the cutoff of 6 A) in float64 on the engine's device.
torch::Tensor edge_vectors(int n_edges, std::uint64_t seed) {
  torch::manual_seed(seed);
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(bridge::device());
  const torch::Tensor dir = torch::nn::functional::normalize(torch::randn({n_edges, 3}, opts),
                                                             torch::nn::functional::NormalizeFuncOptions().dim(1));
  return (dir * (1.0 + 3.0 * torch::rand({n_edges, 1}, opts))).requires_grad_(true);
}

// The geometry of vec forward and backward (a weighted sum of its outputs as the energy).
void geometry_forward_and_backward(const torch::Tensor& vec, impl::StepContext& step) {
  const auto geo = impl::edge_geometry(vec, step);
  torch::Tensor energy = torch::zeros({}, geo[0].options());
  for (const auto& out : geo) energy = energy + (out * torch::rand_like(out)).sum();
  torch::autograd::grad({energy}, {vec});
}

impl::StepContext step_context(Workspace& ws, torch::Dtype dtype) {
  impl::StepContext step;
  step.workspace = &ws;
  step.dtype = dtype;
  step.lmax = 2;
  step.mmax = 2;
  step.n_rbf = 1;
  step.envelope_p = 5;
  step.r_cut = 6.0;
  step.scale = 1.0;
  return step;
}

TEST(StepWorkspace, ChunkGeometryAfterTheReservationAllocatesNothing) {
  for (const torch::Dtype dtype : {torch::kFloat64, torch::kFloat32}) {
    const int largest = 700;
    Workspace ws;
    impl::StepContext step = step_context(ws, dtype);
    impl::reserve_edge_geometry(step, largest);
    const std::size_t reserved = ws.allocations();
    EXPECT_GT(reserved, 0u);
    for (const int chunk : {largest, 300, 650})  // a stream step's chunks, largest first or not
      geometry_forward_and_backward(edge_vectors(chunk, chunk), step);
    EXPECT_EQ(ws.allocations(), reserved) << "a geometry slot grew after the reservation (dtype " << dtype << ")";
  }
}

TEST(StepWorkspace, WithoutTheReservationALargerLaterChunkGrowsTheWorkspace) {
  // The case the reservation is for: chunks in the order 300, 700 grow the slots at the second.
  Workspace ws;
  impl::StepContext step = step_context(ws, torch::kFloat32);
  geometry_forward_and_backward(edge_vectors(300, 1), step);
  const std::size_t first = ws.allocations();
  geometry_forward_and_backward(edge_vectors(700, 2), step);
  EXPECT_GT(ws.allocations(), first);
}

TEST(StepWorkspace, TheStepOutputsHoldEveryEdgesGradient) {
  // finish_forces_and_sums writes dE/dr_e of all E edges at the step's end: take_step_outputs
  // takes its slot at the start, so that the end of the step allocates nothing.
  Workspace ws;
  const int n_nodes = 50, n_edges = 2000;
  impl::take_step_outputs(ws, n_nodes, n_edges);
  const std::size_t taken = ws.allocations();
  ws.take<double>(Workspace::kGradVec, std::size_t(n_edges) * 3);
  EXPECT_EQ(ws.allocations(), taken);
}

}  // namespace
