/* See fbb.h. Layout rules are those of the FlatBuffers format: scalars aligned to their size (relative to the end
 * of the buffer, which is padded to the largest alignment used), uoffsets point forward, a table starts with a
 * signed offset back to its vtable. */
#include "fbb.h"

#include <stdlib.h>
#include <string.h>

void fbb_init(fbb* b, size_t limit) {
  memset(b, 0, sizeof *b);
  b->minalign = 4;
  b->limit = limit;
}

void fbb_free(fbb* b) {
  free(b->buf);
  b->buf = 0;
}

static int reserve(fbb* b, size_t n) {
  if (b->failed) return 0;
  if (b->used + n <= b->cap) return 1;
  if (b->used + n > b->limit) {
    b->failed = 1;
    return 0;
  }
  size_t cap = b->cap ? b->cap : 1024;
  while (cap < b->used + n) cap *= 2;
  uint8_t* nb = malloc(cap);
  if (!nb) {
    b->failed = 1;
    return 0;
  }
  if (b->used) memcpy(nb + cap - b->used, b->buf + b->cap - b->used, b->used);
  free(b->buf);
  b->buf = nb;
  b->cap = cap;
  return 1;
}

static uint8_t* push(fbb* b, size_t n) {
  if (!n || !reserve(b, n)) return 0;
  b->used += n;
  return b->buf + b->cap - b->used;
}

/* pad so that `extra` more bytes end aligned to `align` */
static void prep(fbb* b, size_t align, size_t extra) {
  if (align > b->minalign) b->minalign = align;
  size_t pad = (size_t)(-(b->used + extra)) & (align - 1);
  uint8_t* p = push(b, pad);
  if (p) memset(p, 0, pad);
}

static void put32(uint8_t* p, uint32_t v) { memcpy(p, &v, 4); }

static void push_uoffset(fbb* b, fbb_ref r) {
  prep(b, 4, 0);
  uint8_t* p = push(b, 4);
  if (p) put32(p, (uint32_t)(b->used - r));
}

fbb_ref fbb_string(fbb* b, const char* s, size_t n) {
  prep(b, 4, n + 1);
  uint8_t* p = push(b, n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = 0;
  }
  p = push(b, 4);
  if (p) put32(p, (uint32_t)n);
  return (fbb_ref)b->used;
}

/* `period` > 0: elements from `period` on repeat the first ones (copied, not generated) */
static fbb_ref vec_fill(fbb* b, size_t esize, size_t n, size_t align, size_t len, size_t period,
                        void (*fill)(void* ctx, size_t i, uint8_t* dst), void* ctx) {
  prep(b, 4, esize * n);
  prep(b, align < esize ? esize : align, esize * n);
  uint8_t* p = push(b, esize * n);
  size_t head = period && period < n ? period : n;
  if (p) {
    for (size_t i = 0; i < head; i++) fill(ctx, i, p + i * esize);
    size_t bytes = esize * n;
    for (size_t done = esize * head; done < bytes; done *= 2) memcpy(p + done, p, bytes - done < done ? bytes - done : done);
  }
  p = push(b, 4);
  if (p) put32(p, (uint32_t)len);
  return (fbb_ref)b->used;
}

fbb_ref fbb_vec_fill(fbb* b, size_t esize, size_t n, size_t align,
                     void (*fill)(void* ctx, size_t i, uint8_t* dst), void* ctx) {
  return vec_fill(b, esize, n, align, n, 0, fill, ctx);
}

fbb_ref fbb_bytes_fill(fbb* b, size_t esize, size_t n, size_t align,
                       void (*fill)(void* ctx, size_t i, uint8_t* dst), void* ctx) {
  return vec_fill(b, esize, n, align, esize * n, FBB_FILL_PERIOD, fill, ctx);
}

typedef struct {
  const uint8_t* src;
  size_t esize;
} copy_ctx;

static void copy_fill(void* ctx, size_t i, uint8_t* dst) {
  copy_ctx* c = ctx;
  memcpy(dst, c->src + i * c->esize, c->esize);
}

fbb_ref fbb_vec(fbb* b, const void* data, size_t esize, size_t n, size_t align) {
  copy_ctx c = {data, esize};
  return fbb_vec_fill(b, esize, n, align, copy_fill, &c);
}

fbb_ref fbb_vec_refs(fbb* b, const fbb_ref* refs, size_t n) {
  prep(b, 4, 4 * n);
  for (size_t i = n; i-- > 0;) push_uoffset(b, refs[i]);
  uint8_t* p = push(b, 4);
  if (p) put32(p, (uint32_t)n);
  return (fbb_ref)b->used;
}

void fbb_table(fbb* b) {
  b->in_table = 1;
  b->tab_start = b->used;
  memset(b->slot_at, 0, sizeof b->slot_at);
}

void fbb_add(fbb* b, int slot, const void* v, size_t size) {
  prep(b, size, 0);
  uint8_t* p = push(b, size);
  if (p) memcpy(p, v, size);
  b->slot_at[slot] = b->used;
}

void fbb_add_ref(fbb* b, int slot, fbb_ref r) {
  push_uoffset(b, r);
  b->slot_at[slot] = b->used;
}

fbb_ref fbb_end(fbb* b) {
  prep(b, 4, 0);
  uint8_t* soff = push(b, 4);
  size_t tab = b->used;
  int nslots = 0;
  for (int s = 0; s < FBB_MAX_SLOTS; s++)
    if (b->slot_at[s]) nslots = s + 1;
  uint16_t vt[2 + FBB_MAX_SLOTS];
  vt[0] = (uint16_t)(4 + 2 * nslots);
  vt[1] = (uint16_t)(tab - b->tab_start);
  for (int s = 0; s < nslots; s++) vt[2 + s] = b->slot_at[s] ? (uint16_t)(tab - b->slot_at[s]) : 0;
  uint8_t* p = push(b, 2 * (size_t)(2 + nslots));
  if (p && soff) {
    soff = b->buf + b->cap - tab; /* the buffer may have moved */
    memcpy(p, vt, 2 * (size_t)(2 + nslots));
    put32(soff, (uint32_t)(b->used - tab));
  }
  b->in_table = 0;
  return (fbb_ref)tab;
}

const uint8_t* fbb_finish(fbb* b, fbb_ref root, const char ident[4], size_t* size) {
  prep(b, b->minalign, 8);
  uint8_t* p = push(b, 4);
  if (p) memcpy(p, ident, 4);
  push_uoffset(b, root);
  if (b->failed) return 0;
  *size = b->used;
  return b->buf + b->cap - b->used;
}
