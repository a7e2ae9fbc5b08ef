/*
 * Host kernels of the spatial cortex_m::*.out operators (quantized_conv2d, quantized_depthwise_conv2d,
 * quantized_transpose_conv2d, quantized_max_pool2d, quantized_avg_pool2d, pad) that ExecuTorch's Cortex-M backend emits for imxrt700cm, with
 * the arithmetic of the backend's Python reference implementations. Registered by cortex_m_host_kernels.cpp.
 */

#include "cortex_m_kernels.h"

namespace executorch_neutron_cortex_m {

void quantized_max_pool2d_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const char* op = "cortex_m::quantized_max_pool2d.out";
  const Tensor& in = stack[0]->toTensor();
  ArrayRef<int64_t> kernel = stack[1]->toIntList(), stride = stack[2]->toIntList(), pad = stack[3]->toIntList();
  ArrayRef<int64_t> dilation = stack[4]->toIntList();
  const bool ceil_mode = stack[5]->toBool();
  const int64_t lo = stack[8]->toInt(), hi = stack[9]->toInt();
  Tensor& out = out_of(stack);
  auto at = [](ArrayRef<int64_t> v, size_t i) { return v.size() == 1 ? v[0] : v[i]; };
  if (!check(ctx, in.dim() == 4 && out.dim() == 4 && in.scalar_type() == ScalarType::Char && !ceil_mode &&
                      at(dilation, 0) == 1 && at(dilation, 1) == 1 && stack[6]->toInt() == stack[7]->toInt(),
             op, "expects 4D int8 input, dilation 1, ceil_mode False, equal input/output zero points"))
    return;
  const int64_t kh = at(kernel, 0), kw = at(kernel, 1), sh = at(stride, 0), sw = at(stride, 1);
  const int64_t ph = at(pad, 0), pw = at(pad, 1), H = in.size(2), W = in.size(3);
  const std::vector<int64_t> shape = shape_of(out);
  const Indexer o(out, shape);
  const Indexer* const ix[1] = {&o};
  const int8_t* x = in.const_data_ptr<int8_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  const auto s = in.strides();
  std::vector<int64_t> idx(4, 0);
  int64_t n_done = 0;
  for_each_element(shape, ix, [&](const int64_t* off) {
    int64_t rem = n_done++;
    for (int d = 3; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    int32_t best = -129;
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t h = idx[2] * sh - ph + i, w = idx[3] * sw - pw + j;
        if (h < 0 || h >= H || w < 0 || w >= W) continue;
        best = std::max<int32_t>(best, x[idx[0] * s[0] + idx[1] * s[1] + h * s[2] + w * s[3]]);
      }
    y[off[0]] = static_cast<int8_t>(clamp_i32(best, lo, hi));
  });
}

// ------------------------------------------------------------------------------------------------ convolution

/* Shared by quantized_conv2d (weight [O, kH, kW, I/groups]) and quantized_depthwise_conv2d (weight
 * [1, kH, kW, O], O = C * depth_multiplier): int32 accumulation of (x + input_offset) * w over the window,
 * padding contributes 0, + bias, per-channel arm_nn_requantize, + output_offset, clamp. */
void conv_common(KernelRuntimeContext& ctx, Span<EValue*> stack, bool depthwise, const char* op) {
  const Tensor& in = stack[0]->toTensor();
  const Tensor& w = stack[1]->toTensor();
  const bool has_bias = !stack[2]->isNone();
  ArrayRef<int64_t> stride = stack[3]->toIntList(), pad = stack[4]->toIntList(), dil = stack[5]->toIntList();
  const size_t k = depthwise ? 7 : 6;  // depthwise has depth_multiplier before the offsets
  const int64_t in_off = stack[k]->toInt(), out_off = stack[k + 1]->toInt();
  const Tensor& mults = stack[k + 2]->toTensor();
  const Tensor& shifts = stack[k + 3]->toTensor();
  const int64_t lo = stack[k + 4]->toInt(), hi = stack[k + 5]->toInt();
  Tensor& out = out_of(stack);
  if (!check(ctx, in.dim() == 4 && w.dim() == 4 && out.dim() == 4 && in.scalar_type() == ScalarType::Char &&
                      w.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char &&
                      mults.scalar_type() == ScalarType::Int && shifts.scalar_type() == ScalarType::Int &&
                      stride.size() == 2 && pad.size() == 2 && dil.size() == 2,
             op, "expects 4D int8 input/weight/output, int32 requantization tensors, 2D stride/padding/dilation"))
    return;
  const int64_t N = out.size(0), O = out.size(1), OH = out.size(2), OW = out.size(3);
  const int64_t C = in.size(1), H = in.size(2), W = in.size(3), KH = w.size(1), KW = w.size(2);
  const int64_t per_group_in = depthwise ? 1 : w.size(3);
  const int64_t groups = depthwise ? C : C / per_group_in;
  const int64_t out_per_group = O / groups;
  if (!check(ctx, (depthwise ? w.size(3) == O : w.size(0) == O) && mults.numel() >= O && shifts.numel() >= O &&
                      groups > 0 && O % groups == 0, op, "weight / output channels / requantization sizes"))
    return;
  const int32_t* bias = has_bias ? stack[2]->toTensor().const_data_ptr<int32_t>() : nullptr;
  const int8_t* x = in.const_data_ptr<int8_t>();
  const int8_t* wt = w.const_data_ptr<int8_t>();
  const auto ws = w.strides();
  const int32_t* m = mults.const_data_ptr<int32_t>();
  const int32_t* sh = shifts.const_data_ptr<int32_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      const int64_t g = o / out_per_group;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t acc = bias != nullptr ? bias[o] : 0;
          for (int64_t i = 0; i < KH; ++i) {
            const int64_t h = oh * stride[0] - pad[0] + i * dil[0];
            if (h < 0 || h >= H) continue;
            for (int64_t j = 0; j < KW; ++j) {
              const int64_t ww = ow * stride[1] - pad[1] + j * dil[1];
              if (ww < 0 || ww >= W) continue;
              for (int64_t ci = 0; ci < per_group_in; ++ci) {
                const int64_t c = g * per_group_in + ci;
                const int64_t woff = depthwise ? i * ws[1] + j * ws[2] + o * ws[3]
                                               : o * ws[0] + i * ws[1] + j * ws[2] + ci * ws[3];
                acc += (static_cast<int64_t>(x[at4(in, n, c, h, ww)]) + in_off) * wt[woff];
              }
            }
          }
          const int32_t q = requantize(static_cast<int32_t>(acc), m[o], sh[o]);
          y[at4(out, n, o, oh, ow)] = static_cast<int8_t>(clamp_i32(static_cast<int64_t>(q) + out_off, lo, hi));
        }
    }
}

