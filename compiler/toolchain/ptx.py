"""Reading what the compiler wrote: PTX modules, ptxas' resource report, cubin sections.

- `split_ptx` cuts the PTX of a translation unit that holds many kernels into one standalone
  module per kernel: the header, the kernel's `.entry`, and only the `.func`s and variables it
  reaches (transitively), so a kernel's PTX does not depend on what it was compiled with.
- `parse_resources` reads `ptxas -v` for one entry: registers, spills, stack, shared memory,
  barriers.
- `cubin_section_sizes` reads the section table of a cubin (an ELF64 file): `.text.<kernel>` is
  the kernel's machine code, `.nv.constant0.<kernel>` its parameter/constant bank;
  `cubin_functions` its symbol table's function names.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

_HEADER_DIRECTIVES = (".version", ".target", ".address_size")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_ENTRY_NAME = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)")
_FUNC_NAME = re.compile(r"\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_VARIABLE_NAME = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:\[|;|=)")
_SHT_SYMTAB = 2          # ELF section type of a symbol table
_STT_FUNC = 2            # ELF symbol type of a function
_SYMBOL_SIZE = 24        # bytes of an Elf64_Sym


class ResourceReportError(ValueError):
    """ptxas' -v output does not have the lines this module expects (a new ptxas format?)."""


@dataclass(frozen=True)
class _Statement:
    text: str
    kind: str            # "header", "entry" or "declaration" (.func, variables, prototypes)
    name: str | None     # what it declares


def _statements(ptx: str) -> list[_Statement]:
    """The top-level statements of a PTX module, in order; top-level comments are dropped."""
    statements: list[_Statement] = []
    lines: list[str] = []
    depth = 0
    for line in ptx.splitlines():
        stripped = line.strip()
        if not lines:
            if not stripped or stripped.startswith("//"):
                continue
            if stripped.startswith(_HEADER_DIRECTIVES):
                statements.append(_Statement(stripped, "header", None))
                continue
        lines.append(line)
        depth += line.count("{") - line.count("}")
        if depth == 0 and (stripped.endswith(";") or stripped.endswith("}")):
            statements.append(_classify("\n".join(lines)))
            lines = []
    if lines:
        statements.append(_classify("\n".join(lines)))
    return statements


def _classify(text: str) -> _Statement:
    entry = _ENTRY_NAME.search(text)
    if entry:
        return _Statement(text, "entry", entry.group(1))
    function = _FUNC_NAME.search(text)
    if function:
        return _Statement(text, "declaration", function.group(1))
    variable = _VARIABLE_NAME.search(text)
    return _Statement(text, "declaration", variable.group(1) if variable else None)


def split_ptx(ptx: str) -> dict[str, str]:
    """{entry name: a PTX module with that entry and what it reaches}."""
    statements = _statements(ptx)
    header = [s.text for s in statements if s.kind == "header"]
    declarations = [s for s in statements if s.kind == "declaration"]
    modules = {}
    for entry in (s for s in statements if s.kind == "entry"):
        reached = set(_IDENTIFIER.findall(entry.text))
        kept: set[int] = set()
        grew = True
        while grew:
            grew = False
            for index, declaration in enumerate(declarations):
                if index not in kept and declaration.name in reached:
                    kept.add(index)
                    reached.update(_IDENTIFIER.findall(declaration.text))
                    grew = True
        body = [d.text for i, d in enumerate(declarations) if i in kept] + [entry.text]
        modules[entry.name] = "\n".join(header) + "\n\n" + "\n\n".join(body) + "\n"
    return modules


@dataclass(frozen=True)
class Resources:
    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    shared_static_bytes: int
    stack_bytes: int
    barriers: int


def parse_resources(log: str, entry: str) -> Resources:
    """The resources ptxas -v reports for `entry`, e.g.

        ptxas info    : Compiling entry function 'k' for 'sm_90'
        ptxas info    : Function properties for k
            16 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
        ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem, 360 bytes cmem[0]
    """
    start = log.find(f"Compiling entry function '{entry}'")
    if start < 0:
        raise ResourceReportError(f"ptxas reported nothing for entry '{entry}':\n{log}")
    following = log.find("Compiling entry function", start + 1)
    section = log[start:following if following >= 0 else len(log)]
    frame = re.search(rf"Function properties for {re.escape(entry)}\s*\n\s*(\d+) bytes stack "
                      r"frame, (\d+) bytes spill stores, (\d+) bytes spill loads", section)
    registers = re.search(r"Used (\d+) registers", section)
    if frame is None or registers is None:
        raise ResourceReportError(f"cannot read ptxas' report for entry '{entry}':\n{section}")
    barriers = re.search(r"used (\d+) barriers", section)
    shared = re.search(r"(\d+) bytes smem", section)
    return Resources(
        registers=int(registers.group(1)),
        spill_store_bytes=int(frame.group(2)),
        spill_load_bytes=int(frame.group(3)),
        shared_static_bytes=int(shared.group(1)) if shared else 0,
        stack_bytes=int(frame.group(1)),
        barriers=int(barriers.group(1)) if barriers else 0,
    )


def _elf_sections(cubin: bytes) -> list[tuple[str, int, int, int, int]]:
    """(name, type, offset, size, link) of each section of an ELF64 little-endian cubin."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise ValueError("not an ELF64 little-endian cubin")
    section_table, = struct.unpack_from("<Q", cubin, 0x28)
    entry_size, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, section_table + i * entry_size)
               for i in range(count)]
    names_offset = headers[names_index][4]
    return [(_c_string(cubin, names_offset + name), kind, offset, size, link)
            for name, kind, _flags, _addr, offset, size, link, *_ in headers]


def _c_string(data: bytes, start: int) -> str:
    return data[start:data.index(b"\0", start)].decode()


def cubin_section_sizes(cubin: bytes) -> dict[str, int]:
    """{section name: size in bytes} from the section table of an ELF64 little-endian cubin."""
    return {name: size for name, _kind, _offset, size, _link in _elf_sections(cubin) if name}


def cubin_functions(cubin: bytes) -> set[str]:
    """The names of the functions (STT_FUNC symbols: kernels and device functions) in the
    symbol table of an ELF64 little-endian cubin: what a loader can look up."""
    sections = _elf_sections(cubin)
    names = set()
    for _name, kind, offset, size, link in sections:
        if kind != _SHT_SYMTAB:
            continue
        strings = sections[link][2]
        for start in range(offset, offset + size, _SYMBOL_SIZE):
            name, info = struct.unpack_from("<IB", cubin, start)
            if info & 0xF == _STT_FUNC:
                names.add(_c_string(cubin, strings + name))
    return names


def kernel_code_bytes(sections: dict[str, int], entry: str) -> int:
    """Machine code of `entry`: its .text section."""
    return sections.get(f".text.{entry}", 0)


def kernel_constant_bytes(sections: dict[str, int], entry: str) -> int:
    """Constant memory `entry` uses: its own bank (parameters and compiler constants) plus the
    module's `__constant__` data (sections `.nv.constantN` without a kernel suffix)."""
    own = sections.get(f".nv.constant0.{entry}", 0)
    module = sum(size for name, size in sections.items()
                 if re.fullmatch(r"\.nv\.constant\d+", name))
    return own + module
