"""What Prometheus reads of serve and of a runner, in process: runners keyed by id (two of one
name are two series), heartbeats as timestamps that move, build_info, process metrics, and a
request-duration histogram by route template."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from uuid import UUID, uuid4

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from runledger.application.cli.runner import metrics
from runledger.application.errors import BadRequest
from runledger.application.runledger import Runledger
from tests.conftest import Factory
from tests.support.api_support import (
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
)
from tests.support.console_support import spare_port

WAIT_S = 30.0
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def named(found: Samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: value for (n, labels), value in found.items() if n == name}


def test_two_runners_of_one_name_are_two_heartbeat_series_keyed_by_id(api: Api) -> None:
    rl = api.rl
    first = rl.fleet.join("twin", [], [], [])
    second = rl.fleet.join("twin", [], [], [])
    beats = named(
        samples(api.get("/metrics", None).text), "runledger_runner_heartbeat_timestamp_seconds"
    )
    ids = {dict(labels)["runner_id"] for labels in beats}
    assert {str(first), str(second)} <= ids
    mine = {dict(k)["runner_id"]: v for k, v in beats.items() if dict(k)["worker"] == "twin"}
    assert len(mine) == 2
    assert mine[str(first)] == pytest.approx(rl.clock().timestamp(), abs=5)
    rl.fleet.leave(first)
    beats = named(
        samples(api.get("/metrics", None).text), "runledger_runner_heartbeat_timestamp_seconds"
    )
    assert {dict(labels)["runner_id"] for labels in beats} == {str(second)}  # a stopped one left


def test_serve_says_its_build_its_process_and_the_runners_by_state(api: Api) -> None:
    api.rl.fleet.join("one", [], [], [])
    found = samples(api.get("/metrics", None).text)
    (build,) = named(found, "runledger_build_info")
    assert dict(build)["version"]
    assert named(found, "process_cpu_seconds_total")
    assert named(found, "python_info")
    assert named(found, "runledger_runners")[(("state", "live"),)] == 1
    assert named(found, "runledger_module_up") == {}  # the api's shard registered, not loaded


def test_request_durations_are_a_histogram_per_route_template_never_a_raw_path(api: Api) -> None:
    run = api.start(shard_run(1))
    for run_id in (run, uuid4(), uuid4()):
        api.get(f"/admin/events/runs/{run_id}", "viewer")
    found = samples(api.get("/metrics", None).text)
    buckets = named(found, "runledger_http_request_duration_seconds_bucket")
    routes = {dict(labels)["route"] for labels in buckets}
    assert "/admin/events/runs/{run_id}" in routes
    assert not any(str(run) in route for route in routes)
    counts = named(found, "runledger_http_request_duration_seconds_count")
    assert counts[(("route", "/admin/events/runs/{run_id}"),)] == 3
    les = {dict(k)["le"] for k in buckets if dict(k)["route"] == "/admin/events/runs/{run_id}"}
    assert {"0.005", "0.1", "1.0", "+Inf"} <= les


@pytest.fixture
def scrape() -> Iterator[Callable[[int], Samples]]:
    with httpx.Client(timeout=10) as client:
        yield lambda port: samples(client.get(f"http://127.0.0.1:{port}/metrics").text)


def until(what: str, found: Callable[[], float | None]) -> float:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} within {WAIT_S:g}s")


def test_a_runners_metrics_port_answers_its_ticks_give_backs_and_a_moving_heartbeat(
    make_runledger: Factory, scrape: Callable[[int], Samples]
) -> None:
    rl = make_runledger()
    runner = rl.runner("twin")
    port = spare_port()
    served = metrics(rl, runner, "127.0.0.1", port)
    assert served is not None
    stop = threading.Event()
    thread = threading.Thread(target=lambda: runner.run(0.05, stop), daemon=True)
    thread.start()
    try:
        ticks = until("two ticks", lambda: _one(scrape(port), "runledger_runner_ticks_total"))
        found = scrape(port)
        (keys,) = named(found, "runledger_runner_ticks_total")
        assert dict(keys) == {"runner_id": str(runner.runner_id), "worker": "twin"}
        beat = _one(found, "runledger_runner_heartbeat_timestamp_seconds") or 0.0
        assert beat == pytest.approx(time.time(), abs=60)
        later = until(
            "the heartbeat to move",
            lambda: (
                (_one(scrape(port), "runledger_runner_heartbeat_timestamp_seconds") or 0) > beat
            ),
        )
        assert later and ticks >= 1
        assert named(found, "runledger_runner_entries_given_back_total")
        kinds = {dict(k)["kind"] for k in named(found, "runledger_runner_failures_total")}
        assert kinds == {"step", "give_back"}
        assert named(found, "runledger_build_info") and named(found, "process_cpu_seconds_total")
    finally:
        stop.set()
        thread.join(timeout=WAIT_S)
        served.stop()


def test_two_runners_of_one_name_each_answer_their_own_id(
    make_runledger: Factory, scrape: Callable[[int], Samples]
) -> None:
    ids: list[str] = []
    for _ in range(2):
        rl: Runledger = make_runledger()
        runner = rl.runner("twin")
        port = spare_port()
        served = metrics(rl, runner, "127.0.0.1", port)
        assert served is not None
        try:
            runner.join()
            (keys,) = named(scrape(port), "runledger_runner_ticks_total")
            ids.append(dict(keys)["runner_id"])
        finally:
            served.stop()
            runner._leave()
    assert len(set(ids)) == 2 and all(UUID(i) for i in ids)


def test_no_metrics_port_serves_nothing_and_a_taken_one_is_one_sentence(
    make_runledger: Factory,
) -> None:
    rl = make_runledger()
    assert metrics(rl, rl.runner("solo"), "127.0.0.1", 0) is None
    port = spare_port()
    first = metrics(rl, rl.runner("solo"), "127.0.0.1", port)
    assert first is not None
    try:
        with pytest.raises(BadRequest, match=rf"--metrics-port: cannot listen on 127.0.0.1:{port}"):
            metrics(make_runledger(), rl.runner("solo"), "127.0.0.1", port)
    finally:
        first.stop()


def _one(found: Samples, name: str) -> float | None:
    values = list(named(found, name).values())
    return values[0] if len(values) == 1 else None
