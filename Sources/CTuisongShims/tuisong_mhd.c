#include "tuisong_mhd.h"

struct MHD_Daemon *tuisong_mhd_start_daemon(const struct tuisong_mhd_daemon_config *config) {
    struct MHD_OptionItem options[20];
    size_t count = 0;
#define TUISONG_MHD_OPTION(name, int_value, pointer_value) \
    do { \
        options[count].option = (name); \
        options[count].value = (intptr_t)(int_value); \
        options[count].ptr_value = (void *)(pointer_value); \
        count++; \
    } while (0)

    // MHD's documentation asks for the logger first, so start-up messages reach it too.
    if (config->logger != NULL)
        TUISONG_MHD_OPTION(MHD_OPTION_EXTERNAL_LOGGER, config->logger, config->logger_cls);
    if (config->listen_fd >= 0)
        TUISONG_MHD_OPTION(MHD_OPTION_LISTEN_SOCKET, config->listen_fd, NULL);
    if (config->thread_pool_size > 1)
        TUISONG_MHD_OPTION(MHD_OPTION_THREAD_POOL_SIZE, config->thread_pool_size, NULL);
    if (config->connection_timeout_seconds > 0)
        TUISONG_MHD_OPTION(MHD_OPTION_CONNECTION_TIMEOUT, config->connection_timeout_seconds, NULL);
    if (config->connection_memory_limit > 0)
        TUISONG_MHD_OPTION(MHD_OPTION_CONNECTION_MEMORY_LIMIT, config->connection_memory_limit, NULL);
    if (config->connection_memory_increment > 0)
        TUISONG_MHD_OPTION(MHD_OPTION_CONNECTION_MEMORY_INCREMENT, config->connection_memory_increment, NULL);
    if (config->connection_limit > 0)
        TUISONG_MHD_OPTION(MHD_OPTION_CONNECTION_LIMIT, config->connection_limit, NULL);
    if (config->per_ip_connection_limit > 0)
        TUISONG_MHD_OPTION(MHD_OPTION_PER_IP_CONNECTION_LIMIT, config->per_ip_connection_limit, NULL);
    if (config->notify_connection != NULL)
        TUISONG_MHD_OPTION(MHD_OPTION_NOTIFY_CONNECTION, config->notify_connection, config->notify_connection_cls);
    if (config->request_completed != NULL)
        TUISONG_MHD_OPTION(MHD_OPTION_NOTIFY_COMPLETED, config->request_completed, config->request_completed_cls);
    if (config->uri_log != NULL)
        TUISONG_MHD_OPTION(MHD_OPTION_URI_LOG_CALLBACK, config->uri_log, config->uri_log_cls);
    if (config->unescape != NULL)
        TUISONG_MHD_OPTION(MHD_OPTION_UNESCAPE_CALLBACK, config->unescape, config->unescape_cls);
    if (config->tls_key_pem != NULL)
        TUISONG_MHD_OPTION(MHD_OPTION_HTTPS_MEM_KEY, 0, config->tls_key_pem);
    if (config->tls_cert_pem != NULL)
        TUISONG_MHD_OPTION(MHD_OPTION_HTTPS_MEM_CERT, 0, config->tls_cert_pem);
    TUISONG_MHD_OPTION(MHD_OPTION_END, 0, NULL);
#undef TUISONG_MHD_OPTION

    return MHD_start_daemon(config->flags, config->port, NULL, NULL,
                            config->access_handler, config->access_handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

const struct sockaddr *tuisong_mhd_connection_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

int tuisong_mhd_connection_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

size_t tuisong_mhd_connection_header_size(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info == NULL ? 0 : info->header_size;
}
