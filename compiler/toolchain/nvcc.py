"""Compile many generated kernels: PTX, cubin and ptxas' resource report for each.

    results = build_kernels({"fused_0": source0, "fused_1": source1}, "sm_90")
    results["fused_0"].registers, results["fused_0"].cubin

How, and why this way:

1. Front end once per batch (or chunk). Every nvcc run spends about 1 s on the CUDA headers
   and the prelude before it reaches the kernels, so 50 small kernels built one by one take
   about 25 s on the 2-core development machine, and as one batch about 1.5 s. The kernels
   are `extern "C"` with unique names and the prelude has an include guard, so the sources are
   concatenated, each behind a `#line 1 "<unit>.cu"` so that errors name the source and its
   own line numbers, and each followed by `#undef` of the macros it defined, so that no macro
   leaks into the next source. `nvcc --ptx` gives one PTX module, which `split_ptx` cuts into
   one standalone module per kernel. Past `CHUNK_SOURCE_BYTES` of source (about 1 s of cicc's
   own work, at roughly 4 ms per KB) the batch is cut into `PARALLEL_JOBS` chunks of about
   equal size, compiled at once: each chunk parses the headers again, but the kernels' work is
   shared between the cores (the xla plan of the 12-layer transformer step, 1.4 MB of source:
   about 6.5 s as one nvcc run, 4.5 s as two). The chunks' PTX differs from one run's only in
   the numbering of basic-block labels. Sources that clash when concatenated (the same helper
   or namespace-scope constant defined in two of them) still build, through step 3, but each
   such clash costs a separate nvcc run: the fast path wants helpers in the prelude and
   constants inside the kernel. A text holding several kernels is passed once per kernel
   name; its other kernels keep their names and are left out of this kernel's PTX.
2. Back end per distinct kernel (step 4). `ptxas -v` on each distinct kernel's PTX (about 18 ms
   to start the process, then 5 to 400 ms of the kernel's own; `PARALLEL_JOBS` at a time, one
   per core, the largest first) gives a cubin that holds only that kernel and a report that
   cannot be confused with another's. One ptxas run for a whole chunk would save the process
   starts (about half of ptxas' time on the 12-layer step) but give one cubin holding every
   kernel of the chunk: a loader would load them all for each, cubin and `__constant__` sizes
   would stop being per kernel, and a cache entry would hold a chunk.
3. A compile error in one source does not lose the others: when the combined build fails, the
   sources named in the errors are compiled alone (for their own message) and the rest again
   together; when no source is named (an error in a shared header), every source is compiled
   alone, `PARALLEL_JOBS` at a time.
4. Structurally identical kernels (the same text once the kernel's name is replaced by a
   placeholder) share one front-end compile, one ptxas run, one cubin and one cache entry per
   stage. ptxas compiles the kernel under its placeholder name (`fx_unit_<hash>`), so the
   cubin, its symbol and the resources depend on the kernel's text alone, not on which names
   share it: every name gets the same registers, spills, shared memory, stack, barriers,
   constant and code bytes, and the same cubin, whose symbol `BuildResult.cubin_function`
   names (what a loader looks up; `GpuRunner.load` does). The PTX and the ptxas log are
   renamed by text substitution, so each name's PTX defines a kernel of that name.
   `BuildBatch.unique_kernels` says how many distinct kernels there were.
5. Both stages are cached by content (`cache.py`): the front end by the normalised source,
   arch, toolchain fingerprint, the include directories' headers and the flags; the back end
   by the placeholder-named PTX, arch, toolchain and flags. A second build of the same batch
   runs no compiler at all. Compile errors are cached too: they are as deterministic as
   successes; a compiler killed by a signal (out of memory, a timeout) is not cached.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

from compiler.toolchain.cache import BuildCache, cache_key, headers_digest
from compiler.toolchain.ptx import (ResourceReportError, cubin_section_sizes,
                                    kernel_code_bytes, kernel_constant_bytes, parse_resources,
                                    split_ptx)
from compiler.toolchain.locate import Toolchain, check_arch, find_toolchain

# As many compiler processes as the cores this process may use: 2 on the development machine,
# 16 on the GPU machines, where the campaign builds thousands of candidate kernels.
PARALLEL_JOBS = max(2, len(os.sched_getaffinity(0)))
# Source text (bytes) past which a front-end batch is cut into PARALLEL_JOBS chunks.
CHUNK_SOURCE_BYTES = 200_000
SUBPROCESS_TIMEOUT_S = 600
EXCERPT_CONTEXT_LINES = 2

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# nvcc's front end: `file(12): error: ...`; the host preprocessor: `file:12:3: fatal error: ...`
_ERROR_LOCATION = re.compile(
    r"^(?P<file>[^\s():]+)(?:\((?P<line>\d+)\)|:(?P<gline>\d+):\d+): (?:catastrophic |fatal )?"
    r"error", re.MULTILINE)


@dataclass(frozen=True)
class BuildOptions:
    """Everything besides the source and arch that changes the output; part of the cache key."""

    std: str = "c++17"
    optimisation: int = 3
    max_registers: int | None = None      # ptxas --maxrregcount
    extra_nvcc_flags: tuple[str, ...] = ()

    def nvcc_flags(self) -> list[str]:
        return [f"-std={self.std}", f"-O{self.optimisation}", *self.extra_nvcc_flags]

    def ptxas_flags(self) -> list[str]:
        flags = [f"-O{self.optimisation}", "-v"]
        if self.max_registers is not None:
            flags.append(f"--maxrregcount={self.max_registers}")
        return flags


@dataclass(frozen=True)
class BuildResult:
    name: str
    arch: str
    source: str
    ok: bool
    error: str | None = None          # the compiler's message and an excerpt of the source
    ptx: str = ""                     # a standalone PTX module holding this kernel
    cubin: bytes = b""                # a loadable module holding only this kernel
    registers: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    shared_static_bytes: int = 0
    stack_bytes: int = 0
    barriers: int = 0
    constant_bytes: int = 0           # parameter bank + the module's __constant__ data
    code_bytes: int = 0               # the kernel's machine code (.text section)
    ptxas_log: str = ""
    # The cubin's symbol for this kernel: kernels identical but for their name share one
    # cubin, compiled under a placeholder name. Defaults to `name`.
    cubin_function: str = ""

    def __post_init__(self):
        if not self.cubin_function:
            object.__setattr__(self, "cubin_function", self.name)

    @property
    def cubin_bytes(self) -> int:
        return len(self.cubin)

    def to_dict(self) -> dict:
        """Everything but the binary (and its symbol): the artifact the web app stores and
        shows."""
        return {"name": self.name, "arch": self.arch, "ok": self.ok, "error": self.error,
                "registers": self.registers, "spill_store_bytes": self.spill_store_bytes,
                "spill_load_bytes": self.spill_load_bytes,
                "shared_static_bytes": self.shared_static_bytes,
                "stack_bytes": self.stack_bytes, "barriers": self.barriers,
                "constant_bytes": self.constant_bytes, "code_bytes": self.code_bytes,
                "cubin_bytes": self.cubin_bytes, "ptx": self.ptx, "ptxas_log": self.ptxas_log}


@dataclass(frozen=True)
class BuildBatch:
    results: dict[str, BuildResult]
    unique_kernels: int            # distinct sources once kernel names are normalised
    front_end_compiles: int        # distinct sources that went through nvcc (cache misses)
    ptxas_runs: int
    nvcc_invocations: int
    seconds: float


def build_kernels(sources: Mapping[str, str], arch: str,
                  include_dirs: Iterable[str | Path] = (), *,
                  options: BuildOptions = BuildOptions(), cache: BuildCache | None = None,
                  toolchain: Toolchain | None = None,
                  progress: Callable[[int], None] | None = None,
                  phase: Callable[[str], None] | None = None) -> dict[str, BuildResult]:
    """{kernel name: BuildResult} for `sources` ({kernel name: CUDA source defining
    `extern "C" __global__ void <name>(...)`}), compiled for `arch` ("sm_90").
    `progress(n)`: called in this thread as kernels are done, n at a time (the n add up to
    the number of sources), so a long batch shows it moves; `phase(text)` when it starts
    compiling to PTX and when it starts assembling, with how many kernels each step has."""
    return build_batch(sources, arch, include_dirs, options=options, cache=cache,
                       toolchain=toolchain, progress=progress, phase=phase).results


def build_batch(sources: Mapping[str, str], arch: str,
                include_dirs: Iterable[str | Path] = (), *,
                options: BuildOptions = BuildOptions(), cache: BuildCache | None = None,
                toolchain: Toolchain | None = None,
                progress: Callable[[int], None] | None = None,
                phase: Callable[[str], None] | None = None) -> BuildBatch:
    """`build_kernels` with the batch's counts: unique kernels, compiler runs, seconds."""
    started = time.perf_counter()
    check_arch(arch)
    toolchain = toolchain or find_toolchain()
    cache = cache if cache is not None else BuildCache.from_env()
    include_dirs = tuple(Path(d).resolve() for d in include_dirs)
    counter = _Counter()
    environment_key = (arch, toolchain.fingerprint, headers_digest(include_dirs),
                       repr(options))

    results: dict[str, BuildResult] = {}
    units: dict[str, _Unit] = {}
    for name, source in sources.items():
        problem = _naming_problem(name, source)
        if problem:
            results[name] = BuildResult(name=name, arch=arch, source=source, ok=False,
                                        error=problem)
            continue
        normalised = re.sub(rf"\b{name}\b", _Unit.TOKEN, source)
        key = cache_key("front", normalised, *environment_key)
        units.setdefault(key, _Unit(key, normalised)).names.append(name)

    def report(count: int) -> None:
        if count and progress is not None:
            progress(count)

    report(len(results))  # refused by name: done
    say = phase or (lambda text: None)
    front = _front_end(list(units.values()), arch, include_dirs, options, toolchain, cache,
                       counter, say)
    built = {unit.key: front[unit.key]["ptx"] for unit in units.values()
             if front[unit.key]["ok"]}
    report(sum(len(unit.names) for unit in units.values() if unit.key not in built))
    back = _back_end(built, arch, options, toolchain, cache, counter,
                     lambda key: report(len(units[key].names)), say)

    for unit in units.values():
        outcome = front[unit.key]
        for name in unit.names:
            if outcome["ok"]:
                results[name] = _result(name, arch, sources[name], unit, outcome["ptx"],
                                        back[unit.key])
            else:
                results[name] = BuildResult(
                    name=name, arch=arch, source=sources[name], ok=False,
                    error=_describe_error(outcome["error"].replace(unit.placeholder, name),
                                          sources[name], f"{name}.cu"))

    return BuildBatch(results={name: results[name] for name in sources},
                      unique_kernels=len(units), front_end_compiles=counter.front_end,
                      ptxas_runs=counter.ptxas, nvcc_invocations=counter.nvcc,
                      seconds=time.perf_counter() - started)


