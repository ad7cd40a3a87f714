#ifndef C_TUISONG_SHIMS_H
#define C_TUISONG_SHIMS_H
// Umbrella header. Each wrapped library has its own header so the modules that own them
// can evolve separately: tuisong_mhd.h (TuisongHTTP), tuisong_openssl.h (TuisongCrypto,
// the HTTP/2 client engine, TuisongLookAlikeKit), tuisong_nghttp2.h (the HTTP/2 client engine,
// TuisongLookAlikeKit).
#include "tuisong_mhd.h"
#include "tuisong_openssl.h"
#include "tuisong_nghttp2.h"
#endif
