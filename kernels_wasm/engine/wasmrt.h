/* wasmrt C API: load a .wrt model, fill its inputs, run it, read its outputs.
 *
 * The same API is exported by the WebAssembly modules (plus wrt_alloc/wrt_free so the host can copy model bytes
 * into linear memory) and by the native shared library. The model bytes are fully verified by wrt_load and are not
 * referenced afterwards: the caller may free them once wrt_load returns.
 * Errors: a non-zero code plus a message naming the problem (wrt_error_message), kept per thread natively.
 * Inputs live in the model's arena, whose memory the plan may reuse once an input is consumed: write every input
 * before each wrt_run. Output pointers stay valid until the next wrt_run or wrt_release.
 */
#ifndef WASMRT_H
#define WASMRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: GENERATED from python_ref/errors.py by tools/gen_schema.py, do not edit */
enum {
  WRT_OK = 0,              /* no error */
  WRT_ERR_FORMAT = 1,      /* the file is not a valid .wrt model */
  WRT_ERR_UNSUPPORTED = 2, /* a valid model using an op, dtype or attribute this engine cannot run */
  WRT_ERR_NOMEM = 3,       /* out of memory, or beyond the model's memory limit (max_memory) */
  WRT_ERR_INPUT = 4,       /* bad argument or bad input data found while running */
  WRT_ERR_LIMIT = 5,       /* the model is beyond a resource limit (max_work) */
  WRT_ERR_TRAINING = 6,    /* a training step's loss or gradient is not finite */
};
/* end of the generated error codes */

/* dtype codes: those of the .wrt format (schema/wrt.fbs DType) */
enum { WRT_F32 = 0, WRT_F16 = 1, WRT_I8 = 2, WRT_U8 = 3, WRT_I32 = 4, WRT_I64 = 5, WRT_BOOL = 6 };

typedef struct wrt_model wrt_model;

#define WRT_API __attribute__((visibility("default")))

WRT_API wrt_model* wrt_load(const void* data, size_t size, int* err);
/* Load with resource limits (0 = the default): max_memory, the bytes the model may claim in all (arena, packed
 * weights, indirection, tables, scratch, names; default 1 GiB), and max_work, the estimated work of one run in units
 * of one multiply-add of a SIMD GEMM (default 2^33: about 0.1-0.2 s natively, under a second in wasm SIMD; the
 * bundled models need 0.04-2.3 G). Both are checked before anything large is allocated, so a small hostile file
 * cannot make the engine claim gigabytes or run for minutes. */
WRT_API wrt_model* wrt_load_with_limits(const void* data, size_t size, double max_memory, double max_work, int* err);
/* A load that never holds the file's bytes and the packed weights at once (the wasm hosts use it: wasm memory never
 * shrinks, so the peak stays). The host copies the file into a block from wrt_alloc and hands the block over:
 * wrt_load_begin verifies and reads it, checks the plan against the limits, and frees it before anything large is
 * allocated (also on error). Each constant is then fetched again when its op packs it: wrt_load_next returns n > 0
 * when it wants the n bytes at file offset want[1] copied to address want[0] (then call it again), 0 once the model
 * is loaded, or -code on error (then wrt_release the model). The host's copy of the file may go after that. */
WRT_API wrt_model* wrt_load_begin(void* data, size_t size, double max_memory, double max_work, int* err);
WRT_API int wrt_load_next(wrt_model* m, uintptr_t* want);
WRT_API void wrt_release(wrt_model* m);
WRT_API int wrt_run(wrt_model* m);
WRT_API const char* wrt_error_message(void);
WRT_API const char* wrt_target_name(void);    /* the kernel target new models will use */
WRT_API const char* wrt_model_target(const wrt_model* m);

WRT_API int wrt_num_inputs(const wrt_model* m);
WRT_API int wrt_num_outputs(const wrt_model* m);
/* which: 0 = inputs, 1 = outputs */
WRT_API const char* wrt_tensor_name(const wrt_model* m, int which, int i);
WRT_API int wrt_tensor_rank(const wrt_model* m, int which, int i);
WRT_API int wrt_tensor_dim(const wrt_model* m, int which, int i, int axis);
WRT_API int wrt_tensor_dtype(const wrt_model* m, int which, int i);
WRT_API size_t wrt_tensor_bytes(const wrt_model* m, int which, int i);
WRT_API float* wrt_input_ptr(wrt_model* m, int i);
WRT_API const float* wrt_output_ptr(const wrt_model* m, int i);

/* Models converted with run-time input sizes (`wasmrt convert --dynamic`): the bounds of input i's dimension `axis`
 * (both equal the dimension for a fixed one; -1 for a bad index), and a resize of every input at once: dims holds
 * each input's dimensions, input after input (n values in all). The model is re-planned for the new sizes (arena,
 * indirection, tables and scratch; the weights stay), against its memory and work limits; input and output pointers
 * and output shapes change. On any error the model keeps its previous sizes (except out of memory while allocating
 * the new plan, after which it refuses to run). */
