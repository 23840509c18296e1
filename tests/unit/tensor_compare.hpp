// Tensor comparison for the kernel-against-torch tests.
#pragma once

#include <torch/torch.h>

namespace edgeframe::test {

// max |a - b| / max |b|, in double whatever the dtypes.
inline double rel(const torch::Tensor& a, const torch::Tensor& b) {
  const auto da = a.to(torch::kFloat64), db = b.to(torch::kFloat64);
  return (da - db).abs().max().item<double>() / db.abs().max().item<double>();
}

}  // namespace edgeframe::test
