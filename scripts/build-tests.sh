#!/usr/bin/env bash
# Builds what `make test` runs (`swift build --build-tests`, extra arguments passed on) and fails
# when the compiler warned about one of our files (Sources/ or Tests/): the gateway and its tests
# build without warnings, and this keeps them so. Warnings from dependencies (.build/checkouts) are
# printed as usual but not judged.
#
# An incremental build compiles only what changed, so only a clean build (CI's clean clone) sees
# every file; locally it judges the files it recompiled.
#
# Usage: scripts/build-tests.sh [swift build arguments...]     (SWIFT=/path/to/swift to override)
set -euo pipefail
cd "$(dirname "$0")/.."

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"${SWIFT:-swift}" build --build-tests "$@" 2>&1 | tee "$log"
# The package's path is matched as text, not as a pattern (it may hold `.` or `+`). A warning in a
# macro's expansion (`#expect`) names the expansion, and on the next line the file it came from.
warnings="$(awk -v root="$PWD/" '
    function ours(line) { return index(line, root "Sources/") == 1 || index(line, root "Tests/") == 1 }
    expansion != "" {
        origin = $0; sub(/^[^\/]*/, "", origin)
        if (ours(origin) && origin ~ /: note: expanded code originates here/) {
            sub(/: note: expanded code originates here.*/, "", origin)
            print substr(origin, length(root) + 1) ": warning (in a macro expansion):" expansion
        }
        expansion = ""
    }
    /^macro expansion .*: warning:/ { expansion = $0; sub(/^[^:]*:[0-9]+:[0-9]+: warning:/, "", expansion); next }
    ours($0) && $0 ~ /:[0-9]+:[0-9]+: warning:/ { print substr($0, length(root) + 1) }' "$log" | sort -u)"
if [ -n "$warnings" ]; then
    echo "the compiler warned about our own files (they build without warnings):" >&2
    echo "$warnings" >&2
    exit 1
fi
