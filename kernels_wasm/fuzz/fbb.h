/* A small FlatBuffers builder (back to front, as the reference builder writes), for the fuzz harness: it lets the
 * harness write any .wrt a recipe describes, including files no converter would write (one table referenced from
 * many places, shared strings, vectors of a quarter million offsets), while every file stays well formed. */
#ifndef WRT_FUZZ_FBB_H
#define WRT_FUZZ_FBB_H

#include <stddef.h>
#include <stdint.h>

#define FBB_MAX_SLOTS 16

typedef uint32_t fbb_ref; /* an object: its distance from the end of the buffer */

typedef struct {
  uint8_t* buf; /* the data lives in buf[cap - used, cap) */
  size_t cap, used, minalign, limit;
  int failed;   /* out of memory or over `limit`: every later call is a no-op, fbb_finish returns NULL */
  size_t tab_start, slot_at[FBB_MAX_SLOTS];
  int in_table;
} fbb;

void fbb_init(fbb* b, size_t limit);
void fbb_free(fbb* b);
fbb_ref fbb_string(fbb* b, const char* s, size_t n);
/* a vector of n scalars of `esize` bytes (little-endian host assumed), data start aligned to `align` */
fbb_ref fbb_vec(fbb* b, const void* data, size_t esize, size_t n, size_t align);
/* a vector of n scalars, each written by fill(ctx, i, dst) */
fbb_ref fbb_vec_fill(fbb* b, size_t esize, size_t n, size_t align, void (*fill)(void* ctx, size_t i, uint8_t* dst),
                     void* ctx);
/* n elements of esize bytes filled as fbb_vec_fill, as a [ubyte] vector (length in bytes: Buffer.data); elements
 * from FBB_FILL_PERIOD on repeat the first ones, so a megabyte constant costs a copy, not a million fill calls */
#define FBB_FILL_PERIOD 1024
fbb_ref fbb_bytes_fill(fbb* b, size_t esize, size_t n, size_t align,
                       void (*fill)(void* ctx, size_t i, uint8_t* dst), void* ctx);
fbb_ref fbb_vec_refs(fbb* b, const fbb_ref* refs, size_t n);
void fbb_table(fbb* b);
void fbb_add(fbb* b, int slot, const void* v, size_t size); /* a scalar field */
void fbb_add_ref(fbb* b, int slot, fbb_ref r);              /* a table, vector or string field */
fbb_ref fbb_end(fbb* b);
/* root offset + file identifier; returns the start of the finished file (inside b->buf) and its size */
const uint8_t* fbb_finish(fbb* b, fbb_ref root, const char ident[4], size_t* size);

#endif