void quantized_conv2d_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  conv_common(ctx, stack, false, "cortex_m::quantized_conv2d.out");
}

void quantized_depthwise_conv2d_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  conv_common(ctx, stack, true, "cortex_m::quantized_depthwise_conv2d.out");
}

void quantized_transpose_conv2d_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  // weight [O, kH, kW, I] (groups 1, as the reference), stack: input, weight, bias, stride, padding,
  // output_padding, dilation, input_offset, output_offset, multipliers, shifts, act min, act max, 2 scratches
  const char* op = "cortex_m::quantized_transpose_conv2d.out";
  const Tensor& in = stack[0]->toTensor();
  const Tensor& w = stack[1]->toTensor();
  const bool has_bias = !stack[2]->isNone();
  ArrayRef<int64_t> stride = stack[3]->toIntList(), pad = stack[4]->toIntList(), dil = stack[6]->toIntList();
  const int64_t in_off = stack[7]->toInt(), out_off = stack[8]->toInt();
  const Tensor& mults = stack[9]->toTensor();
  const Tensor& shifts = stack[10]->toTensor();
  const int64_t lo = stack[11]->toInt(), hi = stack[12]->toInt();
  Tensor& out = out_of(stack);
  if (!check(ctx, in.dim() == 4 && w.dim() == 4 && out.dim() == 4 && in.scalar_type() == ScalarType::Char &&
                      w.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char &&
                      mults.scalar_type() == ScalarType::Int && shifts.scalar_type() == ScalarType::Int &&
                      stride.size() == 2 && pad.size() == 2 && dil.size() == 2 && w.size(3) == in.size(1) &&
                      w.size(0) == out.size(1) && mults.numel() >= out.size(1) && shifts.numel() >= out.size(1),
             op, "expects 4D int8 tensors, weight [O, kH, kW, I] with groups 1, per-channel requantization"))
    return;
  const int64_t N = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3);
  const int64_t O = out.size(1), OH = out.size(2), OW = out.size(3), KH = w.size(1), KW = w.size(2);
  const int32_t* bias = has_bias ? stack[2]->toTensor().const_data_ptr<int32_t>() : nullptr;
  const int8_t* x = in.const_data_ptr<int8_t>();
  const int8_t* wt = w.const_data_ptr<int8_t>();
  const auto ws = w.strides();
  const int32_t* m = mults.const_data_ptr<int32_t>();
  const int32_t* sh = shifts.const_data_ptr<int32_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  std::vector<int64_t> acc(static_cast<size_t>(O * OH * OW));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < O; ++o)
      std::fill(acc.begin() + o * OH * OW, acc.begin() + (o + 1) * OH * OW, bias != nullptr ? bias[o] : 0);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw) {
          const int64_t xv = static_cast<int64_t>(x[at4(in, n, c, ih, iw)]) + in_off;
          for (int64_t i = 0; i < KH; ++i) {
            const int64_t oh = ih * stride[0] - pad[0] + i * dil[0];
            if (oh < 0 || oh >= OH) continue;
            for (int64_t j = 0; j < KW; ++j) {
              const int64_t ow = iw * stride[1] - pad[1] + j * dil[1];
              if (ow < 0 || ow >= OW) continue;
              for (int64_t o = 0; o < O; ++o)
                acc[(o * OH + oh) * OW + ow] += xv * wt[o * ws[0] + i * ws[1] + j * ws[2] + c * ws[3]];
            }
          }
        }
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int32_t q = requantize(static_cast<int32_t>(acc[(o * OH + oh) * OW + ow]), m[o], sh[o]);
          y[at4(out, n, o, oh, ow)] = static_cast<int8_t>(clamp_i32(static_cast<int64_t>(q) + out_off, lo, hi));
        }
  }
}

