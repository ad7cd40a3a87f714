#ifndef TUISONG_MHD_H
#define TUISONG_MHD_H
// Shims for libmicrohttpd: each function is prefixed tuisong_mhd_ and says why Swift cannot call
// the library directly.
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Everything TuisongHTTP passes to MHD_start_daemon. A field left at zero / NULL is not passed,
/// so MHD keeps its own default for it.
struct tuisong_mhd_daemon_config {
    unsigned int flags;
    /// An already bound and listening socket (MHD_OPTION_LISTEN_SOCKET); -1 lets MHD bind `port`.
    int listen_fd;
    uint16_t port;
    unsigned int thread_pool_size;
    unsigned int connection_timeout_seconds;
    size_t connection_memory_limit;
    size_t connection_memory_increment;
    unsigned int connection_limit;
    /// MHD_OPTION_PER_IP_CONNECTION_LIMIT: connections one client address may hold at once.
    unsigned int per_ip_connection_limit;
    /// MHD_OPTION_NOTIFY_CONNECTION: told when a connection opens and closes.
    MHD_NotifyConnectionCallback notify_connection;
    void *notify_connection_cls;
    MHD_AccessHandlerCallback access_handler;
    void *access_handler_cls;
    MHD_RequestCompletedCallback request_completed;
    void *request_completed_cls;
    void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *connection);
    void *uri_log_cls;
    size_t (*unescape)(void *cls, struct MHD_Connection *connection, char *s);
    void *unescape_cls;
    MHD_LogCallback logger;
    void *logger_cls;
    /// PEM text of the TLS key and certificate (with MHD_USE_TLS in flags), else NULL.
    const char *tls_key_pem;
    const char *tls_cert_pem;
};

/// MHD_start_daemon is variadic (options follow as a va_list), which Swift cannot call; this
/// builds an MHD_OPTION_ARRAY from the explicit fields of `config`.
struct MHD_Daemon *tuisong_mhd_start_daemon(const struct tuisong_mhd_daemon_config *config);

/// MHD_get_connection_info is variadic; this asks it for the peer address of a connection
/// (NULL when MHD does not know it).
const struct sockaddr *tuisong_mhd_connection_client_address(struct MHD_Connection *connection);

/// MHD_get_connection_info is variadic; this asks it for the socket of a connection (-1 when
/// MHD does not say).
int tuisong_mhd_connection_socket(struct MHD_Connection *connection);

/// MHD_get_connection_info is variadic; this asks it for the size of the request line and header
/// block as received, final blank line included (0 before the headers are complete).
size_t tuisong_mhd_connection_header_size(struct MHD_Connection *connection);

#endif
