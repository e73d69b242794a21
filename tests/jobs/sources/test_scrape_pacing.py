"""Per-target scrape pacing (jobs.sources.scrape_pacing, pure): a slow target gets the time it needs, only an
unanswering one is backed off, and any answer ends the back-off."""

from __future__ import annotations

from jobs.sources.scrape_pacing import MAX_BACKOFF_S, RECENT_ANSWERS, SLOW_FACTOR, ScrapePacing


def test_the_timeout_follows_the_target_s_own_answers_within_its_interval() -> None:
    p = ScrapePacing(timeout_s=5.0, interval_s=15.0)
    assert p.timeout_for("a") == 5.0
    p.answered("a", 0.2)
    assert p.timeout_for("a") == 5.0  # never below the configured timeout
    p.answered("a", 3.0)
    assert p.timeout_for("a") == SLOW_FACTOR * 3.0
    p.answered("a", 8.0)
    assert p.timeout_for("a") == 13.5  # capped below the interval
    for _ in range(RECENT_ANSWERS):
        p.answered("a", 1.0)
    assert p.timeout_for("a") == 5.0  # the slow answers aged out


def test_a_timeout_doubles_the_next_one_and_only_the_cap_backs_off() -> None:
    p = ScrapePacing(timeout_s=5.0, interval_s=15.0)
    p.timed_out("a", 5.0, now=100.0)
    assert (p.timeout_for("a"), p.may_ask("a", 100.0)) == (10.0, True)
    p.timed_out("a", 10.0, now=115.0)
    assert (p.timeout_for("a"), p.may_ask("a", 115.0)) == (13.5, True)
    p.timed_out("a", 13.5, now=130.0)  # nobody answered even at the cap: one interval
    assert not p.may_ask("a", 144.0)
    assert p.may_ask("a", 145.0)
    p.timed_out("a", 13.5, now=145.0)  # two intervals, then at most MAX_BACKOFF_S
    assert not p.may_ask("a", 174.0)
    assert p.may_ask("a", 175.0)
    p.timed_out("a", 13.5, now=175.0)
    assert p.may_ask("a", 175.0 + MAX_BACKOFF_S)
    assert p.timeouts("a") == 5
    p.answered("a", 4.0)  # back: asked on its interval again, timed by this answer
    assert (p.may_ask("a", 176.0), p.timeout_for("a")) == (True, 12.0)


def test_forgotten_targets_leave() -> None:
    p = ScrapePacing(timeout_s=5.0, interval_s=15.0)
    p.timed_out("a", 5.0, now=0.0)
    p.forget({"b"})
    assert (p.timeout_for("a"), p.timeouts("a")) == (5.0, 0)
