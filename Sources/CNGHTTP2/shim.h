#ifndef TUISONG_CNGHTTP2_SHIM_H
#define TUISONG_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#endif
