"""glibc keeps freed activation buffers in the heap once the trainer's setting is on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from fairforensics.training.host_memory import keep_freed_host_memory

def rss():
    line = next(l for l in open("/proc/self/status") if l.startswith("VmRSS"))
    return int(line.split()[1]) * 1024

if sys.argv[1] == "keep":
    assert keep_freed_host_memory()
before = rss()
buffer = np.ones(64 << 20, dtype=np.uint8)  # an activation-sized block, touched
del buffer
print(rss() - before)
"""


def _retained(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode, str(ROOT)], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_freed_block_stays_in_the_heap_only_with_the_setting() -> None:
    assert _retained("default") < 16 << 20  # unmapped on free: the next step faults it in again
    assert _retained("keep") > 60 << 20  # kept for reuse