# -- the front end: nvcc --ptx on many sources at once ---------------------------------------------

@dataclass
class _Unit:
    """One distinct source; in the combined file its kernel is called `placeholder`."""

    TOKEN = "FX_KERNEL_NAME"

    key: str
    normalised: str
    names: list[str] = field(default_factory=list)

    @property
    def placeholder(self) -> str:
        return f"fx_unit_{self.key[:16]}"

    @property
    def text(self) -> str:
        return self.normalised.replace(self.TOKEN, self.placeholder)


class _Counter:
    """Compiler runs in one batch; incremented from the worker threads too."""

    def __init__(self):
        self.nvcc = self.ptxas = self.front_end = 0
        self._lock = threading.Lock()

    def add(self, what: str, count: int = 1) -> None:
        with self._lock:
            setattr(self, what, getattr(self, what) + count)


def _naming_problem(name: str, source: str) -> str | None:
    if not _C_IDENTIFIER.fullmatch(name):
        return f"'{name}' is not a C identifier, so it cannot name a kernel"
    if not re.search(rf"__global__[^;{{]*\b{name}\s*\(", source):
        return f"the source defines no __global__ function named '{name}'"
    if _Unit.TOKEN in source:
        return f"the source uses the reserved identifier {_Unit.TOKEN}"
    return None


