// Activations stream (memory_plan.hpp, model v2): a layer's edge part runs one edge chunk at a
// time from nothing but the edge vectors, forward and again in the backward pass, so that no
// per-edge tensor lives longer than its chunk. What a step then holds through its length is the
// edge vectors with their gradient and each layer's node inputs.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <utility>
#include <vector>

namespace edgeframe::impl {

struct StreamedEdges {
  // The unit's input x -> the layer's input h (the node part of the layer before, folded into
  // this unit so that the step keeps x alone, not x and h); empty: h = x and the sum below
  // leaves h out (the caller adds it). Set, the unit returns h + the chunks' sum. Runs twice in
  // the backward pass (once to feed the chunks, once with autograd after them): it must make no
  // collective call (exchange, global sums).
  std::function<torch::Tensor(const torch::Tensor& x)> base;
  // Node features h -> what the chunks read (a layer's rms_norm_sh); empty: h itself. Runs once
  // per pass over the chunks, and its gradient is taken once after the chunks' are summed.
  std::function<torch::Tensor(const torch::Tensor& h)> prepare;
  // Chunk k's sum into the nodes [N, D, C] from the prepared features (an empty tensor where the
  // part has no node input) and the chunk's edge vectors, rows [e0, e1) of vec. It computes the
  // chunk's geometry itself and must give the same function every time it runs.
  std::function<torch::Tensor(const torch::Tensor& n, const torch::Tensor& vec_chunk, int k)> chunk;
  std::vector<std::pair<int, int>> ranges;  // [e0, e1) of each chunk, at least one
  long* recomputed = nullptr;               // incremented per chunk run again in the backward pass (or none)
};

// sum_k parts.chunk(prepare(h), vec[e0_k:e1_k], k), with h = base(x) added where parts.base is
// set (h = x otherwise), keeping only x and vec; the backward pass runs every chunk again with
// autograd and returns dL/dx and dL/dvec ([E, 3], each chunk's rows written in place: no
// per-chunk tensor of all edges). x may be undefined (the edge-degree embedding: no node input).
// `parts` must outlive the backward pass.
torch::Tensor streamed_edges(const StreamedEdges& parts, const torch::Tensor& x, const torch::Tensor& vec);

// f(x) keeping only x; the backward pass runs f again with autograd (a layer's node part, whose
// activations are several node-sized tensors). `f` must outlive the backward pass.
torch::Tensor checkpointed(const std::function<torch::Tensor(const torch::Tensor&)>& f, const torch::Tensor& x);

}  // namespace edgeframe::impl
