"""Pure slot math: DST in two zones, catch-up policies after a sleep, a once-a-day host, month ends."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

import crontick
from crontick.errors import ConfigError
from crontick.schedules import registry, slots

AMS = "Europe/Amsterdam"
NYC = "America/New_York"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def between(cron: str, zone: str, start: str, until: str) -> list[str]:
    return [slots.iso_z(s) for s in slots.slots_between(cron, zone, at(start), at(until))]


# Each DST day, from local 00:00 to 06:00 (Amsterdam: UTC+1/+2; New York: UTC-5/-4).
AMS_SPRING = ("2026-03-28T23:00Z", "2026-03-29T04:00Z")  # 02:00 CET -> 03:00 CEST at 01:00Z
AMS_FALL = ("2026-10-24T22:00Z", "2026-10-25T05:00Z")  # 03:00 CEST -> 02:00 CET at 01:00Z
NYC_SPRING = ("2026-03-08T05:00Z", "2026-03-08T10:00Z")  # 02:00 EST -> 03:00 EDT at 07:00Z
NYC_FALL = ("2026-11-01T04:00Z", "2026-11-01T11:00Z")  # 02:00 EDT -> 01:00 EST at 06:00Z


@pytest.mark.parametrize(
    ("cron", "zone", "window", "expected"),
    [
        # 02:30 does not exist: once, at the first instant after the gap (03:00 local).
        ("30 2 * * *", AMS, AMS_SPRING, ["2026-03-29T01:00:00Z"]),
        ("30 2 * * *", NYC, NYC_SPRING, ["2026-03-08T07:00:00Z"]),
        # 02:30 happens twice in Amsterdam: the first occurrence only (CEST).
        ("30 2 * * *", AMS, AMS_FALL, ["2026-10-25T00:30:00Z"]),
        # New York falls back 02:00 -> 01:00, so 02:30 happens once.
        ("30 2 * * *", NYC, NYC_FALL, ["2026-11-01T07:30:00Z"]),
        # 01:30 is before Amsterdam's gap and repeat: an ordinary day either way.
        ("30 1 * * *", AMS, AMS_SPRING, ["2026-03-29T00:30:00Z"]),
        ("30 1 * * *", AMS, AMS_FALL, ["2026-10-24T23:30:00Z"]),
        ("30 1 * * *", NYC, NYC_SPRING, ["2026-03-08T06:30:00Z"]),
        # 01:30 happens twice in New York: the first occurrence (EDT) only.
        ("30 1 * * *", NYC, NYC_FALL, ["2026-11-01T05:30:00Z"]),
    ],
)
def test_fixed_time_expressions_follow_debian_crons_dst_rule(
    cron: str, zone: str, window: tuple[str, str], expected: list[str]
) -> None:
    assert between(cron, zone, *window) == expected


def test_hourly_fires_at_every_real_hour_none_in_the_gap_both_in_the_repeat() -> None:
    # Amsterdam spring: local 00:00, 01:00, 03:00, 04:00, 05:00, 06:00 (02:00 does not exist).
    assert between("0 * * * *", AMS, *AMS_SPRING) == [
        "2026-03-29T00:00:00Z",
        "2026-03-29T01:00:00Z",
        "2026-03-29T02:00:00Z",
        "2026-03-29T03:00:00Z",
        "2026-03-29T04:00:00Z",
    ]
    local = [
        s.astimezone(slots.zone(AMS)).strftime("%H:%M%Z")
        for s in slots.slots_between("0 * * * *", AMS, *map(at, AMS_SPRING))
    ]
    assert local == ["01:00CET", "03:00CEST", "04:00CEST", "05:00CEST", "06:00CEST"]
    # Fall: 02:00 local twice, so seven hourly slots in six local hours.
    fall = between("0 * * * *", AMS, *AMS_FALL)
    assert len(fall) == 7 and fall[1:3] == ["2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z"]
    assert len(between("0 * * * *", NYC, *NYC_SPRING)) == 5
    assert len(between("0 * * * *", NYC, *NYC_FALL)) == 7


@pytest.mark.parametrize(
    ("zone", "window", "count"),
    [(AMS, AMS_SPRING, 10), (AMS, AMS_FALL, 14), (NYC, NYC_SPRING, 10), (NYC, NYC_FALL, 14)],
)
def test_every_30_minutes_is_every_real_half_hour(zone: str, window: tuple[str, str], count: int) -> None:
    found = slots.slots_between("*/30 * * * *", zone, *map(at, window))
    assert len(found) == count
    assert all(b - a == timedelta(minutes=30) for a, b in itertools.pairwise(found))  # UTC spacing never changes


def test_both_passes_of_the_repeated_hour_for_a_step_expression() -> None:
    local = [
        s.astimezone(slots.zone(AMS)).strftime("%H:%M%Z")
        for s in slots.slots_between("*/30 * * * *", AMS, at("2026-10-24T23:45Z"), at("2026-10-25T01:45Z"))
    ]
    assert local == ["02:00CEST", "02:30CEST", "02:00CET", "02:30CET"]


def test_started_inside_the_repeated_hour_no_slot_comes_back() -> None:
    # cronsim started at 02:15 CET (the second pass) returns 00:30Z, before its start: dropped.
    cursor = at("2026-10-25T01:15Z")
    assert slots.next_slot("30 2 * * *", AMS, cursor) == at("2026-10-26T01:30Z")
    assert slots.plan("30 2 * * *", AMS, "all", cursor, at("2026-10-25T23:00Z")) == slots.Plan(
        [], [], at("2026-10-26T01:30Z")
    )


def test_six_hour_sleep_under_each_policy() -> None:
    cursor, now = at("2026-06-01T00:00:30Z"), at("2026-06-01T06:05Z")
    hours = [at(f"2026-06-01T0{h}:00Z") for h in range(1, 7)]
    latest = slots.plan("0 * * * *", "UTC", "latest", cursor, now)
    assert latest.enqueue == [hours[-1]]
    assert latest.skipped == [slots.Skipped("coalesced", hours[0], hours[-2], 5)]
    assert latest.next_at == at("2026-06-01T07:00Z")
    every = slots.plan("0 * * * *", "UTC", "all", cursor, now)
    assert every.enqueue == hours[::-1] and every.skipped == []
    skip = slots.plan("0 * * * *", "UTC", "skip", cursor, now)  # 06:00 is 5 minutes old: within the grace
    assert skip.enqueue == [hours[-1]] and skip.skipped == latest.skipped
    late = slots.plan("0 * * * *", "UTC", "skip", cursor, at("2026-06-01T06:20Z"))
    assert late.enqueue == []
    assert late.skipped == [latest.skipped[0], slots.Skipped("skipped_late", hours[-1], hours[-1], 1)]
    assert slots.plan("0 * * * *", "UTC", "skip", cursor, at("2026-06-01T06:20Z"), grace_seconds=1800).enqueue == [
        hours[-1]
    ]


def test_all_caps_at_100_per_tick_and_records_the_rest_as_dropped() -> None:
    p = slots.plan("*/10 * * * *", "UTC", "all", at("2026-06-01T00:00Z"), at("2026-06-02T00:20:30Z"))
    assert len(p.enqueue) == slots.ALL_CAP and p.enqueue[0] == at("2026-06-02T00:20Z")
    assert p.skipped == [slots.Skipped("dropped_cap", at("2026-06-01T00:10Z"), at("2026-06-01T07:40Z"), 46)]


def test_a_30_day_sleep_of_a_minutely_schedule_is_one_summary_row_and_cheap() -> None:
    p = slots.plan("* * * * *", AMS, "latest", at("2026-10-01T00:00Z"), at("2026-10-31T00:00:30Z"))
    assert p.enqueue == [at("2026-10-31T00:00Z")]
    (coalesced,) = p.skipped
    assert (coalesced.reason, coalesced.first, coalesced.last) == (
        "coalesced",
        at("2026-10-01T00:01Z"),
        at("2026-10-30T23:59Z"),
    )
    assert coalesced.count_is_lower_bound and slots.SCAN_LIMIT <= coalesced.slot_count < 43_200
    dropped = slots.plan("* * * * *", "UTC", "all", at("2026-10-01T00:00Z"), at("2026-10-31T00:00:30Z"))
    assert dropped.enqueue[-1] == at("2026-10-30T22:21Z") and dropped.skipped[0].last == at("2026-10-30T22:20Z")


def test_a_once_a_day_host_with_a_six_hourly_schedule() -> None:
    # Vercel Hobby: one tick a day, at a jittered time. Each tick runs the newest 6-hourly slot.
    cursor = at("2026-06-01T08:17Z")
    ran = []
    for day, minute in ((2, 41), (3, 5), (4, 59)):
        now = at(f"2026-06-0{day}T08:{minute:02d}Z")
        p = slots.plan("0 */6 * * *", "UTC", "latest", cursor, now)
        ran.append(p.enqueue)
        assert p.skipped == [
            slots.Skipped("coalesced", at(f"2026-06-0{day - 1}T12:00Z"), at(f"2026-06-0{day}T00:00Z"), 3)
        ]
        cursor = now
    assert ran == [[at(f"2026-06-0{d}T06:00Z")] for d in (2, 3, 4)]
    every = slots.plan("0 */6 * * *", "UTC", "all", at("2026-06-01T08:17Z"), at("2026-06-02T08:41Z"))
    assert every.enqueue == [
        at("2026-06-02T06:00Z"),
        at("2026-06-02T00:00Z"),
        at("2026-06-01T18:00Z"),
        at("2026-06-01T12:00Z"),
    ]


def test_leap_day_and_month_ends() -> None:
    assert between("0 12 29 2 *", "UTC", "2026-01-01T00:00Z", "2029-01-01T00:00Z") == ["2028-02-29T12:00:00Z"]
    assert between("0 9 L * *", AMS, "2028-01-15T00:00Z", "2028-04-15T00:00Z") == [
        "2028-01-31T08:00:00Z",
        "2028-02-29T08:00:00Z",
        "2028-03-31T07:00:00Z",
    ]
    assert between("0 0 31 * *", "UTC", "2026-01-01T00:00Z", "2026-07-01T00:00Z") == [
        "2026-01-31T00:00:00Z",
        "2026-03-31T00:00:00Z",
        "2026-05-31T00:00:00Z",
    ]
    # The last day of the month, as a policy: a tick on the 1st runs the slot from the 31st (latest).
    p = slots.plan("0 23 L * *", "UTC", "latest", at("2026-01-31T22:00Z"), at("2026-02-01T00:10Z"))
    assert p.enqueue == [at("2026-01-31T23:00Z")] and p.next_at == at("2026-02-28T23:00Z")


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("bad-cron", "61 * * * *", "t"), {}, "crontick.schedule('bad-cron'): expected a 5-field cron expression"),
        (
            ("bad-zone", "0 * * * *", "t"),
            {"time_zone": "Mars/Olympus"},
            "crontick.schedule('bad-zone'): expected an IANA time zone",
        ),
        (
            ("bad-policy", "0 * * * *", "t"),
            {"catch_up": "never"},
            "crontick.schedule('bad-policy'): expected catch_up to be one of latest, all, skip",
        ),
        (
            ("bad-payload", "0 * * * *", "t", {"x": object()}),
            {},
            "crontick.schedule('bad-payload'): expected a JSON-serialisable payload",
        ),
        (("", "0 * * * *", "t"), {}, "crontick.schedule: expected a non-empty name"),
    ],
)
def test_a_bad_definition_is_a_one_line_config_error_naming_the_schedule(
    args: tuple[object, ...], kwargs: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        crontick.schedule(*args, **kwargs)  # type: ignore[arg-type]
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    assert registry.get(str(args[0])) is None


def test_a_second_definition_under_one_name_is_refused_and_the_same_one_again_is_fine() -> None:
    try:
        crontick.schedule("dup", "0 * * * *", "t")
        crontick.schedule("dup", "0 * * * *", "t")  # a module imported twice
        with pytest.raises(ConfigError, match=r"crontick.schedule\('dup'\): expected one definition per schedule name"):
            crontick.schedule("dup", "30 * * * *", "t")
    finally:
        registry.unregister("dup")


def test_iso_z_is_utc_ending_in_z() -> None:
    assert slots.iso_z(datetime(2026, 3, 29, 3, 0, tzinfo=slots.zone(AMS))) == "2026-03-29T01:00:00Z"
    assert slots.iso_z(datetime(2026, 3, 29, 1, 0, tzinfo=UTC)) == "2026-03-29T01:00:00Z"


def test_a_paused_schedule_enqueues_nothing_and_skips_every_slot_as_paused() -> None:
    from crontick.schedules.slots import plan as plan_slots

    cursor = datetime(2026, 3, 1, 0, 0, tzinfo=UTC)
    now = datetime(2026, 3, 1, 5, 30, tzinfo=UTC)
    for policy in ("latest", "all", "skip"):
        p = plan_slots("0 * * * *", "UTC", policy, cursor, now, paused=True)
        assert p.enqueue == []
        assert [(k.reason, k.first.hour, k.last.hour, k.slot_count) for k in p.skipped] == [("paused", 1, 5, 5)]
        assert p.next_at == datetime(2026, 3, 1, 6, 0, tzinfo=UTC)
    assert plan_slots("0 * * * *", "UTC", "latest", now, now, paused=True).skipped == []