def _front_end(units: list[_Unit], arch: str, include_dirs: tuple[Path, ...],
               options: BuildOptions, toolchain: Toolchain, cache: BuildCache,
               counter: _Counter, say: Callable[[str], None]) -> dict[str, dict]:
    """{unit key: {"ok": bool, "ptx": PTX with the placeholder name, "error": message}};
    `say(text)` before nvcc starts."""
    outcomes = {}
    missing = []
    for unit in units:
        cached = cache.get(unit.key)
        if cached is None:
            missing.append(unit)
        else:
            outcomes[unit.key] = cached
    compiled = {}
    chunks = _chunks(missing)
    if missing:
        say(f"compiling {len(missing)} distinct kernels to PTX (nvcc, {len(chunks)} "
            f"process{'es' if len(chunks) > 1 else ''}; {len(outcomes)} from the build cache)")
    for chunk_outcomes in _parallel(
            lambda chunk: _compile_units(chunk, arch, include_dirs, options, toolchain, counter),
            chunks):
        compiled.update(chunk_outcomes)
    for key, outcome in compiled.items():
        if outcome["returncode"] >= 0:      # not killed by a signal: the compiler's answer
            cache.put(key, outcome)
    counter.add("front_end", len(missing))
    return outcomes | compiled


def _chunks(units: list[_Unit]) -> list[list[_Unit]]:
    """`units` in one chunk, or, past CHUNK_SOURCE_BYTES of source, in PARALLEL_JOBS chunks
    of about equal size (largest first into the lightest), each keeping the batch's order."""
    total = sum(len(unit.normalised) for unit in units)
    count = min(PARALLEL_JOBS, len(units)) if total > CHUNK_SOURCE_BYTES else 1
    loads = [0] * count
    chunk_of = {}
    for unit in sorted(units, key=lambda u: len(u.normalised), reverse=True):
        lightest = loads.index(min(loads))
        chunk_of[unit.key] = lightest
        loads[lightest] += len(unit.normalised)
    return [[u for u in units if chunk_of[u.key] == index] for index in range(count)
            if loads[index]]


