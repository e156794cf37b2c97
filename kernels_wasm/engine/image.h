/* Shared by the vision pipelines' image operations (image.c: the crops; mask.c: the segmentation's mask and
 * compositing): their limits, argument checks and vector types. Internal to the engine (wasmrt.h declares the API). */
#ifndef WRT_IMAGE_H
#define WRT_IMAGE_H
#include "engine.h"
#ifdef __wasm_simd128__
#include <wasm_simd128.h>


#endif

/* frames up to 2^26 pixels (8192 x 8192), 4 bytes each: every byte count fits a 32-bit size_t */
#define IMG_MAX_SIDE 32768
#define IMG_MAX_PIXELS ((size_t)1 << 26)
/* output columns whose coordinates are computed once per call, on the stack (22 KB at most: the mask's resize) */
#define IMG_CHUNK 512

/* WRT_OK, or WRT_ERR_INPUT with a message naming `who` (the API function) and what is wrong */
int img_bad_shape(const char* who, int w, int h);
int img_bad_buffer(const char* who, const char* name, const void* p, size_t have, size_t need, size_t align);
int img_bad_channels(const char* who, const char* name, int c);

typedef int32_t v4i __attribute__((vector_size(16)));
typedef int32_t v4i_u __attribute__((vector_size(16), aligned(4), may_alias));
typedef uint8_t v4u8 __attribute__((vector_size(4)));
typedef uint8_t v4u8_u __attribute__((vector_size(4), aligned(1), may_alias)); /* four bytes at any address */
typedef float v4f __attribute__((vector_size(16)));
typedef float v4f_u __attribute__((vector_size(16), aligned(4), may_alias)); /* four floats at any float address */
typedef double v2d __attribute__((vector_size(16)));
typedef uint16_t v4u16 __attribute__((vector_size(8)));
typedef uint16_t v16u16 __attribute__((vector_size(32)));
typedef uint8_t v16u8 __attribute__((vector_size(16)));
typedef uint8_t v16u8_u __attribute__((vector_size(16), aligned(1), may_alias));
typedef float v2f_u __attribute__((vector_size(8), aligned(4), may_alias));


static inline int clampi(int64_t v, int n) { return v < 0 ? 0 : v >= n ? n - 1 : (int)v; }

#endif
