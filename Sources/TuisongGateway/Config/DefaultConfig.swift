/// The embedded default configuration: byte for byte `config/tuisong.json`
/// (`ConfigTests.embeddedDefaultMatchesFile` fails when they drift apart). Each transport's
/// section (`transports.<name>`) is not written here: its keys and defaults are its declaration's
/// (`GatewayConfig.defaultTree`).
let embeddedDefaultJSON = #"""
    {
      "listen": {
        "host": "127.0.0.1",
        "port": 8080,
        "threads": 0,
        "connection_timeout_seconds": 30,
        "request_timeout_seconds": 30,
        "max_body_bytes": 1048576,
        "max_header_bytes": 16384,
        "receive_timeout_seconds": 30,
        "max_connections": 4096,
        "max_connections_per_address": 256
      },
      "http": {
        "chunked_requests": "refuse"
      },
      "database": {
        "url": "",
        "path": "data/tuisong.db",
        "synchronous_full": false,
        "pool_size": 8
      },
      "cluster": {
        "lease_seconds": 30,
        "slice_size": 20000,
        "claim_pace_ms": 50
      },
      "security": {
        "master_key_file": "data/master.key",
        "master_key": "",
        "initial_admin_password_file": "data/initial-admin-password"
      },
      "web": {
        "root": "web",
        "public_url": ""
      },
      "receipts": {
        "public_url": "",
        "app_rate_per_address": 20,
        "app_rate_per_app": 2000,
        "digest_max_lag_seconds": 10
      },
      "log": {
        "level": "info",
        "format": "text"
      },
      "metrics": {
        "enabled": true,
        "listen": "",
        "bearer_token": ""
      },
      "providers": ["baidu", "tencent", "jpush", "easemob"],
      "apns": {
        "production_url": "https://api.push.apple.com:443",
        "sandbox_url": "https://api.sandbox.push.apple.com:443",
        "ca_file": "",
        "connections": 2,
        "connect_timeout_seconds": 10,
        "request_timeout_seconds": 30,
        "token_refresh_minutes": 50,
        "local_mock": true,
        "local_mock_port": 0
      },
      "transports": {
        "ca_file": "",
        "connections_per_host": 4,
        "connect_timeout_seconds": 10,
        "request_timeout_seconds": 30,
        "max_in_flight": 1000,
        "tokens_per_request": 1000
      },
      "delivery": {
        "workers": 512,
        "page_size": 1000,
        "max_attempts": 12,
        "retry_base_seconds": 1,
        "retry_max_seconds": 300,
        "max_backlog_per_app": 10000
      },
      "webhooks": {
        "allow_private_networks": true,
        "timeout_seconds": 10,
        "concurrency_per_endpoint": 8,
        "lease_seconds": 60
      }
    }
    """#
