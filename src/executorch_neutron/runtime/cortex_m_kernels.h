/*
 * Helpers shared by the host cortex_m::* kernels (cortex_m_host_kernels.cpp: elementwise, linear, softmax, data
 * movement and registration; cortex_m_spatial_kernels.cpp: convolutions, pools, pad). Every kernel follows the
 * integer arithmetic of the Cortex-M backend's Python reference implementations (ops/operators.py of the wheel)
 * and addresses tensor elements through strides, so any dim order works.
 */

#pragma once

#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>
#include <executorch/runtime/kernel/operator_registry.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace executorch_neutron_cortex_m {

using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::runtime::ArrayRef;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::KernelRuntimeContext;
using executorch::runtime::Span;

constexpr int kShiftInt8 = 20;  // SHIFT_INT8 of the Cortex-M passes: inputs of quantized_add are scaled by 2^20

/* A failed check: log which kernel and why, and mark the kernel call failed (the runtime returns the error). */
inline bool check(KernelRuntimeContext& ctx, bool ok, const char* op, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "executorch_neutron host kernel %s: %s\n", op, what);
    ctx.fail(Error::InvalidArgument);
  }
  return ok;
}

/* CMSIS-NN arm_nn_requantize, as simulated by the Cortex-M backend's requantize_cmsis (64-bit, rounding). */
inline int32_t requantize(int64_t value, int64_t multiplier, int64_t shift) {
  const int64_t left = shift > 0 ? shift : 0;
  const int64_t right = shift < 0 ? -shift : 0;
  int64_t result = ((value << left) * multiplier + (int64_t{1} << 30)) >> 31;
  if (right) {
    const int64_t mask = (int64_t{1} << right) - 1;
    const int64_t remainder = result & mask;
    result >>= right;
    const int64_t threshold = (mask >> 1) + (result < 0 ? 1 : 0);
    result += remainder > threshold ? 1 : 0;
  }
  return static_cast<int32_t>(result);
}

inline int32_t clamp_i32(int64_t v, int64_t lo, int64_t hi) {
  return static_cast<int32_t>(std::min(std::max(v, lo), hi));
}

/* Logical (row-major) index -> element offset through the tensor's strides; `shape` is the logical shape the
 * loop walks, `t` may have fewer dims (broadcast from the right) or size-1 dims (broadcast). */
struct Indexer {
  std::vector<int64_t> strides;  // per dim of the walked shape, 0 where broadcast
  explicit Indexer(const Tensor& t, const std::vector<int64_t>& shape) : strides(shape.size(), 0) {
    const size_t nd = shape.size(), td = static_cast<size_t>(t.dim());
    for (size_t i = 0; i < td; ++i) {
      const size_t d = nd - td + i;
      strides[d] = t.size(i) == 1 ? 0 : static_cast<int64_t>(t.strides()[i]);
    }
  }
};

inline std::vector<int64_t> shape_of(const Tensor& t) {
  std::vector<int64_t> s(t.dim());
  for (ssize_t i = 0; i < t.dim(); ++i) s[i] = t.size(i);
  return s;
}

/* Calls fn(offsets...) for every logical element of `shape`, with one offset per indexer. */
template <size_t N, typename Fn>
inline void for_each_element(const std::vector<int64_t>& shape, const Indexer* const (&ix)[N], Fn fn) {
  const size_t nd = shape.size();
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  std::vector<int64_t> idx(nd, 0);
  int64_t off[N] = {};
  for (int64_t n = 0; n < total; ++n) {
    fn(off);
    for (size_t d = nd; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += ix[k]->strides[d];
      if (idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= ix[k]->strides[d] * idx[d];
      idx[d] = 0;
    }
  }
}

/* stack = [args..., out, return slot]: the out tensor is the last argument. */
inline Tensor& out_of(Span<EValue*> stack) { return stack[stack.size() - 2]->toTensor(); }

inline bool contiguous(const Tensor& t) {
  int64_t expected = 1;
  for (ssize_t d = t.dim(); d-- > 0;) {
    if (t.size(d) != 1 && t.strides()[d] != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

inline bool is_channels_last(const Tensor& t) {
  const auto order = t.dim_order();
  return t.dim() == 4 && order[0] == 0 && order[1] == 2 && order[2] == 3 && order[3] == 1;
}

/* Element offset of logical NCHW index (n, c, h, w) through the tensor's strides. */
inline int64_t at4(const Tensor& t, int64_t n, int64_t c, int64_t h, int64_t w) {
  const auto s = t.strides();
  return n * s[0] + c * s[1] + h * s[2] + w * s[3];
}

// the kernels of cortex_m_spatial_kernels.cpp (registered by cortex_m_host_kernels.cpp)
void quantized_max_pool2d_out(KernelRuntimeContext& ctx, Span<EValue*> stack);
void quantized_conv2d_out(KernelRuntimeContext& ctx, Span<EValue*> stack);
void quantized_depthwise_conv2d_out(KernelRuntimeContext& ctx, Span<EValue*> stack);
void quantized_transpose_conv2d_out(KernelRuntimeContext& ctx, Span<EValue*> stack);
void quantized_avg_pool2d_out(KernelRuntimeContext& ctx, Span<EValue*> stack);
void pad_out(KernelRuntimeContext& ctx, Span<EValue*> stack);

}  // namespace executorch_neutron_cortex_m
