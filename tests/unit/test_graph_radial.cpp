// graph (pairs -> CSR edges, sender grouping, edge vectors) and radial (basis, envelope,
// derivatives, backward) against plain loops and central differences.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <random>
#include <tuple>
#include <vector>

#include "edge_chunks.hpp"
#include "exec_spaces.hpp"
#include "graph.hpp"
#include "graph_chunk.hpp"
#include "kept_graph.hpp"
#include "radial.hpp"

namespace {

using namespace edgeframe;

struct HostPairs {
  std::vector<int> i, j;
  std::vector<std::array<double, 3>> shift;
};

struct HostSystem {
  std::vector<std::array<double, 3>> x;
  HostPairs pairs;
};

// N atoms in a cubic box of side a; half pairs i < j for the minimum image and for one more
// image along x, so shifts are exercised; plus a pair (0, 0) with zero shift that must vanish.
HostSystem make_system(int n, double a, unsigned seed) {
  HostSystem s;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, a);
  for (int k = 0; k < n; ++k) s.x.push_back({u(rng), u(rng), u(rng)});
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      for (double sx : {0.0, a, -a}) {
        s.pairs.i.push_back(i);
        s.pairs.j.push_back(j);
        s.pairs.shift.push_back({sx, 0.0, 0.0});
      }
  s.pairs.i.push_back(0);
  s.pairs.j.push_back(0);
  s.pairs.shift.push_back({0.0, 0.0, 0.0});
  return s;
}

struct RefEdge {
  int recv, send, p, dir;
  std::array<double, 3> shift;
};

// Plain reference: loop over pairs, keep 0 < r < cutoff, emit directions, sort by (recv, p, dir).
std::vector<RefEdge> reference_edges(const HostSystem& s, double cutoff, bool half) {
  std::vector<RefEdge> out;
  for (size_t p = 0; p < s.pairs.i.size(); ++p) {
    const int i = s.pairs.i[p], j = s.pairs.j[p];
    double r2 = 0;
    for (int k = 0; k < 3; ++k) {
      const double d = s.x[j][k] - s.x[i][k] + s.pairs.shift[p][k];
      r2 += d * d;
    }
    if (!(r2 > 0 && r2 < cutoff * cutoff)) continue;
    out.push_back({i, j, int(p), 0, s.pairs.shift[p]});
    if (half) out.push_back({j, i, int(p), 1, {-s.pairs.shift[p][0], -s.pairs.shift[p][1], -s.pairs.shift[p][2]}});
  }
  std::sort(out.begin(), out.end(), [](const RefEdge& a, const RefEdge& b) {
    return std::tie(a.recv, a.p, a.dir) < std::tie(b.recv, b.p, b.dir);
  });
  return out;
}

template <class Exec>
struct DeviceSystem {
  kk::View1<int, Exec> i, j;
  kk::Vec3View<double, Exec> shift, x;
};

template <class Exec>
DeviceSystem<Exec> upload(const HostSystem& s) {
  DeviceSystem<Exec> d;
  const int P = int(s.pairs.i.size()), N = int(s.x.size());
  d.i = kk::View1<int, Exec>("i", P);
  d.j = kk::View1<int, Exec>("j", P);
  d.shift = kk::Vec3View<double, Exec>("shift", P);
  d.x = kk::Vec3View<double, Exec>("x", N);
  auto hi = Kokkos::create_mirror_view(d.i), hj = Kokkos::create_mirror_view(d.j);
  auto hs = Kokkos::create_mirror_view(d.shift), hx = Kokkos::create_mirror_view(d.x);
  for (int p = 0; p < P; ++p) {
    hi(p) = s.pairs.i[p];
    hj(p) = s.pairs.j[p];
    for (int k = 0; k < 3; ++k) hs(p, k) = s.pairs.shift[p][k];
  }
  for (int a = 0; a < N; ++a)
    for (int k = 0; k < 3; ++k) hx(a, k) = s.x[a][k];
  Kokkos::deep_copy(d.i, hi);
  Kokkos::deep_copy(d.j, hj);
  Kokkos::deep_copy(d.shift, hs);
  Kokkos::deep_copy(d.x, hx);
  return d;
}

template <class Exec>
class GraphTest : public ::testing::Test {};
TYPED_TEST_SUITE(GraphTest, test::ExecSpaces);

