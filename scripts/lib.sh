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

# h2load_summary: reads h2load's report on stdin and prints "rate mean-ms bad": requests per second,
# the mean time per request in milliseconds (h2load reports no percentiles), and how many requests
# were answered other than 2xx, failed or errored. Prints nothing and fails when the report lacks
# any of those lines (h2load could not run).
h2load_summary() {
    awk '
        /^finished in/ {rate = $4}
        /^time for request:/ {mean = $6; if (mean ~ /us$/) {sub(/us$/, "", mean); mean /= 1000} else if (mean ~ /ms$/) {sub(/ms$/, "", mean)} else {sub(/s$/, "", mean); mean *= 1000}; timed = 1}
        /^status codes:/ {gsub(",", ""); non2xx = $5 + $7 + $9; coded = 1}
        /^requests:/ {gsub(",", ""); failed = $10 + $12; counted = 1}
        END {
            # h2load counts a non-2xx answer as failed too: the larger count, not the sum.
            if (rate == "" || !timed || !coded || !counted) exit 1
            printf "%s %.2f %d\n", rate, mean, (non2xx > failed ? non2xx : failed)
        }'
}

# free_port: a loopback port nothing listens on, below the kernel's ephemeral range (a port in that
# range can be the local end of an outgoing connection, which a connect test does not see and
# which makes the server's bind fail with "Address already in use").
free_port() {
    local low
    low="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
    if [ "$low" -le 21000 ]; then low=61000; fi
    while :; do
        p=$((20000 + RANDOM % (low - 20000)))
        ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && { echo "$p"; return; }
    done
}

# wait_port PORT WHAT: waits up to 10 s for a listener on PORT, else fails naming WHAT.
wait_port() {
    for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
    echo "error: $2 did not listen on port $1 within 10 s" >&2
    exit 1
}

# start_nginx_ok CORE: an nginx on a free loopback port (in $nginx_port) that answers every
# request with a small 200 and reads any body (up to 1 MiB), pinned to CORE.
start_nginx_ok() {
    nginx_port="$(free_port)"
    cat >"$work/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_max_body_size 1m;
    keepalive_requests 1000000;
    server { listen 127.0.0.1:$nginx_port; location / { return 200 "ok\n"; } }
}
NGINX
    taskset -c "$1" nginx -p "$work" -c "$work/nginx.conf" &
    pids+=($!)
    wait_port "$nginx_port" nginx
}

# launch_redis DIR [CORE]: a redis-server without persistence on a free loopback port (free_port),
# with DIR as its directory and log file, pinned to CORE when one is given; sets $redis_port and
# $redis_pid once it answers PING. A port below the ephemeral range can still be taken by another
# process between free_port and the bind ("Address already in use", seen once in six runs of the
# failover tests): such a start is tried again on a new port, up to five times. Any other failure,
# or no answer within 10 s, prints the log and exits.
launch_redis() {
    local directory="$1" core="${2:-}" attempt
    local pin=()
    if [ -n "$core" ]; then pin=(taskset -c "$core"); fi
    for attempt in 1 2 3 4 5; do
        redis_port="$(free_port)"
        : >"$directory/redis.log"
        "${pin[@]}" redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$directory" --save "" --appendonly no \
            --daemonize no --loglevel warning --logfile "$directory/redis.log" &
        redis_pid=$!
        for _ in $(seq 1 200); do
            if [ "$(redis-cli -p "$redis_port" ping 2>/dev/null)" = "PONG" ]; then return 0; fi
            if ! kill -0 "$redis_pid" 2>/dev/null; then break; fi
            sleep 0.05
        done
        if kill -0 "$redis_pid" 2>/dev/null; then
            echo "error: redis-server did not answer on port $redis_port within 10 s" >&2
            exit 1
        fi
        wait "$redis_pid" 2>/dev/null || true
        redis_pid=""
        if ! grep -q "Address already in use" "$directory/redis.log"; then break; fi
        echo "redis-server lost port $redis_port to another process (attempt $attempt); trying another" >&2
    done
    echo "error: redis-server exited at start:" >&2
    cat "$directory/redis.log" >&2
    exit 1
}

# start_redis CORE: launch_redis in $work, pinned to CORE, stopped with the other $pids.
start_redis() {
    launch_redis "$work" "$1"
    pids+=("$redis_pid")
}

# machine_description: the host a benchmark ran on, for its "machine:" line: cores, architecture,
# CPU model, kernel, and what one system call costs here (nanoseconds, from 1,000,000 one-byte
# reads and as many writes through dd). Runs on "the standard machine" have landed on different CPUs
# (ECDSA P-256 at 73,000 signatures/s on one, 51,000 on another, with the gateway's path at half
# the speed where a system call cost 250 ns): compare rows of one run, or of runs whose lines match.
machine_description() {
    local model syscall_ns start end
    model="$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null)"
    start="$(date +%s%N)"
    dd if=/dev/zero of=/dev/null bs=1 count=1000000 status=none
    end="$(date +%s%N)"
    syscall_ns=$(( (end - start) / 2000000 ))
    echo "$(nproc) cores, $(uname -m), ${model:-unknown CPU}, Linux $(uname -r), system call ~${syscall_ns} ns"
}

# release_build PRODUCT: a release build of PRODUCT with the flags of `make release` (the Makefile's
# RELEASE_FLAGS; deploy/check.py keeps the two the same): the Swift runtime linked into the binary,
# as deployed, so a benchmark measures the binary that ships. Every release product here is built
# with these flags: a build with others recompiles what the last one built (about a minute).
release_build() { "${SWIFT:-swift}" build -c release --static-swift-stdlib --product "$1" >/dev/null; }

# gateway_builds: the builds an instruction count runs, in $builds: $GATEWAY (or this tree's
# release build) and, with $COMPARE, that one after it; exits when one is not an executable.
gateway_builds() {
    builds=("${GATEWAY:-.build/release/authgate}")
    if [ -n "${COMPARE:-}" ]; then builds+=("$COMPARE"); fi
    local build
    for build in "${builds[@]}"; do
        [ -x "$build" ] || { echo "error: $build is not an executable gateway build" >&2; exit 1; }
    done
}
