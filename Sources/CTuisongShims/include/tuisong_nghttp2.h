#ifndef TUISONG_NGHTTP2_H
#define TUISONG_NGHTTP2_H
// Shims for nghttp2: each function is prefixed tuisong_nghttp2_ and says why Swift cannot call
// the library directly.

// --- APNs mock server (TuisongAPNsMock) ---
// The mock's HTTP/2 event loop is epoll-based, and Swift's Glibc module does not export
// <sys/epoll.h> or <sys/eventfd.h>; exposing them here keeps the loop in Swift.
#include <sys/epoll.h>
#include <sys/eventfd.h>

#endif
