"""Nothing a client can send is a 500, on an SQLite file and on PostgreSQL: text no store (or no
JSON encoder) can take — a NUL, a lone surrogate — in every body field and filter, and times
without a zone. Refused input is a 422 naming the field.
"""

from __future__ import annotations

from uuid import UUID

from tests.support.api_support import (
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
)

SURROGATE = '"\\ud800"'
NUL = '"a\\u0000b"'


def raw_post(api: Api, path: str, body: str, who: str = "admin") -> tuple[int, str]:
    headers = {**api.headers(who), "content-type": "application/json"}
    answer = api.client.post(path, content=body, headers=headers)
    return answer.status_code, answer.text


def bodies(run: UUID) -> list[tuple[str, str]]:
    """Every request body field that is text, given a value no store can hold."""
    runs = f"/admin/events/runs/{run}"
    found = []
    for bad in (SURROGATE, NUL):
        found += [
            (f"{runs}/abort", f'{{"reason": {bad}}}'),
            (f"{runs}/cancel", f'{{"cleanup": {bad}}}'),
            ("/admin/events/cleanup/plan", f'{{"module": {bad}}}'),
            ("/admin/events/cleanup/plan", f'{{"action": {bad}}}'),
            ("/admin/events/cleanup/plan", f'{{"run_status": {bad}}}'),
            ("/admin/events/cleanup/apply", f'{{"where": {{}}, "fingerprint": {bad}}}'),
            (
                "/admin/events/cleanup/apply",
                f'{{"where": {{"module": {bad}}}, "fingerprint": "f"}}',
            ),
            ("/admin/tokens", f'{{"name": {bad}, "role": "viewer"}}'),
            ("/admin/tokens", f'{{"name": "eve", "role": {bad}}}'),
        ]
    return found


def test_no_text_in_a_body_is_a_server_error(api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    answers = {path_body: raw_post(api, *path_body)[0] for path_body in bodies(run)}
    assert {k: status for k, status in answers.items() if status >= 500} == {}
    assert api.run(run)["run"]["status"] == "running"


def test_text_no_store_can_hold_is_422_naming_the_field_not_a_conflict(api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    for path, body, field in (
        (f"/admin/events/runs/{run}/abort", f'{{"reason": {NUL}}}', "reason"),
        ("/admin/tokens", f'{{"name": {NUL}, "role": "viewer"}}', "name"),
    ):
        status, text = raw_post(api, path, body)
        assert status == 422, (path, status, text)
        assert field in text, (path, text)
    assert api.run(run)["run"]["status"] == "running"


def test_no_filter_in_a_query_is_a_server_error(api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    answers = {}
    for path in (
        "/admin/events/runs?name=%00",
        "/admin/events/runs?name=%ED%A0%80",
        "/admin/events/runs?name=%25_%5C",
        "/admin/events/runs?cursor=%00",
        f"/admin/events/runs/{run}/replay?as_of=%00",
        f"/admin/events/runs/{run}/log?cursor=99999999999999999999",
        f"/admin/events/runs/{run}/log?cursor=9999999999999999999",
        "/admin/events/runs?cursor=1e99_00000000-0000-0000-0000-000000000000",
        f"/admin/events/runs/{run}/log?cursor=%00",
        "/admin/definitions?cursor=%ED%A0%80",
        "/admin/entries/00000000-0000-0000-0000-000000000000/history?upto=99999999999999999999",
    ):
        answers[path] = api.get(path, "viewer").status_code
    assert {path: status for path, status in answers.items() if status >= 500} == {}
