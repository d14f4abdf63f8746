"""A real daemon whose state folder fills up or turns read-only under it, for real: a small
tmpfs filled with a large file, an ext4 image that hits an error. It keeps its runs going,
answers 503 (never 202 without a commit), says so once each way, recovers by itself once
there is room, and loses nothing it accepted."""

from __future__ import annotations

import re

import httpx

from cronduit.core.signing import webhook_token
from cronduit.executor.files import read_record
from cronduit.store.sqlite import SqliteStore
from tests.acceptance.conftest import Deployment
from tests.acceptance.test_http import base_url
from tests.helpers.mounts import (
    ext4_image,
    fail_read_only,
    fill,
    free,
    holders,
    repair,
    small_tmpfs,
)

HOOK_SECRET = "hook-secret-disk-faults"
SECRETS = {"HOOK_KEY": HOOK_SECRET}
CONFIG = """
settings:
  webhook_secret: HOOK_KEY
jobs:
  poke:
    run: 'echo "$CRONDUIT_RUN_ID" >> pokes.txt'
    webhook: true
    overlap: allow
  long:
    run: >-
      echo started >> long.txt; while [ ! -e go ]; do sleep 0.05; done;
      echo ending >> long.txt; exit 3
    webhook: true
"""


class Hooks:
    """Webhooks to the daemon's jobs, each with its own idempotency key."""

    def __init__(self, deployment: Deployment) -> None:
        self.base = base_url(deployment)
        self.posted: list[str] = []
        self.accepted: list[str] = []
        self.refused: list[str] = []
        self.answers: list[httpx.Response] = []

    def post(self, job: str, key: str) -> httpx.Response:
        url = f"{self.base}/hooks/{job}/{webhook_token(HOOK_SECRET, job)}"
        answer = httpx.post(url, content=b"x" * 2000, headers={"Idempotency-Key": key},
                            timeout=30)
        assert answer.status_code in (202, 503), answer.text
        self.posted.append(key)
        (self.accepted if answer.status_code == 202 else self.refused).append(key)
        self.answers.append(answer)
        return answer

    def until_refused(self, job: str, prefix: str) -> httpx.Response:
        """Post until one is refused (503): the disk is full for the store too."""
        for n in range(3000):
            answer = self.post(job, f"{prefix}-{n}")
            if answer.status_code == 503:
                return answer
        raise AssertionError("a full state folder went on accepting webhooks")


def test_a_state_folder_that_fills_up_and_empties_again_loses_nothing(
        deployment: Deployment) -> None:
    """The disk fills while a run goes and webhooks arrive: webhooks get 503 with the reason
    once commits fail, the daemon logs one line as the outage begins and one as it ends,
    the run going ends with its real exit status, and once the large file is deleted
    every webhook answered 202 has run, exactly once, without the daemon being touched."""
    deployment.write(CONFIG)
    with small_tmpfs(deployment.folder / ".cronduit", "2m") as state:
        deployment.serve(extra_env=SECRETS)
        hooks = Hooks(deployment)
        assert 202 == hooks.post("long", "long-1").status_code
        deployment.wait_for(lambda: ["started"] == deployment.lines("long.txt"))
        for n in range(3):
            hooks.post("poke", f"before-{n}")
        filler = fill(state)
        refused = hooks.until_refused("poke", "during")
        assert ("state store unavailable: database or disk is full; nothing was accepted, "
                "try again later") == refused.json()["detail"]
        assert "5" == refused.headers["retry-after"]
        deployment.wait_for(lambda: "state store unavailable" in deployment.daemon_log())
        (deployment.folder / "go").touch()  # the run going ends while the disk is full
        deployment.wait_for(lambda: _status_recorded(deployment, "long", 3))
        free(filler)
        again = hooks.post("poke", hooks.refused[-1])  # the refused one, sent again
        assert 202 == again.status_code
        for n in range(3):
            hooks.post("poke", f"after-{n}")
        deployment.wait_for(lambda: _all_ran(deployment, hooks), timeout=60)
        deployment.wait_for(lambda: [r.outcome for r in deployment.runs("long")] == ["failure"])
        [long] = deployment.runs("long")
        assert (3, "exit status 3") == (long.exit_status, long.reason)
        log = deployment.daemon_log()
    # The run folders can fill before the store does: the outage's first reason may be
    # either, and the other is then one more line.
    assert 1 == len(re.findall(r"state store unavailable: .*; runs going carry on", log)), log
    assert 1 >= len(re.findall(r"state store still unavailable, now: ", log)), log
    assert 1 == len(re.findall(r"state store available again after ", log)), log
    assert 1 == len(re.findall(r"refusing triggers with 503: state store unavailable: "
                               r"database or disk is full", log)), log
    assert 1 == len(re.findall(r"accepting triggers again after ", log)), log
    assert "Traceback" not in log