TYPED_TEST(GraphTest, MatchesThePlainLoopReference) {
  using Exec = TypeParam;
  const double cutoff = 3.1;  // Angstrom
  const auto s = make_system(40, 8.0, 11);
  const auto d = upload<Exec>(s);
  for (bool half : {true, false}) {
    const auto ref = reference_edges(s, cutoff, half);
    Exec exec;
    kk::PairList<Exec> pl{d.i, d.j, d.shift, half};
    const auto g = kk::build_graph(exec, pl, kk::Vec3View<const double, Exec>(d.x), int(s.x.size()), cutoff);
    kk::Vec3View<double, Exec> vec("vec", g.n_edges);
    kk::compute_edge_vectors(exec, g, kk::Vec3View<const double, Exec>(d.x), vec);
    exec.fence("test: graph ready for the host");
    ASSERT_EQ(g.n_edges, int(ref.size()));
    ASSERT_GT(g.n_edges, 100);
    auto recv = test::to_host(g.recv), send = test::to_host(g.send);
    auto shift = test::to_host(g.shift), hv = test::to_host(vec);
    auto ro = test::to_host(g.recv_offsets), so = test::to_host(g.send_offsets), se = test::to_host(g.send_edges);
    for (int e = 0; e < g.n_edges; ++e) {
      ASSERT_EQ(recv(e), ref[e].recv) << e;
      ASSERT_EQ(send(e), ref[e].send) << e;
      for (int k = 0; k < 3; ++k) {
        ASSERT_EQ(shift(e, k), ref[e].shift[k]);
        ASSERT_EQ(hv(e, k), s.x[ref[e].send][k] - s.x[ref[e].recv][k] + ref[e].shift[k]);
      }
    }
    // CSR by receiver and grouping by sender, by counting.
    const int N = int(s.x.size());
    ASSERT_EQ(ro(0), 0);
    ASSERT_EQ(ro(N), g.n_edges);
    ASSERT_EQ(so(N), g.n_edges);
    for (int a = 0; a < N; ++a) {
      std::vector<int> into, from;
      for (int e = 0; e < g.n_edges; ++e) {
        if (ref[e].recv == a) into.push_back(e);
        if (ref[e].send == a) from.push_back(e);
      }
      ASSERT_EQ(ro(a + 1) - ro(a), int(into.size()));
      if (!into.empty()) {
        ASSERT_EQ(ro(a), into.front());
      }
      ASSERT_EQ(so(a + 1) - so(a), int(from.size()));
      for (size_t q = 0; q < from.size(); ++q) ASSERT_EQ(se(so(a) + q), from[q]);
    }
  }
}

// A graph kept between rebuilds follows a box change through refresh_shifts: after the pairs'
// shifts change (here scaled by 1.03, as an NPT step would), each kept edge carries its pair's
// new shift, negated for the reverse direction of a half pair, and names its pair and direction.
TYPED_TEST(GraphTest, RefreshedShiftsFollowThePairs) {
  using Exec = TypeParam;
  const double cutoff = 3.1;
  auto s = make_system(40, 8.0, 13);
  for (bool half : {true, false}) {
    const auto d = upload<Exec>(s);
    Exec exec;
    kk::PairList<Exec> pl{d.i, d.j, d.shift, half};
    const kk::Vec3View<const double, Exec> x(d.x);
    const auto kept = kk::build_graph(exec, pl, x, int(s.x.size()), cutoff);
    ASSERT_GT(kept.n_edges, 100);
    auto scaled = s;
    for (auto& sh : scaled.pairs.shift)
      for (double& v : sh) v *= 1.03;
    const auto d2 = upload<Exec>(scaled);
    kk::PairList<Exec> pl2{d2.i, d2.j, d2.shift, half};
    kk::refresh_shifts(exec, kept, pl2);
    exec.fence("test: refreshed shifts ready for the host");
    auto shift = test::to_host(kept.shift);
    auto pair = test::to_host(kept.pair);
    const auto ref = reference_edges(s, cutoff, half);
    ASSERT_EQ(kept.n_edges, int(ref.size()));
    for (int e = 0; e < kept.n_edges; ++e) {
      ASSERT_EQ(pair(e), (half ? 2 : 1) * ref[e].p + ref[e].dir) << e;
      const double sign = ref[e].dir == 1 ? -1.0 : 1.0;
      for (int k = 0; k < 3; ++k) ASSERT_EQ(shift(e, k), sign * scaled.pairs.shift[ref[e].p][k]) << e;
    }
  }
}

