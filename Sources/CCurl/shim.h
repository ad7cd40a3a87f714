#ifndef TUISONG_CCURL_SHIM_H
#define TUISONG_CCURL_SHIM_H
// curl's GCC type-check macros turn curl_easy_setopt and friends into statement expressions
// over __builtin_types_compatible_p; the typed wrappers below make that check redundant, and
// Swift's importer has no use for the macros.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <sys/prctl.h>

// curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic (the option decides
// the type of the one argument that follows), which Swift cannot call. One wrapper per
// argument type; each is prefixed tuisong_curl_ and passes its argument through unchanged.

static inline CURLcode tuisong_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode tuisong_curl_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// Strings: curl copies them (the request body is not one: it goes through the pointer setter as
/// CURLOPT_POSTFIELDS, which curl does not copy).
static inline CURLcode tuisong_curl_easy_setopt_str(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/// Object pointers: CURLOPT_PRIVATE, CURLOPT_WRITEDATA, CURLOPT_HEADERDATA, CURLOPT_ERRORBUFFER,
/// CURLOPT_OPENSOCKETDATA, CURLOPT_CLOSESOCKETDATA, CURLOPT_HTTPHEADER (a curl_slist),
/// CURLOPT_POSTFIELDS (bytes the caller keeps alive until the transfer has ended).
static inline CURLcode tuisong_curl_easy_setopt_ptr(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

/// CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION (same C type).
static inline CURLcode tuisong_curl_easy_setopt_write_function(
    CURL *handle, CURLoption option, curl_write_callback function) {
    return curl_easy_setopt(handle, option, function);
}

static inline CURLcode tuisong_curl_easy_setopt_opensocket_function(CURL *handle, curl_opensocket_callback function) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, function);
}

static inline CURLcode tuisong_curl_easy_setopt_closesocket_function(
    CURL *handle, curl_closesocket_callback function) {
    return curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, function);
}

static inline CURLMcode tuisong_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

static inline CURLcode tuisong_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode tuisong_curl_easy_getinfo_ptr(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

/// CURL_GLOBAL_DEFAULT is a macro over other macros, which Swift does not import.
static inline CURLcode tuisong_curl_global_init_default(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}

/// CURL_SOCKET_BAD is a macro (-1 on POSIX), returned by an open-socket callback that failed.
static inline curl_socket_t tuisong_curl_socket_bad(void) {
    return CURL_SOCKET_BAD;
}

/// Names the calling thread (at most 15 bytes kept) for top -H, perf and /proc: prctl is
/// variadic, and Swift's Glibc module does not export pthread_setname_np. (The client's event
/// thread is the only thread this module starts; CNGHTTP2 has the same helper for the HTTP/2
/// client's event loops.)
static inline int tuisong_curl_name_current_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

#endif