// ------------------------------------------------------------------------------------------------ avg pool, pad

void quantized_avg_pool2d_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const char* op = "cortex_m::quantized_avg_pool2d.out";
  const Tensor& in = stack[0]->toTensor();
  ArrayRef<int64_t> kernel = stack[1]->toIntList(), stride = stack[2]->toIntList(), pad = stack[3]->toIntList();
  const bool ceil_mode = stack[4]->toBool();
  const int64_t zp = stack[5]->toInt(), mult = stack[6]->toInt(), shift = stack[7]->toInt();
  Tensor& out = out_of(stack);
  auto at = [](ArrayRef<int64_t> v, size_t i) { return v.size() == 1 ? v[0] : v[i]; };
  if (!check(ctx, in.dim() == 4 && out.dim() == 4 && in.scalar_type() == ScalarType::Char &&
                      out.scalar_type() == ScalarType::Char && !ceil_mode,
             op, "expects 4D int8 input/output and ceil_mode False"))
    return;
  // the reference dequantizes with the fixed-point scale, pools in float (padding excluded), requantizes
  const double scale_d = static_cast<double>(mult) * std::ldexp(1.0, static_cast<int>(shift)) / 2147483648.0;
  const float scale = static_cast<float>(scale_d);
  const int64_t kh = at(kernel, 0), kw = at(kernel, 1), sh = at(stride, 0), sw = at(stride, 1);
  const int64_t ph = at(pad, 0), pw = at(pad, 1), H = in.size(2), W = in.size(3);
  const int8_t* x = in.const_data_ptr<int8_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  for (int64_t n = 0; n < out.size(0); ++n)
    for (int64_t c = 0; c < out.size(1); ++c)
      for (int64_t oh = 0; oh < out.size(2); ++oh)
        for (int64_t ow = 0; ow < out.size(3); ++ow) {
          const int64_t h0 = std::max<int64_t>(oh * sh - ph, 0), h1 = std::min<int64_t>(oh * sh - ph + kh, H);
          const int64_t w0 = std::max<int64_t>(ow * sw - pw, 0), w1 = std::min<int64_t>(ow * sw - pw + kw, W);
          float sum = 0.0f;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w)
              sum += (static_cast<float>(x[at4(in, n, c, h, w)]) - static_cast<float>(zp)) * scale;
          const float avg = sum / static_cast<float>((h1 - h0) * (w1 - w0));
          const float q = std::nearbyint(avg / scale) + static_cast<float>(zp);
          y[at4(out, n, c, oh, ow)] = static_cast<int8_t>(std::min(std::max(q, -128.0f), 127.0f));
        }
}

void pad_out(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  const Tensor& in = stack[0]->toTensor();
  ArrayRef<int64_t> pre = stack[1]->toIntList(), post = stack[2]->toIntList();
  const int64_t value = stack[3]->toInt();
  Tensor& out = out_of(stack);
  if (!check(ctx, in.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char &&
                      in.dim() <= 4 && out.dim() == in.dim() && pre.size() == 4 && post.size() == 4,
             "cortex_m::pad.out", "expects int8 tensors of rank <= 4 and 4 pre/post pads"))
    return;
  // pads are given in physical order: NHWC for a channels-last input (the reference maps them back)
  static const int kInv[4] = {0, 3, 1, 2};
  int64_t lpre[4];  // the post pads only size the output, which memory planning already did
  for (int i = 0; i < 4; ++i) lpre[i] = is_channels_last(in) ? pre[kInv[i]] : pre[i];
  const std::vector<int64_t> shape = shape_of(out);
  const int64_t offset = 4 - in.dim();
  const Indexer o(out, shape);
  const Indexer* const ix[1] = {&o};
  const int8_t* x = in.const_data_ptr<int8_t>();
  int8_t* y = out.mutable_data_ptr<int8_t>();
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t done = 0;
  for_each_element(shape, ix, [&](const int64_t* off) {
    int64_t rem = done++;
    for (size_t d = shape.size(); d-- > 0;) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    int64_t src = 0;
    bool inside = true;
    for (size_t d = 0; d < shape.size() && inside; ++d) {
      const int64_t i = idx[d] - lpre[offset + d];
      inside = i >= 0 && i < in.size(d);
      src += i * in.strides()[d];
    }
    y[off[0]] = inside ? x[src] : static_cast<int8_t>(value);
  });
}

}  // namespace executorch_neutron_cortex_m