TYPED_TEST(GraphTest, EmptyInputGivesAnEmptyGraph) {
  using Exec = TypeParam;
  Exec exec;
  kk::Vec3View<double, Exec> x("x", 3);
  kk::PairList<Exec> pl{kk::View1<int, Exec>("i", 0), kk::View1<int, Exec>("j", 0), {}, true};
  const auto g = kk::build_graph(exec, pl, kk::Vec3View<const double, Exec>(x), 3, 5.0);
  EXPECT_EQ(g.n_edges, 0);
  auto ro = test::to_host(g.recv_offsets), so = test::to_host(g.send_offsets);
  for (int a = 0; a <= 3; ++a) {
    EXPECT_EQ(ro(a), 0);
    EXPECT_EQ(so(a), 0);
  }
}

TEST(GraphChunk, ReceiverRangesAreNeverEmptyAndCoverEveryNode) {
  // offsets of 8 receivers: 0 and 1 have no edges, 3 alone has 9 (more than max), 7 has none
  const std::vector<int> ro{0, 0, 0, 2, 11, 13, 16, 17, 17};
  const auto b = kk::chunk_receivers(ro, 4);
  ASSERT_EQ(b.front(), 0);
  ASSERT_EQ(b.back(), 8);
  for (size_t k = 0; k + 1 < b.size(); ++k) {
    const int edges = ro[b[k + 1]] - ro[b[k]];
    EXPECT_GT(edges, 0) << "chunk " << k;
    EXPECT_TRUE(edges <= 4 || b[k + 1] - b[k] == 1 || ro[b[k] + 1] - ro[b[k]] > 4) << "chunk " << k;
  }
  // receivers 0-2 (2 edges) | 3 (9 edges, alone) | 4 (2: with 5 it would be 5) | 5-7 (4 edges)
  EXPECT_EQ(b, (std::vector<int>{0, 3, 4, 5, 8}));
  EXPECT_EQ(kk::chunk_receivers(ro, 100), (std::vector<int>{0, 8}));
}

// The engine's chunk graphs (edge_chunks.hpp, activations recompute and stream): a plan of one
// chunk after a chunked plan lets the chunk graphs go (a plan that streamed a large graph in
// small chunks must not hold them for the model's life); chunking again builds them anew.
TEST(EdgeChunks, OneChunkLetsTheChunkGraphsOfAnEarlierPlanGo) {
  using Exec = bridge::Exec;
  const auto s = make_system(40, 8.0, 11);
  const auto d = upload<Exec>(s);
  Exec exec;
  kk::PairList<Exec> pl{d.i, d.j, d.shift, false};
  impl::StepContext step;
  step.graph = kk::build_graph(exec, pl, kk::Vec3View<const double, Exec>(d.x), int(s.x.size()), 3.1);
  const int chunk = step.graph.n_edges / 5;
  impl::EdgeChunks chunks;
  auto contexts_for = [&](int edge_chunk) {
    std::deque<impl::StepContext> contexts;
    std::vector<std::pair<int, int>> ranges;
    chunks.step_contexts(exec, step, edge_chunk, contexts, ranges);
    EXPECT_EQ(contexts.size(), ranges.size());
    return ranges.size();
  };
  ASSERT_GE(contexts_for(chunk), 5u);
  EXPECT_GT(chunks.bytes(), 0u);
  EXPECT_EQ(chunks.builds(), 1);
  EXPECT_EQ(contexts_for(0), 1u);
  EXPECT_EQ(chunks.bytes(), 0u) << "the chunk graphs of the chunked plan are still held";
  EXPECT_EQ(contexts_for(step.graph.n_edges), 1u);
  EXPECT_EQ(chunks.bytes(), 0u);
  ASSERT_GE(contexts_for(chunk), 5u);
  EXPECT_GT(chunks.bytes(), 0u);
  EXPECT_EQ(chunks.builds(), 2);
}

