/* GENERATED from wasmrt/vision/imgops.py (SIGNATURES) by python -m kernels_wasm.gen: do not edit.
 * The image exports the test driver's `call` runs: X(name, argument kinds, each argument read). */
#ifndef WRT_IMG_CALLS_H
#define WRT_IMG_CALLS_H

#define WRT_IMG_CALLS(X) \
  X(wrt_img_crop, "pziiiddddddiiiddpzi", P(0), Z(1), I(2), I(3), I(4), D(5), D(6), D(7), D(8), D(9), D(10), I(11), I(12), I(13), D(14), D(15), P(16), Z(17), I(18)) \
  X(wrt_img_resize_mask, "pziipzii", P(0), Z(1), I(2), I(3), P(4), Z(5), I(6), I(7)) \
  X(wrt_img_smooth, "pppzffffff", P(0), P(1), P(2), Z(3), F(4), F(5), F(6), F(7), F(8), F(9)) \
  X(wrt_img_mask_frame, "pziippziiffffff", P(0), Z(1), I(2), I(3), P(4), P(5), Z(6), I(7), I(8), F(9), F(10), F(11), F(12), F(13), F(14)) \
  X(wrt_img_composite, "pzipzpziiipz", P(0), Z(1), I(2), P(3), Z(4), P(5), Z(6), I(7), I(8), I(9), P(10), Z(11)) \
  X(wrt_img_box_blur_scratch, "ii", I(0), I(1)) \
  X(wrt_img_box_blur, "pziiiiipzpz", P(0), Z(1), I(2), I(3), I(4), I(5), I(6), P(7), Z(8), P(9), Z(10))

#endif
