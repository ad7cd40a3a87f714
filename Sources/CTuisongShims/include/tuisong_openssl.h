#ifndef TUISONG_OPENSSL_H
#define TUISONG_OPENSSL_H
// Shims for openssl: each function is prefixed tuisong_openssl_ and says why Swift cannot call
// the library directly. Everything else in OpenSSL is called from Swift (TuisongCrypto).
#include <openssl/ssl.h>
#include <openssl/x509.h>

// SSL_CTX_set_mode is a function-like macro over SSL_CTX_ctrl.
long tuisong_openssl_ctx_set_mode(SSL_CTX *ctx, long mode);

// SSL_CTX_set_min_proto_version is a function-like macro over SSL_CTX_ctrl.
int tuisong_openssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version);

// SSL_CTX_add1_chain_cert is a function-like macro over SSL_CTX_ctrl (takes its own reference).
int tuisong_openssl_ctx_add1_chain_cert(SSL_CTX *ctx, X509 *cert);

// SSL_set_tlsext_host_name (SNI) is a function-like macro over SSL_ctrl.
int tuisong_openssl_set_tlsext_host_name(SSL *ssl, const char *name);

// OPENSSL_free is a function-like macro that passes __FILE__/__LINE__ to CRYPTO_free.
void tuisong_openssl_free(void *pointer);

// The typed STACK_OF(X509) accessors are macros over static inline type-check helpers, and
// OPENSSL_sk_pop_free needs X509_free cast to a void(*)(void *) that Swift cannot express.
STACK_OF(X509) *tuisong_openssl_x509_stack_new(void);
int tuisong_openssl_x509_stack_push_up_ref(STACK_OF(X509) *stack, X509 *cert);
int tuisong_openssl_x509_stack_count(const STACK_OF(X509) *stack);
X509 *tuisong_openssl_x509_stack_value(const STACK_OF(X509) *stack, int index);
void tuisong_openssl_x509_stack_free_all(STACK_OF(X509) *stack);

// The name-print flags are nested macro expressions of casts Swift does not import. This is
// RFC 2253 order and escaping, but keeping UTF-8 as UTF-8 instead of \XX-escaping it
// (what `openssl x509 -nameopt RFC2253,-esc_msb` prints), so CJK subjects stay readable.
unsigned long tuisong_openssl_name_flags_rfc2253_utf8(void);

#endif
