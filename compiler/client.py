"""A client of a Fusion Explorer server's JSON API (docs/api.md), for CI jobs and notebooks.

    run = upload_jax(train_step, params, batch)         # lowered with jax.jit, uploaded, waited
    run = upload_torch(model, (example,))               # exported to ONNX, uploaded, waited
    run = upload_file("step.hlo", tags=["main"])        # any graph file the server reads
    run                                                 # in Jupyter: the plans' table
    compare(run.id, "tag:main").markdown()              # the regression gate's summary

It needs the standard library only: no Django, no requests, and JAX or PyTorch only inside the
function that lowers with it. The server and the API key come from the arguments, else the
environment (FUSION_EXPLORER_URL, FUSION_EXPLORER_TOKEN), else the config file
($FUSION_EXPLORER_CONFIG, by default ~/.config/fusion-explorer/config.toml: `server = "..."`,
`token = "..."`), the order `gh` and `glab` read theirs in. Every failure is a ClientError
whose message says what went wrong and what to do: the command line prints it and nothing else.

The gate compares one plan of two runs as the compare page does (compiler/kernels/matching.py
pairs their kernels by the nodes they compute) and calls it a regression when the plan's
projected total or its kernel count grew past a threshold.
"""
from __future__ import annotations

import gzip
import html
import itertools
import json
import mimetypes
import os
import secrets
import socket
import tempfile
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from compiler.kernels.matching import match_counts, match_kernels, plan_changes

URL_VARIABLE, TOKEN_VARIABLE = "FUSION_EXPLORER_URL", "FUSION_EXPLORER_TOKEN"
CONFIG_VARIABLE = "FUSION_EXPLORER_CONFIG"
TOKENS_PAGE = "/account/api-tokens"
# Seconds one request may take (an upload of a big file streams for longer: see _send).
REQUEST_TIMEOUT_S = 60
UPLOAD_TIMEOUT_S = 600
# How long `wait` waits for a run by default, and how often it asks.
WAIT_TIMEOUT_S = 1800
POLL_S = (0.5, 1.0, 2.0, 3.0)
# upload_torch keeps a model's weights in an external data file past this size: the server
# counts only the model file against its upload limit, and protobuf cannot hold 2 GiB.
EXTERNAL_DATA_OVER_BYTES = 64 * 2 ** 20
CHUNK_BYTES = 2 ** 20
DEFAULT_FAIL_OVER = 0.03
SHOWN_KERNEL_CHANGES = 10


class ClientError(Exception):
    """Something the user can act on: a wrong key, a server down, a refused upload, a run that
    failed or took too long, a graph its framework could not lower."""


# --- Where the server is ------------------------------------------------------------------------

@dataclass(frozen=True)
class Settings:
    server: str
    token: str | None


def config_path() -> Path:
    """The config file: $FUSION_EXPLORER_CONFIG, else fusion-explorer/config.toml in
    $XDG_CONFIG_HOME (by default ~/.config)."""
    if os.environ.get(CONFIG_VARIABLE):
        return Path(os.environ[CONFIG_VARIABLE])
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "fusion-explorer" / "config.toml"


def read_settings(server: str | None = None, token: str | None = None) -> Settings:
    """The server's URL and the API key: each from the argument, else the environment, else
    the config file. No server at all is an error naming the three places."""
    path = config_path()
    config = _read_config(path) if path.is_file() else {}
    server = server or os.environ.get(URL_VARIABLE) or config.get("server")
    token = token or os.environ.get(TOKEN_VARIABLE) or config.get("token")
    if not server:
        raise ClientError(f"no server given: pass --server URL, set {URL_VARIABLE}, or write "
                          f"server = \"https://...\" in {path}")
    if urllib.parse.urlsplit(server).scheme not in ("http", "https"):
        raise ClientError(f"the server must be an http:// or https:// URL, not {server!r}")
    return Settings(server.rstrip("/"), token or None)


def _read_config(path: Path) -> dict:
    try:
        config = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ClientError(f"{path}: cannot read the config file: {error}") from None
    for key in ("server", "token"):
        if key in config and not isinstance(config[key], str):
            raise ClientError(f"{path}: {key} must be a string")
    return config


