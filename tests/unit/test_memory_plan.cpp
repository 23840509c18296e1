// The activations planner (memory_plan.hpp) on its own, with a made-up model whose numbers are
// easy to follow: four layers, the middle two heavy, a kept layer's backward holding 1.5x what it
// keeps.
#include <gtest/gtest.h>

#include "memory_plan.hpp"

namespace {

using namespace edgeframe;

MemoryModel four_layers() {
  MemoryModel m;
  m.kept_per_edge = {4.0, 10.0, 10.0, 3.0};
  m.backward_per_edge = {6.0, 15.0, 15.0, 4.5};
  m.persistent_per_edge = 1.0;
  m.per_node = 100.0;
  m.margin = 1.0;
  return m;
}

TEST(MemoryPlan, PeakFollowsTheBackwardPassLayerByLayer) {
  const MemoryModel m = four_layers();
  const std::int64_t E = 1000, N = 10;
  const double fixed = E * 1.0 + N * 100.0;
  // Keep all: layer 2's backward holds 4 + 10 below it plus its own 15 per edge (layer 3's:
  // 24 + 4.5, the end of the forward pass: 27).
  EXPECT_DOUBLE_EQ(predicted_peak(m, E, N, {0, 0, 0, 0}, 0), fixed + E * 29.0);
  // Layer 1 recomputed: layers 1 and 2 hold 4 + 15 in their backward passes, layer 3 14 + 4.5.
  EXPECT_DOUBLE_EQ(predicted_peak(m, E, N, {0, 1, 0, 0}, 0), fixed + E * 19.0);
  // Every layer recomputed in chunks of 100 edges: one chunk of the heaviest backward.
  EXPECT_DOUBLE_EQ(predicted_peak(m, E, N, {1, 1, 1, 1}, 100), fixed + 100 * 15.0);
  // The margin scales the whole count.
  MemoryModel with_margin = m;
  with_margin.margin = 1.1;
  EXPECT_DOUBLE_EQ(predicted_peak(with_margin, E, N, {0, 1, 0, 0}, 0), 1.1 * (fixed + E * 19.0));
}

TEST(MemoryPlan, KeepsAllWhenItFitsOrWithoutABudget) {
  const MemoryModel m = four_layers();
  for (const double budget : {0.0, -1.0, 1e9}) {
    const ActivationPlan p = plan_activations(m, 1000, 10, budget);
    EXPECT_FALSE(p.any_recomputed()) << budget;
    EXPECT_EQ(p.describe(), "keep");
    EXPECT_TRUE(p.fits);
  }
}

TEST(MemoryPlan, RecomputesTheLayersThatLowerThePeakMost) {
  const MemoryModel m = four_layers();
  const std::int64_t E = 1000, N = 10;
  const double fixed = E * 1.0 + N * 100.0;
  // Just under keep-all (29 per edge): one layer is enough. Recomputing layer 0 gives 25 (layer
  // 2's 10 + 15), layer 1 gives 19, layers 2 or 3 leave layer 2's 29: layer 1.
  ActivationPlan p = plan_activations(m, E, N, fixed + E * 28.0);
  EXPECT_EQ(p.recompute, (std::vector<char>{0, 1, 0, 0}));
  EXPECT_EQ(p.describe(), "recompute layers 1");
  EXPECT_EQ(p.edge_chunk, 0);
  EXPECT_TRUE(p.fits);
  EXPECT_LE(p.predicted_bytes, fixed + E * 28.0);
  // 17 per edge: with layer 1 recomputed, adding layer 0 leaves 15 (the recomputed layers' own
  // backward passes), adding layer 2 or 3 leaves 19: layers 0 and 1, the bottom of the stack.
  p = plan_activations(m, E, N, fixed + E * 17.0);
  EXPECT_EQ(p.recompute, (std::vector<char>{1, 1, 0, 0}));
  EXPECT_EQ(p.describe(), "recompute layers 0,1");
  EXPECT_DOUBLE_EQ(p.predicted_bytes, fixed + E * 15.0);
  EXPECT_EQ(p.edge_chunk, 0);
}

TEST(MemoryPlan, ChunksEveryLayerWhenRecomputingAllAtOnceIsTooMuch) {
  const MemoryModel m = four_layers();
  const std::int64_t E = 100000, N = 1000;
  const double fixed = E * 1.0 + N * 100.0;
  // Room for 20000 edges of the heaviest backward (15 per edge).
  const double budget = fixed + 20000 * 15.0;
  const ActivationPlan p = plan_activations(m, E, N, budget);
  EXPECT_EQ(p.recompute, (std::vector<char>{1, 1, 1, 1}));
  EXPECT_EQ(p.edge_chunk, 20000);
  EXPECT_TRUE(p.fits);
  EXPECT_LE(p.predicted_bytes, budget);
  EXPECT_EQ(p.describe(), "recompute all layers in edge chunks of 20000");
}

TEST(MemoryPlan, ABudgetTooSmallForTheSmallestChunkIsSaid) {
  const MemoryModel m = four_layers();
  ActivationPlan p = plan_activations(m, 100000, 1000, 1.0);
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.edge_chunk, kMinEdgeChunk);
  EXPECT_GT(p.predicted_bytes, 1.0);
  // Fewer edges than the smallest chunk: one chunk of all of them.
  p = plan_activations(m, 1000, 10, 1.0);
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.edge_chunk, 0);
  EXPECT_EQ(p.describe(), "recompute all layers");
}

