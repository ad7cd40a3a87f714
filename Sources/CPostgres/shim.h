#ifndef TUISONG_CPOSTGRES_SHIM_H
#define TUISONG_CPOSTGRES_SHIM_H
// libpq's client header. Debian's pkg-config (`pkg-config --cflags libpq`) puts
// /usr/include/postgresql on the include path; libpq-fe.h is everything Tuisong calls.
#include <libpq-fe.h>
#include <poll.h>
#include <sys/prctl.h>

// PQfreemem is a function, PQnotifies returns a struct Swift reads directly: nothing here needs
// a wrapper except the helpers below.

/// Names the calling thread (at most 15 bytes kept) for top -H, perf and /proc: prctl is
/// variadic, and Swift's Glibc module does not export pthread_setname_np. Used by the pool's
/// workers and the listener's event thread, the only threads this module starts.
static inline int tuisong_pq_name_current_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

#endif
