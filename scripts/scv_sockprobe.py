#!/usr/bin/env python3
"""The daemon's stream path, timed as ../shared/bench/scv_rawprobe.py times
`scv-server --stdio`: one session on a daemon started for the run
(`scv-server --socket`), turns of the mock's N-delta answer, the client
reading raw bytes (no JSON parse per line). Needs ../shared/bench/mock_chat.py
on --port. Used by scripts/floor-daemon.sh.

  python3 scripts/scv_sockprobe.py --bin target/release/scv-server --port P --deltas 15000 --runs 3
"""
import argparse, json, os, socket, statistics, subprocess, tempfile, time


def run(binary, port, n, steps):
    home = tempfile.mkdtemp(prefix="scvsock-")
    url = f"http://127.0.0.1:{port}/d/{n}/v1"
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(f'model = "mock-model"\nbase_url = "{url}"\n')
    path = os.path.join(home, "server.sock")
    env = dict(os.environ, SCV_HOME=home, OPENAI_API_KEY="dummy")
    daemon = subprocess.Popen([binary, "--socket", path], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        sock = socket.socket(socket.AF_UNIX)
        for _ in range(500):
            try:
                sock.connect(path)
                break
            except OSError:
                time.sleep(0.01)
        def send(m):
            sock.sendall((json.dumps(m) + "\n").encode())
        buf = b""
        def until(marker):
            nonlocal buf
            while marker not in buf:
                buf += sock.recv(1 << 16)
        send({"type": "initialize", "request_id": "1", "protocol_version": 2})
        until(b'"initialized"')
        send({"type": "session.start", "request_id": "2", "cwd": home})
        until(b'"session.started"')
        while b"\n" not in buf[buf.index(b'"session.started"'):]:
            buf += sock.recv(1 << 16)
        line = [l for l in buf.split(b"\n") if b'"session.started"' in l][0]
        sid = json.loads(line)["session_id"]
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            send({"type": "turn.start", "request_id": "3", "session_id": sid, "prompt": "go"})
            deltas, tail = 0, b""
            while True:
                chunk = sock.recv(1 << 20)
                data = tail + chunk
                deltas += data.count(b'"assistant.delta"') - tail.count(b'"assistant.delta"')
                if b'"turn.completed"' in data or b'"turn.failed"' in data:
                    break
                tail = data[-64:]
            times.append((time.perf_counter() - t0) * 1000)
            assert deltas == n, (deltas, n)
        sock.close()
        return times
    finally:
        daemon.terminate()
        daemon.wait(10)


ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True); ap.add_argument("--port", type=int, required=True)
ap.add_argument("--deltas", type=int, default=15000); ap.add_argument("--runs", type=int, default=7)
a = ap.parse_args()
t = run(a.bin, a.port, a.deltas, a.runs)
print(f"deltas {a.deltas}: turn ms median {statistics.median(t):.1f} min {min(t):.1f} max {max(t):.1f} "
      f"({statistics.median(t) * 1000 / a.deltas:.2f} us/delta)")
