"""Pausing CPython's cyclic garbage collector around bulk graph work.

Importers and fusion strategies allocate many small objects and create no garbage cycles, yet
the cyclic collector rescans every live object each time enough new ones have been allocated.
Left on, it makes import and exploration time grow faster than linearly with graph size
(benchmarks/import_speed.py measured 1.2-1.4x per node from 12 to 48 transformer layers);
paused, the growth is linear. Reference counting still frees everything as usual.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
