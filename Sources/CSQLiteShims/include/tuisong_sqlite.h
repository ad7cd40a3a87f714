#ifndef TUISONG_SQLITE_H
#define TUISONG_SQLITE_H

#include <stdbool.h>

/// Whether SQLite's memory goes through the counting allocator below (installed before `main`,
/// while no thread uses SQLite; false when SQLite refused it).
bool tuisong_sqlite_counts_memory(void);

/// Bytes SQLite holds through that allocator (what `malloc_usable_size` says of each block).
long long tuisong_sqlite_memory_in_use(void);

#endif
