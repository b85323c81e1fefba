"""The trainer: one YAML-driven loop for every detector (paper 002 Sec. 3.2 "Training Module").

``Trainer(cfg).fit()`` trains ``cfg.detector`` on ``cfg.data.train_data``, evaluates every epoch
(or every ``train.eval_every_steps`` steps) on the validation and test sets with frame- and
video-level AUC, AP, EER and ACC, keeps the best checkpoint by the validation metric (or by
DeepfakeBench's ``test-top3``), stops early after ``train.patience`` evaluations without
improvement and returns the run directory. The same code runs as one process or under
``torchrun`` (DistributedDataParallel; per-rank batch = ``train.batch_size / world size``).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from fairforensics.configs import ConfigError, config_to_dict
from fairforensics.configs.threads import apply_main_threads, init_worker_threads
from fairforensics.detectors import (
    CheckpointError,
    build_detector,
    get_detector_class,
    read_checkpoint,
    save_checkpoint,
)
from fairforensics.evaluation.predict import (
    eval_requires,
    make_eval_loader,
    predict_loader,
    rows_to_predictions,
)
from fairforensics.evaluation.predictions import write_predictions
from fairforensics.evaluation.scoring import detection_metrics, level_label
from fairforensics.evaluation.thresholds import (
    read_run_thresholds,
    validation_record,
    write_run_thresholds,
)
from fairforensics.preprocessing.crops import common_crop
from fairforensics.preprocessing.device import amp_dtype, resolve_device, to_channels_last
from fairforensics.preprocessing.files import write_json, write_yaml
from fairforensics.preprocessing.frames import (
    FrameDataset,
    collate,
    method_names_of,
    opencv_threads_for_loader,
    sample_positions,
)
from fairforensics.preprocessing.index import DatasetIndex
from fairforensics.preprocessing.resolve import resolve_datasets
from fairforensics.preprocessing.rundir import RunDir, new_run_dir, run_meta
from fairforensics.training import distributed as D
from fairforensics.training.albu_fast import FusedAugment
from fairforensics.training.augment import build_augment
from fairforensics.training.cache import PackedCache
from fairforensics.training.config import (
    OptimizerConfig,
    SchedulerConfig,
    TrainConfig,
    read_run_config,
)
from fairforensics.training.fair_losses import FairLoss
from fairforensics.training.host_memory import keep_freed_host_memory
from fairforensics.training.preflight import check_splits, check_unreadable
from fairforensics.training.sam import SharpnessAwarePerturbation
from fairforensics.training.samplers import ShardSampler, TrainSampler
from fairforensics.training.selection import Selector
from fairforensics.training.step import NonFiniteLossError, TrainStep

log = logging.getLogger(__name__)

BatchTransform = Callable[[dict[str, Any]], dict[str, Any]]


def build_optimizer(params: Any, cfg: OptimizerConfig) -> torch.optim.Optimizer:
    """Adam / AdamW / SGD from the config."""
    if cfg.name == "adam":
        return torch.optim.Adam(
            params, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay
        )
    if cfg.name == "adamw":
        return torch.optim.AdamW(
            params, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay
        )
    return torch.optim.SGD(
        params,
        lr=cfg.lr,
        momentum=cfg.momentum,
        weight_decay=cfg.weight_decay,
        nesterov=cfg.nesterov,
    )


def lr_factor(
    cfg: SchedulerConfig, base_lr: float, step: int, steps_per_epoch: int, total_steps: int
) -> float:
    """Multiplier of the base learning rate after ``step`` optimiser steps."""
    warm = min(1.0, (step + 1) / cfg.warmup_steps) if cfg.warmup_steps > 0 else 1.0
    if cfg.name == "step":
        factor = cfg.gamma ** (step // max(steps_per_epoch * cfg.step_size, 1))
    elif cfg.name == "cosine":
        t = min(step / max(total_steps, 1), 1.0)
        floor = cfg.min_lr / base_lr if base_lr > 0 else 0.0
        factor = floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * t))
    else:
        factor = 1.0
    return warm * factor


def _rng_state() -> dict[str, Any]:
    np_state = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": random.getstate(),
        "numpy": [np_state[0], np_state[1].tolist(), *np_state[2:]],
    }


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    random.setstate(_tuples(state["python"]))
    kind, keys, *rest = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), *rest))


def _tuples(x: Any) -> Any:
    return tuple(_tuples(v) for v in x) if isinstance(x, (list, tuple)) else x


class Trainer:
    """Train ``cfg.detector``; ``fit()`` returns the run directory.

    ``batch_transforms`` are applied, in order, to every collated training batch before it goes
    to the device (images are uint8 ``[B, 3, H, W]`` there). FairSWAP is one, given by the caller
    (``fairness.fairswap.fairswap_transforms(cfg.train)``); ``train.fairswap.enabled`` without a
    batch transform is an error. ``resume`` continues the run in that directory exactly.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        *,
        batch_transforms: Sequence[BatchTransform] = (),
        resume: str | Path | None = None,
    ) -> None:
        self.cfg = cfg
        self.batch_transforms = list(batch_transforms)
        if cfg.train.fairswap.enabled and not self.batch_transforms:
            raise ConfigError(
                "train.fairswap.enabled needs the FairSWAP batch transform: pass "
                "batch_transforms=fairness.fairswap.fairswap_transforms(cfg.train) "
                "(scripts/train.py does)"
            )
        self.resume_dir = Path(resume) if resume is not None else None
        if not cfg.data.train_data:
            raise ConfigError("data.train_data is empty: name at least one dataset (--train-data)")
        has_eval = bool(cfg.data.val_data or cfg.data.test_data)
        if has_eval and cfg.train.selection == "val" and not cfg.data.val_data:
            raise ConfigError(
                "train.selection 'val' chooses checkpoints on validation data: give data.val_data "
                "(--val-data), or set train.selection=test-top3 to select on the test sets"
            )
        if has_eval and cfg.train.selection == "test-top3" and not cfg.data.test_data:
            raise ConfigError("train.selection 'test-top3' needs data.test_data (--test-data)")

    @classmethod
    def from_run(cls, run_dir: str | Path, **kwargs: Any) -> Trainer:
        """A trainer that resumes ``run_dir`` with its saved, resolved config."""
        return cls(read_run_config(run_dir), resume=run_dir, **kwargs)

    # ------------------------------------------------------------------ set-up
    def _setup(self) -> None:
        """Every set-up step, in this order (the RNG draws of each depend on it)."""
        self._setup_device()
        train_idx = self._setup_detector()
        self._setup_data(train_idx)
        self._setup_loader()
        for transform in self.batch_transforms:  # e.g. FairSWAP's partner pool, seed + rank
            if hasattr(transform, "bind"):
                transform.bind(self.train_set, self.dist.rank)
        self._setup_optimisation()
        self.epoch, self.batch_in_epoch, self.step = 0, 0, 0
        self.manifest: dict[str, Any] = {"replaced_frames": [], "skipped_samples": [], "epochs": {}}
        # the validation threshold of the latest evaluation, and of each saved checkpoint
        self.val_threshold: dict[str, Any] | None = None
        self.checkpoint_thresholds: dict[str, Any] = {}
        sets = [self.train_set] + [ds for sets in self.eval_sets.values() for _, ds in sets]
        short = sorted({v for ds in sets for v in ds.short_videos})
        if short:  # video detectors: videos without a run of clip_size frames, left out
            self.manifest["short_videos"] = short
        self._setup_run_dir()

    def _setup_device(self) -> None:
        """Process group, device, per-rank batch size, host-memory policy and global seeds."""
        cfg, t = self.cfg, self.cfg.train
        resolve_device(cfg.device)  # an unusable device: a ConfigError before anything starts
        want_cuda = cfg.device.startswith("cuda") or (
            cfg.device == "auto" and torch.cuda.is_available()
        )
        self.dist = D.setup("cuda" if want_cuda else "cpu")
        self.device = resolve_device(cfg.device, self.dist.local_rank)
        cuda = self.device.type == "cuda"
        if cuda:
            torch.backends.cudnn.benchmark = True
        if t.batch_size % self.dist.world_size:
            raise ConfigError(
                f"train.batch_size {t.batch_size} is not divisible by the world size {self.dist.world_size}"
            )
        self.rank_batch = t.batch_size // self.dist.world_size
        if t.keep_host_memory:
            keep_freed_host_memory()
        torch.manual_seed(t.seed)
        random.seed(t.seed)
        np.random.seed(t.seed % 2**32)

    def _setup_detector(self) -> list[DatasetIndex]:
        """The detector at the training resolution, configured from the training data (returned)."""
        cfg, t = self.cfg, self.cfg.train
        model_cfg = dict(cfg.model)
        detector_cls = get_detector_class(cfg.detector)
        fields = dataclasses.fields(detector_cls.Config)
        default_size = next(f.default for f in fields if f.name == "input_size")
        self.resolution = t.resolution or int(model_cfg.get("input_size", default_size))
        model_cfg["input_size"] = self.resolution
        train_idx = resolve_datasets(cfg.data.data_root, cfg.data.train_data)
        self.train_crop = common_crop(train_idx)  # what the trained weights will expect
        self.method_names = method_names_of(train_idx, "train")
        # the face-crop settings of each training index, for detect (None: not recorded)
        self.face_settings = {ix.dataset: ix.preprocess for ix in train_idx}
        model_cfg = detector_cls.configure_from_data(model_cfg, list(self.method_names))
        videos = [
            (
                f"{ix.dataset}/{v.method}/{v.id}",
                v.attributes,
                len(sample_positions(len(v.frames), t.frame_num)),  # samples per video
            )
            for ix in train_idx
            for v in ix.split("train")
        ]
        model_cfg = detector_cls.configure_from_attributes(model_cfg, videos)
        torch.manual_seed(t.seed)
        self.detector = build_detector(cfg.detector, model_cfg).to(self.device)
        torch.manual_seed(t.seed + self.dist.rank)  # same init everywhere, own dropout per rank
        self.model_cfg = config_to_dict(self.detector.cfg)
        self.amp_dtype = amp_dtype(t.precision, self.device)
        self.channels_last = t.channels_last
        if self.channels_last:
            self.detector = to_channels_last(self.detector)
        return train_idx

    def _setup_data(self, train_idx: list[DatasetIndex]) -> None:
        """The training set (augmented) and the validation and test sets (with caches)."""
        cfg, t = self.cfg, self.cfg.train
        requires = self.detector.requires
        # the detector's kind picks the samples: frames, or clips of its clip_size
        clip = self.detector.cfg.clip_size if self.detector.input_kind == "clip" else None
        needs_points = "landmarks" in requires or any(k.startswith("blend:") for k in requires)
        augment = build_augment(t.augment, self.resolution, keypoints=needs_points)
        augment = FusedAugment(augment) if augment is not None else None
        self.train_set = FrameDataset(
            train_idx,
            "train",
            frame_num=t.frame_num,
            resolution=self.resolution,
            requires=requires,
            augment=augment,
            seed=t.seed,
            method_names=self.method_names,
            pixel_map_size=t.pixel_map_size,
            clip_size=clip,
            train=True,
        )
        ev_req = eval_requires(requires)
        self.eval_sets: dict[str, list[tuple[str, FrameDataset]]] = {"val": [], "test": []}
        for split, names in (("val", cfg.data.val_data), ("test", cfg.data.test_data)):
            for name, index in zip(names, resolve_datasets(cfg.data.data_root, names), strict=True):
                ds = FrameDataset(
                    [index],
                    split,
                    frame_num=t.test_frame_num,
                    resolution=self.resolution,
                    requires=ev_req,
                    method_names=self.method_names,
                    pixel_map_size=t.pixel_map_size,
                    clip_size=clip,
                )
                self.eval_sets[split].append((name, ds))
        check_splits(("+".join(cfg.data.train_data), self.train_set), self.eval_sets, t.selection)
        if cfg.data.cache:
            self._attach_caches()

    def _setup_loader(self) -> None:
        """The training sampler (balanced, sharded by rank) and loader."""
        cfg, t = self.cfg, self.cfg.train
        groups = self.train_set.group_codes(t.group_key) if t.group_key else None
        self.sampler = TrainSampler(
            self.train_set.labels,
            mode=t.sampler,
            groups=groups,
            seed=t.seed,
            num_replicas=self.dist.world_size,
            rank=self.dist.rank,
            tag_epoch=True,
        )
        if len(self.sampler) < self.rank_batch:
            raise ConfigError(
                f"the training set has {len(self.train_set)} samples, fewer than one batch of "
                f"{t.batch_size}; lower train.batch_size"
            )
        opencv_threads_for_loader(cfg.data.num_workers)
        self.loader = DataLoader(
            self.train_set,
            batch_size=self.rank_batch,
            sampler=self.sampler,
            num_workers=cfg.data.num_workers,
            collate_fn=collate,
            drop_last=True,
            pin_memory=self.device.type == "cuda",
            generator=torch.Generator().manual_seed(t.seed),
            persistent_workers=cfg.data.num_workers > 0,
            worker_init_fn=init_worker_threads,
        )
        apply_main_threads(cfg.data.num_workers)  # not oversubscribing the cores with them
        self.steps_per_epoch = len(self.sampler) // self.rank_batch
        self.total_steps = self.steps_per_epoch * t.epochs
        self.detector.set_schedule(self.steps_per_epoch, t.epochs)

    def _setup_optimisation(self) -> None:
        """DDP wrapper, optimiser, scheduler, the train step and checkpoint selection."""
        t = self.cfg.train
        cuda = self.device.type == "cuda"
        self.model: torch.nn.Module = self.detector
        if self.dist.world_size > 1:
            self.model = DistributedDataParallel(
                self.detector,
                device_ids=[self.device.index] if cuda else None,
                find_unused_parameters=t.ddp_find_unused,
            )
        self.optimizer = build_optimizer(
            self.detector.optimizer_groups(t.optimizer.lr, t.optimizer.betas), t.optimizer
        )
        base_lr = t.optimizer.lr
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer,
            lambda s: lr_factor(t.scheduler, base_lr, s, self.steps_per_epoch, self.total_steps),
        )
        self.train_step = TrainStep(
            self.detector,
            self.optimizer,
            device=self.device,
            forward=torch.compile(self.model) if t.compile else self.model,
            amp_dtype=self.amp_dtype,
            channels_last=self.channels_last,
            grad_clip=t.grad_clip,
            scheduler=self.scheduler,
            fair_loss=FairLoss(t.fair_loss) if t.fair_loss.name != "none" else None,
            sam=(
                SharpnessAwarePerturbation(
                    self.detector.parameters(), t.optimizer.sam_rho, t.optimizer.sam_adaptive
                )
                if t.optimizer.sam_rho > 0
                else None
            ),
        )
        self.selector = Selector(t.selection, t.selection_metric, t.selection_level, t.patience)

    def _attach_caches(self) -> None:
        cache_dir = Path(self.cfg.data.cache_dir or Path(self.cfg.data.data_root) / ".cache")
        sets = [("train", self.train_set)] + [
            (f"{s}-{n}", d) for s in ("val", "test") for n, d in self.eval_sets[s]
        ]
        for name, ds in sets:
            if self.dist.is_main:
                PackedCache.build(ds, cache_dir, name)
            D.barrier()
            ds.cache = PackedCache.build(ds, cache_dir, name)

    def _setup_run_dir(self) -> None:
        cfg = self.cfg
        if self.resume_dir is not None:
            run = self.resume_dir
            if not RunDir(run).checkpoint("last").is_file():
                raise CheckpointError(f"{run}: nothing to resume (no checkpoints/last.pt)")
        else:
            run = None
            if self.dist.is_main:
                if cfg.run_name and RunDir(Path(cfg.output_dir) / cfg.run_name).config.exists():
                    raise ConfigError(
                        f"run {Path(cfg.output_dir) / cfg.run_name} exists; use --resume or another run_name"
                    )
                run = new_run_dir(cfg.output_dir, cfg.run_name, cfg.detector)
            run = D.broadcast(run)
        self.run_dir = Path(run)
        self.run = RunDir(self.run_dir)
        self.writer = None
        if self.dist.is_main:
            resolved = config_to_dict(cfg)
            resolved["model"] = self.model_cfg
            resolved["train"]["resolution"] = self.resolution
            # the crop of the training data, what the run's weights expect (configs.crop)
            resolved["crop"] = self.train_crop.to_json() if self.train_crop else None
            if self.resume_dir is None:
                write_yaml(self.run.config, resolved)
                write_json(
                    self.run.meta,
                    run_meta(
                        cfg.train.seed,
                        world_size=self.dist.world_size,
                        device=str(self.device),
                        precision=str(self.amp_dtype),
                        channels_last=self.channels_last,
                        method_names=self.method_names,
                        preprocess=self.face_settings,
                    ),
                )
        if self.resume_dir is not None:
            self._load_state(read_checkpoint(self.run.checkpoint("last")))
            recorded = read_run_thresholds(self.run_dir) if self.dist.is_main else None
            if recorded is not None:
                self.checkpoint_thresholds = dict(recorded["checkpoints"])
                self.val_threshold = self.checkpoint_thresholds.get("last")
        if self.dist.is_main:
            self.writer = SummaryWriter(str(self.run.tensorboard), purge_step=self.step or None)

    # ------------------------------------------------------------------ state
    def _meta(self) -> dict[str, Any]:
        return {
            "detector": self.cfg.detector,
            "model": self.model_cfg,
            "epoch": self.epoch,
            "step": self.step,
            "method_names": self.method_names,
        }

    def _save(self, name: str, full: bool) -> None:
        """Write a checkpoint from rank 0 (``full``: with the trainer state; all ranks call)."""
        # one RNG state per rank, with the batch transforms' generators (FairSWAP)
        rng = (
            D.gather_lists([{**_rng_state(), "transforms": self._transform_states()}])
            if full
            else None
        )
        if not self.dist.is_main:
            return
        payload: dict[str, Any] = {"model": self.detector.state_dict(), "meta": self._meta()}
        if full:
            payload["state"] = {
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "scaler": self.train_step.scaler.state_dict(),
                "epoch": self.epoch,
                "batch_in_epoch": self.batch_in_epoch,
                "step": self.step,
                "rng": rng,
                "selector": self.selector.state_dict(),
                "manifest": self.manifest,
            }
        save_checkpoint(self.run.checkpoint(name), payload)
        self._record_threshold(name)

    def _record_threshold(self, name: str) -> None:
        """Record the validation threshold of checkpoint ``name`` (that of the evaluation at
        this step; none when this step was not evaluated) in ``validation_threshold.json``."""
        if not self.cfg.data.val_data:
            return
        latest = self.val_threshold
        evaluated = latest is not None and latest["step"] == self.step
        self.checkpoint_thresholds[name] = latest if evaluated else None
        write_run_thresholds(
            self.run_dir,
            self.selector.level,
            self.cfg.data.val_data,
            self.checkpoint_thresholds,
        )

    def _load_state(self, ckpt: dict[str, Any]) -> None:
        if "state" not in ckpt:
            raise CheckpointError(
                f"{self.run_dir}/checkpoints/last.pt has no trainer state to resume"
            )
        state = ckpt["state"]
        self.detector.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.train_step.scaler.load_state_dict(state["scaler"])
        self.epoch, self.batch_in_epoch, self.step = (
            state["epoch"],
            state["batch_in_epoch"],
            state["step"],
        )
        self.selector.load_state_dict(state["selector"])
        self.manifest = state["manifest"]
        rng = state["rng"]
        if len(rng) != self.dist.world_size:
            log.warning(
                "resuming %d saved RNG states on %d processes", len(rng), self.dist.world_size
            )
        _set_rng_state(rng[self.dist.rank % len(rng)])
        self._load_transform_states(rng[self.dist.rank % len(rng)].get("transforms", []))
        log.info(
            "resuming %s at epoch %d, batch %d (step %d)",
            self.run_dir,
            self.epoch,
            self.batch_in_epoch,
            self.step,
        )

    def _stateful_transforms(self) -> list[Any]:
        return [t for t in self.batch_transforms if hasattr(t, "state_dict")]

    def _transform_states(self) -> list[Any]:
        return [t.state_dict() for t in self._stateful_transforms()]

    def _load_transform_states(self, states: list[Any]) -> None:
        transforms = self._stateful_transforms()
        if len(states) != len(transforms):
            raise CheckpointError(
                f"{self.run_dir}/checkpoints/last.pt holds {len(states)} batch-transform states "
                f"but this run has {len(transforms)} stateful batch transforms (FairSWAP on/off "
                "must match the run being resumed)"
            )
        for transform, state in zip(transforms, states, strict=True):
            transform.load_state_dict(state)

    # ------------------------------------------------------------------ loop
    def fit(self) -> Path:
        """Train to the end (or early stop) and return the run directory."""
        self._setup()
        t = self.cfg.train
        try:
            while self.epoch < t.epochs and not self.selector.should_stop:
                self._train_epoch()
            self._finish()
        finally:
            if self.writer is not None:
                self.writer.close()
        return self.run_dir

    def _train_epoch(self) -> None:
        t = self.cfg.train
        self.sampler.set_epoch(self.epoch)
        self.train_set.set_epoch(self.epoch)
        self.detector.set_epoch(self.epoch)  # epoch-dependent losses (LMFD-PAD's warm-up)
        self.sampler.set_start(self.batch_in_epoch * self.rank_batch)
        self.detector.train()
        replaced: list[str] = []
        skipped: list[str] = []
        tick, seen = time.perf_counter(), 0
        epoch_start, loss_sum, loss_steps = tick, 0.0, 0
        # a bar on rank 0's terminal only (tqdm's disable=None: off when stderr is not a tty)
        bar = tqdm(
            total=self.steps_per_epoch,
            initial=self.batch_in_epoch,
            desc=f"epoch {self.epoch}",
            unit="step",
            leave=False,
            disable=None if self.dist.is_main else True,
        )
        with bar, logging_redirect_tqdm():
            for batch in self.loader:
                done = self._train_batch(batch, replaced, skipped)
                bar.update(1)
                if done is None:
                    continue
                losses, n = done
                seen += n
                loss_sum += losses["total"]
                loss_steps += 1
                bar.set_postfix(loss=f"{losses['total']:.4f}")
                if self.writer is not None and self.step % t.log_every_steps == 0:
                    rate = seen * self.dist.world_size / max(time.perf_counter() - tick, 1e-9)
                    self._log_step(losses, rate)
                    tick, seen = time.perf_counter(), 0
                if t.eval_every_steps and self.step % t.eval_every_steps == 0:
                    self._evaluate()
                if t.checkpoint_every_steps and self.step % t.checkpoint_every_steps == 0:
                    self._save("last", full=True)
                if self.selector.should_stop:
                    break
        if loss_steps and self.dist.is_main:  # at least one loss line per epoch
            log.info(
                "epoch %d done: mean loss %.4f over %d steps (step %d, %.1f s)",
                self.epoch,
                loss_sum / loss_steps,
                loss_steps,
                self.step,
                time.perf_counter() - epoch_start,
            )
        self._finish_epoch(replaced, skipped)

    def _train_batch(
        self, batch: dict[str, Any], replaced: list[str], skipped: list[str]
    ) -> tuple[dict[str, float], int] | None:
        """One training step on ``batch``: its losses and size (``None`` when every rank skips
        an empty batch)."""
        replaced.extend(batch.pop("_replaced", ()))
        skipped.extend(batch.pop("_skipped", ()))
        if D.any_flag("image" not in batch, self.device):  # every rank skips together
            self.batch_in_epoch += 1
            return None
        for transform in self.batch_transforms:
            batch = transform(batch)
        losses = self._train_step(batch)
        self.step += 1
        self.batch_in_epoch += 1
        return losses, len(batch["label"])

    def _log_step(self, losses: dict[str, float], rate: float) -> None:
        for k, v in losses.items():
            self.writer.add_scalar(f"train/loss_{k}", v, self.step)
        self.writer.add_scalar("train/lr", self.optimizer.param_groups[0]["lr"], self.step)
        self.writer.add_scalar("train/images_per_s", rate, self.step)
        log.info(
            "epoch %d step %d loss %.4f (%.1f img/s)", self.epoch, self.step, losses["total"], rate
        )

    def _finish_epoch(self, replaced: list[str], skipped: list[str]) -> None:
        t = self.cfg.train
        self._record_bad_inputs(replaced, skipped)
        stopped = self.selector.should_stop
        if not t.eval_every_steps and not stopped:
            self._evaluate()
        self.epoch += 1
        self.batch_in_epoch = 0
        self._save("last", full=True)

    def _train_step(self, batch: dict[str, Any]) -> dict[str, float]:
        try:
            return self.train_step(batch)
        except NonFiniteLossError as err:
            raise NonFiniteLossError(
                f"non-finite loss at epoch {self.epoch}, step {self.step + 1}: {err.terms}. The run "
                f"stopped; its last good checkpoint is kept in {self.run.checkpoints}. "
                "Try a lower train.optimizer.lr, train.grad_clip, or train.precision: fp32.",
                err.terms,
            ) from None

    def _record_bad_inputs(self, replaced: list[str], skipped: list[str]) -> None:
        replaced, skipped = D.gather_lists(replaced), D.gather_lists(skipped)
        if replaced or skipped:
            log.warning(
                "epoch %d: %d unreadable frames replaced, %d samples skipped",
                self.epoch,
                len(replaced),
                len(skipped),
            )
        self.manifest["epochs"][str(self.epoch)] = {
            "replaced": len(replaced),
            "skipped": len(skipped),
        }
        for key, items in (("replaced_frames", replaced), ("skipped_samples", skipped)):
            known = set(self.manifest[key])
            self.manifest[key].extend(sorted({i for i in items if i not in known}))
        if self.dist.is_main:
            write_json(self.run.manifest, self.manifest)
        frames = len(self.train_set) * self.train_set.frames_per_sample
        check_unreadable(self.epoch, replaced, frames, self.cfg.data.max_unreadable_fraction)

    # ------------------------------------------------------------------ evaluation
    def _evaluate(self) -> None:
        t = self.cfg.train
        if not any(self.eval_sets.values()):
            return
        metrics: dict[str, dict[str, dict[str, float]]] = {"val": {}, "test": {}}
        val_preds = []
        units: list[str] = []  # what the rows scored: frames, or clips (a video detector)
        bs = t.eval_batch_size or self.rank_batch
        for split, sets in self.eval_sets.items():
            for name, ds in sets:
                sampler = ShardSampler(len(ds), self.dist.world_size, self.dist.rank)
                loader = make_eval_loader(
                    ds, bs, self.cfg.data.num_workers, sampler, self.device.type == "cuda"
                )
                cols, _, _ = predict_loader(
                    self.detector,
                    loader,
                    mean=self.detector.cfg.mean,
                    std=self.detector.cfg.std,
                    device=self.device,
                    amp_dtype=self.amp_dtype,
                    channels_last=self.channels_last,
                    progress=self.dist.is_main,
                )
                rows = D.gather_lists(
                    [dict(zip(cols, r, strict=True)) for r in zip(*cols.values(), strict=True)]
                )
                if not self.dist.is_main:
                    continue
                keys = sorted({k for r in rows for k in r})
                preds = rows_to_predictions({k: [r.get(k, "") for r in rows] for k in keys})
                metrics[split][name] = detection_metrics(preds)
                units.append(preds.row_unit)
                if split == "val":
                    val_preds.append(preds)
                if t.save_predictions:
                    out = self.run.predictions / f"{split}_{name}_step{self.step:07d}.csv"
                    write_predictions(out, preds)
        metrics = D.broadcast(metrics)
        if val_preds:  # rank 0: the threshold the checkpoints saved now will record
            self.val_threshold = validation_record(
                val_preds, self.selector.level, self.step, self.epoch
            )
        is_best = self.selector.update(self.step, self.epoch, metrics)
        if self.dist.is_main:
            write_json(
                self.run.metrics / f"step{self.step:07d}.json",
                {"epoch": self.epoch, "step": self.step, "is_best": is_best, **metrics},
            )
            for split, per_ds in metrics.items():
                for name, m in per_ds.items():
                    for k, v in m.items():
                        if "/" in k and not math.isnan(v):  # NaN: needs both classes
                            self.writer.add_scalar(f"{split}/{name}/{k}", v, self.step)
            log.info(
                "eval step %d: %s %s %s = %.4f%s",  # e.g. "val clip AUC" of a video detector
                self.step,
                "val" if self.selector.mode == "val" else "test",
                level_label(self.selector.level, units),
                self.selector.metric.upper(),
                self.selector.history[-1]["value"],
                " (best)" if is_best else "",
            )
        if is_best:
            self._save("best", full=False)

    def _finish(self) -> None:
        if self.dist.is_main:
            write_json(self.run.metrics / "summary.json", self.selector.summary())
            write_json(self.run.manifest, self.manifest)
        D.barrier()
