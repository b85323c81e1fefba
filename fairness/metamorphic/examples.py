"""The faces of the example sheet: spread over groups, real and fake, and people.

Faces arrive as a stream (the test set is not held in memory); :class:`ExamplePicker` keeps a
bounded pool of candidates, at most ``n`` per (group, label) with distinct people, and
:meth:`ExamplePicker.chosen` takes them round-robin over the groups, alternating real and fake
within a group and preferring people not shown yet. A person is the video's ``identity`` (the
index's field; FF++ fakes carry their target's), else its video id. Faces whose decision some
test case flips are preferred (a full bucket swaps a face without a flip for one with) and shown
first: they are what the sheet is for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: At most this many (group, label) buckets are kept (many group values: the first ones).
_MAX_BUCKETS = 16


@dataclass
class Example:
    """One row of the example sheet: a face under the benchmark and every test case, with its
    score there (``scores``, same keys as ``images``) and whether a case flips its decision."""

    key: str
    group: str
    label: int
    person: str
    images: dict[str, np.ndarray]
    scores: dict[str, float] = field(default_factory=dict)
    flipped: bool = False

    @property
    def caption(self) -> str:
        """``group, real|fake`` and the last two parts of the face's key (video and frame)."""
        tail = "/".join(self.key.split("/")[-2:])
        return f"{self.group or '?'}, {'fake' if self.label else 'real'}\n{tail}"


class ExamplePicker:
    """Collects candidate examples from the stream of tested faces; see the module docstring."""

    def __init__(self, n: int, groups: list[str] | None = None) -> None:
        self.n = max(int(n), 0)
        self.groups = list(groups or [])
        self.pool: dict[tuple[str, int], list[Example]] = {}

    def offer(self, example: Example) -> None:
        """Keep ``example`` if its bucket does not show its person yet and has room, or holds a
        face without a flip where ``example`` has one."""
        if self.n == 0 or (self.groups and example.group not in self.groups):
            return
        key = (example.group, example.label)
        if key not in self.pool and len(self.pool) >= _MAX_BUCKETS:
            return
        bucket = self.pool.setdefault(key, [])
        if any(e.person == example.person for e in bucket):
            return
        if len(bucket) < self.n:
            bucket.append(example)
        elif example.flipped:
            plain = next((i for i, e in enumerate(bucket) if not e.flipped), None)
            if plain is not None:
                bucket[plain] = example

    def chosen(self) -> list[Example]:
        """Up to ``n`` examples, round-robin over groups (alternating labels), new people and
        flipped decisions first; the flipped ones lead the list."""
        groups = self.groups or sorted({g for g, _ in self.pool})
        left = {
            key: sorted(bucket, key=lambda e: not e.flipped) for key, bucket in self.pool.items()
        }
        out: list[Example] = []
        seen: set[str] = set()
        picks = dict.fromkeys(groups, 0)
        while len(out) < self.n and any(left.values()):
            for group in groups:
                if len(out) == self.n:
                    break
                first = picks[group] % 2  # real first, then fake, then real...
                candidates = [
                    e for label in (first, 1 - first) for e in left.get((group, label), [])
                ]
                if not candidates:
                    continue
                pick = next((e for e in candidates if e.person not in seen), candidates[0])
                left[(pick.group, pick.label)].remove(pick)
                seen.add(pick.person)
                picks[group] += 1
                out.append(pick)
        return sorted(out, key=lambda e: not e.flipped)
