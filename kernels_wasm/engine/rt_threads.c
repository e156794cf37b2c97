/* Parallel regions: rt_parallel runs fn(ctx, t) for every task t < n on the calling thread and up to threads - 1
 * pool threads, and returns when all are done.
 *
 * Natively the pool is pthreads, started on demand. In the threaded wasm builds (WRT_THREADS) the host starts
 * Workers that instantiate the same module on the shared memory, give each its own stack, and call
 * wrt_worker_run(). Single-threaded builds run every region inline.
 *
 * Tasks are fixed units chosen by the op from its shape, never from the thread count, and each task writes its own
 * outputs with the serial code's arithmetic: results are the same bytes whatever the number of threads, and
 * whichever thread takes a task.
 *
 * A model runs ~100 regions per inference, some only tens of microseconds long, so a region must cost little to
 * open and close. The caller never waits for a pool thread to wake: it takes tasks itself and returns once every
 * task is done, however many pool threads took part. The tasks are cut into one contiguous range per thread taking
 * part: each thread works through its own range first, so consecutive ops split alike (rows, pixel blocks) find
 * their inputs in the cache of the core that wrote them, then takes what is left of the others' (a thread that
 * lost its core to another process delays nobody). A task is claimed with one fetch-add on a word holding its
 * range's end and next task; a pool thread reads the region's function only after its claim succeeded, and the
 * caller cannot open the next region before that task is done, so a late pool thread can only claim a task of the
 * region that is open (and then runs that region's function); the words of ranges a region does not use are
 * exhausted; a thread counts the tasks it ran once, when it finds none left. Between regions pool threads spin for
 * a short while (the next op usually follows within microseconds), in wasm then look again after timed waits for a
 * while (see POLL_WINDOW_NS), and then sleep on the region generation (futex natively, memory.atomic.wait32 in
 * wasm); the caller wakes them only when one sleeps, and
 * rt_pool_wake lets a run wake them while its first op (often a small serial one) runs. The caller never blocks:
 * browsers forbid waiting on a page's main thread. */
#if defined(WRT_THREADS) && !defined(__wasm__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* syscall() in <unistd.h>, for the futex */
#endif
#include "rt.h"

#if defined(WRT_THREADS)

#include <stdatomic.h>
#include <stdint.h>

#define MAX_POOL 63
#define TASKS_MAX 0xffffffffu

#define MAX_PARTS (MAX_POOL + 1)

/* a range's claim word, on its own cache line: (end << 32) | next task */
typedef struct {
  _Alignas(64) atomic_ullong w;
} range_word;

static struct {
  range_word range[MAX_PARTS];             /* range i belongs to pool thread i - 1 (0: the caller) */
  _Alignas(64) atomic_size_t done;         /* tasks finished in the open region */
  _Alignas(64) atomic_uint seq;            /* region generation */
  atomic_int sleepers;                     /* pool threads asleep (or about to be) on seq */
  _Atomic(rt_task_fn) fn;
  _Atomic(void*) ctx;
  atomic_int parts;                        /* ranges in the open region: the caller and pool threads 0 .. parts-2 */
} region;

static atomic_int pool_size; /* pool threads ready to take part */

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

/* Spins before a pool thread sleeps. Natively about 100-300 us (pause, and a yield now and then). In wasm nothing
 * can yield, and a Worker the OS put on the core of the page's thread would hold that core for the whole spin
 * while the page's thread waits for it; but a Worker that sleeps between two ops (a serial op, the host's work
 * between runs) is woken where the OS likes, often beside the page's thread. V8 spins about 2.5 loads a
 * nanosecond, so 0.35-0.4 ms (20,000 spins, 8 us, left 2 threads at 1.54-1.80x one on runs back to back in
 * Chromium; these 1.77-1.84x). */
#if defined(__wasm__)
#define IDLE_SPINS 1000000
#else
#define IDLE_SPINS 4000
#endif

/* In wasm, after the spin a pool thread polls for POLL_WINDOW_NS: it sleeps with a timeout (POLL_FIRST_NS, doubling
 * up to POLL_MAX_NS) and looks again, and no caller wakes it; only then does it sleep until woken. A caller's wake
 * lets the OS place the woken thread, and a guest kernel that packs wake-ups onto busy vCPUs put it beside the
 * caller, where it waited for the next scheduler tick: in Chromium, where a Worker cannot move, 2 threads then ran
 * MobileNetV2 1.1-1.6x faster than one (1.6-1.85x with the polling). The window covers the pauses of a camera loop
 * down to 5 frames per second; it costs a few hundred short wake-ups, not a spinning core. Natively nothing polls: a
 * pool thread sleeps kept off the caller's core (keep_off below), while a thread whose timeout ended was placed
 * beside the busy caller all the same, and missed the first 0.3-0.5 ms of a run. */
#define POLL_FIRST_NS 50000
#define POLL_MAX_NS 500000
#if defined(__wasm__)
#define POLL_WINDOW_NS 200000000
#else
#define POLL_WINDOW_NS 0
#endif

static atomic_int asleep[MAX_POOL]; /* 1 while pool thread i sleeps on seq (or is about to) */

