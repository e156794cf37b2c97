/* Parallel regions: rt_parallel runs fn(ctx, t) for every task t < n on the calling thread and up to threads - 1
 * pool threads, and returns when all are done.
 *
 * Natively the pool is pthreads, started on demand. In the threaded wasm builds (WRT_THREADS) the host starts
 * Workers that instantiate the same module on the shared memory, give each its own stack, and call
 * wrt_worker_run(), which waits for regions with memory.atomic.wait32; the calling (main) thread never blocks, it
 * works and then spins, as browsers forbid waiting on a page's main thread. Single-threaded builds run every region
 * inline.
 *
 * Tasks are fixed units chosen by the op from its shape, never from the thread count, and each task writes its own
 * outputs with the serial code's arithmetic: results are the same bytes whatever the number of threads, and
 * whichever thread takes a task. A region invites a fixed set of pool threads and waits until each has left it, so
 * no thread can wander into the next region with the last one's arguments. */
#include "rt.h"

#if defined(WRT_THREADS)

#include <stdatomic.h>

#define MAX_POOL 63

static struct {
  rt_task_fn fn;
  void* ctx;
  size_t n;
  int invited;                /* pool threads 0 .. invited-1 take part in this region */
  atomic_size_t next, done;   /* next task to take; tasks finished */
  atomic_int left;            /* invited pool threads that have left the region */
  atomic_uint seq;            /* region generation: pool threads wait for it to change */
} region;

static atomic_int pool_size; /* pool threads ready to take part */

static void take_tasks(void) {
  for (size_t t; (t = atomic_fetch_add(&region.next, 1)) < region.n;) {
    region.fn(region.ctx, t);
    atomic_fetch_add(&region.done, 1);
  }
}

#if defined(__wasm__)
static void wait_change(unsigned seen) {
  while (atomic_load(&region.seq) == seen) __builtin_wasm_memory_atomic_wait32((int*)&region.seq, (int)seen, -1);
}
static void wake_pool(void) { __builtin_wasm_memory_atomic_notify((int*)&region.seq, (unsigned)-1); }
#else
#include <pthread.h>
#include <sched.h>

#if defined(__GLIBC__) && defined(WRT_OLD_GLIBC_SYMBOLS)
/* The shared library's wheels say manylinux_2_17: glibc 2.34 moved these two into libc under a new symbol version,
   so bind to the versions every glibc since 2.17 has (libpthread.so.0 is a dependency of the library). */
#if defined(__x86_64__)
__asm__(".symver pthread_create,pthread_create@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_trylock,pthread_mutex_trylock@GLIBC_2.2.5");
#elif defined(__aarch64__)
__asm__(".symver pthread_create,pthread_create@GLIBC_2.17");
__asm__(".symver pthread_mutex_trylock,pthread_mutex_trylock@GLIBC_2.17");
#endif
#endif

static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;

static void wait_change(unsigned seen) {
  pthread_mutex_lock(&wake_lock);
  while (atomic_load(&region.seq) == seen) pthread_cond_wait(&wake_cond, &wake_lock);
  pthread_mutex_unlock(&wake_lock);
}

static void wake_pool(void) {
  pthread_mutex_lock(&wake_lock);
  pthread_cond_broadcast(&wake_cond);
  pthread_mutex_unlock(&wake_lock);
}
#endif

/* one pool thread: wait for a region that invites it, take tasks, leave; forever. `seen` is the generation before
 * the thread was counted in pool_size, so it cannot miss a region that invites it. */
static void pool_loop(int id, unsigned seen) {
  for (;;) {
    wait_change(seen);
    seen = atomic_load(&region.seq);
    if (id >= region.invited) continue;
    take_tasks();
    atomic_fetch_add(&region.left, 1);
  }
}

static void run_region(int pool, size_t n, rt_task_fn fn, void* ctx) {
  region.fn = fn;
  region.ctx = ctx;
  region.n = n;
  region.invited = pool;
  atomic_store(&region.next, 0);
  atomic_store(&region.done, 0);
  atomic_store(&region.left, 0);
  atomic_fetch_add(&region.seq, 1); /* publishes the fields above (sequentially consistent) */
  wake_pool();
  take_tasks();
  while (atomic_load(&region.done) < n || atomic_load(&region.left) < pool) {
#if !defined(__wasm__)
    sched_yield(); /* a pool thread may be waiting for a core: give it ours */
#endif
  }
}

#if defined(__wasm__)
/* a Worker's instance calls this once its stack pointer is set; it never returns */
void wrt_worker_run(void) {
  unsigned seen = atomic_load(&region.seq);
  pool_loop(atomic_fetch_add(&pool_size, 1), seen);
}

void rt_parallel(int threads, size_t n, rt_task_fn fn, void* ctx) {
  int pool = threads - 1, have = atomic_load(&pool_size);
  if (pool > have) pool = have;
  if (pool > (int)n - 1) pool = (int)n - 1; /* no more threads than tasks */
  if (pool <= 0) {
    for (size_t t = 0; t < n; t++) fn(ctx, t);
    return;
  }
  run_region(pool, n, fn, ctx);
}
#else
typedef struct {
  int id;
  unsigned seen;
} start_args;

static start_args starts[MAX_POOL];

static void* pool_main(void* arg) {
  const start_args* s = arg;
  pool_loop(s->id, s->seen);
  return 0;
}

/* native: pthreads started on demand; one region at a time: a second caller (another model's run on another host
 * thread) runs its tasks inline instead of waiting */
void rt_parallel(int threads, size_t n, rt_task_fn fn, void* ctx) {
  int pool = threads - 1;
  if (pool > (int)n - 1) pool = (int)n - 1;
  if (pool > MAX_POOL) pool = MAX_POOL;
  if (pool <= 0 || pthread_mutex_trylock(&region_lock) != 0) {
    for (size_t t = 0; t < n; t++) fn(ctx, t);
    return;
  }
  while (atomic_load(&pool_size) < pool) {
    int id = atomic_load(&pool_size);
    starts[id] = (start_args){id, atomic_load(&region.seq)};
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int ok = pthread_create(&th, &attr, pool_main, &starts[id]) == 0;
    pthread_attr_destroy(&attr);
    if (!ok) break;
    atomic_fetch_add(&pool_size, 1);
  }
  if (pool > atomic_load(&pool_size)) pool = atomic_load(&pool_size);
  if (pool > 0) run_region(pool, n, fn, ctx);
  else
    for (size_t t = 0; t < n; t++) fn(ctx, t);
  pthread_mutex_unlock(&region_lock);
}
#endif

#else /* single-threaded build */

void rt_parallel(int threads, size_t n, rt_task_fn fn, void* ctx) {
  (void)threads;
  for (size_t t = 0; t < n; t++) fn(ctx, t);
}

#endif
