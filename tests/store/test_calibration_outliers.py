"""The noise floor of a calibration: the best off-topic probe's score, unless that probe stands
far above all the others, when it has found a topic the docs really discuss (a localisation page
answers "What language is spoken in Brazil?") and the best of the others sets the floor."""
from __future__ import annotations

import pytest

from fieldguide.calibration import OFF_TOPIC_PROBES, OUTLIER_MADS, calibrate, noise_floor

SPREAD = [0.20, 0.21, 0.22, 0.23, 0.24, 0.25, 0.26, 0.27, 0.28, 0.29]  # median 0.245, deviation 0.025


def test_without_an_outlier_the_floor_is_the_best_probe():
    assert noise_floor(SPREAD) == 0.29
    near = SPREAD + [0.245 + (OUTLIER_MADS - 0.5) * 0.025]  # within the deviations allowed: still noise
    assert noise_floor(near) == pytest.approx(max(near))


def test_a_probe_far_above_the_others_does_not_set_the_floor():
    far = 0.245 + (OUTLIER_MADS + 2) * 0.03
    assert noise_floor(SPREAD + [far]) == 0.29
    assert noise_floor(SPREAD + [far, far + 0.01]) == 0.29  # two such probes: both left out


def test_equal_scores_keep_the_maximum():
    assert noise_floor([0.3] * 10) == 0.3
    assert noise_floor([0.3] * 10 + [0.9]) == 0.9  # no spread to measure an outlier against


class ProbeStore:
    """Each probe's candidates score what `tops` says for it (the probe text is the query vector)."""

    def __init__(self, tops: dict[str, float]):
        self.tops = tops

    def count(self):
        return 40

    def count_kind(self, kind):
        return 10

    def near_vector(self, vector, k):
        top = self.tops[vector]
        return [{"chunk_id": f"c{i}", "group_id": f"g{i}", "score": top - 0.02 * i} for i in range(k)]


class ProbeEmbeddings:
    def embed_query(self, text):
        return text


class ProbeScorer:
    name = "probe-scorer"

    def score(self, question, candidates, term_stats=None):
        return [c["score"] for c in candidates]


def test_calibrate_leaves_out_the_probe_that_found_a_topic():
    tops = {probe: 0.20 + 0.003 * n for n, probe in enumerate(OFF_TOPIC_PROBES)}
    tops["What language is spoken in Brazil?"] = 0.57
    calibration = calibrate(ProbeStore(tops), ProbeEmbeddings(), ProbeScorer(), None)
    others = max(top for probe, top in tops.items() if top < 0.5)
    assert calibration.rerank_min == round(others, 4)
    assert calibration.probe_top["max"] == 0.57 and calibration.probe_top["outliers"] == 1
    assert calibration.probes == len(OFF_TOPIC_PROBES)