/* claims tasks of range r until it is exhausted; returns how many it ran */
static size_t take_range(int r) {
  for (size_t ran = 0;; ran++) {
    unsigned long long w = atomic_fetch_add(&region.range[r].w, 1);
    size_t t = (size_t)(w & TASKS_MAX);
    if (t >= (size_t)(w >> 32)) return ran;
    rt_task_fn fn = atomic_load_explicit(&region.fn, memory_order_relaxed);
    fn(atomic_load_explicit(&region.ctx, memory_order_relaxed), t);
  }
}

/* part `me`'s own range, then the others' leftovers. The tasks run are counted once, at the end: a count per task
 * moved the counter's cache line between the cores at every task (0.2 us each between two dies). */
static void take_tasks(int me) {
  int parts = atomic_load(&region.parts);
  size_t ran = 0;
  for (int k = 0; k < parts; k++) ran += take_range((me + k) % parts);
  if (ran) atomic_fetch_add(&region.done, ran);
}

#if defined(__wasm__)
static void sleep_on(unsigned seen, int64_t ns) {
  __builtin_wasm_memory_atomic_wait32((int*)&region.seq, (int)seen, ns);
}
static void wake_all(void) { __builtin_wasm_memory_atomic_notify((int*)&region.seq, (unsigned)-1); }
static void let_woken_run(void) {}
static void note_caller_cpu(void) {}
static void leave_caller_cpu(void) {}
static void before_sleep(int id) { (void)id; }
static void unsteer(int id) { (void)id; }
static int steer_sleepers(void) { return 1; }
#else
#include <pthread.h>
#include <sched.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

static void sleep_on(unsigned seen, int64_t ns) {
  struct timespec t = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  syscall(SYS_futex, (unsigned*)&region.seq, FUTEX_WAIT_PRIVATE, seen, ns < 0 ? (void*)0 : (void*)&t, (void*)0, 0);
}
static void wake_all(void) { syscall(SYS_futex, (unsigned*)&region.seq, FUTEX_WAKE_PRIVATE, MAX_POOL, 0, 0, 0); }

/* The kernel may place a pool thread on the caller's core and leave it queued there behind the caller while the
 * other core idles or runs another process. Measured on a 2-vCPU KVM guest booted with sched_vcpu_pack (it packs
 * wake-ups onto busy vCPUs): a pool thread woken by the caller, or by its own timeout, after an idle pause ran on
 * the caller's core once the caller yielded, or at the next scheduler tick (3.9 ms later) when it did not; on a
 * loaded 2-core machine such a pool thread got 6-20 ms of CPU over 20 runs of MobileNetV2 while waiting 60-100 ms
 * in that core's run queue. So a pool thread sleeps with the caller's core taken out of its affinity, and the
 * kernel must wake it on another core (80-130 us on that guest: a halted vCPU's wake-up); it takes its affinity
 * back after the region it was woken for. The pool thread sets this itself, off the caller's path (the call costs
 * 10-25 us there); the caller does it for a thread that sleeps away from an earlier core of the caller's. A
 * spinning pool thread that finds itself on the caller's core moves off it the same way (its affinity without that
 * core, then its affinity as it was: the kernel migrates it on the first call, and the second lets it go anywhere
 * again). */
static atomic_int caller_cpu = -1;
static atomic_int tids[MAX_POOL];  /* the pool threads' kernel thread ids (0 until set) */
static cpu_set_t masks[MAX_POOL];  /* their affinity as they started */
static atomic_int avoid[MAX_POOL]; /* the core taken out of pool thread i's affinity, plus 1 (0: none) */

static void note_caller_cpu(void) { atomic_store_explicit(&caller_cpu, sched_getcpu(), memory_order_relaxed); }

/* `mask` without `cpu`; 0 when no core would be left */
static int without_cpu(const cpu_set_t* mask, int cpu, cpu_set_t* others) {
  *others = *mask;
  if (cpu >= 0) CPU_CLR(cpu, others);
  return cpu >= 0 && CPU_COUNT(others) > 0;
}

/* pool thread i (kernel thread `tid`, 0: the calling thread) kept off `cpu`; 0 when it could not be */
static int keep_off(int i, pid_t tid, int cpu) {
  cpu_set_t others;
  if (!without_cpu(&masks[i], cpu, &others) || sched_setaffinity(tid, sizeof others, &others)) return 0;
  atomic_store(&avoid[i], cpu + 1);
  return 1;
}

/* pool thread `id`: its affinity as it started */
static void unsteer(int id) {
  if (atomic_exchange(&avoid[id], 0)) sched_setaffinity(0, sizeof masks[id], &masks[id]);
}

static void leave_caller_cpu(void) {
  int here = sched_getcpu();
  cpu_set_t mask, others;
  if (here != atomic_load_explicit(&caller_cpu, memory_order_relaxed) || sched_getaffinity(0, sizeof mask, &mask) ||
      !without_cpu(&mask, here, &others))
    return;
  if (sched_setaffinity(0, sizeof others, &others) == 0) sched_setaffinity(0, sizeof mask, &mask);
}

