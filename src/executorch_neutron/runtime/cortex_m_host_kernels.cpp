/*
 * Host kernels for the cortex_m::*.out operators that ExecuTorch's Cortex-M backend emits (target imxrt700cm),
 * registered with the ExecuTorch runtime of the executorch wheel (libexecutorch.so) so the stock Python runtime
 * can run those .pte files on a Linux host. On the device the same operators are CMSIS-NN kernels.
 *
 * Each kernel follows the integer arithmetic of the wheel's Python reference implementation
 * (executorch/backends/cortex_m/ops/operators.py), which simulates CMSIS-NN (arm_nn_requantize, LUT activations,
 * ...); tests/runtime/test_cortex_m_kernels.py compares them op by op, bit for bit. Tensors may have any dim
 * order: every kernel addresses elements through the tensors' strides.
 *
 * This file: quantize/dequantize, elementwise (add, mul, div, min, max), LUT activation, linear, batch matmul, softmax, transpose, and the
 * registration of all kernels (the spatial ones live in cortex_m_spatial_kernels.cpp, helpers in
 * cortex_m_kernels.h). Compiled into the host library together with neutron_host_backend.cpp (see build.py);
 * registered by neutron_host_register_cortex_m_kernels(), which bridge.py calls once per process.
 */

#include "cortex_m_kernels.h"

#include <string>

namespace executorch_neutron_cortex_m {

// ------------------------------------------------------------------------------------------------ quantize

void quantize_per_tensor_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const Tensor& in = stack[0]->toTensor();
  const double scale = stack[1]->toDouble();
  const int64_t zp = stack[2]->toInt(), qmin = stack[3]->toInt(), qmax = stack[4]->toInt();
  Tensor& out = out_of(stack);
  if (!check(ctx, in.scalar_type() == ScalarType::Float && out.scalar_type() == ScalarType::Char,
             "cortex_m::quantize_per_tensor.out", "expects a float input and an int8 output"))
    return;
  // quantized_decomposed.quantize_per_tensor: round(x * (1/scale)) + zp in float32, clamped
  const float inv_scale = static_cast<float>(1.0 / scale);
  const std::vector<int64_t> shape = shape_of(out);
  const Indexer a(in, shape), o(out, shape);
  const Indexer* const ix[2] = {&a, &o};
  const float* x = in.const_data_ptr<float>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  for_each_element(shape, ix, [&](const int64_t* off) {
    const float q = std::nearbyint(x[off[0]] * inv_scale) + static_cast<float>(zp);
    y[off[1]] = static_cast<int8_t>(std::min(std::max(q, static_cast<float>(qmin)), static_cast<float>(qmax)));
  });
}

void dequantize_per_tensor_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const Tensor& in = stack[0]->toTensor();
  const float scale = static_cast<float>(stack[1]->toDouble());
  const int64_t zp = stack[2]->toInt();
  Tensor& out = out_of(stack);
  if (!check(ctx, in.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Float,
             "cortex_m::dequantize_per_tensor.out", "expects an int8 input and a float output"))
    return;
  const std::vector<int64_t> shape = shape_of(out);
  const Indexer a(in, shape), o(out, shape);
  const Indexer* const ix[2] = {&a, &o};
  const int8_t* x = in.const_data_ptr<int8_t>();
  float* y = out.mutable_data_ptr<float>();
  for_each_element(shape, ix, [&](const int64_t* off) {
    y[off[1]] = (static_cast<float>(x[off[0]]) - static_cast<float>(zp)) * scale;
  });
}

// ------------------------------------------------------------------------------------------------ elementwise

template <typename Fn>
bool binary_int8(KernelRuntimeContext& ctx, Span<EValue*> stack, size_t other_index, const char* op, Fn fn) {
  const Tensor& a = stack[0]->toTensor();
  const Tensor& b = stack[other_index]->toTensor();
  Tensor& out = out_of(stack);
  if (!check(ctx, a.scalar_type() == ScalarType::Char && b.scalar_type() == ScalarType::Char &&
                      out.scalar_type() == ScalarType::Char, op, "expects int8 tensors"))
    return false;
  const std::vector<int64_t> shape = shape_of(out);
  const Indexer ia(a, shape), ib(b, shape), io(out, shape);
  const Indexer* const ix[3] = {&ia, &ib, &io};
  const int8_t* x = a.const_data_ptr<int8_t>();
  const int8_t* z = b.const_data_ptr<int8_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  for_each_element(shape, ix, [&](const int64_t* off) { y[off[2]] = fn(x[off[0]], z[off[1]]); });
  return true;
}