TYPED_TEST(GraphTest, ChunksAreThePartsOfTheGraphIntoTheirReceivers) {
  // graph_chunk against the parent graph read on the host: the chunk's edges are the parent's
  // [e0, e1) renumbered from 0, receivers keep their CSR (others have none), and each sender's
  // chunk edges are its parent group's members in [e0, e1), in the same (ascending) order.
  using Exec = TypeParam;
  const auto s = make_system(40, 8.0, 11);
  const auto d = upload<Exec>(s);
  Exec exec;
  kk::PairList<Exec> pl{d.i, d.j, d.shift, false};
  const auto g = kk::build_graph(exec, pl, kk::Vec3View<const double, Exec>(d.x), int(s.x.size()), 3.1);
  const int N = g.n_nodes;
  auto ro = test::to_host(g.recv_offsets), so = test::to_host(g.send_offsets), se = test::to_host(g.send_edges);
  auto recv = test::to_host(g.recv), send = test::to_host(g.send);
  const std::vector<int> offsets(ro.data(), ro.data() + N + 1);
  const auto bounds = kk::chunk_receivers(offsets, g.n_edges / 5);
  ASSERT_GE(bounds.size(), 5u);
  int covered = 0;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    const int e0 = offsets[bounds[k]], e1 = offsets[bounds[k + 1]];
    const auto c = kk::graph_chunk(exec, g, e0, e1);
    exec.fence("test: chunk ready");
    ASSERT_EQ(c.n_edges, e1 - e0);
    covered += c.n_edges;
    auto cro = test::to_host(c.recv_offsets), cso = test::to_host(c.send_offsets), cse = test::to_host(c.send_edges);
    auto crecv = test::to_host(c.recv), csend = test::to_host(c.send);
    for (int e = 0; e < c.n_edges; ++e) {
      ASSERT_EQ(crecv(e), recv(e0 + e));
      ASSERT_EQ(csend(e), send(e0 + e));
    }
    for (int a = 0; a <= N; ++a) ASSERT_EQ(cro(a), std::clamp(offsets[a], e0, e1) - e0) << a;
    ASSERT_EQ(cso(N), c.n_edges);
    for (int a = 0; a < N; ++a) {
      std::vector<int> expect;
      for (int q = so(a); q < so(a + 1); ++q)
        if (se(q) >= e0 && se(q) < e1) expect.push_back(se(q) - e0);
      ASSERT_EQ(cso(a + 1) - cso(a), int(expect.size())) << "sender " << a;
      for (size_t q = 0; q < expect.size(); ++q) ASSERT_EQ(cse(cso(a) + q), expect[q]) << "sender " << a;
    }
  }
  EXPECT_EQ(covered, g.n_edges);
}

TEST(Graph, SerialAndOpenMPAreIdentical) {
#ifdef KOKKOS_ENABLE_OPENMP
  const auto s = make_system(60, 9.0, 5);
  auto run = [&](auto exec) {
    using Exec = decltype(exec);
    const auto d = upload<Exec>(s);
    kk::PairList<Exec> pl{d.i, d.j, d.shift, true};
    const auto g = kk::build_graph(exec, pl, kk::Vec3View<const double, Exec>(d.x), int(s.x.size()), 3.3);
    exec.fence("test");
    std::vector<int> out;
    for (auto v : {g.recv, g.send, g.recv_offsets, g.send_offsets, g.send_edges}) {
      auto h = test::to_host(v);
      out.insert(out.end(), h.data(), h.data() + h.size());
    }
    return out;
  };
  EXPECT_EQ(run(Kokkos::Serial()), run(Kokkos::OpenMP()));
#else
  GTEST_SKIP() << "this Kokkos has no OpenMP backend";
#endif
}

// ---- the kept graph of graph per_rebuild (kept_graph.hpp, graph_compact.hpp) ---------------

// The step graph as host arrays, with the spare slots (self edges at 2 x cutoff) split off.
struct HostStepGraph {
  std::vector<RefEdge> live;   // recv, send, shift (p, dir unused)
  std::vector<int> pad_count;  // [N] spare slots of receiver a
  int n_edges = 0;
};

