#include "streamed_edges.hpp"

#include "errors.hpp"

namespace edgeframe::impl {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

template <class T>
const T& from_handle(AutogradContext* ctx, const char* key) {
  return *reinterpret_cast<const T*>(ctx->saved_data[key].toInt());
}

struct StreamedEdgesFn : public torch::autograd::Function<StreamedEdgesFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& vec, std::int64_t parts_handle) {
    ctx->saved_data["parts"] = parts_handle;
    ctx->save_for_backward({x, vec});
    const auto& parts = *reinterpret_cast<const StreamedEdges*>(parts_handle);
    const torch::NoGradGuard no_grad;
    const bool has_x = x.numel() > 0;
    Tensor n, sum;
    {
      const Tensor h = has_x && parts.base ? parts.base(x) : x;
      n = has_x && parts.prepare ? parts.prepare(h) : h;
      if (parts.base) sum = h.clone();  // a copy: base may give back x or a view of it
    }
    for (std::size_t k = 0; k < parts.ranges.size(); ++k) {
      const auto [e0, e1] = parts.ranges[k];
      const Tensor part = parts.chunk(n, vec.narrow(0, e0, e1 - e0), int(k));
      if (sum.defined())
        sum.add_(part);
      else
        sum = part;  // a new tensor of the chunk's (unrotate_aggregate's output)
    }
    return sum;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const auto& parts = from_handle<StreamedEdges>(ctx, "parts");
    const variable_list saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &vec = saved[1];
    const bool has_x = x.numel() > 0;
    const bool want_x = has_x && ctx->needs_input_grad(0), want_vec = ctx->needs_input_grad(1);
    variable_list result(3);
    if (!want_x && !want_vec) return result;
    // What the chunks read, as a leaf. With a base it is made without autograd here (the base's
    // activations are node-sized: not held through the chunks) and again with it after them.
    Tensor x_leaf, n, n_leaf = x;
    if (has_x) {
      if (parts.base) {
        const torch::NoGradGuard no_grad;
        const Tensor h = parts.base(x);
        n_leaf = (parts.prepare ? parts.prepare(h) : h).detach().requires_grad_(want_x);
      } else {
        const torch::AutoGradMode grad_on(true);
        x_leaf = x.detach().requires_grad_(want_x);
        n = parts.prepare ? parts.prepare(x_leaf) : x_leaf;
        n_leaf = parts.prepare ? n.detach().requires_grad_(want_x) : x_leaf;
      }
    }
    Tensor grad_n;
    Tensor grad_vec = want_vec ? torch::zeros_like(vec) : Tensor();
    for (std::size_t k = 0; k < parts.ranges.size(); ++k) {
      const auto [e0, e1] = parts.ranges[k];
      if (parts.recomputed) ++*parts.recomputed;
      const Tensor vec_k = vec.narrow(0, e0, e1 - e0).detach().requires_grad_(want_vec);
      variable_list wrt;
      if (want_x) wrt.push_back(n_leaf);
      if (want_vec) wrt.push_back(vec_k);
      Tensor part;
      {
        const torch::AutoGradMode grad_on(true);
        part = parts.chunk(n_leaf, vec_k, int(k));
      }
      const variable_list g = torch::autograd::grad({part}, wrt, {grad_out[0]}, false, false, true);
      if (want_x && g[0].defined()) grad_n = grad_n.defined() ? grad_n + g[0] : g[0];
      // Copied now: the geometry's backward returns workspace memory, which the next chunk reuses.
      if (want_vec && g.back().defined()) grad_vec.narrow(0, e0, e1 - e0).copy_(g.back());
    }
    if (want_x && parts.base) {
      // dL/dx through h = base(x): the chunks' gradient reaches h through prepare, the unit's
      // own output (h + the sum) directly.
      n_leaf = Tensor();
      const torch::AutoGradMode grad_on(true);
      x_leaf = x.detach().requires_grad_(true);
      const Tensor h = parts.base(x_leaf);
      if (!grad_n.defined()) {
        result[0] = torch::autograd::grad({h}, {x_leaf}, {grad_out[0]}, false, false, true)[0];
      } else if (parts.prepare) {
        const Tensor nn = parts.prepare(h);
        result[0] = torch::autograd::grad({h, nn}, {x_leaf}, {grad_out[0], grad_n}, false, false, true)[0];
      } else {
        result[0] = torch::autograd::grad({h}, {x_leaf}, {grad_out[0] + grad_n}, false, false, true)[0];
      }
    } else if (want_x && grad_n.defined()) {
      if (parts.prepare) {
        const torch::AutoGradMode grad_on(true);
        result[0] = torch::autograd::grad({n}, {x_leaf}, {grad_n}, false, false, true)[0];
      } else {
        result[0] = grad_n;
      }
    }
    result[1] = grad_vec;
    return result;
  }
};

using NodeFn = std::function<Tensor(const Tensor&)>;

struct CheckpointFn : public torch::autograd::Function<CheckpointFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, std::int64_t f_handle) {
    ctx->saved_data["f"] = f_handle;
    ctx->save_for_backward({x});
    const torch::NoGradGuard no_grad;
    return (*reinterpret_cast<const NodeFn*>(f_handle))(x);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const auto& f = from_handle<NodeFn>(ctx, "f");
    const Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    const torch::AutoGradMode grad_on(true);
    const Tensor y = f(x);
    return {torch::autograd::grad({y}, {x}, {grad_out[0]}, false, false, true)[0], Tensor()};
  }
};

}  // namespace

Tensor streamed_edges(const StreamedEdges& parts, const Tensor& x, const Tensor& vec) {
  if (parts.ranges.empty() || !parts.chunk)
    throw ComputeError("edgeframe: streamed_edges needs at least one chunk and its function");
  if (parts.base && !x.defined()) throw ComputeError("edgeframe: streamed_edges with a base needs a node input");
  // autograd functions take defined tensors only: an empty one stands for no node input
  const Tensor input = x.defined() ? x : torch::empty({0}, vec.options());
  return StreamedEdgesFn::apply(input, vec, reinterpret_cast<std::int64_t>(&parts));
}

Tensor checkpointed(const NodeFn& f, const Tensor& x) {
  return CheckpointFn::apply(x, reinterpret_cast<std::int64_t>(&f));
}

}  // namespace edgeframe::impl
