"""A sweep larger than one machine (issue 38, item 8): each (detector, seed) run as a job of a
Slurm array through submitit (Facebook Research's job launcher, the field's usual tool).

Each job is :func:`benchmarks.sweep.run_one`: it trains and tests one detector with one seed in
its own folder and writes its completion record, so a job that is killed or pre-empted is redone
from scratch by the next submission while finished ones are skipped (jobs whose folder has a
completion record are not even submitted). When every job has ended, the leaderboard is written
on the submitting machine, as :func:`benchmarks.sweep.run_sweep` does. Jobs' logs are in
``<out>/jobs/``.

``executor`` ``slurm`` submits through ``sbatch`` (``submitit.AutoExecutor``); ``local`` runs the
jobs as local processes (``submitit.LocalExecutor``: the same path without a cluster, which the
tests use).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from fairforensics.benchmarks.sweep import (
    DONE,
    Runner,
    Sweep,
    SweepError,
    _subprocess_runner,
    prepare,
    run_one,
    write_leaderboard,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SlurmOptions:
    """What each job asks Slurm for (``--partition``, ``--gpus-per-job``, ...)."""

    partition: str | None = None
    gpus_per_job: int = 0
    cpus_per_job: int = 8
    mem_gb: int = 64
    timeout_min: int = 24 * 60
    array_parallelism: int = 64
    extra: tuple[str, ...] = ()  # further sbatch options, KEY=VALUE (e.g. account=abc)


def _job(sweep: Sweep, detector: str, seed: int | None, runner: Runner) -> bool:
    """One job: a run of the sweep (runs on the cluster node)."""
    return run_one(sweep, detector, runner, seed)


def make_executor(kind: str, folder: Path, options: SlurmOptions):
    """A submitit executor: ``slurm`` (through sbatch) or ``local`` (local processes)."""
    try:
        import submitit
    except ImportError:
        raise SweepError(
            "--launcher slurm needs submitit: pip install 'fairforensics[slurm]'"
        ) from None
    if kind == "local":
        executor = submitit.LocalExecutor(folder=folder)
        executor.update_parameters(timeout_min=options.timeout_min)
        return executor
    if kind != "slurm":
        raise SweepError(f"unknown executor {kind!r}; choose slurm or local")
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
    extra = {}
    for item in options.extra:
        key, sep, value = item.partition("=")
        if not sep:
            raise SweepError(f"--slurm-arg {item!r}: expected KEY=VALUE")
        extra[key] = value
    executor.update_parameters(
        slurm_partition=options.partition,
        gpus_per_node=options.gpus_per_job,
        cpus_per_task=options.cpus_per_job,
        mem_gb=options.mem_gb,
        timeout_min=options.timeout_min,
        slurm_array_parallelism=options.array_parallelism,
        slurm_additional_parameters=extra,
    )
    return executor


def run_sweep_jobs(
    sweep: Sweep,
    executor_kind: str = "slurm",
    options: SlurmOptions = SlurmOptions(),
    runner: Runner = _subprocess_runner,
) -> Path:
    """Submit the unfinished runs of ``sweep`` as one job array, wait for all, then write the
    leaderboard; returns its folder. A failed job is named in the error after all have ended
    (the finished ones keep their records, so running the command again resumes)."""
    return run_sweeps_jobs([sweep], executor_kind, options, runner)[0]


def run_sweeps_jobs(
    sweeps: Sequence[Sweep],
    executor_kind: str = "slurm",
    options: SlurmOptions = SlurmOptions(),
    runner: Runner = _subprocess_runner,
) -> list[Path]:
    """:func:`run_sweep_jobs` of several sweeps (a protocol's, one per training index) as one
    job array: every unfinished (sweep, detector, seed) run a job; the leaderboards once all
    have ended. Jobs' logs are in the first sweep's ``jobs/``."""
    prepared = []
    for sweep in sweeps:
        sweep, detectors = prepare(sweep)
        if options.gpus_per_job:
            sweep = replace(sweep, gpus=options.gpus_per_job)  # torchrun inside the job
        prepared.append((sweep, detectors))
    todo = [(sweep, d, s) for sweep, detectors in prepared for d, s in jobs_of(sweep, detectors)]
    executor = make_executor(executor_kind, prepared[0][0].out / "jobs", options)
    if todo:
        log.info("submitting %d runs as %s jobs", len(todo), executor_kind)
        jobs = executor.map_array(
            _job,
            [sweep for sweep, _, _ in todo],
            [d for _, d, _ in todo],
            [s for _, _, s in todo],
            [runner] * len(todo),
        )
        failed = []
        for (sweep, detector, seed), job in zip(todo, jobs, strict=True):
            try:
                job.result()
            except Exception as exc:  # noqa: BLE001 - submitit re-raises the job's error
                lines = [line for line in str(exc).splitlines() if line.strip()] or [repr(exc)]
                # submitit's message is the job's traceback: its last line is the error
                failed.append(
                    f"{sweep.folder(detector, seed)} (job {job.job_id}): {lines[-1].strip(' -')}"
                )
        if failed:
            raise SweepError(f"{len(failed)} jobs failed: {'; '.join(failed)}")
    return [write_leaderboard(sweep, detectors) for sweep, detectors in prepared]


def jobs_of(sweep: Sweep, detectors: Sequence[str]) -> list[tuple[str, int | None]]:
    """The (detector, seed) runs of ``sweep`` without a completion record."""
    return [(d, s) for d, s in sweep.jobs(detectors) if not (sweep.folder(d, s) / DONE).is_file()]