# --- Talking to it ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Upload:
    """One file of a multipart upload."""
    path: Path


class Client:
    """The API of one server, as one user (their API key)."""

    def __init__(self, server: str | None = None, token: str | None = None):
        settings = read_settings(server, token)
        self.server, self.token = settings.server, settings.token

    def api(self, path: str) -> str:
        return f"{self.server}/api/v1{path}"

    def get(self, path: str, what: str, **query) -> dict:
        url = self.api(path) + (f"?{urllib.parse.urlencode(query)}" if query else "")
        return self._send(urllib.request.Request(url), what)

    def post(self, path: str, body: dict, what: str) -> dict:
        request = urllib.request.Request(self.api(path), data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        return self._send(request, what)

    def submit(self, files: list[Path], **fields) -> dict:
        """submitRun as multipart: the graph (and an ONNX model's external data files), with
        the options as fields (lists joined by commas); None and empty fields left out."""
        boundary = f"fusion-explorer-{secrets.token_hex(12)}"
        parts = [(key, ",".join(value) if isinstance(value, (list, tuple)) else str(value))
                 for key, value in fields.items() if value not in (None, "", [], ())]
        parts += [("file", Upload(path)) for path in files]
        body, length = _multipart(parts, boundary)
        request = urllib.request.Request(self.api("/runs"), data=body, headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Content-Length": str(length)})
        return self._send(request, f"the upload of {files[0].name}", UPLOAD_TIMEOUT_S)

    def _send(self, request: urllib.request.Request, what: str,
              timeout_s: float = REQUEST_TIMEOUT_S) -> dict:
        request.add_header("Accept", "application/json")
        request.add_header("Accept-Encoding", "gzip")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return self._json(response, response.read(), what)
        except urllib.error.HTTPError as error:
            raise ClientError(self._refusal(error, what)) from None
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise ClientError(f"no answer from {self.server} within {timeout_s:.0f} s "
                                  f"({what})") from None
            raise ClientError(f"cannot reach the server at {self.server} ({reason}): is it "
                              f"running, and is the URL right ({URL_VARIABLE}, --server)?"
                              ) from None
        except (TimeoutError, socket.timeout):
            raise ClientError(f"no answer from {self.server} within {timeout_s:.0f} s "
                              f"({what})") from None
        except ConnectionError as error:
            raise ClientError(f"the connection to {self.server} broke off ({error}) during "
                              f"{what}") from None

    def _json(self, response, data: bytes, what: str):
        if response.headers.get("Content-Encoding") == "gzip":
            data = gzip.decompress(data)
        try:
            return json.loads(data)
        except ValueError:
            kind = response.headers.get("Content-Type", "no content type")
            raise ClientError(f"{self.server} answered {what} with {kind}, not the explorer's "
                              f"JSON: is {self.server} a Fusion Explorer server?") from None

    def _refusal(self, error: urllib.error.HTTPError, what: str) -> str:
        """The server's own message for a refusal, with what to do where it is about the key."""
        try:
            message = self._json(error, error.read(), what)["error"]
        except (ClientError, KeyError, TypeError):
            message = error.reason
        if error.code == 401:
            where = "no API key was given" if self.token is None else "the API key was refused"
            return (f"{where} ({message}): make a key with scope 'submit' at "
                    f"{self.server}{TOKENS_PAGE} and pass it with --token or "
                    f"{TOKEN_VARIABLE}")
        if error.code >= 500:
            return f"the server failed during {what} ({error.code}): {message}"
        return f"the server refused {what} ({error.code}): {message}"

    # The operations the client uses.

    def run(self, run_id: str) -> Run:
        return Run(self, self.get(f"/runs/{_quoted(run_id)}", f"run {run_id}"))

    def status(self, run_id: str) -> dict:
        return self.get(f"/runs/{_quoted(run_id)}/status", f"the status of run {run_id}")

    def results(self, run_id: str) -> dict:
        return self.get(f"/runs/{_quoted(run_id)}/results", f"the results of run {run_id}")

    def baseline(self, run_id: str, tag: str) -> dict:
        return self.get(f"/runs/{_quoted(run_id)}/baseline", f"the baseline {tag!r}", tag=tag)

    def set_baseline(self, team: str, tag: str, run_id: str) -> dict:
        return self.post(f"/teams/{_quoted(team)}/baselines", {"tag": tag, "run": run_id},
                         f"the baseline {tag!r}")


def _quoted(part: str) -> str:
    return urllib.parse.quote(str(part), safe="")


def _multipart(parts: list[tuple[str, str | Upload]], boundary: str
               ) -> tuple[Iterator[bytes], int]:
    """A multipart/form-data body as chunks (files read as they are sent, never whole) and its
    length in bytes."""
    pieces: list[bytes | Path] = []
    for name, value in parts:
        if isinstance(value, Upload):
            kind = mimetypes.guess_type(value.path.name)[0] or "application/octet-stream"
            filename = value.path.name.replace('"', "%22")
            pieces += [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                       f'filename="{filename}"\r\nContent-Type: {kind}\r\n\r\n'.encode(),
                       value.path, b"\r\n"]
        else:
            pieces.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"'
                          f'\r\n\r\n{value}\r\n'.encode())
    pieces.append(f"--{boundary}--\r\n".encode())
    length = sum(piece.stat().st_size if isinstance(piece, Path) else len(piece)
                 for piece in pieces)

    def chunks() -> Iterator[bytes]:
        for piece in pieces:
            if isinstance(piece, bytes):
                yield piece
                continue
            with piece.open("rb") as file:
                while chunk := file.read(CHUNK_BYTES):
                    yield chunk
    return chunks(), length


# --- A run --------------------------------------------------------------------------------------

@dataclass
class Run:
    """A run on the server: its link, and once done its plans' totals per device and strategy
    (`totals`) and its results. In Jupyter it shows as a table of its plans."""
    client: Client = field(repr=False)
    detail: dict = field(repr=False)
    results: dict | None = field(default=None, repr=False)

    @property
    def id(self) -> str:
        return self.detail["id"]

    @property
    def url(self) -> str:
        return self.detail["url"]

    @property
    def title(self) -> str:
        return self.detail.get("name") or self.detail.get("filename") or self.id

    def __repr__(self) -> str:
        return f"Run({self.id!r}, {self.url!r}, {self.detail.get('status')!r})"

    def wait(self, timeout_s: float = WAIT_TIMEOUT_S,
             progress: Callable[[dict], None] | None = None) -> Run:
        """Poll the run's status until it is done (then read its results), calling
        `progress(status)` at each answer. A failed run, or one still not done after
        `timeout_s`, is a ClientError with its link and where it stands."""
        deadline = time.monotonic() + timeout_s
        for attempt in itertools.count():
            status = self.client.status(self.id)
            if progress:
                progress(status)
            if status["status"] == "done":
                break
            if status["status"] == "failed":
                raise ClientError(f"run {self.id} failed at stage {status['error_stage']}: "
                                  f"{status['error']}\n  {self.url}")
            if time.monotonic() > deadline:
                raise ClientError(f"gave up waiting after {timeout_s:g} s: run {self.id} is "
                                  f"still {describe_status(status)}\n  {self.url}")
            time.sleep(POLL_S[min(attempt, len(POLL_S) - 1)])
        self.detail["status"] = "done"
        self.results = self.client.results(self.id)
        return self

    def _done_results(self) -> dict:
        if self.results is None:
            raise ClientError(f"run {self.id} has no results here yet: wait() for it first")
        return self.results

    @property
    def totals(self) -> dict[str, dict[str, float | None]]:
        """{device: {strategy: projected total in µs}} (None: a plan that could not be
        made there, e.g. xla-gpu without its plugin)."""
        return {device: {strategy: plan["total"]["proj_us"] for strategy, plan in
                         result["strategies"].items()}
                for device, result in self._done_results()["devices"].items()}

    def plan_rows(self) -> list[dict]:
        """One row per device and plan: its strategy, kernel count, projected and speed-of-
        light totals, and its projected total over the device's best."""
        rows = []
        for device, result in self._done_results()["devices"].items():
            plans = result["strategies"]
            best = min((p["total"]["proj_us"] for p in plans.values()
                        if p["total"]["proj_us"] is not None), default=None)
            for strategy, plan in plans.items():
                total = plan["total"]["proj_us"]
                rows.append({"device": device, "strategy": strategy,
                             "kernels": plan.get("kernel_count", len(plan["kernels"])),
                             "proj_us": total, "sol_us": plan["total"]["sol_us"],
                             "over_best": total / best if total is not None and best else None,
                             "unavailable": plan.get("unavailable")})
        return rows

    def table(self) -> str:
        """The plans as plain text, one line each."""
        lines = [f"{'device':<8}{'plan':<16}{'kernels':>8}{'projected µs':>14}{'SOL µs':>10}"
                 f"{'vs best':>9}"]
        for row in self.plan_rows():
            lines.append(f"{row['device']:<8}{row['strategy']:<16}{row['kernels']:>8}"
                         f"{_number(row['proj_us']):>14}{_number(row['sol_us']):>10}"
                         f"{_times(row['over_best']):>9}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter's view: the run's link and its plans (every value escaped: names, tags and
        plan names are the user's text)."""
        head = (f'<p><a href="{html.escape(self.url)}" target="_blank">'
                f'{html.escape(self.title)}</a> · run {html.escape(self.id)} · '
                f'{html.escape(str(self.detail.get("status")))}</p>')
        if self.results is None:
            return head
        cells = "".join(
            f"<tr><td>{html.escape(row['device'])}</td><td>{html.escape(row['strategy'])}</td>"
            f"<td>{row['kernels']}</td><td>{_number(row['proj_us'])}</td>"
            f"<td>{_number(row['sol_us'])}</td><td>{_times(row['over_best'])}</td></tr>"
            for row in self.plan_rows())
        return (f"{head}<table><thead><tr><th>device</th><th>plan</th><th>kernels</th>"
                f"<th>projected µs</th><th>SOL µs</th><th>vs best</th></tr></thead>"
                f"<tbody>{cells}</tbody></table>")

    def summary(self) -> dict:
        """What `upload --json` prints."""
        summary = {"id": self.id, "url": self.url, "status": self.detail.get("status")}
        if self.results is not None:
            summary["plans"] = self.plan_rows()
        return summary


def describe_status(status: dict) -> str:
    """A run's status in a few words: "running: build 12/40 (h100: compiling ...)"."""
    words = status["status"]
    if status.get("stage") and status["status"] == "running":
        words += f": {status['stage']}"
        if status.get("progress_total"):
            words += f" {status['progress_done']}/{status['progress_total']}"
    if status.get("stage_detail"):
        words += f" ({status['stage_detail']})"
    return words


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:,.2f}"


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}x"