// Reads a kept graph on the host and checks its structure: every receiver's segment is its live
// edges then its spare slots (self edges of length 2 x cutoff along x); the sender grouping lists
// each edge exactly once, in ascending order, under its sender.
HostStepGraph read_step_graph(const AtomGraph& ag, double cutoff) {
  const auto& g = ag.edges;
  const int N = g.n_nodes;
  auto recv = test::to_host(g.recv), send = test::to_host(g.send);
  auto shift = test::to_host(g.shift);
  auto ro = test::to_host(g.recv_offsets), so = test::to_host(g.send_offsets), se = test::to_host(g.send_edges);
  HostStepGraph h;
  h.n_edges = g.n_edges;
  h.pad_count.assign(N, 0);
  EXPECT_EQ(ro(0), 0);
  EXPECT_EQ(ro(N), g.n_edges);
  EXPECT_EQ(so(N), g.n_edges);
  for (int a = 0; a < N; ++a) {
    bool in_padding = false;
    for (int e = ro(a); e < ro(a + 1); ++e) {
      EXPECT_EQ(recv(e), a) << e;
      const bool pad = send(e) == a && shift(e, 0) == 2.0 * cutoff && shift(e, 1) == 0.0 && shift(e, 2) == 0.0;
      if (pad) {
        in_padding = true;
        h.pad_count[a]++;
      } else {
        EXPECT_FALSE(in_padding) << "a live edge after receiver " << a << "'s spare slots, edge " << e;
        h.live.push_back({recv(e), send(e), 0, 0, {shift(e, 0), shift(e, 1), shift(e, 2)}});
      }
    }
  }
  std::vector<int> seen(g.n_edges, 0);
  for (int a = 0; a < N; ++a)
    for (int q = so(a); q < so(a + 1); ++q) {
      const int e = se(q);
      EXPECT_EQ(send(e), a) << "edge " << e << " grouped under sender " << a;
      if (q > so(a)) {
        EXPECT_LT(se(q - 1), e) << "sender " << a << " not ascending";
      }
      seen[e]++;
    }
  for (int e = 0; e < g.n_edges; ++e) EXPECT_EQ(seen[e], 1) << "edge " << e;
  return h;
}

// Positions moved at random by up to `amplitude` per component, then scaled by `scale`.
std::vector<std::array<double, 3>> moved(const std::vector<std::array<double, 3>>& x, double amplitude, double scale,
                                         unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-amplitude, amplitude);
  auto out = x;
  for (auto& p : out)
    for (double& v : p) v = (v + u(rng)) * scale;
  return out;
}

// KeptGraph, exact and padded: after a rebuild with candidates within cutoff + skin and at
// positions that moved since, the live edges are exactly build_graph's edges at the cutoff at
// those positions, in the same order (the reference of MatchesThePlainLoopReference); padded,
// the graph also holds spare slots spread over the receivers, and keeps its storage (addresses,
// size) from step to step while its revision changes.
TEST(KeptGraph, LiveEdgesAreTheEdgesWithinTheCutoffInBuildGraphsOrder) {
  const double cutoff = 3.1, skin = 0.8;
  auto s = make_system(40, 8.0, 17);
  // Self-image edges (an atom and its own image, as in a small periodic cell) for some atoms:
  // a node's own edges sit in its receiver segment before its spare slots, on both sides.
  for (int a = 0; a < 40; a += 3)
    for (const double sx : {2.9, -2.9}) {
      s.pairs.i.push_back(a);
      s.pairs.j.push_back(a);
      s.pairs.shift.push_back({sx, 0.0, 0.0});
    }
  const int N = int(s.x.size());
  const auto species = kk::View1<int, Exec>("species", N);
  for (const double headroom : {0.0, 0.05}) {
    KeptGraph kept(headroom);
    auto d = upload<Exec>(s);
    const kk::PairList<Exec> pl{d.i, d.j, d.shift, false};
    kept.rebuild(pl, d.x, species, N, cutoff + skin, cutoff);
    const int* recv_address = kept.graph().edges.recv.data();
    const int capacity = kept.capacity();
    std::uint64_t revision = kept.graph().edges.revision;
    for (int step = 0; step < 4; ++step) {
      HostSystem now = s;
      // At most 0.2 sqrt(3) A per atom: no pair moves by more than the skin, so the candidates
      // hold every pair within the cutoff, as a neighbour list between rebuilds does.
      now.x = moved(s.x, 0.2, 1.0, 100 + step);
      auto hx = Kokkos::create_mirror_view(d.x);
      for (int a = 0; a < N; ++a)
        for (int k = 0; k < 3; ++k) hx(a, k) = now.x[a][k];
      Kokkos::deep_copy(d.x, hx);  // in place: the positions view keeps its address
      kept.step(d.x);
      ASSERT_TRUE(kept.held_every_edge());
      const auto ref = reference_edges(now, cutoff, false);
      const HostStepGraph h = read_step_graph(kept.graph(), cutoff);
      ASSERT_EQ(int(h.live.size()), int(ref.size())) << "headroom " << headroom << " step " << step;
      EXPECT_EQ(kept.live_edges(), int(ref.size()));
      for (size_t e = 0; e < ref.size(); ++e) {
        ASSERT_EQ(h.live[e].recv, ref[e].recv) << e;
        ASSERT_EQ(h.live[e].send, ref[e].send) << e;
        for (int k = 0; k < 3; ++k) ASSERT_EQ(h.live[e].shift[k], ref[e].shift[k]) << e;
      }
      EXPECT_NE(kept.graph().edges.revision, revision);
      revision = kept.graph().edges.revision;
      if (headroom == 0.0) {
        EXPECT_EQ(h.n_edges, int(ref.size()));
        continue;
      }
      EXPECT_EQ(kept.capacity(), capacity);
      EXPECT_EQ(kept.graph().edges.recv.data(), recv_address);
      EXPECT_EQ(h.n_edges, capacity);
      const int spare = capacity - int(ref.size());
      EXPECT_GT(spare, 0);
      for (int a = 0; a < N; ++a) EXPECT_LE(h.pad_count[a], spare / N + 1) << "receiver " << a;
    }
    EXPECT_EQ(kept.allocations(), 1) << "headroom " << headroom;
  }
}

