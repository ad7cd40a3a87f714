#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: data directory and unix socket in one temp dir,
# no TCP (listen_addresses=''), fsync off, trust authentication for the postgres role.
#
#   scripts/pg-test-cluster.sh start         creates and starts one; prints its postgresql:// URL
#   scripts/pg-test-cluster.sh url DIR       prints the URL of the cluster in DIR
#   scripts/pg-test-cluster.sh restart DIR|URL  restarts it (fast shutdown: every client's
#                                            connection is cut), same options, same data
#   scripts/pg-test-cluster.sh stop DIR|URL  stops it and removes DIR
#
# initdb refuses to run as root, so as root (CI, `make test`) the server runs as the `postgres`
# user that Debian's postgresql package creates (runuser -u postgres), and the directory is
# chown'ed to it; as anyone else it runs as that user. PG_BIN overrides the server's binaries
# (default: Debian's /usr/lib/postgresql/15/bin, else whatever pg_config reports).
#
# The directory is in memory (/dev/shm) when there is one, else under TMPDIR; PG_TEST_DIR
# chooses. The Swift suite creates and drops a database (a few hundred files) per test: on ext4
# the server spent most of its CPU in the kernel, largely allocating and freeing inodes (~120 s of a
# parallel run, more than a third of the suite's), on tmpfs 2.5 times less per database
# (issue #46). max_wal_size bounds the WAL that memory holds (~300 MB at most).
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
if [ ! -x "$PG_BIN/initdb" ] && command -v pg_config >/dev/null; then
  PG_BIN=$(pg_config --bindir)
fi
MARKER=.tuisong-test-cluster

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

url_for() {
  printf 'postgresql:///postgres?host=%s&user=postgres\n' "$1"
}

# DIR from a directory or a URL made by url_for.
dir_of() {
  case "$1" in
    postgresql://*|postgres://*) sed -n 's/.*[?&]host=\([^&]*\).*/\1/p' <<<"$1" ;;
    *) printf '%s\n' "$1" ;;
  esac
}

start() {
  if [ ! -x "$PG_BIN/initdb" ]; then
    echo "pg-test-cluster: no initdb in $PG_BIN (apt-get install postgresql)" >&2
    exit 1
  fi
  local dir
  local base=${PG_TEST_DIR:-}
  if [ -z "$base" ]; then
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then base=/dev/shm; else base=${TMPDIR:-/tmp}; fi
  fi
  dir=$(mktemp -d "$base/tuisong-pg.XXXXXX")
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
  as_owner touch "$dir/$MARKER"
  # initdb wants an empty directory: the cluster goes in data/, the socket next to it.
  if ! as_owner "$PG_BIN/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 \
      >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2
    rm -rf "$dir"
    exit 1
  fi
  if ! as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c listen_addresses='' -c max_connections=500 -c max_wal_size=256MB -k $dir" \
      start >/dev/null </dev/null; then
    cat "$dir/server.log" >&2 || true
    rm -rf "$dir"
    exit 1
  fi
  url_for "$dir"
}

# DIR of a cluster this script made, from a directory or a URL; exits otherwise.
cluster_dir() {
  local dir
  dir=$(dir_of "$1")
  if [ -z "$dir" ] || [ ! -f "$dir/$MARKER" ]; then
    echo "pg-test-cluster: $1 is not a test cluster made by this script" >&2
    exit 1
  fi
  printf '%s\n' "$dir"
}

# The cluster test's "PostgreSQL restarted mid-push". pg_ctl restart reuses the options the
# server was started with (data/postmaster.opts): the same socket directory, fsync=off.
restart() {
  local dir
  dir=$(cluster_dir "$1")
  if ! as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 restart \
      >/dev/null </dev/null; then
    tail -n 20 "$dir/server.log" >&2 || true
    exit 1
  fi
}

stop() {
  local dir
  dir=$(cluster_dir "$1")
  as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 </dev/null || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) [ -n "${2:-}" ] || { echo "usage: $0 stop DIR|URL" >&2; exit 2; }; stop "$2" ;;
  restart) [ -n "${2:-}" ] || { echo "usage: $0 restart DIR|URL" >&2; exit 2; }; restart "$2" ;;
  url) [ -n "${2:-}" ] || { echo "usage: $0 url DIR" >&2; exit 2; }; url_for "$2" ;;
  *) echo "usage: $0 start | url DIR | restart DIR|URL | stop DIR|URL" >&2; exit 2 ;;
esac
