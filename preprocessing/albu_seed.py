"""Seeding an albumentations 2.x pipeline so that its transforms draw independently.

albumentations 2.x's ``Compose.set_random_seed(seed)`` (and ``Compose(..., seed=s)``) hands the
*same* seed to every transform, and each transform decides whether to apply with the first
number of its own generator: reseeded per sample, every transform of one probability fires
together or not at all (flip, rotation and blur of the training augmentation, p 0.5 each, were
all or none; of SBI's shared colour/JPEG transform no change at all for 47 % of the pairs instead
of 17 %). albumentations 1.x, which DeepfakeBench used, draws them independently from one global
generator. :func:`seed_pipeline` gives every transform, nested ones included, its own seed
derived from the sample's seed, which restores independent draws and keeps a sample's
augmentation a function of its seed alone.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np


def seed_pipeline(pipeline: Any, seed: int) -> None:
    """Seed ``pipeline`` (a ``Compose``/``OneOf``/... or a single transform) with ``seed`` and
    each transform in it with its own seed spawned from ``seed`` (independent draws).

    A transform's seed is that of child ``j`` of child ``i``... of ``SeedSequence(seed)``
    (``spawn``), and its generators are ``np.random.default_rng`` and ``random.Random`` of that
    seed, as albumentations' ``set_random_seed`` makes them. Both are made on first use: most
    transforms of one call draw nothing from numpy (and the unchosen ones of a ``OneOf``
    nothing at all), and making every generator up front was a third of the cost of the
    default training augmentation. ``transform.seed`` is set when its generators are made.
    """
    root = _Seed(None, int(seed) & 0xFFFFFFFF, (), int(seed))
    _seed_node(pipeline, root)


class _Seed:
    """The seed of one transform, computed when its first generator is made."""

    __slots__ = ("node", "entropy", "key", "value")

    def __init__(self, node: Any, entropy: int, key: tuple[int, ...], value: int | None) -> None:
        self.node, self.entropy, self.key, self.value = node, entropy, key, value

    def get(self) -> int:
        if self.value is None:
            sequence = np.random.SeedSequence(self.entropy, spawn_key=self.key)
            self.value = int(sequence.generate_state(1)[0])  # = the key's child of spawn()
        self.node.seed = self.value
        return self.value


class _Lazy:
    """A generator made from its transform's seed on the first attribute looked up."""

    __slots__ = ("_make", "_seed", "_made")

    def __init__(self, make: Callable[[int], Any], seed: _Seed) -> None:
        self._make, self._seed, self._made = make, seed, None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in _Lazy.__slots__:  # e.g. unpickling: nothing yet
            raise AttributeError(name)
        if self._made is None:
            self._made = self._make(self._seed.get())
        return getattr(self._made, name)


def _seed_node(node: Any, seed: _Seed) -> None:
    """What ``set_random_seed`` sets on ``node`` (lazily), then the same for its children."""
    seed.node = node
    node.random_generator = _Lazy(np.random.default_rng, seed)
    node.py_random = _Lazy(random.Random, seed)
    for j, child in enumerate(getattr(node, "transforms", None) or ()):
        _seed_node(child, _Seed(None, seed.entropy, (*seed.key, j), None))


class SampleSeeds:
    """The seeds :func:`seed_pipeline` gives the transforms for one sample seed, without
    building the lazy generators: ``of(key)`` is
    ``SeedSequence(seed & 0xFFFFFFFF, spawn_key=key).generate_state(1)[0]``.

    numpy's ``SeedSequence`` hashes the entropy into a pool of 4 words (the same for every key)
    and then mixes in each key word; the pool (:func:`entropy_pool`) and the key words are
    mixed here, by its algorithm, with its hash constant after the pool's 16 mixes (1.7 us
    a key against 7 us for a ``SeedSequence`` each; ``tests/test_albu_fast.py`` compares them).
    """

    __slots__ = ("pool",)

    def __init__(self, seed: int) -> None:
        self.pool = entropy_pool((int(seed) & _MASK,))  # = SeedSequence(seed & MASK).pool

    def of(self, key: tuple[int, ...]) -> int:
        """The seed of the transform at ``key`` (child indices from the pipeline down)."""
        pool, h = self.pool, _HASH_AFTER_POOL
        for word in key:
            mixed = []
            for x in pool:  # mix(pool word, hashmix(key word))
                v = (int(word) ^ h) & _MASK
                h = (h * _MULT_A) & _MASK
                v = (v * h) & _MASK
                v ^= v >> 16
                r = (_MIX_L * x - _MIX_R * v) & _MASK
                mixed.append(r ^ (r >> 16))
            pool = mixed
        v = ((pool[0] ^ _INIT_B) * _FIRST_B) & _MASK  # generate_state(1)
        return v ^ (v >> 16)


