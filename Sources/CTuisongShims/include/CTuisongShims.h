#ifndef C_TUISONG_SHIMS_H
#define C_TUISONG_SHIMS_H
// Umbrella header. Each wrapped library has its own header so the modules that own them
// can evolve separately: tuisong_mhd.h (TuisongHTTP), tuisong_openssl.h (TuisongCrypto,
// TuisongAPNs, TuisongAPNsMock), tuisong_nghttp2.h (TuisongAPNs, TuisongAPNsMock).
#include "tuisong_mhd.h"
#include "tuisong_openssl.h"
#include "tuisong_nghttp2.h"
#endif
