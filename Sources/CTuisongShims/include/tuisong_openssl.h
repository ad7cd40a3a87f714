#ifndef TUISONG_OPENSSL_H
#define TUISONG_OPENSSL_H
// Shims for openssl: each function is prefixed tuisong_openssl_ and says why Swift cannot call
// the library directly.
#endif