WRT_API int wrt_input_dim_min(const wrt_model* m, int i, int axis);
WRT_API int wrt_input_dim_max(const wrt_model* m, int i, int axis);
WRT_API int wrt_resize_inputs(wrt_model* m, const int32_t* dims, int n);

WRT_API size_t wrt_arena_size(const wrt_model* m);
WRT_API size_t wrt_weights_size(const wrt_model* m);
WRT_API size_t wrt_memory_size(const wrt_model* m);   /* every byte the model claimed */
WRT_API double wrt_work_estimate(const wrt_model* m); /* the estimated work of one run (see wrt_load_with_limits) */
/* After a trap (a bug: please report it), the op that was being prepared or run: "operator 3 (CONV_2D 'c1')". */
WRT_API const char* wrt_active_op(void);
WRT_API int wrt_current_op(const wrt_model* m);

/* Threads a model's runs may use (the caller's thread included); returns the number granted: 1 in single-threaded
 * builds, at most the Workers started + 1 in threaded wasm builds. Results do not depend on it. */
WRT_API int wrt_set_threads(wrt_model* m, int n);
#if defined(__wasm__)
/* Threaded wasm builds: a Worker's instance (same module, same shared memory, its own stack) calls this; it never
 * returns. */
WRT_API void wrt_worker_run(void);
#endif

/* Profiling: the ops in execution order. type: "CONV_2D", ...; name: the op's name in the model; kernel: the path
 * that runs it ("dwconv 3x3 rows", "gemm", ...). NULL for an index out of range. */
WRT_API int wrt_num_ops(const wrt_model* m);
WRT_API const char* wrt_op_type(const wrt_model* m, int i);
WRT_API const char* wrt_op_name(const wrt_model* m, int i);
WRT_API const char* wrt_op_kernel(const wrt_model* m, int i);
/* Run ops [begin, end) only (inputs written before op 0, as for wrt_run): hosts time each step with their clock. */
WRT_API int wrt_run_ops(wrt_model* m, int begin, int end);
/* How many ops from op i run as one step (element-wise ops chained into one pass over memory, whose values between
 * the ops are never written); 1 for any other op. A wrt_run_ops range that cuts a chain runs its ops one by one. */
WRT_API int wrt_op_span(const wrt_model* m, int i);
/* Tensor t (its index in the model file) at run time: its address (arena or constant copy; NULL for a bad index or
 * an unused constant) and byte size. With wrt_run_ops, a host runs some ops here and others elsewhere (the WebGPU
 * backend's wasm fallback), copying the tensors that cross in and out. */
WRT_API void* wrt_tensor_data(wrt_model* m, int t);
WRT_API size_t wrt_tensor_nbytes(const wrt_model* m, int t);
#if !defined(__wasm__)
/* Run once, timing every op with the engine's clock: ms[i] for op i < cap; returns the op count, or -error code. */
WRT_API int wrt_run_profiled(wrt_model* m, double* ms, int cap);
#endif

/* Block-sparse weights: which kernels run them (for benchmarks and tests; applies to models loaded afterwards, in
 * the whole process). WRT_SPARSE_AUTO (default): the sparse kernels where the layer's block sparsity reaches the
 * target's measured break-even, dense below it; WRT_SPARSE_ALWAYS: sparse wherever they can; WRT_SPARSE_NEVER: dense
 * (the weights expanded at load). Results are the same within the float tolerance. Returns the previous policy. */
enum { WRT_SPARSE_AUTO = 0, WRT_SPARSE_ALWAYS = 1, WRT_SPARSE_NEVER = 2 };
WRT_API int wrt_set_sparse_policy(int policy);

/* Training (train.c): the steps of python_ref/train on caller memory (in wasm: blocks from wrt_alloc), for hosts that
 * orchestrate a training step. Each returns WRT_OK or an error code with wrt_error_message set (a bad label names
 * its sample). Fully connected layer y = clamp(x w^T + b) over rows x cin -> cout (w [cout, cin]; wt: cin * cout
 * floats of scratch). Backward: dy (overwritten: masked by the clamp, from y) -> dx = dy w, dw = dy^T x,
 * db = sum dy (each optional: NULL skips it). Activation gradient: op is the forward's code (python_ref/opdefs.py:
 * RELU, CLIP with [lo, hi], HARD_SWISH with v its input, SIGMOID and TANH with v their output). The losses
 * are means (softmax cross-entropy on logits [rows, classes], labels int32; mean squared error), their gradients
 * written to dz / dy. SGD: buf starts at zeros; Adam: m and v start at zeros, step counts from 1. */
