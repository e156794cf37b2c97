#if !defined(__wasm__)
#define _DEFAULT_SOURCE 1
#include <sys/mman.h>
#endif
/* Memory. Natively: libc malloc/calloc (so ASan and the system allocator see everything), and rt_map for a model's
 * planned memory in one huge-page mapping (not under ASan; WRT_NO_POOL in the environment turns it off, to compare).
 * In wasm: a first-fit
 * free-list allocator over memory.grow that coalesces freed neighbours, so a load/run/release cycle returns every
 * byte for the next one (wasm memory never shrinks; an allocator that only grows would "leak" across model reloads).
 * rt_calloc clears what it hands out, so no model sees bytes another model (or the host) left behind; it touches
 * only memory that was used before (fresh wasm pages and large native blocks are already zero). */
#include "rt.h"

#if defined(__wasm__)

/* The compiler may emit calls to these for struct copies and zero-fills. */
void* memcpy(void* dst, const void* src, size_t n);
void* memmove(void* dst, const void* src, size_t n);
void* memset(void* dst, int c, size_t n);
int memcmp(const void* a, const void* b, size_t n);

void* memmove(void* dst, const void* src, size_t n) {
  unsigned char* d = dst;
  const unsigned char* s = src;
  if (d == s || n == 0) return dst;
  if (d < s || d >= s + n) {
    /* word copies when both are aligned alike: this is the weight-packing and concat path */
    if ((((uintptr_t)d ^ (uintptr_t)s) & 3) == 0) {
      while (n && ((uintptr_t)d & 3)) { *d++ = *s++; n--; }
      uint32_t* dw = (uint32_t*)(void*)d;
      const uint32_t* sw = (const uint32_t*)(const void*)s;
      for (; n >= 16; n -= 16) { dw[0] = sw[0]; dw[1] = sw[1]; dw[2] = sw[2]; dw[3] = sw[3]; dw += 4; sw += 4; }
      for (; n >= 4; n -= 4) *dw++ = *sw++;
      d = (unsigned char*)dw;
      s = (const unsigned char*)sw;
    }
    while (n--) *d++ = *s++;
  } else {
    d += n;
    s += n;
    while (n--) *--d = *--s;
  }
  return dst;
}

void* memcpy(void* dst, const void* src, size_t n) { return memmove(dst, src, n); }

void* memset(void* dst, int c, size_t n) {
  unsigned char* d = dst;
  while (n && ((uintptr_t)d & 3)) { *d++ = (unsigned char)c; n--; }
  uint32_t v = (unsigned char)c * 0x01010101u;
  uint32_t* dw = (uint32_t*)(void*)d;
  for (; n >= 4; n -= 4) *dw++ = v;
  d = (unsigned char*)dw;
  while (n--) *d++ = (unsigned char)c;
  return dst;
}

int memcmp(const void* a, const void* b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (; n; n--, x++, y++)
    if (*x != *y) return *x < *y ? -1 : 1;
  return 0;
}

/* Block layout: a 64-byte header, then the payload; block sizes are multiples of 64 and blocks are contiguous from
 * heap_start to heap_end. Free blocks form a list sorted by address so neighbours coalesce on free. */
typedef struct blk {
  size_t size;       /* whole block, header included */
  size_t free;
  struct blk* next;  /* next free block (free blocks only) */
} blk;

#define HDR 64
#define PAGE 65536

extern unsigned char __heap_base;
static uintptr_t heap_start, heap_end;
static blk* free_list;

static int grow_to(uintptr_t end) {
  uintptr_t have = (uintptr_t)__builtin_wasm_memory_size(0) * PAGE;
  if (end <= have) return 1;
  uintptr_t pages = (end - have + PAGE - 1) / PAGE;
  return __builtin_wasm_memory_grow(0, pages) != (size_t)-1;
}

static void insert_free(blk* b) {
  blk** pp = &free_list;
  while (*pp && *pp < b) pp = &(*pp)->next;
  b->free = 1;
  b->next = *pp;
  *pp = b;
  if (b->next && (uintptr_t)b + b->size == (uintptr_t)b->next) { /* merge with the following block */
    b->size += b->next->size;
    b->next = b->next->next;
  }
  if (pp != &free_list) { /* merge with the preceding block */
    blk* prev = (blk*)((char*)pp - offsetof(blk, next));
    if ((uintptr_t)prev + prev->size == (uintptr_t)b) {
      prev->size += b->size;
      prev->next = b->next;
    }
  }
}