def _compile_units(units: list[_Unit], arch: str, include_dirs: tuple[Path, ...],
                   options: BuildOptions, toolchain: Toolchain,
                   counter: _Counter) -> dict[str, dict]:
    if not units:
        return {}
    returncode, ptx, log = _nvcc_ptx(units, arch, include_dirs, options, toolchain, counter)
    if returncode == 0:
        modules = split_ptx(ptx)
        return {u.key: {"ok": True, "ptx": modules[u.placeholder], "error": None,
                        "returncode": 0} for u in units}
    if len(units) == 1:
        return {units[0].key: {"ok": False, "ptx": "", "error": log, "returncode": returncode}}
    named = {match.group("file") for match in _ERROR_LOCATION.finditer(log)}
    suspects = [u for u in units if f"{u.placeholder}.cu" in named]
    if suspects and len(suspects) < len(units):
        rest = [u for u in units if u not in suspects]
        alone = _parallel(lambda unit: _compile_units([unit], arch, include_dirs, options,
                                                      toolchain, counter), suspects)
        outcomes = _compile_units(rest, arch, include_dirs, options, toolchain, counter)
    else:
        alone = _parallel(lambda unit: _compile_units([unit], arch, include_dirs, options,
                                                      toolchain, counter), units)
        outcomes = {}
    for outcome in alone:
        outcomes.update(outcome)
    return outcomes


def _nvcc_ptx(units: list[_Unit], arch: str, include_dirs: tuple[Path, ...],
              options: BuildOptions, toolchain: Toolchain,
              counter: _Counter) -> tuple[int, str, str]:
    """(nvcc's exit status, PTX, nvcc's messages) for one translation unit holding all
    `units`. Each unit's own #defines are undefined after it, so a macro cannot leak into the
    next unit and silently change it."""
    with tempfile.TemporaryDirectory(prefix="fx-build-") as directory:
        combined = Path(directory) / "kernels.cu"
        output = Path(directory) / "kernels.ptx"
        combined.write_text("".join(_combined_part(unit) for unit in units))
        command = [str(toolchain.nvcc), f"-arch={arch}", "--ptx", *options.nvcc_flags(),
                   *(f"-I{d}" for d in include_dirs), str(combined), "-o", str(output)]
        counter.add("nvcc")
        completed = _run(command)
        log = completed.stderr + completed.stdout
        if completed.returncode != 0 or not output.exists():
            return completed.returncode or 1, "", log.replace(str(combined), "kernels.cu")
        return 0, output.read_text(), log


def _combined_part(unit: _Unit) -> str:
    undefines = "".join(f"#undef {macro}\n" for macro in _DEFINE.findall(unit.text))
    return f'#line 1 "{unit.placeholder}.cu"\n{unit.text}\n{undefines}'


# -- the back end: ptxas per distinct kernel ------------------------------------------------------

