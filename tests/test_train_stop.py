"""Stop means stop in training (issue 14, item 4): SIGTERM / Ctrl-C abandon the unfinished epoch
(checkpoints are atomic), exit 143 / 130 with one line saying how to resume, and the resume
finishes the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_train_utils import make_index

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_training_exits_with_a_resume_line(tmp_path: Path, signum: int) -> None:
    data = tmp_path / "data"
    make_index(data, "tiny", n_real=3, n_fake=3, frames=2, size=32)
    cmd = [sys.executable, str(REPO / "scripts" / "train.py"), "--detector", "meso4"]
    cmd += ["--data-root", str(data), "--train-data", "tiny", "--output-dir", str(tmp_path)]
    # far more epochs than it can run before the signal (an epoch here takes ~10 ms)
    sets = ["train.epochs=100000", "train.batch_size=4", "train.resolution=32", "train.frame_num=2"]
    sets += ["data.num_workers=0", "run_name=r", "train.log_every_steps=1000"]
    cmd += [a for s in sets for a in ("--set", s)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    # a shell's background job (`cmd &`) ignores SIGINT, and an ignored signal stays ignored in
    # the child: give the command the default disposition a terminal gives it
    proc = subprocess.Popen(
        cmd,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    last = tmp_path / "r" / "checkpoints" / "last.pt"
    deadline = time.monotonic() + 120
    while not last.is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert last.is_file(), "no checkpoint within 120 s"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, err[-2000:]
    final = err.strip().splitlines()[-1]
    assert final.startswith("stopped (") and f"--resume {tmp_path / 'r'}" in final, final
    assert "Traceback" not in err
    assert not list((tmp_path / "r" / "checkpoints").glob(".*.tmp"))  # nothing partial
    resume = [sys.executable, str(REPO / "scripts" / "train.py"), "--resume", str(tmp_path / "r")]
    resume += ["--set", "train.epochs=2"]
    done = subprocess.run(resume, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