static void* alloc_block(size_t n, int zero) {
  if (!heap_start) heap_start = heap_end = ((uintptr_t)&__heap_base + WRT_ALIGN - 1) & ~(uintptr_t)(WRT_ALIGN - 1);
  if (n > ((size_t)1 << 31)) return 0;
  size_t need = (n + HDR + WRT_ALIGN - 1) & ~(size_t)(WRT_ALIGN - 1);
  for (blk** pp = &free_list; *pp; pp = &(*pp)->next) {
    blk* b = *pp;
    if (b->size < need) continue;
    if (b->size - need >= 2 * HDR) { /* split: keep the tail free */
      blk* rest = (blk*)((char*)b + need);
      rest->size = b->size - need;
      rest->free = 1;
      rest->next = b->next;
      *pp = rest;
      b->size = need;
    } else {
      *pp = b->next;
    }
    b->free = 0;
    if (zero) rt_zero((char*)b + HDR, n);
    return (char*)b + HDR;
  }
  /* nothing fits: extend the heap, absorbing a free block that ends at the top */
  blk* last = 0;
  blk** lastp = 0;
  for (blk** pp = &free_list; *pp; pp = &(*pp)->next) { last = *pp; lastp = pp; }
  uintptr_t start = heap_end;
  if (last && (uintptr_t)last + last->size == heap_end) start = (uintptr_t)last;
  if (start + need < start || !grow_to(start + need)) return 0;
  uintptr_t fresh = heap_end; /* pages past the old heap end were never used: memory.grow gives zeros */
  if (start != heap_end) *lastp = last->next;
  heap_end = start + need;
  blk* b = (blk*)start;
  b->size = need;
  b->free = 0;
  b->next = 0;
  if (zero && fresh > start + HDR) rt_zero((char*)b + HDR, fresh - (start + HDR) < n ? fresh - (start + HDR) : n);
  return (char*)b + HDR;
}

void* rt_alloc(size_t n) { return alloc_block(n, 0); }
void* rt_calloc(size_t n) { return alloc_block(n, 1); }

void rt_free(void* p) {
  if (!p) return;
  blk* b = (blk*)((char*)p - HDR);
  if (b->free) return; /* double free: ignore rather than corrupt the list */
  insert_free(b);
}

const char* rt_getenv(const char* name) {
  (void)name;
  return 0;
}

#else /* native */

#include <stdlib.h>
#include <string.h>

/* 64-byte aligned blocks cut from malloc/calloc blocks; the distance to the block start sits just before them */
static void* aligned(unsigned char* raw) {
  if (!raw) return 0;
  unsigned char* p = (unsigned char*)(((uintptr_t)raw + sizeof(size_t) + WRT_ALIGN - 1) & ~(uintptr_t)(WRT_ALIGN - 1));
  size_t off = (size_t)(p - raw);
  memcpy(p - sizeof(size_t), &off, sizeof off);
  return p;
}

void* rt_alloc(size_t n) { return n > ((size_t)1 << 40) ? 0 : aligned(malloc(n + WRT_ALIGN + sizeof(size_t))); }
void* rt_calloc(size_t n) { return n > ((size_t)1 << 40) ? 0 : aligned(calloc(1, n + WRT_ALIGN + sizeof(size_t))); }

void rt_free(void* p) {
  if (!p) return;
  size_t off;
  memcpy(&off, (unsigned char*)p - sizeof(size_t), sizeof off);
  free((unsigned char*)p - off);
}

const char* rt_getenv(const char* name) { return getenv(name); }

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WRT_NO_POOL 1
#endif
#endif
#define HUGE_PAGE ((size_t)2 << 20)

void* rt_map(size_t n) {
#if defined(WRT_NO_POOL) || defined(__SANITIZE_ADDRESS__)
  (void)n;
  return 0;
#else
  if (!n || n > ((size_t)1 << 40) || rt_getenv("WRT_NO_POOL")) return 0;
  size_t len = (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  unsigned char* raw = mmap(0, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return 0;
  unsigned char* p = (unsigned char*)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
  size_t head = (size_t)(p - raw); /* < HUGE_PAGE: keep [p, p + len), unmap the rest */
  if (head) munmap(raw, head);
  munmap(p + len, HUGE_PAGE - head);
  madvise(p, len, MADV_HUGEPAGE);
  return p;
#endif
}

void rt_unmap(void* p, size_t n) {
  if (p) munmap(p, (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
}

#endif

void rt_copy(void* dst, const void* src, size_t n) {
  if (n) __builtin_memmove(dst, src, n);
}

void rt_zero(void* dst, size_t n) {
  if (n) __builtin_memset(dst, 0, n);
}

void* wrt_alloc(size_t n) { return rt_alloc(n); }
void wrt_free(void* p) { rt_free(p); }

size_t wrt_static_size(void) {
#if defined(__wasm__)
  return (size_t)&__heap_base; /* the module's data and the main stack lie below the heap */
#else
  return 0;
#endif
}
