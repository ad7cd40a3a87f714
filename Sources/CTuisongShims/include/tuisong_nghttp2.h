#ifndef TUISONG_NGHTTP2_H
#define TUISONG_NGHTTP2_H
// Shims for nghttp2: each function is prefixed tuisong_nghttp2_ and says why Swift cannot call
// the library directly.

// (epoll and eventfd, which Swift's Glibc module does not export, come from CNGHTTP2's
// shim.h: one module owns those headers, so every build mode sees the same declarations.)

#endif