WRT_API int wrt_train_dense_forward(int rows, int cin, int cout, const float* x, const float* w, const float* b,
                                    float act_min, float act_max, float* wt, float* y);
WRT_API int wrt_train_dense_backward(int rows, int cin, int cout, const float* x, const float* w, const float* y,
                                     float act_min, float act_max, float* dy, float* dx, float* dw, float* db);
WRT_API int wrt_train_grad(int op, size_t n, const float* v, const float* dy, float* dx, float lo, float hi);
WRT_API int wrt_train_softmax_xent(int rows, int classes, const float* z, const int32_t* labels, float* dz,
                                   float* loss);
WRT_API int wrt_train_mse(size_t n, const float* y, const float* t, float* dy, float* loss);
WRT_API int wrt_train_sgd(size_t n, float* p, const float* g, float* buf, float lr, float momentum,
                          float weight_decay);
WRT_API int wrt_train_adam(size_t n, float* p, const float* g, float* m, float* v, float lr, float b1, float b2,
                           float eps, float weight_decay, int step);
/* CONV_2D over NHWC x [n, h, w, cin], weights [cout, kh, kw, cin / groups] (groups == cin: depthwise); geo: oh, ow,
 * kh, kw, sh, sw, dh, dw, pt, pl, groups. The forward writes the patches (cols: n*oh*ow x kh*kw*cin floats, group
 * after group) that its backward reads; wtt: cin/groups*kh*kw x cout floats of scratch. The backward: dw, db, and dx
 * through dcols (same size as cols; both NULL: no dx). Pooling: geo's first 10, then 0 (MAX_POOL_2D: each window's
 * gradient to its first maximal tap) or AVERAGE_POOL_2D's 1 (2: count_include_pad), pb, pr; dy NULL gives y, else
 * dx (x is not read by an average pooling's backward). */
WRT_API int wrt_train_conv_forward(int n, int h, int w, int cin, int cout, const int32_t* geo, const float* x,
                                   const float* wt, const float* b, float act_min, float act_max, float* cols,
                                   float* wtt, float* y);
WRT_API int wrt_train_conv_backward(int n, int h, int w, int cin, int cout, const int32_t* geo, const float* cols,
                                    const float* wt, const float* y, float act_min, float act_max, float* dy,
                                    float* dcols, float* dx, float* dw, float* db);
WRT_API int wrt_train_pool(int n, int h, int w, int c, const int32_t* geo, const float* x, const float* dy,
                           float* out);

/* wasm: bytes of linear memory below the heap (the module's static data and main stack); 0 natively. A loaded model's
 * memory is about wrt_static_size() + wrt_memory_size() of each model (hosts and tests compare the memory with it). */
WRT_API size_t wrt_static_size(void);

/* Dense KxK convolutions (one group, not 1x1): which algorithm runs them (for benchmarks, tests and per-layer
 * timing; applies to models loaded afterwards, in the whole process). WRT_CONV_AUTO (default): the engine's rules;
 * WRT_CONV_IGEMM: indirect GEMM; WRT_CONV_WINO2 / WRT_CONV_WINO4: Winograd F(2x2, 3x3) / F(4x4, 3x3) wherever it
 * applies (3x3, stride 1, dilation 1), indirect GEMM elsewhere. Winograd results are within the tolerance of
 * python_ref/winograd.py, not the same bytes. Returns the previous choice. */
enum { WRT_CONV_AUTO = 0, WRT_CONV_IGEMM = 1, WRT_CONV_WINO2 = 2, WRT_CONV_WINO4 = 3 };
WRT_API int wrt_set_conv_algo(int algo);

/* Per-op algorithm choice. An op with alternatives (dense KxK convolutions: indirect GEMM or Winograd; block-sparse
 * weights, float or int8: sparse or dense kernels) lists them as candidates, index 0 always the dense path (the
 * deterministic choice): their number (0 for an op without alternatives), each one's name ("igemm", "dense",
 * "sparse", "winograd F(2x2,3x3)", "winograd F(4x4,3x3)"; NULL out of range) and the index the load chose (-1 none).
 * wrt_set_choices fixes, for models loaded afterwards in the whole process, op i's candidate index to choices[i]
 * (-1 or an index the op lacks: the engine's rules); n = 0 clears it. Returns 0 or an error code. Ops beyond the
 * vector take wrt_force_choice's index (-1, the default: the rules; returns the previous one). */