# --- Uploads ------------------------------------------------------------------------------------

def upload_file(path: str | Path, *more_files: str | Path, wait: bool = True,
                timeout_s: float = WAIT_TIMEOUT_S, progress: Callable[[dict], None] | None = None,
                server: str | None = None, token: str | None = None, **options) -> Run:
    """Upload a graph file (HLO text, StableHLO, ONNX, the JSON format; an ONNX model's
    external data files after it) and, with `wait`, wait for its run. `options`: submitRun's
    fields (name, tags, devices, strategies, runtime, visibility, team)."""
    files = [Path(name) for name in (path, *more_files)]
    for file in files:
        if not file.is_file():
            raise ClientError(f"{file}: no such file")
    client = Client(server, token)
    submitted = client.submit(files, **options)
    run = client.run(submitted["id"])
    return run.wait(timeout_s, progress) if wait else run


def upload_jax(fn: Callable, *example_args, dialect: str = "stablehlo", **options) -> Run:
    """Lower `fn` with jax.jit on `example_args` (arrays, or jax.ShapeDtypeStruct for shapes
    alone) and upload it as StableHLO (`dialect="stablehlo"`) or HLO text (`"hlo"`). The run
    is named after the function unless `name` says otherwise; see upload_file for the rest."""
    import jax     # only here: the client itself needs no framework

    if dialect not in ("stablehlo", "hlo"):
        raise ClientError(f"dialect must be 'stablehlo' or 'hlo', not {dialect!r}")
    name = getattr(fn, "__name__", "graph")
    try:
        lowered = jax.jit(fn).lower(*example_args)
        text = lowered.as_text() if dialect == "stablehlo" else \
            lowered.compiler_ir("hlo").as_hlo_text()
    except Exception as error:      # whatever JAX raises, its own message is the answer
        raise ClientError(f"JAX could not lower {name}: {type(error).__name__}: "
                          f"{error}") from None
    suffix = ".mlir" if dialect == "stablehlo" else ".hlo"
    with tempfile.TemporaryDirectory(prefix="fusion-explorer-") as folder:
        path = Path(folder) / f"{_file_stem(name)}{suffix}"
        path.write_text(text)
        return upload_file(path, **{"name": name, **options})


