#ifndef TUISONG_MHD_H
#define TUISONG_MHD_H
// Shims for mhd: each function is prefixed tuisong_mhd_ and says why Swift cannot call
// the library directly.
#endif