def _status_recorded(deployment: Deployment, job: str, status: int) -> bool:
    """Whether the supervisor wrote ``status`` in the attempt file of the job's one run."""
    [run] = deployment.runs(job)
    return status == read_record(deployment.folder / ".cronduit" / "runs" / run.id
                                 / "attempt-1").status


def _all_ran(deployment: Deployment, hooks: Hooks) -> bool:
    """Every poke answered 202 was consumed by a run of its own, ended as success, whose
    line the job wrote; no poke refused (and not sent again) was stored at all."""
    accepted = [key for key in hooks.accepted if key != "long-1"]
    found = _events(deployment, [f"webhook/poke/key/{key}" for key in hooks.posted])
    run_ids = [found.get(f"webhook/poke/key/{key}") for key in accepted]
    lost = [key for key in set(hooks.refused) - set(accepted)
            if f"webhook/poke/key/{key}" in found]
    assert [] == lost  # never stored without its 202
    outcomes = {run.id: run.outcome for run in deployment.runs("poke")}
    return (len(set(run_ids)) == len(accepted) == len(outcomes)
            and all(outcomes.get(run_id or "") == "success" for run_id in run_ids)
            and len(accepted) == len(deployment.lines("pokes.txt")))


def _events(deployment: Deployment, delivery_ids: list[str]) -> dict[str, str | None]:
    """The run that consumed each delivery ("" while not routed), for those stored."""
    store = SqliteStore(deployment.folder / ".cronduit" / "cronduit.db")
    try:
        with store.transaction() as tx:
            events = {delivery: tx.event_by_delivery(delivery) for delivery in delivery_ids}
    finally:
        store.close()
    return {delivery: (event.run_id or "") for delivery, event in events.items()
            if event is not None}


def test_a_state_folder_that_turns_read_only_keeps_runs_going_and_loses_nothing_accepted(
        deployment: Deployment) -> None:
    """The file system hits an error and remounts itself read-only under the daemon (open
    files included, as ext4 does): webhooks get 503, the daemon logs one line and stays up,
    the run going carries on to its end. Such a file system comes back only through an
    unmount, so the operator stops the daemon, repairs and mounts it, and starts it again:
    every webhook answered 202 runs, and the run going, whose attempt file lost what the
    kernel had not written out yet, is recorded as vanished, not run again."""
    deployment.write(CONFIG)
    state = deployment.folder / ".cronduit"
    with ext4_image(state, deployment.folder / "state.img"):
        daemon = deployment.serve(extra_env=SECRETS)
        hooks = Hooks(deployment)
        assert 202 == hooks.post("long", "long-1").status_code
        deployment.wait_for(lambda: ["started"] == deployment.lines("long.txt"))
        for n in range(3):
            assert 202 == hooks.post("poke", f"before-{n}").status_code
        deployment.wait_for(lambda: 3 == len(deployment.lines("pokes.txt")))
        fail_read_only(state)
        refused = hooks.post("poke", "during-0")
        assert (503, "state store unavailable: disk I/O error; nothing was accepted, try "
                "again later") == (refused.status_code, refused.json()["detail"])
        deployment.wait_for(lambda: "state store unavailable" in deployment.daemon_log())
        (deployment.folder / "go").touch()
        deployment.wait_for(lambda: "ending" in deployment.lines("long.txt"))
        daemon.terminate()
        assert 0 == daemon.wait(timeout=30)
        first = deployment.daemon_log()
        deployment.wait_for(lambda: not holders(state))  # the supervisor exits by itself
        repair(state, deployment.folder / "state.img")
        deployment.serve(extra_env=SECRETS)
        hooks = Hooks(deployment)  # the new daemon's address
        assert 202 == hooks.post("poke", "during-0").status_code
        deployment.wait_for(lambda: 4 == len(deployment.lines("pokes.txt")))
        deployment.wait_for(lambda: [r.outcome for r in deployment.runs("long")] == ["failure"])
        [long] = deployment.runs("long")
        assert "process vanished while cronduit was down" == long.reason
        assert ["started", "ending"] == deployment.lines("long.txt")  # it ran once
        assert 4 == len(deployment.runs("poke"))
    assert 1 == len(re.findall("state store unavailable: disk I/O error; runs going", first)), first
    assert 1 == len(re.findall("refusing triggers with 503: state store unavailable: disk "
                               "I/O error", first)), first
    assert "could not record the stop in the state store: " in first
    assert "Traceback" not in first