def upload_torch(model, example_args: tuple, *,
                 external_data_over: int = EXTERNAL_DATA_OVER_BYTES, **options) -> Run:
    """Export `model` to ONNX on `example_args` (torch.onnx's TorchScript exporter: the
    torch.export one needs onnxscript) and upload it; a model past `external_data_over` bytes
    goes with its weights in an external data file beside it. Named after the model's class
    unless `name` says otherwise; see upload_file for the rest."""
    import torch   # only here: the client itself needs no framework

    name = type(model).__name__
    args = tuple(example_args) if isinstance(example_args, (tuple, list)) else (example_args,)
    with tempfile.TemporaryDirectory(prefix="fusion-explorer-") as folder:
        path = Path(folder) / f"{_file_stem(name)}.onnx"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # the exporter's deprecation notice
                torch.onnx.export(model, args, str(path), dynamo=False)
        except Exception as error:  # whatever torch raises, its own message is the answer
            raise ClientError(f"torch could not export {name} to ONNX: "
                              f"{type(error).__name__}: {error}") from None
        files = [path]
        if path.stat().st_size > external_data_over:
            files.append(_move_weights_out(path))
        return upload_file(*files, **{"name": name, **options})


def _move_weights_out(path: Path) -> Path:
    """Re-save the ONNX model at `path` with its weights in `<name>.data` beside it."""
    import onnx    # only with torch, which brings it

    data = path.with_name(path.name + ".data")
    onnx.save_model(onnx.load(str(path)), str(path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=data.name, size_threshold=1024)
    return data


def _file_stem(name: str) -> str:
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return stem or "graph"


# --- The regression gate ------------------------------------------------------------------------

@dataclass(frozen=True)
class Side:
    run: str
    title: str
    url: str
    plan: dict


@dataclass(frozen=True)
class Comparison:
    """One plan of a run against the same plan of its baseline."""
    device: str
    strategy: str
    baseline: Side
    current: Side
    fail_over: float
    rows: list[dict]
    changes: dict

    @property
    def totals(self) -> tuple[float | None, float | None]:
        return self.baseline.plan["total"]["proj_us"], self.current.plan["total"]["proj_us"]

    @property
    def kernel_counts(self) -> tuple[int, int]:
        return tuple(len(side.plan["kernels"]) for side in (self.baseline, self.current))

    def reasons(self) -> list[str]:
        """Why the plan regressed: each figure that grew past the threshold."""
        found = []
        for label, (before, after) in (("projected total", self.totals),
                                       ("kernel count", self.kernel_counts)):
            growth = _growth(before, after)
            if growth is not None and growth > self.fail_over:
                found.append(f"{label} {_percent(growth)} (over {_percent(self.fail_over)})")
        return found

    @property
    def regressed(self) -> bool:
        return bool(self.reasons())

    def to_dict(self) -> dict:
        counts = match_counts(self.rows)
        return {"device": self.device, "strategy": self.strategy,
                "fail_over": self.fail_over, "regressed": self.regressed,
                "reasons": self.reasons(),
                "baseline": {"run": self.baseline.run, "url": self.baseline.url},
                "run": {"run": self.current.run, "url": self.current.url},
                "proj_us": list(self.totals), "kernels": list(self.kernel_counts),
                "matched": counts, "split": len(self.changes["split"]),
                "merged": len(self.changes["merged"]), "markdown": self.markdown()}

    def markdown(self) -> str:
        """A summary to post on a pull request: both permalinks, the totals, how the kernels
        changed, the largest kernel changes, and the verdict."""
        (before, after), (kernels_before, kernels_after) = self.totals, self.kernel_counts
        counts = match_counts(self.rows)
        verdict = (f"**Regression**: {'; '.join(self.reasons())}." if self.regressed else
                   f"**No regression** (threshold {_percent(self.fail_over)}).")
        lines = [
            f"### Fusion plan `{self.strategy}` on {self.device}: {verdict}", "",
            f"- This run: [{_cell(self.current.title)}]({self.current.url})",
            f"- Baseline: [{_cell(self.baseline.title)}]({self.baseline.url})", "",
            "| | baseline | this run | change |", "|---|---:|---:|---:|",
            _total_row("projected total (µs)", before, after),
            _total_row("speed of light (µs)", self.baseline.plan["total"]["sol_us"],
                       self.current.plan["total"]["sol_us"]),
            f"| kernels | {kernels_before} | {kernels_after} | "
            f"{kernels_after - kernels_before:+d} |", "",
            f"Kernels matched by the nodes they compute: {counts['matched']} matched, "
            f"{counts['only_a']} only in the baseline, {counts['only_b']} only in this run; "
            f"{len(self.changes['split'])} split, {len(self.changes['merged'])} merged."]
        changed = [row for row in self.rows if row["proj_delta"]][:SHOWN_KERNEL_CHANGES]
        if changed:
            lines += ["", "| kernel (baseline → this run) | baseline µs | this run µs | "
                          "change µs |", "|---|---:|---:|---:|"]
            lines += [f"| {_kernel(row['a'])} → {_kernel(row['b'])} | "
                      f"{_number(row['a_proj_us'])} | {_number(row['b_proj_us'])} | "
                      f"{row['proj_delta']:+,.2f} |" for row in changed]
        return "\n".join(lines) + "\n"


def compare(run_id: str, baseline: str, strategy: str = "cost", device: str | None = None,
            fail_over: float = DEFAULT_FAIL_OVER, server: str | None = None,
            token: str | None = None) -> Comparison:
    """Run `run_id`'s plan `strategy` against the baseline's: `baseline` is a run's id or
    `tag:NAME`, the baseline of the tag for the run's graph in its team. `device`: one both
    runs have (by default the run's first)."""
    client = Client(server, token)
    current = client.run(run_id)
    if baseline.startswith("tag:"):
        baseline = client.baseline(run_id, baseline.removeprefix("tag:"))["run"]
    before = client.run(baseline)
    for run in (before, current):
        run.results = client.results(run.id)
    device = device or next(iter(current.results["devices"]))
    sides = []
    for run in (before, current):
        plans = run.results["devices"].get(device, {}).get("strategies", {})
        if strategy not in plans:
            raise ClientError(f"run {run.id} has no plan {strategy!r} on {device}; it has "
                              f"{', '.join(plans) or 'no plans there'}")
        sides.append(Side(run.id, run.title, run.url, plans[strategy]))
    kernels = [side.plan["kernels"] for side in sides]
    return Comparison(device, strategy, sides[0], sides[1], fail_over,
                      match_kernels(*kernels), plan_changes(*kernels))


def parse_threshold(text: str) -> float:
    """"3%" (or "3") as 0.03."""
    number = text.strip().removesuffix("%")
    try:
        value = float(number) / 100
    except ValueError:
        raise ClientError(f"the threshold must be a percentage such as 3%, not {text!r}") \
            from None
    if not value >= 0:
        raise ClientError(f"the threshold must be a percentage of 0% or more, not {text!r}")
    return value


def _growth(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or before == 0:
        return None
    return (after - before) / before


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:+.1f} %"


def _total_row(label: str, before: float | None, after: float | None) -> str:
    return (f"| {label} | {_number(before)} | {_number(after)} | "
            f"{_percent(_growth(before, after))} |")


def _cell(text: str) -> str:
    """Text for a markdown table or link: its pipes and brackets escaped."""
    return "".join("\\" + c if c in "|[]" else c for c in text)


def _kernel(kernel: dict | None) -> str:
    return "–" if kernel is None else f"`{kernel['name']}`"