void quantized_add_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const int64_t a_zp = stack[1]->toInt(), a_mult = stack[2]->toInt(), a_shift = stack[3]->toInt();
  const int64_t b_zp = stack[5]->toInt(), b_mult = stack[6]->toInt(), b_shift = stack[7]->toInt();
  const int64_t o_zp = stack[8]->toInt(), o_mult = stack[9]->toInt(), o_shift = stack[10]->toInt();
  const int64_t lo = stack[11]->toInt(), hi = stack[12]->toInt();
  binary_int8(ctx, stack, 4, "cortex_m::quantized_add.out", [&](int8_t x, int8_t z) {
    const int32_t xa = requantize(static_cast<int32_t>((x - a_zp) * (int64_t{1} << kShiftInt8)), a_mult, a_shift);
    const int32_t zb = requantize(static_cast<int32_t>((z - b_zp) * (int64_t{1} << kShiftInt8)), b_mult, b_shift);
    const int32_t sum = static_cast<int32_t>(static_cast<int64_t>(xa) + zb);
    return static_cast<int8_t>(clamp_i32(static_cast<int64_t>(requantize(sum, o_mult, o_shift)) + o_zp, lo, hi));
  });
}

void quantized_mul_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const int64_t a_zp = stack[1]->toInt(), b_zp = stack[3]->toInt();
  const int64_t o_zp = stack[4]->toInt(), o_mult = stack[5]->toInt(), o_shift = stack[6]->toInt();
  binary_int8(ctx, stack, 2, "cortex_m::quantized_mul.out", [&](int8_t x, int8_t z) {
    const int32_t prod = static_cast<int32_t>((x - a_zp) * (z - b_zp));
    return static_cast<int8_t>(clamp_i32(static_cast<int64_t>(requantize(prod, o_mult, o_shift)) + o_zp, -128, 127));
  });
}

void quantized_div_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  // the reference: float quotient of the zero-point-corrected operands (0 where the divisor is 0), times the
  // effective scale the AOT pass carries, rounded, + output zero point (int8 operands here)
  const int64_t a_zp = stack[1]->toInt(), b_zp = stack[3]->toInt(), o_zp = stack[4]->toInt();
  const float scale = static_cast<float>(stack[5]->toDouble());
  binary_int8(ctx, stack, 2, "cortex_m::quantized_div.out", [&](int8_t x, int8_t z) {
    const float num = static_cast<float>(x - a_zp), den = static_cast<float>(z - b_zp);
    const float quotient = den != 0.0f ? num / den : 0.0f;
    const float q = std::nearbyint(quotient * scale) + static_cast<float>(o_zp);
    return static_cast<int8_t>(std::min(std::max(q, -128.0f), 127.0f));
  });
}

void minimum_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  binary_int8(ctx, stack, 1, "cortex_m::minimum.out", [](int8_t x, int8_t z) { return std::min(x, z); });
}

void maximum_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  binary_int8(ctx, stack, 1, "cortex_m::maximum.out", [](int8_t x, int8_t z) { return std::max(x, z); });
}

void quantized_activation_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const Tensor& in = stack[0]->toTensor();
  const Tensor& lut = stack[1]->toTensor();
  Tensor& out = out_of(stack);
  if (!check(ctx, in.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char &&
                      lut.numel() == 256 && (lut.scalar_type() == ScalarType::Char ||
                                             lut.scalar_type() == ScalarType::Int),
             "cortex_m::quantized_activation.out", "expects int8 tensors and a 256-entry lookup table"))
    return;
  int8_t table[256];
  for (int i = 0; i < 256; ++i)
    table[i] = lut.scalar_type() == ScalarType::Char ? lut.const_data_ptr<int8_t>()[i]
                                                     : static_cast<int8_t>(lut.const_data_ptr<int32_t>()[i]);
  const std::vector<int64_t> shape = shape_of(out);
  const Indexer a(in, shape), o(out, shape);
  const Indexer* const ix[2] = {&a, &o};
  const int8_t* x = in.const_data_ptr<int8_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  for_each_element(shape, ix, [&](const int64_t* off) { y[off[1]] = table[x[off[0]] + 128]; });
}

// ------------------------------------------------------------------------------------------------ linear, bmm

