/* A small FlatBuffers verifier and accessors for the .wrt schema.
 * fb_verify_model walks every table reachable from the root (vtables, uoffsets, vectors, strings, unions) and checks
 * each against the buffer bounds; only then are the accessors used, and they stay bounds-checked regardless. */
#ifndef WRT_FB_H
#define WRT_FB_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  const uint8_t* b;
  size_t n;
} fb_buf;

/* verifies the identifier and the whole structure; returns WRT_OK or WRT_ERR_FORMAT with rt_error set */
int fb_verify_model(fb_buf f);

/* accessors (valid after fb_verify_model); `tab` is a table position, `slot` a field index in declaration order */
size_t fb_root(fb_buf f);
size_t fb_field(fb_buf f, size_t tab, int slot, size_t size);  /* absolute position, 0 when absent */
uint8_t fb_u8(fb_buf f, size_t tab, int slot, uint8_t def);
uint16_t fb_u16(fb_buf f, size_t tab, int slot, uint16_t def);
int32_t fb_i32(fb_buf f, size_t tab, int slot, int32_t def);
uint32_t fb_u32(fb_buf f, size_t tab, int slot, uint32_t def);
int64_t fb_i64(fb_buf f, size_t tab, int slot, int64_t def);
uint64_t fb_u64(fb_buf f, size_t tab, int slot, uint64_t def);
float fb_f32(fb_buf f, size_t tab, int slot, float def);
size_t fb_ref(fb_buf f, size_t tab, int slot);  /* position of the referenced table/vector/string, 0 when absent */
uint32_t fb_vlen(fb_buf f, size_t vec);         /* 0 for vec == 0 */
const uint8_t* fb_vdata(fb_buf f, size_t vec);
size_t fb_vref(fb_buf f, size_t vec, uint32_t i);  /* element i of a vector of tables/strings */
int32_t fb_vi32(fb_buf f, size_t vec, uint32_t i);
float fb_vf32(fb_buf f, size_t vec, uint32_t i);
const char* fb_str(fb_buf f, size_t s);         /* NUL-terminated (verified), "" for s == 0 */

uint32_t fb_rd32(const uint8_t* p);
uint64_t fb_rd64(const uint8_t* p);

#endif