static void before_sleep(int id) { keep_off(id, 0, atomic_load_explicit(&caller_cpu, memory_order_relaxed)); }

/* the sleeping pool threads kept off the caller's core before it wakes them; returns 0 when one may still be woken
 * on the caller's core */
static int steer_sleepers(void) {
  int cpu = sched_getcpu(), away = 1, n = atomic_load(&pool_size);
  for (int i = 0; i < n; i++) {
    pid_t tid = (pid_t)atomic_load(&tids[i]);
    if (!tid || !atomic_load(&asleep[i]) || atomic_load(&avoid[i]) == cpu + 1) continue;
    if (!keep_off(i, tid, cpu)) away = 0;
  }
  return away;
}

/* where the caller could not steer a woken thread off its core: one yield lets it run (and move) at once */
static void let_woken_run(void) { sched_yield(); }
#endif

/* one step of a spin. Natively every 32nd step yields: on a loaded machine the kernel may have woken a pool thread
 * on the caller's core, and then whichever of the two spins must hand the core to the other at once. */
static void spin_step(unsigned spins) {
  CPU_RELAX();
#if !defined(__wasm__)
  if (spins % 32 == 31) sched_yield();
#else
  (void)spins;
#endif
}

/* the generation after `seen`, for pool thread `id`: spin a while, poll (wasm), then sleep. The sleeper is counted
 * before it sleeps and the kernel (or the wasm engine) checks seq before sleeping, so a region opened in between is
 * never missed. */
static unsigned next_region(int id, unsigned seen) {
  unsigned s;
  int64_t poll = POLL_FIRST_NS, polled = 0;
  for (unsigned spins = 0; (s = atomic_load(&region.seq)) == seen;) {
    if (++spins < IDLE_SPINS) {
      spin_step(spins);
      continue;
    }
    if (polled < POLL_WINDOW_NS) {
      sleep_on(seen, poll);
      polled += poll;
      poll = poll * 2 < POLL_MAX_NS ? poll * 2 : POLL_MAX_NS;
      continue;
    }
    before_sleep(id);
    atomic_store(&asleep[id], 1);
    atomic_fetch_add(&region.sleepers, 1);
    sleep_on(seen, -1);
    atomic_fetch_sub(&region.sleepers, 1);
    atomic_store(&asleep[id], 0);
    spins = 0;
    poll = POLL_FIRST_NS, polled = 0;
  }
  return s;
}

/* one pool thread, forever. `seen` is the generation before the thread was counted in pool_size, so it cannot miss
 * a region that invites it. */
static void pool_loop(int id, unsigned seen) {
  for (;;) {
    seen = next_region(id, seen);
    if (id + 1 < atomic_load(&region.parts)) {
      leave_caller_cpu();
      take_tasks(id + 1);
    }
    unsteer(id);
  }
}

static void wake_sleepers(void) {
  if (atomic_load(&region.sleepers) == 0) return;
  int away = steer_sleepers();
  wake_all();
  if (!away) let_woken_run();
}

static void run_region(int pool, size_t n, rt_task_fn fn, void* ctx) {
  int parts = pool + 1;
  atomic_store_explicit(&region.fn, fn, memory_order_relaxed);
  atomic_store_explicit(&region.ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&region.parts, parts, memory_order_relaxed);
  atomic_store(&region.done, 0);
  note_caller_cpu();
  for (int r = 0; r < parts; r++) { /* publishes the fields above */
    unsigned long long begin = n * (size_t)r / (size_t)parts, end = n * (size_t)(r + 1) / (size_t)parts;
    atomic_store(&region.range[r].w, end << 32 | begin);
  }
  atomic_fetch_add(&region.seq, 1);
  wake_sleepers();
  take_tasks(0);
  for (unsigned spins = 0; atomic_load(&region.done) < n;) spin_step(spins++);
}

void rt_pool_wake(void) {
  note_caller_cpu();
  wake_sleepers();
}

static int pool_for(int threads, size_t n, int have) {
  int pool = threads - 1;
  if (pool > have) pool = have;
  if (n > TASKS_MAX) return 0;
  if (pool > (int)n - 1) pool = (int)n - 1; /* no more threads than tasks */
  return pool;
}

#if defined(__wasm__)
/* a Worker's instance calls this once its stack pointer is set; it never returns */
void wrt_worker_run(void) {
  unsigned seen = atomic_load(&region.seq);
  pool_loop(atomic_fetch_add(&pool_size, 1), seen);
}

void rt_parallel(int threads, size_t n, rt_task_fn fn, void* ctx) {
  int pool = pool_for(threads, n, atomic_load(&pool_size));
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
  sched_getaffinity(0, sizeof masks[s->id], &masks[s->id]);
  atomic_store(&tids[s->id], (int)syscall(SYS_gettid));
  pool_loop(s->id, s->seen);
  return 0;
}

/* native: pthreads started on demand; one region at a time: a second caller (another model's run on another host
 * thread) runs its tasks inline instead of waiting */
void rt_parallel(int threads, size_t n, rt_task_fn fn, void* ctx) {
  int pool = pool_for(threads, n, MAX_POOL);
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

void rt_pool_wake(void) {}

#endif
