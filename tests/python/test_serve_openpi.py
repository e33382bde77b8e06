#!/usr/bin/env python3
"""`ember serve` driven by openpi's own, unchanged client (issue 40): openpi-client 0.1.2's
WebsocketClientPolicy, from PyPI, in its own venv (scripts/requirements-openpi.txt; it needs
numpy < 2).

  a tiny checkpoint trained one step on a dataset with PNG cameras (dataset_write_tool), so that
  the client can send exactly the frames `ember predict` reads
  the metadata frame; actions equal to `ember predict --actions_out` on the same frame, for the
  connection's first request (seed 0) and for given noise; four clients at once
  garbage from a plain websocket (openpi's dependency `websockets`): a text frame, bytes that are
  not msgpack, an unknown key, a message over --max_message_mb; each gets its error (a text
  frame, or close status 1009) and its connection closes, while a good client goes on
  GET /healthz, the API key (openpi-client's api_key), SIGTERM (exit status 0), and the
  one-line errors (exit status 2) for bad flags, an unreadable checkpoint, a port in use

Run by CTest with the test venv's Python:
  test_serve_openpi.py --ember PATH --write-tool PATH --openpi-python PY
It re-runs itself under PY; where PY or its openpi_client is missing it prints
"skipped: <reason>" and exits 77 (CTest reports the test skipped).
"""
import argparse
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading

import checks
from checks import check

SKIP = 77


def run(cmd, timeout=300):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


class Served:
    """`ember serve` on a free port (--port 0), its address read from its first line."""

    def __init__(self, ember, checkpoint, *flags):
        self.p = subprocess.Popen([ember, "serve", "--checkpoint", checkpoint, "--port", "0", "--device", "cpu", *flags],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.p.stdout], [], [], 120)
        line = self.p.stdout.readline() if ready else ""
        m = re.search(r"listening on ws://([^ ]+):(\d+) ", line)
        if not m:
            self.p.kill()
            raise RuntimeError(f"ember serve did not start: {line!r} {self.p.stderr.read()!r}")
        self.host, self.port = m.group(1), int(m.group(2))

    def stop(self, sig=signal.SIGTERM):
        self.p.send_signal(sig)
        out, err = self.p.communicate(timeout=60)
        return self.p.returncode, out, err


def frames(tool_out):
    """Each frame of the written dataset as (task, top [24, 32, 3], wrist [16, 20, 3], state [6]), in index order."""
    import json
    import numpy as np
    expected = json.load(open(os.path.join(tool_out, "expected.json")))
    rgb = open(os.path.join(tool_out, "expected_rgb.bin"), "rb").read()
    out, pos = [], 0
    for ep in expected["episodes"]:
        for row in ep["frames"]:
            top = np.frombuffer(rgb, np.uint8, 24 * 32 * 3, pos).reshape(24, 32, 3)
            wrist = np.frombuffer(rgb, np.uint8, 16 * 20 * 3, pos + top.size).reshape(16, 20, 3)
            pos += top.size + wrist.size
            out.append((ep["task"], top, wrist, np.array(row["observation.state"], np.float32)))
    return out


