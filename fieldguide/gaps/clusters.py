"""Clustering problem questions by meaning: greedy average linkage, then merging close clusters."""
from __future__ import annotations


# The clustering threshold is measured for the embedding model in use (`probe_threshold`):
# the highest cosine between any two of the calibration's off-topic probes, questions on
# unrelated subjects. A question closer than that to a cluster's centroid is taken to ask
# the same thing; anything less could be chance.
def probe_threshold(embed) -> float:
    """The highest cosine between two off-topic probes (`fieldguide.calibration.OFF_TOPIC_PROBES`)
    as embedded by `embed(texts) -> vectors`: the closeness unrelated questions reach by chance."""
    import numpy as np

    from fieldguide.calibration import OFF_TOPIC_PROBES

    matrix = np.asarray(embed(list(OFF_TOPIC_PROBES)), dtype=np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    sims = matrix @ matrix.T
    np.fill_diagonal(sims, -1.0)
    return round(float(sims.max()), 4)


CLUSTER_BLOCK = 512  # wordings compared with the clusters in one matrix product


def cluster_questions(vectors, threshold: float, block: int = CLUSTER_BLOCK) -> list[list[int]]:
    """Greedy clustering of row vectors (normalised here) by average linkage: each row, in the
    order given, joins the cluster whose members it is closest to on average (mean cosine) when
    that reaches `threshold`, else starts its own; `_merge_close` then joins clusters the order
    split.

    Average linkage rather than closeness to a normalised centroid: the normalised centroid of
    a cluster of loosely related wordings moves towards what they share (the product's domain),
    so it grows closer to every question of the domain as the cluster grows and clusters chain
    unrelated needs together. The mean cosine to the members does not grow with size; it is the
    dot product with the members' mean vector, so it costs the same.

    Rows are taken `block` at a time: one matrix product compares a block with every cluster
    opened before it, and the rows that join one are added at once (the means they meet are
    those of the block's start). Only the rest, the rows that open new clusters, are compared
    one by one, and only with the clusters opened within their block. So the work in Python is
    one small step per row, the comparisons are matrix products, and nothing holds a rows x rows
    or clusters x clusters matrix in memory."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.size == 0:
        return []
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms == 0, 1.0, norms)
    sums = np.zeros((max(64, block), matrix.shape[1]), dtype=np.float32)
    means = np.zeros_like(sums)
    members: list[list[int]] = []
    for start in range(0, len(matrix), block):
        rows = matrix[start:start + block]
        before = len(members)
        joined = np.zeros(len(rows), dtype=bool)
        best = np.zeros(len(rows), dtype=np.int64)
        if before:
            sims = rows @ means[:before].T
            best = np.argmax(sims, axis=1)
            joined = sims[np.arange(len(rows)), best] >= threshold
            np.add.at(sums, best[joined], rows[joined])
            for offset in np.flatnonzero(joined):
                members[best[offset]].append(start + int(offset))
        for offset in np.flatnonzero(~joined):
            vector = rows[offset]
            count = len(members)
            if count > before:  # clusters opened within this block
                local = means[before:count] @ vector
                nearest = int(np.argmax(local))
                if local[nearest] >= threshold:
                    target = before + nearest
                    members[target].append(start + int(offset))
                    sums[target] += vector
                    means[target] = sums[target] / len(members[target])
                    continue
            if count == len(sums):
                sums = np.vstack([sums, np.zeros_like(sums)])
                means = np.vstack([means, np.zeros_like(means)])
            sums[count] = vector
            means[count] = vector
            members.append([start + int(offset)])
        touched = np.unique(best[joined]) if before else np.zeros(0, dtype=np.int64)
        if len(touched):
            sizes = np.array([len(members[i]) for i in touched], dtype=np.float32)[:, None]
            means[touched] = sums[touched] / sizes
    return _merge_close(members, sums[:len(members)], threshold, block)


def _close_pairs(means, threshold: float, block: int):
    """(a, b, mean cosine) of every pair of clusters a < b whose members' mean vectors' dot product
    (their average cosine) reaches `threshold`, a block of rows at a time (never the whole
    clusters x clusters matrix)."""
    import numpy as np

    found = []
    for start in range(0, len(means), block):
        sims = means[start:start + block] @ means.T
        rows, cols = np.nonzero(sims >= threshold)
        rows = rows + start
        keep = cols > rows
        found.append(np.stack([rows[keep], cols[keep], sims[rows[keep] - start, cols[keep]]], axis=1))
    return np.concatenate(found) if found else np.zeros((0, 3))


def _merge_close(members: list[list[int]], sums, threshold: float, block: int = CLUSTER_BLOCK) -> list[list[int]]:
    """Merge clusters whose members are on average at least `threshold` close in cosine (the
    greedy pass depends on order: two halves of one need can each open a cluster), closest
    pairs first; each round merges disjoint pairs, until no pair is left."""
    import numpy as np

    while len(members) > 1:
        sizes = np.array([len(m) for m in members], dtype=np.float32)[:, None]
        pairs = _close_pairs(sums / sizes, threshold, block)
        if not len(pairs):
            break
        used, merged = set(), []
        for a, b, _ in pairs[np.argsort(-pairs[:, 2], kind="stable")]:
            a, b = int(a), int(b)
            if a in used or b in used:
                continue
            used.update((a, b))
            merged.append((a, b))
        keep = [i for i in range(len(members)) if i not in used]
        members = [members[i] for i in keep] + [members[a] + members[b] for a, b in merged]
        sums = np.vstack([sums[keep]] + [(sums[a] + sums[b])[None, :] for a, b in merged])
    return [sorted(m) for m in members]