void quantized_linear_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const char* op = "cortex_m::quantized_linear.out";
  const Tensor& in = stack[0]->toTensor();
  const Tensor& w = stack[1]->toTensor();
  const bool has_bias = !stack[2]->isNone(), has_ksum = !stack[3]->isNone();
  const int64_t in_off = stack[4]->toInt(), w_off = stack[5]->toInt(), out_off = stack[6]->toInt();
  ArrayRef<int64_t> mults = stack[7]->toIntList(), shifts = stack[8]->toIntList();
  const int64_t act_max = stack[9]->toInt(), act_min = stack[10]->toInt();
  Tensor& out = out_of(stack);
  if (!check(ctx, in.scalar_type() == ScalarType::Char && w.scalar_type() == ScalarType::Char && w.dim() == 2 &&
                      out.scalar_type() == ScalarType::Char && contiguous(in) && contiguous(w) && contiguous(out) &&
                      !mults.empty() && !shifts.empty(),
             op, "expects contiguous int8 input, [N, K] int8 weights, requantization parameters"))
    return;
  const int64_t n_out = w.size(0), k = w.size(1);
  if (!check(ctx, in.size(in.dim() - 1) == k && out.numel() % n_out == 0, op, "input / weight / output sizes"))
    return;
  const int32_t* bias = has_bias ? stack[2]->toTensor().const_data_ptr<int32_t>() : nullptr;
  const int32_t* ksum = has_ksum ? stack[3]->toTensor().const_data_ptr<int32_t>() : nullptr;
  const int8_t* x = in.const_data_ptr<int8_t>();
  const int8_t* wt = w.const_data_ptr<int8_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  const int64_t rows = in.numel() / k;
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t* xr = x + r * k;
    int64_t row_sum = 0;
    for (int64_t i = 0; i < k; ++i) row_sum += xr[i];
    for (int64_t n = 0; n < n_out; ++n) {
      const int8_t* wr = wt + n * k;
      int64_t acc = 0;
      if (ksum != nullptr) {  // MVE contract: kernel_sum carries the offsets and bias
        for (int64_t i = 0; i < k; ++i) acc += static_cast<int64_t>(xr[i]) * wr[i];
        acc += row_sum * w_off + ksum[n];
      } else {  // DSP / scalar contract (Cortex-M33): offsets applied to both operands, then the bias
        for (int64_t i = 0; i < k; ++i) acc += (static_cast<int64_t>(xr[i]) + in_off) * (wr[i] + w_off);
        if (bias != nullptr) acc += bias[n];
      }
      // the reference requantizes with the first multiplier / shift (per-tensor weights)
      const int32_t q = requantize(static_cast<int32_t>(acc), mults[0], shifts[0]);
      y[r * n_out + n] = static_cast<int8_t>(clamp_i32(static_cast<int64_t>(q) + out_off, act_min, act_max));
    }
  }
}

void quantized_batch_matmul_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const char* op = "cortex_m::quantized_batch_matmul.out";
  const Tensor& lhs = stack[0]->toTensor();
  const int64_t lhs_off = stack[1]->toInt();
  const Tensor& rhs_t = stack[2]->toTensor();
  const int64_t rhs_off = stack[3]->toInt();
  const int64_t o_zp = stack[4]->toInt(), o_mult = stack[5]->toInt(), o_shift = stack[6]->toInt();
  Tensor& out = out_of(stack);
  if (!check(ctx, lhs.dim() == 3 && rhs_t.dim() == 3 && lhs.scalar_type() == ScalarType::Char &&
                      rhs_t.scalar_type() == ScalarType::Char && contiguous(lhs) && contiguous(rhs_t) &&
                      contiguous(out) && lhs.size(2) == rhs_t.size(2) && lhs.size(0) == rhs_t.size(0),
             op, "expects contiguous int8 [B, N, K] and transposed [B, M, K] operands"))
    return;
  const int64_t batches = lhs.size(0), n = lhs.size(1), k = lhs.size(2), m = rhs_t.size(1);
  const int8_t* a = lhs.const_data_ptr<int8_t>();
  const int8_t* b = rhs_t.const_data_ptr<int8_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  for (int64_t bt = 0; bt < batches; ++bt)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        int64_t acc = 0;
        for (int64_t t = 0; t < k; ++t)
          acc += (a[(bt * n + i) * k + t] + lhs_off) * (b[(bt * m + j) * k + t] + rhs_off);
        const int32_t q = requantize(static_cast<int32_t>(acc), o_mult, o_shift);
        y[(bt * n + i) * m + j] = static_cast<int8_t>(clamp_i32(static_cast<int64_t>(q) + o_zp, -128, 127));
      }
}

// ------------------------------------------------------------------------------------------------ softmax

