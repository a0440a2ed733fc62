#!/usr/bin/env bash
# The stream path against the floor for both of SCV's transports, in one run:
# ../shared/bench/floor.sh's relay and its `scv-server --stdio` probe, plus
# the daemon over its Unix socket (scripts/scv_sockprobe.py), interleaved
# round by round against the same mock. Prints each median and its ratio to
# the relay's (the median of the rounds, and the median of the per-round
# ratios, which the machine's drift moves less).
#   bash scripts/floor-both.sh [path/to/scv-server]     (from the project root)
# Knobs: DELTAS (15000), RUNS (15), RELAY_TARGET (cargo target dir for the relay).
set -euo pipefail
# The relay kit (relay, mock_chat.py, scv_rawprobe.py) is not part of this
# repository: SCV_BENCH_DIR names it (default: the shared kit beside it).
bench=${SCV_BENCH_DIR:-$(cd "$(dirname "$0")/../../shared/bench" && pwd)}
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-target/release/scv-server}
N=${DELTAS:-15000}; RUNS=${RUNS:-15}
export CARGO_TARGET_DIR=${RELAY_TARGET:-${TMPDIR:-/tmp}/scv-floor-target}
(cd "$bench/relay" && cargo build --release -q)
relay="$CARGO_TARGET_DIR/release/relay"
port_file=$(mktemp)
python3 "$bench/mock_chat.py" --port 0 --port-file "$port_file" >/dev/null 2>&1 &
mock=$!; trap 'kill $mock 2>/dev/null; rm -f "$port_file" "$port_file.relay"' EXIT
for _ in $(seq 50); do [ -s "$port_file" ] && break; sleep 0.1; done
port=$(cat "$port_file")
url="http://127.0.0.1:$port/d/$N/v1/chat/completions"
relay_ms=(); stdio_ms=(); daemon_ms=()
median() { sed -n 's/.*median \([0-9.]*\) .*/\1/p'; }
for _ in $(seq "$RUNS"); do
  "$relay" "$url" 3 2>"$port_file.relay" | python3 -c 'import os
while os.read(0, 1 << 20): pass'
  relay_ms+=("$(sed -n 's/.* in \([0-9.]*\) ms/\1/p' "$port_file.relay" | sort -n | sed -n 2p)")
  stdio_ms+=("$(python3 "$bench/scv_rawprobe.py" --bin "$bin" --port "$port" --deltas "$N" --runs 3 | median)")
  daemon_ms+=("$(python3 "$here/scv_sockprobe.py" --bin "$bin" --port "$port" --deltas "$N" --runs 3 | median)")
done
python3 - "${relay_ms[*]}" "${stdio_ms[*]}" "${daemon_ms[*]}" <<'PY'
import statistics as st, sys
r, s, d = ([float(x) for x in a.split()] for a in sys.argv[1:4])
print(f"{len(r)} interleaved rounds, relay median {st.median(r):.1f} ms")
for name, xs in (("stdio", s), ("daemon", d)):
    paired = st.median(x / y for x, y in zip(xs, r))
    print(f"{name:6} median {st.median(xs):.1f} ms: {st.median(xs) / st.median(r):.2f}x the relay "
          f"(per-round ratios: median {paired:.2f})")
PY
