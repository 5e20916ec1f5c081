"""When the service releases memory: after a quiet moment, or every so many turns under load."""
from fieldguide.service.memory import ReleasePolicy


def test_a_release_waits_for_a_quiet_moment_and_happens_once():
    policy = ReleasePolicy(idle_seconds=0.5, every_turns=100)
    assert policy.idle_due(0, now=0.0) is False  # nothing ran yet
    assert policy.turn_finished(now=10.0) is False  # never at the end of the turn itself
    assert policy.idle_due(0, now=10.2) is False  # clients may be asking again right now
    assert policy.idle_due(1, now=11.0) is False  # a turn is running
    assert policy.idle_due(0, now=11.0) is True
    assert policy.idle_due(0, now=12.0) is False  # once per quiet spell
    policy.turn_finished(now=20.0)
    assert policy.idle_due(0, now=20.6) is True
    assert policy.releases == 2


def test_a_service_that_is_never_idle_releases_every_so_many_turns():
    policy = ReleasePolicy(idle_seconds=0.5, every_turns=3)
    due = [policy.turn_finished(now=float(n)) for n in range(9)]
    assert due == [False, False, True] * 3
    assert policy.releases == 3