def observation(frame):
    task, top, wrist, state = frame
    return {"observation/image": top, "observation/wrist_image": wrist, "observation/state": state, "prompt": task}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--write-tool", required=True)
    ap.add_argument("--openpi-python", required=True)
    ap.add_argument("--inner", action="store_true")
    a = ap.parse_args()
    if not a.inner:
        if not os.path.exists(a.openpi_python):
            print(f"skipped: no openpi-client venv at {a.openpi_python} (scripts/setup.sh makes it)")
            return SKIP
        if subprocess.run([a.openpi_python, "-c", "import openpi_client.websocket_client_policy"], capture_output=True).returncode:
            print(f"skipped: {a.openpi_python} cannot import openpi_client (pip install -r scripts/requirements-openpi.txt)")
            return SKIP
        os.execv(a.openpi_python, [a.openpi_python, os.path.abspath(__file__), *sys.argv[1:], "--inner"])

    import numpy as np
    import websockets.sync.client as ws_client
    from openpi_client import msgpack_numpy
    from openpi_client.websocket_client_policy import WebsocketClientPolicy
    import urllib.request

    ember = a.ember
    with tempfile.TemporaryDirectory(prefix="ember_serve_openpi_") as tmp:
        data = os.path.join(tmp, "data")
        rc, _, err = run([a.write_tool, data, "--episodes", "3"])
        if rc:
            check("dataset_write_tool", False, err)
            return checks.summary()
        dataset = os.path.join(data, "v30")
        run_dir = os.path.join(tmp, "run")
        rc, out, err = run([ember, "train", f"--dataset.root={dataset}", f"--output_dir={run_dir}", "--device=cpu", "--steps=1",
                            "--batch_size=2", "--policy.horizon=4", "--policy.num_steps=3", "--dataset.image_size=32",
                            "--num_workers=1", "--save_freq=1"])
        check("a tiny checkpoint (ember train, one step)", rc == 0, err)
        all_frames = frames(data)

        def predict(index, noise=None):
            path = os.path.join(tmp, f"predict_{index}_{'seed' if noise is None else 'noise'}.npy")
            cmd = [ember, "predict", "--checkpoint", run_dir, f"--dataset.root={dataset}", "--index", str(index), "--device", "cpu",
                   "--actions_out", path]
            if noise is not None:
                np.save(os.path.join(tmp, "noise.npy"), noise)
                cmd += ["--noise", os.path.join(tmp, "noise.npy")]
            rc, _, err = run(cmd)
            if rc:
                raise RuntimeError(err)
            return np.load(path)

        server = Served(ember, run_dir)
        try:
            client = WebsocketClientPolicy(host=server.host, port=server.port)
            meta = client.get_server_metadata()
            check("the metadata frame", meta.get("server") == "ember serve" and meta.get("action_horizon") == 4 and
                  meta.get("action_dim") == 4 and meta.get("state_dim") == 6, repr(meta))
            reply = client.infer(observation(all_frames[2]))
            want = predict(2)
            got = reply["actions"]
            check("actions equal ember predict's (the connection's first request: seed 0)",
                  isinstance(got, np.ndarray) and got.dtype == np.float32 and np.array_equal(got, want), f"{got!r} vs {want!r}")
            check("server_timing", reply.get("server_timing", {}).get("infer_ms", 0) > 0, repr(reply.get("server_timing")))
            noise = np.random.default_rng(3).standard_normal((4, meta["max_action_dim"])).astype(np.float32)
            got = client.infer({**observation(all_frames[6]), "noise": noise})["actions"]
            want = predict(6, noise)
            check("actions equal ember predict --noise's for the same noise", np.array_equal(got, want), f"{got!r} vs {want!r}")

            # four clients at once, each its own frame and noise
            results, errors = [None] * 4, []

            def one(i):
                try:
                    c = WebsocketClientPolicy(host=server.host, port=server.port)
                    n = np.random.default_rng(10 + i).standard_normal((4, meta["max_action_dim"])).astype(np.float32)
                    results[i] = (n, c.infer({**observation(all_frames[i]), "noise": n})["actions"])
                except Exception as e:  # noqa: BLE001 (reported below)
                    errors.append(repr(e))

            threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            ok = not errors and all(r is not None for r in results)
            for i, r in enumerate(results):
                if r is not None:
                    ok = ok and np.allclose(r[1], predict(i, r[0]), atol=1e-4, rtol=0)
            check("four clients at once, each its own chunk", ok, repr(errors))

            # garbage from plain websockets: an error text frame naming what is wrong, then the close
            uri = f"ws://{server.host}:{server.port}"

            def garbage(name, payload, must_mention):
                with ws_client.connect(uri, compression=None, max_size=None) as bad:
                    bad.recv()  # metadata
                    bad.send(payload)
                    text = bad.recv(timeout=60)
                    try:
                        bad.recv(timeout=60)
                        closed = None
                    except Exception as e:  # ConnectionClosed
                        closed = getattr(getattr(e, "rcvd", None), "code", None)
                check(f"garbage: {name}", isinstance(text, str) and must_mention in text and closed == 1008, f"{text!r} {closed}")

            garbage("a text frame", "hello", "got a text frame")
            garbage("not msgpack", b"\xc1\x00\x01", "not msgpack")
            garbage("an unknown key", msgpack_numpy.packb({**observation(all_frames[2]), "observation/extra": 1}),
                    "unknown key 'observation/extra'")
            garbage("a state of the wrong dtype", msgpack_numpy.packb({**observation(all_frames[2]),
                                                                        "observation/state": np.zeros(6, np.int32)}),
                    "key 'observation/state': dtype <i4")
            check("the first client is still served", np.array_equal(client.infer(observation(all_frames[2]))["actions"].shape, (4, 4)))

            status = urllib.request.urlopen(f"http://{server.host}:{server.port}/healthz", timeout=30)
            check("GET /healthz", status.status == 200 and status.read() == b"OK\n")

            # a port in use: one line naming --port, status 2
            rc, out, err = run([ember, "serve", "--checkpoint", run_dir, "--port", str(server.port), "--device", "cpu"])
            check("a port in use is a one-line error naming --port", rc == 2 and f"--port {server.port}" in err and
                  len(err.strip().splitlines()) == 1, f"rc={rc} {err!r}")
        finally:
            rc, out, err = server.stop()
        check("SIGTERM: exit status 0, a closing line", rc == 0 and "stopped by SIGTERM" in out, f"rc={rc} {out!r} {err!r}")

        # a message over --max_message_mb: closed 1009 before it is read; others go on
        server = Served(ember, run_dir, "--max_message_mb", "1", "--api_key", "k3y")
        try:
            try:
                WebsocketClientPolicy(host=server.host, port=server.port)
                check("no API key: refused", False, "connected")
            except Exception as e:  # noqa: BLE001
                check("no API key: refused (HTTP 401)", "401" in str(e), repr(e))
            client = WebsocketClientPolicy(host=server.host, port=server.port, api_key="k3y")
            with ws_client.connect(f"ws://{server.host}:{server.port}", compression=None, max_size=None,
                                   additional_headers={"Authorization": "Api-Key k3y"}) as big:
                big.recv()
                # only the frame's header, claiming 3 MB (a binary frame, masked as a client's):
                # the server refuses it from the header. (A client still sending a whole message
                # when refused can see a reset instead of the close frame: Boost 1.74's Beast
                # reads only 2 KB of what is left before it closes the socket; docs/serve.md.)
                header = bytes([0x82, 0x80 | 127]) + (3 << 20).to_bytes(8, "big") + b"\x01\x02\x03\x04"
                try:
                    big.socket.sendall(header + b"\x00" * 64)
                    big.recv(timeout=60)
                    code = None
                except Exception as e:  # ConnectionClosed
                    code = getattr(getattr(e, "rcvd", None), "code", None)
            check("a message over --max_message_mb: closed 1009", code == 1009, repr(code))
            check("the API key's client is served", client.infer(observation(all_frames[2]))["actions"].shape == (4, 4))
        finally:
            rc, _, err = server.stop(signal.SIGINT)
        check("SIGINT: exit status 0", rc == 0, err)

        def user_error(name, flags, must_mention):
            rc, out, err = run([ember, "serve", *flags])
            lines = [l for l in err.splitlines() if l.startswith("ember: error")]
            check(name, rc == 2 and len(lines) == 1 and must_mention in err, f"rc={rc} {err!r}")

        user_error("an unreadable checkpoint", ["--checkpoint", os.path.join(tmp, "nowhere")], os.path.join(tmp, "nowhere"))
        user_error("--port out of range", ["--checkpoint", run_dir, "--port", "70000"], "--port 70000")
        user_error("--obs_map not JSON", ["--checkpoint", run_dir, "--port", "0", "--obs_map", "{"], "--obs_map")
        user_error("--max_batch 0", ["--checkpoint", run_dir, "--max_batch", "0"], "--max_batch")
        user_error("--device nonsense", ["--checkpoint", run_dir, "--device", "tpu"], "--device")
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
