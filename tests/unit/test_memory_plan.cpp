// The activations planner (memory_plan.hpp) on its own, with a made-up model whose numbers are
// easy to follow: four layers, the middle two heavy, a kept layer's backward holding 1.5x what it
// keeps, in kB per edge and per node (so that the chunk graphs, a few bytes per edge and node
// and chunk, are a small correction, as in the engine's models).
#include <gtest/gtest.h>

#include <cmath>

#include "memory_plan.hpp"

namespace {

using namespace edgeframe;

constexpr double kB = 1000.0;

MemoryModel four_layers() {
  MemoryModel m;
  m.kept_per_edge = {4 * kB, 10 * kB, 10 * kB, 3 * kB};
  m.backward_per_edge = {6 * kB, 15 * kB, 15 * kB, 4.5 * kB};
  m.persistent_per_edge = 1 * kB;
  m.per_node = 100 * kB;
  m.margin = 1.0;
  return m;
}

// The stream terms of a UMA-S-sized model in fp32 (the other terms as four_layers'): per_node
// bytes per node through the step, 158 B per edge, 37 kB per edge of the running chunk, the
// engine's 1.1 margin.
MemoryModel uma_s_stream(double per_node) {
  MemoryModel m = four_layers();
  m.stream_per_edge = 158;
  m.stream_per_node = per_node;
  m.stream_chunk_per_edge = 37 * kB;
  m.margin = 1.1;
  return m;
}

TEST(MemoryPlan, ChunkGraphsHoldNodeOffsetsPerChunkAndTheSenderGrouping) {
  // 1000 edges in chunks of 100: ceil(1000 / 100) + 1 chunks of 2 (N + 1) int32 offsets each,
  // and one int32 per edge; one chunk holds none.
  EXPECT_DOUBLE_EQ(chunk_graph_bytes(1000, 10, 100), 4.0 * 1000 + 11 * 8.0 * 11);
  EXPECT_DOUBLE_EQ(chunk_graph_bytes(1000, 10, 0), 0.0);
  EXPECT_DOUBLE_EQ(chunk_graph_bytes(1000, 10, 1000), 0.0);
}

TEST(MemoryPlan, PeakFollowsTheBackwardPassLayerByLayer) {
  const MemoryModel m = four_layers();
  const std::int64_t E = 1000, N = 10;
  const double fixed = E * 1 * kB + N * 100 * kB;
  // Keep all: layer 2's backward holds 4 + 10 below it plus its own 15 per edge (layer 3's:
  // 24 + 4.5, the end of the forward pass: 27).
  EXPECT_DOUBLE_EQ(predicted_peak(m, E, N, {0, 0, 0, 0}, 0), fixed + E * 29 * kB);
  // Layer 1 recomputed: layers 1 and 2 hold 4 + 15 in their backward passes, layer 3 14 + 4.5.
  EXPECT_DOUBLE_EQ(predicted_peak(m, E, N, {0, 1, 0, 0}, 0), fixed + E * 19 * kB);
  // Every layer recomputed in chunks of 100 edges: one chunk of the heaviest backward, and the
  // chunk graphs.
  EXPECT_DOUBLE_EQ(predicted_peak(m, E, N, {1, 1, 1, 1}, 100), fixed + 100 * 15 * kB + chunk_graph_bytes(E, N, 100));
  // The margin scales the whole count.
  MemoryModel with_margin = m;
  with_margin.margin = 1.1;
  EXPECT_DOUBLE_EQ(predicted_peak(with_margin, E, N, {0, 1, 0, 0}, 0), 1.1 * (fixed + E * 19 * kB));
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
  const double fixed = E * 1 * kB + N * 100 * kB;
  // Just under keep-all (29 per edge): one layer is enough. Recomputing layer 0 gives 25 (layer
  // 2's 10 + 15), layer 1 gives 19, layers 2 or 3 leave layer 2's 29: layer 1.
  ActivationPlan p = plan_activations(m, E, N, fixed + E * 28 * kB);
  EXPECT_EQ(p.recompute, (std::vector<char>{0, 1, 0, 0}));
  EXPECT_EQ(p.describe(), "recompute layers 1");
  EXPECT_EQ(p.edge_chunk, 0);
  EXPECT_TRUE(p.fits);
  EXPECT_LE(p.predicted_bytes, fixed + E * 28 * kB);
  // 17 per edge: with layer 1 recomputed, adding layer 0 leaves 15 (the recomputed layers' own
  // backward passes), adding layer 2 or 3 leaves 19: layers 0 and 1, the bottom of the stack.
  p = plan_activations(m, E, N, fixed + E * 17 * kB);
  EXPECT_EQ(p.recompute, (std::vector<char>{1, 1, 0, 0}));
  EXPECT_EQ(p.describe(), "recompute layers 0,1");
  EXPECT_DOUBLE_EQ(p.predicted_bytes, fixed + E * 15 * kB);
  EXPECT_EQ(p.edge_chunk, 0);
}

TEST(MemoryPlan, ChunksEveryLayerWhenRecomputingAllAtOnceIsTooMuch) {
  const MemoryModel m = four_layers();
  const std::int64_t E = 100000, N = 1000;
  const double fixed = E * 1 * kB + N * 100 * kB;
  // Room for 20000 edges of the heaviest backward (15 kB per edge) and their chunk graphs: the
  // linear count alone would take a chunk a little larger, whose graphs then leave the plan
  // over the budget, so the planner shrinks it (5 % at a time) until it fits.
  const double budget = fixed + 20000 * 15 * kB + chunk_graph_bytes(E, N, 20000);
  const ActivationPlan p = plan_activations(m, E, N, budget);
  EXPECT_EQ(p.recompute, (std::vector<char>{1, 1, 1, 1}));
  EXPECT_GE(p.edge_chunk, 19000);
  EXPECT_LE(p.edge_chunk, 20030);
  EXPECT_TRUE(p.fits);
  EXPECT_LE(p.predicted_bytes, budget);
  EXPECT_EQ(p.describe(), "recompute all layers in edge chunks of " + std::to_string(p.edge_chunk));
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

// The stream plan (model v2): 0.25 kB per edge and 40 kB per node through the step, 18 kB per
// edge of the running chunk. Taken only where every layer recomputed in chunks does not fit:
// with chunks the fixed part is 1 kB per edge and 100 kB per node, so a budget of E kB + 50 N kB
// leaves the chunked plan over and gives the stream plan room for chunks of about
// (E + 50 N - 0.25 E - 40 N) kB / 18 kB = 4722 edges, a little fewer for their graphs.
TEST(MemoryPlan, StreamsWhereChunksAloneDoNotFit) {
  MemoryModel m = four_layers();
  const std::int64_t E = 100000, N = 1000;
  EXPECT_FALSE(plan_activations(m, E, N, (E + 50.0 * N) * kB).stream) << "a model without a stream plan never streams";
  m.stream_per_edge = 0.25 * kB;
  m.stream_per_node = 40 * kB;
  m.stream_chunk_per_edge = 18 * kB;
  EXPECT_DOUBLE_EQ(predicted_stream_peak(m, E, N, 5000),
                   (E * 0.25 + N * 40.0 + 5000 * 18.0) * kB + chunk_graph_bytes(E, N, 5000));
  EXPECT_DOUBLE_EQ(predicted_stream_peak(m, E, N, 0), (E * (0.25 + 18.0) + N * 40.0) * kB);
  // Room for the chunked plan: no stream.
  const ActivationPlan chunked =
      plan_activations(m, E, N, (E + N * 100.0 + 20000 * 15.0) * kB + chunk_graph_bytes(E, N, 20000));
  EXPECT_FALSE(chunked.stream);
  EXPECT_GE(chunked.edge_chunk, 19000);
  // Not for the chunked plan: stream, in chunks sized to fit.
  const double budget = (E + 50.0 * N) * kB;
  const ActivationPlan p = plan_activations(m, E, N, budget);
  EXPECT_TRUE(p.stream);
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.recompute, (std::vector<char>{1, 1, 1, 1}));
  EXPECT_GE(p.edge_chunk, 4200);
  EXPECT_LE(p.edge_chunk, 4722);
  EXPECT_LE(p.predicted_bytes, budget);
  EXPECT_EQ(p.describe(), "stream all layers in edge chunks of " + std::to_string(p.edge_chunk));
  // Nothing fits: the plan that needs less (stream here), said not to fit.
  const ActivationPlan over = plan_activations(m, E, N, 1.0);
  EXPECT_TRUE(over.stream);
  EXPECT_FALSE(over.fits);
  EXPECT_EQ(over.edge_chunk, kMinEdgeChunk);
}

// Nothing fits where what every chunk plan holds through the step (N stream_per_node + E
// stream_per_edge) is over the budget already: the plan said not to fit is the
// one of the least predicted memory, which lies between the ends of the chunk ladder when the
// chunk graphs (node-sized offsets per chunk) outgrow the running chunk's saving. The numbers
// are a UMA-S-sized model's, fp32, at a million atoms of bcc Cu (about 64 M edges) on a card
// of 78 GB: 64.7 kB per node through the step, 37 kB per edge of the running chunk.
TEST(MemoryPlan, ANodeHeavyStepThatFitsNowhereGetsTheChunkOfTheLeastMemory) {
  const MemoryModel m = uma_s_stream(64.7 * kB);
  const std::int64_t E = 64000000, N = 1024000;
  const double budget = 78e9;
  ASSERT_GT(m.margin * (N * m.stream_per_node + E * m.stream_per_edge), budget) << "the fixed part is over the budget";
  const ActivationPlan p = plan_activations(m, E, N, budget);
  EXPECT_TRUE(p.stream);
  EXPECT_FALSE(p.fits);
  // peak(c) = fixed + c a + (E / c) b is least at c = sqrt(E b / a), b = 8 (N + 1): about
  // 1.2e5 edges; the ladder's rungs are 5 % apart.
  const double best = std::sqrt(double(E) * 8.0 * double(N + 1) / m.stream_chunk_per_edge);
  EXPECT_GT(p.edge_chunk, 0.9 * best);
  EXPECT_LT(p.edge_chunk, 1.1 * best);
  EXPECT_DOUBLE_EQ(p.predicted_bytes, predicted_stream_peak(m, E, N, p.edge_chunk));
  for (const double f : {0.8, 1.25})
    EXPECT_LT(p.predicted_bytes, predicted_stream_peak(m, E, N, int(f * p.edge_chunk))) << f;
  EXPECT_LT(2.0 * p.predicted_bytes, predicted_stream_peak(m, E, N, kMinEdgeChunk))
      << "the smallest chunk would need more than twice the memory";
  // With a budget above that least peak, the largest chunk that fits (fewest chunks).
  const ActivationPlan roomy = plan_activations(m, E, N, 1.2 * p.predicted_bytes);
  EXPECT_TRUE(roomy.fits);
  EXPECT_GT(roomy.edge_chunk, p.edge_chunk);
  EXPECT_GT(predicted_stream_peak(m, E, N, int(roomy.edge_chunk / 0.95) + 1), 1.2 * p.predicted_bytes);
}

// The device budget keeps back the share of torch's pool that its caching allocator held unused
// where a million-atom step ran out of an 80 GB H100's memory (8.24 GiB of 66.45 GiB reserved),
// and less with expandable segments; nothing of a negative count.
TEST(MemoryPlan, TheDeviceBudgetKeepsBackTheMeasuredFragmentation) {
  const double available = 80e9, measured_unused_share = 8.24 / 66.45;
  EXPECT_LT(usable_device_bytes(available, false), (1.0 - measured_unused_share) * available);
  EXPECT_GT(usable_device_bytes(available, true), usable_device_bytes(available, false));
  EXPECT_LT(usable_device_bytes(available, true), available);
  EXPECT_EQ(usable_device_bytes(-1.0, false), 0.0);
}

// That step (bcc Cu, 1 024 000 atoms, 65 539 018 edges, UMA-S-sized model in fp32, the lean
// stream plan: 50.8 kB per node, 158 B per edge, 37 kB per edge of the running chunk) fitted
// the old budget (95 % of the card) and ran out of memory; under the device budget it is said
// not to fit the H100 (79.18 GiB in all) and fits an H200 (about 139 GiB).
TEST(MemoryPlan, TheMillionAtomStepThatRanOutOfAnH100IsSaidNotToFitThere) {
  const MemoryModel m = uma_s_stream(50.8 * kB);
  const std::int64_t E = 65539018, N = 1024000;
  const double gib = 1024.0 * 1024.0 * 1024.0, h100 = 79.18 * gib, h200 = 139.0 * gib;
  EXPECT_TRUE(plan_activations(m, E, N, 0.95 * h100).fits) << "the old budget: said to fit, ran out of memory";
  const ActivationPlan on_h100 = plan_activations(m, E, N, usable_device_bytes(h100, false));
  EXPECT_TRUE(on_h100.stream);
  EXPECT_FALSE(on_h100.fits);
  const ActivationPlan on_h200 = plan_activations(m, E, N, usable_device_bytes(h200, false));
  EXPECT_TRUE(on_h200.stream);
  EXPECT_TRUE(on_h200.fits);
}

}  // namespace
