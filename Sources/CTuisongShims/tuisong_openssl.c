#include "tuisong_openssl.h"
#include <openssl/crypto.h>

long tuisong_openssl_ctx_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

int tuisong_openssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

int tuisong_openssl_ctx_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add1_chain_cert(ctx, cert);
}

int tuisong_openssl_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

void tuisong_openssl_free(void *pointer) {
    OPENSSL_free(pointer);
}

STACK_OF(X509) *tuisong_openssl_x509_stack_new(void) {
    return sk_X509_new_null();
}

int tuisong_openssl_x509_stack_push_up_ref(STACK_OF(X509) *stack, X509 *cert) {
    if (X509_up_ref(cert) != 1) return 0;
    if (sk_X509_push(stack, cert) <= 0) {
        X509_free(cert);
        return 0;
    }
    return 1;
}

int tuisong_openssl_x509_stack_count(const STACK_OF(X509) *stack) {
    return stack == NULL ? 0 : sk_X509_num(stack);
}

X509 *tuisong_openssl_x509_stack_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}

void tuisong_openssl_x509_stack_free_all(STACK_OF(X509) *stack) {
    sk_X509_pop_free(stack, X509_free);
}

unsigned long tuisong_openssl_name_flags_rfc2253_utf8(void) {
    return XN_FLAG_RFC2253 & ~(unsigned long)ASN1_STRFLGS_ESC_MSB;
}

/// OpenSSL 3 registers an atexit handler (OPENSSL_cleanup) at its first initialization. The
/// gateway's HTTP/2 event-loop threads and libmicrohttpd's threads may still be inside OpenSSL
/// when the process exits (a test binary returning from main while a look-alike's loop runs, a
/// signal-driven exit), and the handler frees what those threads are using: a segfault after
/// every test passed was seen in a thread in pthread_rwlock_unlock. The kernel reclaims the
/// memory anyway, so the first initialization, before main, asks OpenSSL not to clean up at exit.
__attribute__((constructor)) static void tuisong_openssl_no_cleanup_at_exit(void) {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}
