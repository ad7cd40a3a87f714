#ifndef TUISONG_CNGHTTP2_SHIM_H
#define TUISONG_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
// The event loop that drives nghttp2 sessions: Swift's Glibc module does not export these.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