// Padded, when the live edges outgrow the capacity (the box compressed by 6 % between
// rebuilds): the step's graph is a consistent graph of as many edges as fit, held_every_edge()
// says no and grows the storage with twice the spare fraction, and the step run again holds
// every edge.
TEST(KeptGraph, APaddedGraphThatOverflowsGrowsAndHoldsEveryEdgeOnTheNextStep) {
  const double cutoff = 3.1, skin = 1.0;
  auto s = make_system(40, 8.0, 19);
  const int N = int(s.x.size());
  const auto species = kk::View1<int, Exec>("species", N);
  KeptGraph kept(0.01);
  auto d = upload<Exec>(s);
  const kk::PairList<Exec> pl{d.i, d.j, d.shift, false};
  kept.rebuild(pl, d.x, species, N, cutoff + skin, cutoff);
  const int capacity = kept.capacity();
  HostSystem now = s;
  now.x = moved(s.x, 0.0, 0.94, 1);
  for (auto& sh : now.pairs.shift)
    for (double& v : sh) v *= 0.94;
  const auto d2 = upload<Exec>(now);
  kept.refresh(kk::PairList<Exec>{d2.i, d2.j, d2.shift, false}, d2.x);
  const HostStepGraph partial = read_step_graph(kept.graph(), cutoff);
  EXPECT_EQ(int(partial.live.size()), capacity);
  ASSERT_FALSE(kept.held_every_edge());
  const auto ref = reference_edges(now, cutoff, false);
  EXPECT_EQ(kept.live_edges(), int(ref.size()));
  EXPECT_GT(int(ref.size()), capacity);
  kept.step(d2.x);
  ASSERT_TRUE(kept.held_every_edge());
  EXPECT_EQ(kept.allocations(), 2);
  EXPECT_DOUBLE_EQ(kept.spare_fraction(), 0.02) << "doubled after the overflow";
  EXPECT_GT(kept.capacity(), int(ref.size()));
  const HostStepGraph h = read_step_graph(kept.graph(), cutoff);
  ASSERT_EQ(h.live.size(), ref.size());
  for (size_t e = 0; e < ref.size(); ++e) {
    ASSERT_EQ(h.live[e].recv, ref[e].recv) << e;
    ASSERT_EQ(h.live[e].send, ref[e].send) << e;
  }
}

// The pairs whose two atoms are both among the first n.
HostPairs pairs_among(const HostPairs& all, int n) {
  HostPairs out;
  for (std::size_t p = 0; p < all.i.size(); ++p)
    if (all.i[p] < n && all.j[p] < n) {
      out.i.push_back(all.i[p]);
      out.j.push_back(all.j[p]);
      out.shift.push_back(all.shift[p]);
    }
  return out;
}

