#!/bin/sh
# The server-tuning example's build and run steps: MariaDB under sysbench OLTP.
#
#   server.sh build BUFFER_POOL_MB FLUSH_AT_COMMIT TABLE_SIZE
#       In the current (build) directory: write my.cnf with the build-time server settings,
#       initialise a data directory, start the server once, create and fill the sysbench
#       table, stop the server. The directory is the build's artifact.
#   server.sh run THREADS RATE SECONDS
#       In a copy of a build's directory: start the server with its my.cnf, run sysbench
#       oltp_read_write with THREADS client threads at a target RATE of transactions/s for
#       SECONDS, print sysbench's report, stop the server.
#
# Everything lives under the current directory, so builds and runs of different configs never
# meet; the server listens on no TCP port, only on a socket named after this script's process
# (in /tmp: a socket path must be short, and scratch directories may be deep). Needs mariadbd, mariadb-install-db and sysbench
# (Debian: apt-get install mariadb-server sysbench).
set -eu

here=$(pwd -P)
cnf="$here/my.cnf"
sock="/tmp/tuna-sb-$$.sock"

client() {
    sysbench oltp_read_write --db-driver=mysql --mysql-socket="$sock" --mysql-user=root \
        --mysql-db=sbtest --tables=1 --table-size="$table_size" "$@"
}

start_server() {
    mariadbd --defaults-file="$cnf" >"$here/mysqld.log" 2>&1 &
    i=0
    until mariadb-admin --socket="$sock" --user=root ping >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -gt 300 ]; then
            echo "server did not start within 30 s; its log:" >&2
            tail -20 "$here/mysqld.log" >&2
            exit 1
        fi
        sleep 0.1
    done
}

stop_server() {
    mariadb-admin --socket="$sock" --user=root shutdown >/dev/null 2>&1 || true
}

case "${1:-}" in
build)
    pool_mb=$2 flush=$3 table_size=$4
    cat >"$cnf" <<CNF
[mariadbd]
user=root
datadir=$here/data
socket=$sock
pid-file=$here/mysqld.pid
skip-networking
innodb_buffer_pool_size=${pool_mb}M
innodb_flush_log_at_trx_commit=$flush
innodb_log_file_size=8M
innodb_data_file_path=ibdata1:4M:autoextend
performance_schema=OFF
CNF
    echo "$table_size" >table_size
    mariadb-install-db --defaults-file="$cnf" --auth-root-authentication-method=socket \
        --skip-test-db >install.log 2>&1
    start_server
    trap stop_server EXIT
    mariadb --socket="$sock" --user=root -e "CREATE DATABASE sbtest"
    client prepare >prepare.log
    ;;
run)
    threads=$2 rate=$3 seconds=$4
    table_size=$(cat table_size)
    # The copy keeps the build's paths in my.cnf: point them here.
    sed -i "s|^datadir=.*|datadir=$here/data|; s|^socket=.*|socket=$sock|; s|^pid-file=.*|pid-file=$here/mysqld.pid|" "$cnf"
    rm -f "$sock" "$here/mysqld.pid"
    start_server
    trap stop_server EXIT
    client --threads="$threads" --rate="$rate" --time="$seconds" --percentile=95 run
    ;;
*)
    echo "usage: $0 build BUFFER_POOL_MB FLUSH_AT_COMMIT TABLE_SIZE | run THREADS RATE SECONDS" >&2
    exit 2
    ;;
esac