WRT_API int wrt_op_num_choices(const wrt_model* m, int i);
WRT_API const char* wrt_op_choice_name(const wrt_model* m, int i, int k);
WRT_API int wrt_op_chosen(const wrt_model* m, int i);
WRT_API int wrt_set_choices(const int32_t* choices, int n);
WRT_API int wrt_force_choice(int k);
/* The measuring procedure's decision, kept here so every host decides alike (hosts time, wasm has no clock):
 * wrt_tune_param(0) timed passes per candidate, (1) warm-up runs, (2) time budget in ms, (3) the margin in percent
 * by which a candidate must beat the rules' choice, (4) the most candidates an op has (-1 beyond); wrt_tune_begin(n)
 * forgets every time and makes room for n ops; wrt_tune_time records one time of op i's candidate k; wrt_tune_median
 * (-1 without any); wrt_tune_pick: op i's fastest candidate (rules_k, the rules' index, unless beaten by the margin,
 * or when nothing was timed). Process-wide, one host thread at a time. */
WRT_API int wrt_tune_param(int which);
WRT_API int wrt_tune_begin(int n_ops);
WRT_API void wrt_tune_time(int op, int k, double ms);
WRT_API double wrt_tune_median(int op, int k);
WRT_API int wrt_tune_pick(int op, int rules_k);
WRT_API void* wrt_alloc(size_t n);
WRT_API void wrt_free(void* p);

/* The vision pipelines' image operations (image.c) on caller memory, bit for bit python_ref/vision's sample.py and
 * segment.py. Images are row-major bytes of 3 or 4 channels (RGB first); masks float32. Each buffer is given with
 * its size in bytes: a buffer too small for the shapes, a bad size or argument is WRT_ERR_INPUT with a message.
 * wrt_img_crop: the rectangle (centre, size w x h, rotation by its cosine and sine) sampled into out_w x out_h RGB:
 *   uint8, or with out_float (v - mean) / div rounded once to float32; zero_border 1: outside pixels are 0, else
 *   the nearest edge pixel.
 * wrt_img_resize_mask: bilinear, pixel centres aligned, edges clamped (segment.py resize_mask).
 * wrt_img_smooth: MediaPipe's temporal smoothing with the polynomial c1..c5 over n floats in each of mask, prev
 *   and out (prev NULL or ratio <= 0: a copy); out may be mask or prev.
 * wrt_img_mask_frame: wrt_img_resize_mask then wrt_img_smooth with prev (a segmenter's frame) in one pass, the same
 *   values; out may be prev.
 * wrt_img_mask_composite: wrt_img_mask_frame, then frame composited by that mask into image (wrt_img_composite's
 *   frame, background and image), each mask row composited as it is made.
 * wrt_img_composite: frame over background by the mask (out: the frame's channels; a 4th byte kept from frame);
 *   bg_channels 0: the background is one colour, background its 3 bytes (r, g, b).
 * wrt_img_box_blur: passes box filters of radius 0..127 (RGB out), with wrt_img_box_blur_scratch bytes of scratch. */
WRT_API int wrt_img_crop(const uint8_t* src, size_t src_bytes, int width, int height, int channels, double cx,
                         double cy, double w, double h, double cos_a, double sin_a, int out_w, int out_h,
                         int zero_border, double mean, double div, void* out, size_t out_bytes, int out_float);
WRT_API int wrt_img_resize_mask(const float* src, size_t src_bytes, int width, int height, float* out,
                                size_t out_bytes, int out_width, int out_height);
WRT_API int wrt_img_smooth(const float* mask, const float* prev, float* out, size_t n, float ratio, float c1,
                           float c2, float c3, float c4, float c5);
WRT_API int wrt_img_mask_frame(const float* src, size_t src_bytes, int width, int height, const float* prev,
                               float* out, size_t out_bytes, int out_width, int out_height, float ratio, float c1,
                               float c2, float c3, float c4, float c5);
WRT_API int wrt_img_mask_composite(const float* src, size_t src_bytes, int width, int height, const float* prev,
                                   float* out, size_t out_bytes, int out_width, int out_height, float ratio,
                                   float c1, float c2, float c3, float c4, float c5, const uint8_t* frame,
                                   size_t frame_bytes, int channels, const uint8_t* background,
                                   size_t background_bytes, int bg_channels, uint8_t* image, size_t image_bytes);
WRT_API int wrt_img_composite(const uint8_t* frame, size_t frame_bytes, int channels, const float* mask,
                              size_t mask_bytes, const uint8_t* background, size_t background_bytes, int bg_channels,
                              int width, int height, uint8_t* out, size_t out_bytes);
WRT_API size_t wrt_img_box_blur_scratch(int width, int height);
WRT_API int wrt_img_box_blur(const uint8_t* frame, size_t frame_bytes, int channels, int width, int height,
                             int radius, int passes, uint8_t* out, size_t out_bytes, void* scratch,
                             size_t scratch_bytes);

#ifdef __cplusplus
}
#endif
#endif