void softmax_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const char* op = "cortex_m::softmax.out";
  const Tensor& in = stack[0]->toTensor();
  int64_t dim = stack[1]->toInt();
  const int64_t in_zp = stack[2]->toInt(), out_zp = stack[3]->toInt();
  const int64_t in_mult = stack[4]->toInt(), in_shift = stack[5]->toInt();
  Tensor& out = out_of(stack);
  if (dim < 0) dim += in.dim();
  if (!check(ctx, in.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char && dim >= 0 &&
                      dim < in.dim() && out_zp == -128,
             op, "expects int8 tensors, a valid dim and output zero point -128"))
    return;
  // input scale recovered from the fixed-point multiplier as the reference does (5 integer bits)
  const double real = std::ldexp(static_cast<double>(in_mult) / static_cast<double>(int64_t{1} << 31),
                                 static_cast<int>(in_shift));
  const float scale = static_cast<float>(real / static_cast<double>(int64_t{1} << 26));
  const std::vector<int64_t> shape = shape_of(in);
  std::vector<int64_t> outer = shape;
  outer[dim] = 1;
  const Indexer a(in, outer), o(out, outer);
  const Indexer* const ix[2] = {&a, &o};
  const int64_t len = shape[dim], sa = in.strides()[dim], so = out.strides()[dim];
  const int8_t* x = in.const_data_ptr<int8_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  std::vector<float> v(len);
  for_each_element(outer, ix, [&](const int64_t* off) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < len; ++i) {
      v[i] = static_cast<float>(static_cast<int32_t>(x[off[0] + i * sa]) - in_zp) * scale;
      mx = std::max(mx, v[i]);
    }
    double sum = 0.0;
    for (int64_t i = 0; i < len; ++i) {
      v[i] = std::exp(v[i] - mx);
      sum += v[i];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < len; ++i) {
      const float q = std::nearbyint(v[i] * inv / (1.0f / 256.0f)) + static_cast<float>(out_zp);
      y[off[1] + i * so] = static_cast<int8_t>(std::min(std::max(q, -128.0f), 127.0f));
    }
  });
}

// ------------------------------------------------------------------------------------------------ data movement

void transpose_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const Tensor& in = stack[0]->toTensor();
  ArrayRef<int64_t> perm = stack[1]->toIntList();
  Tensor& out = out_of(stack);
  if (!check(ctx, static_cast<ssize_t>(perm.size()) == in.dim() && out.dim() == in.dim() &&
                      in.element_size() == out.element_size() && in.element_size() == 1,
             "cortex_m::transpose.out", "expects int8 tensors and a permutation of every dim"))
    return;
  const std::vector<int64_t> shape = shape_of(out);
  Indexer a(in, shape);
  for (size_t d = 0; d < perm.size(); ++d) a.strides[d] = in.strides()[perm[d]];  // out dim d reads in dim perm[d]
  const Indexer o(out, shape);
  const Indexer* const ix[2] = {&a, &o};
  const int8_t* x = in.const_data_ptr<int8_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  for_each_element(shape, ix, [&](const int64_t* off) { y[off[1]] = x[off[0]]; });
}

}  // namespace executorch_neutron_cortex_m

namespace {

using namespace executorch_neutron_cortex_m;
using executorch::runtime::Kernel;

struct Entry {
  const char* name;
  void (*fn)(KernelRuntimeContext&, Span<EValue*>);
};

const Entry kEntries[] = {
    {"cortex_m::quantize_per_tensor.out", quantize_per_tensor_out},
    {"cortex_m::dequantize_per_tensor.out", dequantize_per_tensor_out},
    {"cortex_m::quantized_add.out", quantized_add_out},
    {"cortex_m::quantized_mul.out", quantized_mul_out},
    {"cortex_m::quantized_div.out", quantized_div_out},
    {"cortex_m::minimum.out", minimum_out},
    {"cortex_m::maximum.out", maximum_out},
    {"cortex_m::quantized_activation.out", quantized_activation_out},
    {"cortex_m::quantized_linear.out", quantized_linear_out},
    {"cortex_m::quantized_batch_matmul.out", quantized_batch_matmul_out},
    {"cortex_m::softmax.out", softmax_out},
    {"cortex_m::transpose.out", transpose_out},
    {"cortex_m::quantized_max_pool2d.out", quantized_max_pool2d_out},
    {"cortex_m::quantized_conv2d.out", quantized_conv2d_out},
    {"cortex_m::quantized_depthwise_conv2d.out", quantized_depthwise_conv2d_out},
    {"cortex_m::quantized_transpose_conv2d.out", quantized_transpose_conv2d_out},
    {"cortex_m::quantized_avg_pool2d.out", quantized_avg_pool2d_out},
    {"cortex_m::pad.out", pad_out},
};

std::string g_names;

}  // namespace

extern "C" {

/* Registers every kernel above with the ExecuTorch runtime; returns 0 or the runtime's error code. */
int32_t neutron_host_register_cortex_m_kernels() {
  static std::vector<Kernel> kernels;
  if (!kernels.empty()) return 0;
  for (const Entry& e : kEntries) kernels.emplace_back(e.name, e.fn);
  const Error err = executorch::runtime::register_kernels(Span<const Kernel>(kernels.data(), kernels.size()));
  return static_cast<int32_t>(err);
}

/* The registered operator names, one per line (the runtime names a missing cortex_m kernel with it). */
const char* neutron_host_cortex_m_kernel_names() {
  if (g_names.empty())
    for (const Entry& e : kEntries) g_names += std::string(e.name) + "\n";
  return g_names.c_str();
}

}  // extern "C"