def _back_end(modules: dict[str, str], arch: str, options: BuildOptions, toolchain: Toolchain,
              cache: BuildCache, counter: _Counter,
              done: Callable[[str], None], say: Callable[[str], None]) -> dict[str, dict]:
    """{unit key: {"ok", "cubin", "log"}} for `modules`, {unit key: PTX naming the kernel by
    the unit's placeholder}; `done(key)` in this thread as each unit's outcome is known;
    `say(text)` before ptxas starts."""
    environment = (arch, toolchain.fingerprint, repr(options))
    cache_keys = {key: cache_key("back", ptx, *environment) for key, ptx in modules.items()}
    outcomes = {}
    missing = []
    for key in modules:
        cached = cache.get(cache_keys[key])
        if cached is None:
            missing.append(key)
        else:
            outcomes[key] = cached
            done(key)
    # The largest first, so that a long ptxas run does not start last and run alone.
    missing.sort(key=lambda key: len(modules[key]), reverse=True)
    counter.add("ptxas", len(missing))
    if missing:
        say(f"assembling {len(missing)} kernels with ptxas ({PARALLEL_JOBS} at a time)")
    with ThreadPoolExecutor(max_workers=PARALLEL_JOBS) as pool:
        running = {pool.submit(_ptxas, modules[key], arch, options, toolchain): key
                   for key in missing}
        for future in as_completed(running):
            key = running[future]
            outcome = future.result()
            if outcome["returncode"] >= 0:
                cache.put(cache_keys[key], outcome)
            outcomes[key] = outcome
            done(key)
    return {key: outcomes[key] for key in modules}


def _ptxas(ptx: str, arch: str, options: BuildOptions, toolchain: Toolchain) -> dict:
    with tempfile.TemporaryDirectory(prefix="fx-ptxas-") as directory:
        source = Path(directory) / "kernel.ptx"
        output = Path(directory) / "kernel.cubin"
        source.write_text(ptx)
        completed = _run([str(toolchain.ptxas), f"-arch={arch}", *options.ptxas_flags(),
                          str(source), "-o", str(output)])
        log = (completed.stderr + completed.stdout).replace(str(source), "kernel.ptx")
        if completed.returncode != 0 or not output.exists():
            return {"ok": False, "cubin": b"", "log": log, "returncode": completed.returncode}
        return {"ok": True, "cubin": output.read_bytes(), "log": log, "returncode": 0}


def _result(name: str, arch: str, source: str, unit: _Unit, unit_ptx: str,
            outcome: dict) -> BuildResult:
    """`name`'s result from its unit's PTX and ptxas outcome, which name the kernel
    `unit.placeholder`: the PTX and the log are renamed, the cubin keeps the placeholder."""
    symbol = unit.placeholder
    ptx = unit_ptx.replace(symbol, name)
    log = outcome["log"].replace(symbol, name)
    if not outcome["ok"]:
        return BuildResult(name=name, arch=arch, source=source, ok=False, ptx=ptx,
                           error=f"ptxas failed for {name}:\n{log.strip()}", ptxas_log=log)
    try:
        resources = parse_resources(outcome["log"], symbol)
    except ResourceReportError as error:
        return BuildResult(name=name, arch=arch, source=source, ok=False, ptx=ptx,
                           cubin=outcome["cubin"], error=str(error).replace(symbol, name),
                           ptxas_log=log, cubin_function=symbol)
    sections = cubin_section_sizes(outcome["cubin"])
    return BuildResult(
        name=name, arch=arch, source=source, ok=True, ptx=ptx, cubin=outcome["cubin"],
        registers=resources.registers, spill_store_bytes=resources.spill_store_bytes,
        spill_load_bytes=resources.spill_load_bytes,
        shared_static_bytes=resources.shared_static_bytes, stack_bytes=resources.stack_bytes,
        barriers=resources.barriers, constant_bytes=kernel_constant_bytes(sections, symbol),
        code_bytes=kernel_code_bytes(sections, symbol), ptxas_log=log, cubin_function=symbol)


# -- helpers ---------------------------------------------------------------------------------------

def _run(command: list[str]) -> subprocess.CompletedProcess:
    """The one place a compiler process starts (tests count calls here)."""
    return subprocess.run(command, capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT_S)


def _parallel(function, items: list) -> list:
    if len(items) <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=PARALLEL_JOBS) as pool:
        return list(pool.map(function, items))


def _describe_error(log: str, source: str, filename: str) -> str:
    """nvcc's messages, then the source around the first error reported in `filename`,
    numbered, the line itself marked with '>'."""
    message = log.strip()
    for match in _ERROR_LOCATION.finditer(log):
        if match.group("file") != filename:
            continue
        line_number = int(match.group("line") or match.group("gline"))
        lines = source.splitlines()
        if not 1 <= line_number <= len(lines):
            break
        first = max(1, line_number - EXCERPT_CONTEXT_LINES)
        last = min(len(lines), line_number + EXCERPT_CONTEXT_LINES)
        excerpt = "\n".join(f"{'>' if n == line_number else ' '} {n:4d} | {lines[n - 1]}"
                            for n in range(first, last + 1))
        return f"{message}\n\n{filename}:\n{excerpt}"
    return message
