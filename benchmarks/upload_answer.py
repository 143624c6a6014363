"""How long an upload waits for its answer, and how much memory the web process grows by, as the
file grows from a few kB to the input size limit (256 MiB).

Run:  .venv/bin/python benchmarks/upload_answer.py [--ops 1000,100000,1000000,6500000] [--write]

Starts its own stack (benchmarks/stack.py: Redis, a fresh SQLite database and graph store, one
Celery compile worker, the gunicorn server `make run` starts, DEBUG off), makes an API user, and
uploads through POST /api/v1/runs (multipart, streamed from disk) an HLO module of N elementwise
ops in a chain for each N (38-40 bytes per op: 6.5 million ops are about 250 MB), smallest
first, then the 10^6-op chain gzipped (the request inflates it as it streams in, to hash the
graph) and the 12-layer transformer step (gzip). For each it records the seconds until the
answer, its status, and the largest resident size any gunicorn process reached so far (VmHWM).
The compile worker takes each upload as it comes, so the later uploads are answered while it
imports and compiles the earlier ones, as on a busy server.

Target (issue 18): the answer in under 1 s whatever the file's size; a web process never holds
a whole upload, nor a whole imported graph. Before the graph import moved to the worker, a
100,000-op file (3.3 MB) waited about 10 s for its answer and a 10^6-op one 97-378 s, with a
gunicorn process growing to 3.2 GB (the issue's figures, same kind of machine); before uploads
were streamed into the graph store, the 10^6-op one (38 MB) took 1.0-1.14 s and 206 MB.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.kernel_size import chain_lines  # noqa: E402
from benchmarks.stack import Stack  # noqa: E402

HERE = Path(__file__).parent
STEP = HERE / "data" / "transformer_12l.hlo.gz"


def server_peak_rss_mb(stack: Stack) -> float:
    """The largest VmHWM among the gunicorn master and its workers (forked: the same command
    line, with the stack's port), in MB."""
    peaks = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            if b"gunicorn" not in command or f":{stack.http_port}".encode() not in command:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(int(line.split()[1]) / 1024)
        except OSError:
            continue
    return max(peaks, default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="1000,100000,1000000,6500000",
                        help="chain lengths to upload, comma-separated")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="upload-answer-"))
    files = []
    for ops in sorted(int(n) for n in args.ops.split(",")):
        path = folder / f"chain_{ops}.hlo"
        lines = chain_lines(ops, "add")    # line by line: 6.5M ops would be GBs as a list
        with path.open("w") as file:
            file.write(next(lines))
            file.writelines(f"\n{line}" for line in lines)
        files.append((f"chain of {ops:,} ops", path))
    if 1_000_000 in [int(n) for n in args.ops.split(",")]:
        packed = folder / "chain_1000000.hlo.gz"
        with (folder / "chain_1000000.hlo").open("rb") as plain, \
                gzip.open(packed, "wb", compresslevel=6) as file:
            shutil.copyfileobj(plain, file, 1 << 20)
        files.append(("chain of 1,000,000 ops, gzip", packed))
    files.append(("transformer_12l.hlo.gz", STEP))
    rows = []
    load = os.getloadavg()[0]
    with Stack() as stack:
        client = stack.client(stack.new_api_user("uploader"))
        for label, path in files:
            start = time.perf_counter()
            try:
                answer = client.upload(path, devices="h100", strategies="xla,cost")
                status = answer["status"]
            except RuntimeError as error:
                status = f"error: {error}"
            seconds = time.perf_counter() - start
            rows.append({"file": label, "bytes": path.stat().st_size, "answer_s": seconds,
                         "status": status, "server_peak_rss_mb": server_peak_rss_mb(stack)})
            print(f"{label:28s} {path.stat().st_size / 1e6:9.2f} MB  answer {seconds:6.2f} s  "
                  f"{status:8s}  server peak RSS {rows[-1]['server_peak_rss_mb']:7.0f} MB",
                  flush=True)
        client.close()
    shutil.rmtree(folder)
    if args.write:
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "upload_answer.json").write_text(json.dumps({
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "load_average_before": load,
            "command": ".venv/bin/python benchmarks/upload_answer.py --write",
            "uploads": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
