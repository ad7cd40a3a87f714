// SQLite's memory statistics without SQLite's global memory mutex.
//
// With statistics on (SQLite's default; Debian's libsqlite3 is built without lookaside, so
// every small allocation of every statement goes to malloc), each sqlite3_malloc and
// sqlite3_free takes one process-wide mutex to count: with the writer, the readers and the point
// readers on their own threads, that lock's waits and wake-ups were 3 % of a chat message's CPU.
// Statistics off removes the lock but also `sqlite3_memory_used()`, which the gateway reports
// (`tuisong_sqlite_memory_bytes`); this allocator counts with one relaxed atomic instead. It is
// malloc underneath, sized by `malloc_usable_size` (as SQLite's own allocator is where it is
// built with HAVE_MALLOC_USABLE_SIZE).
//
// sqlite3_config is not thread-safe and only works before SQLite initializes, so it runs from a
// constructor, before `main` and before any thread exists.
#include "tuisong_sqlite.h"

#include <malloc.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>

static _Atomic long long bytes_in_use;
static bool installed;

static void *counting_malloc(int size) {
    void *block = malloc((size_t)size);
    if (block) atomic_fetch_add_explicit(&bytes_in_use, (long long)malloc_usable_size(block), memory_order_relaxed);
    return block;
}

static void counting_free(void *block) {
    if (!block) return;
    atomic_fetch_sub_explicit(&bytes_in_use, (long long)malloc_usable_size(block), memory_order_relaxed);
    free(block);
}

static void *counting_realloc(void *block, int size) {
    long long before = block ? (long long)malloc_usable_size(block) : 0;
    void *moved = realloc(block, (size_t)size);
    // On failure the old block is still SQLite's, and still counted.
    if (moved)
        atomic_fetch_add_explicit(
            &bytes_in_use, (long long)malloc_usable_size(moved) - before, memory_order_relaxed);
    return moved;
}

static int counting_size(void *block) { return block ? (int)malloc_usable_size(block) : 0; }

static int counting_roundup(int size) { return (size + 7) & ~7; }

static int counting_init(void *unused) {
    (void)unused;
    return SQLITE_OK;
}

static void counting_shutdown(void *unused) { (void)unused; }

static const sqlite3_mem_methods counting_methods = {
    counting_malloc, counting_free, counting_realloc, counting_size,
    counting_roundup, counting_init, counting_shutdown, NULL,
};

__attribute__((constructor)) static void install_counting_allocator(void) {
    // Both or neither: statistics stay on with SQLite's own allocator if either is refused.
    if (sqlite3_config(SQLITE_CONFIG_MALLOC, &counting_methods) != SQLITE_OK) return;
    if (sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK) return;
    installed = true;
}

bool tuisong_sqlite_counts_memory(void) { return installed; }

long long tuisong_sqlite_memory_in_use(void) { return atomic_load_explicit(&bytes_in_use, memory_order_relaxed); }