// Padded, across rebuilds: the same nodes and about the same edges keep the storage (a capture
// stays valid); far fewer edges (the pairs of half the atoms) shrink it; another node count
// gets new node-sized views. Each rebuild's graph holds exactly the edges within the cutoff.
TEST(KeptGraph, RebuildsKeepTheStorageWhileTheGraphFitsAndResizeWhenItDoesNot) {
  const double cutoff = 3.1, skin = 0.5;
  const HostSystem s = make_system(80, 9.0, 23);
  KeptGraph kept(0.05);
  auto rebuild = [&](const HostSystem& sys) {
    const auto d = upload<Exec>(sys);
    const int N = int(sys.x.size());
    const auto species = kk::View1<int, Exec>("species", N);
    kept.rebuild(kk::PairList<Exec>{d.i, d.j, d.shift, false}, d.x, species, N, cutoff + skin, cutoff);
    EXPECT_TRUE(kept.held_every_edge());
    const auto ref = reference_edges(sys, cutoff, false);
    const HostStepGraph h = read_step_graph(kept.graph(), cutoff);
    EXPECT_EQ(h.live.size(), ref.size());
    for (std::size_t e = 0; e < std::min(h.live.size(), ref.size()); ++e) {
      EXPECT_EQ(h.live[e].recv, ref[e].recv) << e;
      EXPECT_EQ(h.live[e].send, ref[e].send) << e;
    }
  };
  rebuild(s);
  const int* recv_address = kept.graph().edges.recv.data();
  const int* offsets_address = kept.graph().edges.recv_offsets.data();
  const int capacity = kept.capacity();
  rebuild(s);  // a neighbour-list rebuild with the same atoms
  EXPECT_EQ(kept.capacity(), capacity);
  EXPECT_EQ(kept.graph().edges.recv.data(), recv_address);
  EXPECT_EQ(kept.graph().edges.recv_offsets.data(), offsets_address);
  EXPECT_EQ(kept.allocations(), 1);

  HostSystem fewer = s;  // the same 80 nodes, only the pairs among the first 40 atoms
  fewer.pairs = pairs_among(s.pairs, 40);
  rebuild(fewer);
  EXPECT_LT(kept.capacity(), capacity / 2) << "shrunk to the fewer edges";
  EXPECT_EQ(kept.graph().edges.recv_offsets.data(), offsets_address) << "same nodes: same node-sized views";
  EXPECT_EQ(kept.allocations(), 2);

  HostSystem smaller;  // 60 nodes: new node-sized views
  smaller.x.assign(s.x.begin(), s.x.begin() + 60);
  smaller.pairs = pairs_among(s.pairs, 60);
  rebuild(smaller);
  EXPECT_EQ(kept.graph().edges.n_nodes, 60);
  EXPECT_NE(kept.graph().edges.recv_offsets.data(), offsets_address);
  EXPECT_EQ(kept.allocations(), 3);
}

// ---- radial -------------------------------------------------------------------------------

// Plain reference of doc/model.md step 2, written from the formula.
double ref_envelope(double r, double rc, int p) {
  const double x = r / rc;
  if (x >= 1) return 0;
  return 1 - (p + 1) * (p + 2) / 2.0 * std::pow(x, p) + p * (p + 2.0) * std::pow(x, p + 1) -
         p * (p + 1) / 2.0 * std::pow(x, p + 2);
}
double ref_rbf(int n, double r, double rc, int p) {
  return std::sqrt(2 / rc) * std::sin(n * M_PI * r / rc) / r * ref_envelope(r, rc, p);
}

// Value agreement with the plain formula: same operations in another order, a few ulp
// relative; near x = 1 the envelope cancels terms as large as (p+1)(p+2)/2 = 28 (p = 6), so
// both implementations carry an absolute error ~28 eps = 6e-15 there: absolute floor 2e-14.
constexpr double kRadialRelTol = 1e-13;  // relative
constexpr double kRadialAbsTol = 2e-14;  // absolute floor, cancellation in u near r_cut
// Central differences with h = 1e-6 Angstrom: truncation ~h^2 |f'''| ~ 1e-11, rounding ~1e-10.
constexpr double kRadialFdStep = 1e-6;  // Angstrom
constexpr double kRadialFdTol = 1e-8;   // absolute, per Angstrom

template <class Exec>
class RadialTest : public ::testing::Test {};
TYPED_TEST_SUITE(RadialTest, test::ExecSpaces);