def entropy_pool(words: tuple[int, ...] | list[int]) -> list[int]:
    """The pool of ``np.random.SeedSequence(list(words))`` (no spawn key; 4 words), computed
    by numpy's algorithm (``mix_entropy``) in Python: in a DataLoader worker, between the image
    operations that evict the caches, a sample seed through numpy's call cost 33-35 us (6 in a
    tight loop), through this 15.
    ``words``: 32-bit words (each an entropy word of numpy's: ``0`` is one word, as numpy
    makes it of the integer 0). The hash constant of numpy's ``k``-th ``hashmix`` does not
    depend on the data: it is ``_HASH[k]``."""
    hash_ = _HASH
    n = len(words)
    pool = []
    for i in range(_POOL_SIZE):  # the entropy up to the pool's size, then the hash run on
        v = (((words[i] if i < n else 0) ^ hash_[i]) * hash_[i + 1]) & _MASK
        pool.append(v ^ (v >> 16))
    k = _POOL_SIZE
    for i_src in range(_POOL_SIZE):  # every word into every other
        for i_dst in range(_POOL_SIZE):
            if i_src != i_dst:
                v = ((pool[i_src] ^ hash_[k]) * hash_[k + 1]) & _MASK
                k += 1
                r = (_MIX_L * pool[i_dst] - _MIX_R * (v ^ (v >> 16))) & _MASK
                pool[i_dst] = r ^ (r >> 16)
    for word in words[_POOL_SIZE:]:  # entropy beyond the pool, into every pool word
        for i_dst in range(_POOL_SIZE):
            v = ((word ^ _hash_at(k)) * _hash_at(k + 1)) & _MASK
            k += 1
            r = (_MIX_L * pool[i_dst] - _MIX_R * (v ^ (v >> 16))) & _MASK
            pool[i_dst] = r ^ (r >> 16)
    return pool


def _hash_at(k: int) -> int:
    """The hash constant of numpy's ``k``-th ``hashmix`` (``INIT_A * MULT_A**k``)."""
    return (_INIT_A * pow(_MULT_A, k, 1 << 32)) & _MASK


def first_state(pool: list[int]) -> int:
    """``generate_state(1)[0]`` of a ``SeedSequence`` with this pool (numpy's algorithm)."""
    v = ((pool[0] ^ _INIT_B) * _FIRST_B) & _MASK
    return v ^ (v >> 16)


def first_uniform(seed: int) -> float:
    """``np.random.default_rng(seed).random()`` for a seed of 0 ... 2**32 - 1, by numpy's
    algorithms in Python: the generator's ``SeedSequence`` (:func:`entropy_pool`), its
    ``generate_state(4, uint64)``, PCG64's seeding (``pcg64_set_seed``: state and increment
    from those words) and one step with its XSL-RR output, as a double of its 53 high bits.
    The fused augmentation draws a ``OneOf``'s choice with it: numpy's calls cost several
    times their tight-loop cost in a DataLoader worker between image operations (a sample
    seed: 33-35 us against 6), Python's code less."""
    pool = entropy_pool([int(seed) & _MASK])
    h, words = _INIT_B, []
    for i in range(8):  # generate_state(8) as uint32, read as 4 little-endian uint64
        v = pool[i % _POOL_SIZE] ^ h
        h = (h * _MULT_B) & _MASK
        v = (v * h) & _MASK
        words.append(v ^ (v >> 16))
    val = [words[2 * k] | words[2 * k + 1] << 32 for k in range(4)]
    initstate, initseq = val[0] << 64 | val[1], val[2] << 64 | val[3]
    inc = (initseq << 1 | 1) & _MASK128
    state = inc  # 0 * MULT + inc: the first step
    state = ((state + initstate) * _PCG_MULT + inc) & _MASK128
    state = (state * _PCG_MULT + inc) & _MASK128  # the draw's own step
    rot = state >> 122
    x = ((state >> 64) ^ state) & _MASK64
    out = ((x >> rot) | (x << (64 - rot))) & _MASK64
    return (out >> 11) * (1.0 / 9007199254740992.0)


# numpy.random.bit_generator's SeedSequence constants
_MASK = 0xFFFFFFFF
_MASK64, _MASK128 = (1 << 64) - 1, (1 << 128) - 1
_PCG_MULT = 2549297995355413924 << 64 | 4865540595714422341  # PCG_DEFAULT_MULTIPLIER_128
_POOL_SIZE = 4
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_FIRST_B = (_INIT_B * _MULT_B) & _MASK
_HASH_AFTER_POOL = (_INIT_A * pow(_MULT_A, 16, 1 << 32)) & _MASK  # INIT_A, 16 hashmixes
_HASH = [(_INIT_A * pow(_MULT_A, k, 1 << 32)) & _MASK for k in range(_POOL_SIZE**2 + 1)]