// The stream plan (model v2): 0.25 per edge and 40 per node through the step, 18 per edge of
// the running chunk. Taken only where every layer recomputed in chunks does not fit: with chunks
// of the smallest size the fixed part is 1 per edge and 100 per node, so a budget of E + 50 N
// leaves the chunked plan over and gives the stream plan room for chunks of
// (E + 50 N - 0.25 E - 40 N) / 18 edges.
TEST(MemoryPlan, StreamsWhereChunksAloneDoNotFit) {
  MemoryModel m = four_layers();
  const std::int64_t E = 100000, N = 1000;
  EXPECT_FALSE(plan_activations(m, E, N, E + 50.0 * N).stream) << "a model without a stream plan never streams";
  m.stream_per_edge = 0.25;
  m.stream_per_node = 40.0;
  m.stream_chunk_per_edge = 18.0;
  EXPECT_DOUBLE_EQ(predicted_stream_peak(m, E, N, 5000), E * 0.25 + N * 40.0 + 5000 * 18.0);
  EXPECT_DOUBLE_EQ(predicted_stream_peak(m, E, N, 0), E * (0.25 + 18.0) + N * 40.0);
  // Room for the chunked plan: no stream.
  const ActivationPlan chunked = plan_activations(m, E, N, E + N * 100.0 + 20000 * 15.0);
  EXPECT_FALSE(chunked.stream);
  EXPECT_EQ(chunked.edge_chunk, 20000);
  // Not for the chunked plan: stream, in chunks sized to fit.
  const double budget = E + 50.0 * N;
  const ActivationPlan p = plan_activations(m, E, N, budget);
  EXPECT_TRUE(p.stream);
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.recompute, (std::vector<char>{1, 1, 1, 1}));
  EXPECT_EQ(p.edge_chunk, int((budget - 0.25 * E - 40.0 * N) / 18.0));
  EXPECT_LE(p.predicted_bytes, budget);
  EXPECT_EQ(p.describe(), "stream all layers in edge chunks of " + std::to_string(p.edge_chunk));
  // Nothing fits: the plan that needs less (stream here), said not to fit.
  const ActivationPlan over = plan_activations(m, E, N, 1.0);
  EXPECT_TRUE(over.stream);
  EXPECT_FALSE(over.fits);
  EXPECT_EQ(over.edge_chunk, kMinEdgeChunk);
}

}  // namespace
