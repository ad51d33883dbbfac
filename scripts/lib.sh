# Helpers the benchmarks and test scripts share; source it after `set -euo pipefail`.

# start_work NAME: makes $work, a temporary directory; at exit every process whose pid was added
# to $pids is stopped and $work is removed.
start_work() {
    work="$(mktemp -d -t "authgate-$1.XXXXXX")"
    pids=()
    trap stop_work EXIT
}

stop_work() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}

# free_port: a loopback port nothing listens on.
free_port() {
    while :; do
        p=$((20000 + RANDOM % 40000))
        ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && { echo "$p"; return; }
    done
}

# wait_port PORT WHAT: waits up to 10 s for a listener on PORT, else fails naming WHAT.
wait_port() {
    for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
    echo "error: $2 did not listen on port $1 within 10 s" >&2
    exit 1
}