TYPED_TEST(RadialTest, ValuesDerivativesAndBackward) {
  using Exec = TypeParam;
  const double rc = 5.0;
  const int n_rbf = 8;
  for (int p : {3, 5, 6}) {
    std::vector<std::array<double, 3>> edges;
    std::mt19937_64 rng(p);
    std::normal_distribution<double> g;
    std::uniform_real_distribution<double> len(0.5, 5.3);  // some beyond the cutoff
    for (int e = 0; e < 64; ++e) {
      std::array<double, 3> v{g(rng), g(rng), g(rng)};
      const double n = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]), r = len(rng);
      edges.push_back({v[0] * r / n, v[1] * r / n, v[2] * r / n});
    }
    const int E = int(edges.size());
    kk::Vec3View<double, Exec> vec("vec", E), gv("grad_vec", E);
    kk::View2<double, Exec> rbf("rbf", E, n_rbf), drbf("drbf", E, n_rbf), grbf("grad_rbf", E, n_rbf);
    kk::View1<double, Exec> env("env", E), denv("denv", E), genv("grad_env", E);
    auto hv = Kokkos::create_mirror_view(vec);
    auto hg = Kokkos::create_mirror_view(grbf);
    auto hge = Kokkos::create_mirror_view(genv);
    std::uniform_real_distribution<double> w(-1, 1);
    for (int e = 0; e < E; ++e) {
      for (int k = 0; k < 3; ++k) hv(e, k) = edges[e][k];
      for (int n = 0; n < n_rbf; ++n) hg(e, n) = w(rng);
      hge(e) = w(rng);
    }
    Kokkos::deep_copy(vec, hv);
    Kokkos::deep_copy(grbf, hg);
    Kokkos::deep_copy(genv, hge);
    kk::Radial<Exec> f{vec, rbf, env, drbf, denv, grbf, genv, gv, rc, n_rbf, p};
    Exec exec;
    Kokkos::parallel_for("test", kk::Range<Exec, kk::TagForward>(exec, 0, E), f);
    Kokkos::parallel_for("test", kk::Range<Exec, kk::TagBackward>(exec, 0, E), f);
    exec.fence("test");
    auto hr = test::to_host(rbf), hdr = test::to_host(drbf);  // one deduced type per declaration (nvcc insists)
    auto he = test::to_host(env), hde = test::to_host(denv);
    auto hgv = test::to_host(gv);
    for (int e = 0; e < E; ++e) {
      const double r = std::sqrt(hv(e, 0) * hv(e, 0) + hv(e, 1) * hv(e, 1) + hv(e, 2) * hv(e, 2));
      EXPECT_NEAR(he(e), ref_envelope(r, rc, p), kRadialRelTol * std::fabs(ref_envelope(r, rc, p)) + kRadialAbsTol);
      const double fde =
          (ref_envelope(r + kRadialFdStep, rc, p) - ref_envelope(r - kRadialFdStep, rc, p)) / (2 * kRadialFdStep);
      EXPECT_NEAR(hde(e), fde, kRadialFdTol);
      double loss_grad = hge(e) * fde;
      for (int n = 0; n < n_rbf; ++n) {
        const double ref = ref_rbf(n + 1, r, rc, p);
        EXPECT_NEAR(hr(e, n), ref, kRadialRelTol * std::fabs(ref) + kRadialAbsTol);
        const double fd =
            (ref_rbf(n + 1, r + kRadialFdStep, rc, p) - ref_rbf(n + 1, r - kRadialFdStep, rc, p)) / (2 * kRadialFdStep);
        EXPECT_NEAR(hdr(e, n), fd, kRadialFdTol);
        loss_grad += hg(e, n) * fd;
      }
      for (int k = 0; k < 3; ++k) EXPECT_NEAR(hgv(e, k), loss_grad * hv(e, k) / r, 1e-7);
      if (r >= rc) {
        EXPECT_EQ(he(e), 0.0);
        EXPECT_EQ(hde(e), 0.0);
      }
    }
    // u, u', u'' vanish at the cutoff: u(rc - h) = O(h^3).
    const double h = 1e-3;
    EXPECT_LT(std::fabs(kk::envelope(rc - h, rc, p).u), 10 * std::pow(h / rc, 3) * p * p * p);
    EXPECT_LT(std::fabs(kk::envelope(rc - h, rc, p).du_dr), 10 * std::pow(h / rc, 2) * p * p * p / rc);
  }
}

}  // namespace
