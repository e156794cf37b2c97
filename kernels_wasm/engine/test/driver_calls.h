/* GENERATED from wasmrt/train/engine_steps.py and wasmrt/vision/imgops.py (SIGNATURES)
 * by python -m kernels_wasm.gen: do not edit. The exports the test driver's `call` runs:
 * X(name, argument kinds, each argument read). */
#ifndef WRT_DRIVER_CALLS_H
#define WRT_DRIVER_CALLS_H

#define WRT_TRAIN_CALLS(X) \
  X(wrt_train_dense_forward, "iiiaaaffaa", I(0), I(1), I(2), A(3), A(4), A(5), F(6), F(7), A(8), A(9)) \
  X(wrt_train_dense_backward, "iiiaaaffaaaa", I(0), I(1), I(2), A(3), A(4), A(5), F(6), F(7), A(8), A(9), A(10), A(11)) \
  X(wrt_train_grad, "izaaaff", I(0), Z(1), A(2), A(3), A(4), F(5), F(6)) \
  X(wrt_train_softmax_xent, "iiaaaa", I(0), I(1), A(2), A(3), A(4), A(5)) \
  X(wrt_train_mse, "zaaaa", Z(0), A(1), A(2), A(3), A(4)) \
  X(wrt_train_sgd, "zaaafff", Z(0), A(1), A(2), A(3), F(4), F(5), F(6)) \
  X(wrt_train_adam, "zaaaafffffi", Z(0), A(1), A(2), A(3), A(4), F(5), F(6), F(7), F(8), F(9), I(10)) \
  X(wrt_train_conv_forward, "iiiiiaaaaffaaa", I(0), I(1), I(2), I(3), I(4), A(5), A(6), A(7), A(8), F(9), F(10), A(11), A(12), A(13)) \
  X(wrt_train_conv_backward, "iiiiiaaaaffaaaaa", I(0), I(1), I(2), I(3), I(4), A(5), A(6), A(7), A(8), F(9), F(10), A(11), A(12), A(13), A(14), A(15)) \
  X(wrt_train_pool, "iiiiaaaa", I(0), I(1), I(2), I(3), A(4), A(5), A(6), A(7))

#define WRT_IMG_CALLS(X) \
  X(wrt_img_crop, "pziiiddddddiiiddpzi", P(0), Z(1), I(2), I(3), I(4), D(5), D(6), D(7), D(8), D(9), D(10), I(11), I(12), I(13), D(14), D(15), P(16), Z(17), I(18)) \
  X(wrt_img_resize_mask, "pziipzii", P(0), Z(1), I(2), I(3), P(4), Z(5), I(6), I(7)) \
  X(wrt_img_smooth, "pppzffffff", P(0), P(1), P(2), Z(3), F(4), F(5), F(6), F(7), F(8), F(9)) \
  X(wrt_img_mask_frame, "pziippziiffffff", P(0), Z(1), I(2), I(3), P(4), P(5), Z(6), I(7), I(8), F(9), F(10), F(11), F(12), F(13), F(14)) \
  X(wrt_img_mask_composite, "pziippziiffffffpzipzipz", P(0), Z(1), I(2), I(3), P(4), P(5), Z(6), I(7), I(8), F(9), F(10), F(11), F(12), F(13), F(14), P(15), Z(16), I(17), P(18), Z(19), I(20), P(21), Z(22)) \
  X(wrt_img_composite, "pzipzpziiipz", P(0), Z(1), I(2), P(3), Z(4), P(5), Z(6), I(7), I(8), I(9), P(10), Z(11)) \
  X(wrt_img_box_blur_scratch, "ii", I(0), I(1)) \
  X(wrt_img_box_blur, "pziiiiipzpz", P(0), Z(1), I(2), I(3), I(4), I(5), I(6), P(7), Z(8), P(9), Z(10))

#endif
