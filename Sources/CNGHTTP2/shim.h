#ifndef TUISONG_CNGHTTP2_SHIM_H
#define TUISONG_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
// The event loop that drives nghttp2 sessions: Swift's Glibc module does not export these.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

// Names the calling thread (at most 15 bytes kept) for top -H, perf and /proc: prctl is
// variadic, which Swift cannot call, and pthread_setname_np needs _GNU_SOURCE.
static inline int tuisong_name_current_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}
#endif
