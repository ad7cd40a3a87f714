#ifndef TUISONG_CMICROHTTPD_SHIM_H
#define TUISONG_CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdarg.h>
#include <microhttpd.h>
#endif
