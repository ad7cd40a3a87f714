#ifndef TUISONG_NGHTTP2_H
#define TUISONG_NGHTTP2_H
// Shims for nghttp2: each function is prefixed tuisong_nghttp2_ and says why Swift cannot call
// the library directly.
#endif
