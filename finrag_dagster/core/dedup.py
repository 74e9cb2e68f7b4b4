"""Near-duplicate clusters of passages with MinHash LSH (datasketch).

Point-in-time by construction: passages are processed in (public_time, passage_id) order and a
passage joins the cluster of its earliest near-duplicate *predecessor* (estimated Jaccard over
word 3-shingles >= threshold), else it roots a new cluster named after itself. A later passage can
never change an earlier passage's cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if (
    TYPE_CHECKING
):  # datasketch imports scipy.integrate (0.3 s): loaded by the first step that deduplicates, not by every process that loads the definitions
    from datasketch import LeanMinHash

from .text import shingles


@dataclass(frozen=True)
class DupItem:
    passage_id: str
    order_key: tuple  # (public_time_ns, passage_id)
    text: str
    cluster: str | None = None  # known cluster for history items


def minhash(text: str, num_perm: int) -> LeanMinHash:
    from datasketch import LeanMinHash, MinHash

    m = MinHash(num_perm=num_perm, seed=1)
    sh = shingles(text)
    if sh:
        m.update_batch(sorted(sh))
    return LeanMinHash(m)


class ClusterIndex:
    """Incremental MinHash-LSH index over a sliding look-back of clustered passages."""

    def __init__(self, threshold: float = 0.8, num_perm: int = 128):
        self.threshold = threshold
        self.num_perm = num_perm
        from datasketch import MinHashLSH

        self._lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        self._sig: dict[str, LeanMinHash] = {}
        self._cluster: dict[str, str] = {}
        self._order: dict[str, tuple] = {}

    def __len__(self) -> int:
        return len(self._sig)

    def _insert(self, pid: str, order_key: tuple, m: LeanMinHash, cluster: str) -> None:
        self._sig[pid] = m
        self._cluster[pid] = cluster
        self._order[pid] = order_key
        self._lsh.insert(pid, m)

    def add_history(self, items: Sequence[DupItem]) -> None:
        """Passages whose cluster is already known (earlier partitions)."""
        for item in sorted(items, key=lambda x: x.order_key):
            if item.passage_id not in self._sig:
                self._insert(item.passage_id, item.order_key, minhash(item.text, self.num_perm), item.cluster or item.passage_id)

    def assign(self, items: Sequence[DupItem]) -> dict[str, str]:
        """Cluster of each new passage (processed in time order, each joining the index)."""
        out: dict[str, str] = {}
        for item in sorted(items, key=lambda x: x.order_key):
            if item.passage_id in self._sig:
                out[item.passage_id] = self._cluster[item.passage_id]
                continue
            m = minhash(item.text, self.num_perm)
            best = None
            if shingles(item.text):
                for cand in self._lsh.query(m):
                    if m.jaccard(self._sig[cand]) >= self.threshold and (best is None or self._order[cand] < self._order[best]):
                        best = cand
            cid = self._cluster[best] if best is not None else item.passage_id
            out[item.passage_id] = cid
            self._insert(item.passage_id, item.order_key, m, cid)
        return out

    def evict_before(self, order_key: tuple) -> None:
        """Forget passages older than ``order_key`` (outside the look-back)."""
        old = [p for p, o in self._order.items() if o < order_key]
        for p in old:
            self._lsh.remove(p)
            del self._sig[p], self._cluster[p], self._order[p]


def assign_clusters(
    history: Sequence[DupItem],
    new: Sequence[DupItem],
    threshold: float = 0.8,
    num_perm: int = 128,
) -> dict[str, str]:
    """Cluster id for every passage in ``new`` given already-clustered ``history``."""
    idx = ClusterIndex(threshold, num_perm)
    idx.add_history(history)
    return idx.assign(new)
