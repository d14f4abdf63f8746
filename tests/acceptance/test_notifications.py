"""Notifications from a real daemon to a real endpoint on loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.acceptance.conftest import Deployment


class Endpoint:
    """An HTTP endpoint in the test process that records bodies and may answer slowly."""

    def __init__(self, delay: float = 0.0) -> None:
        self.bodies: list[dict[str, object]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                endpoint.bodies.append(json.loads(self.rfile.read(length)))
                time.sleep(delay)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook/SECRET-PATH"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    made = Endpoint()
    yield made
    made.close()


def test_a_failed_run_is_posted_and_recorded_on_the_run(deployment: Deployment,
                                                       endpoint: Endpoint) -> None:
    deployment.write(f"""
notifiers:
  ops: {{url: "{endpoint.url}"}}
jobs:
  broken: {{run: "exit 3", every: 1h}}
""")
    daemon = deployment.serve()
    deployment.wait_for(lambda: len(endpoint.bodies) == 1)
    (body,) = endpoint.bodies
    assert ("broken", "failure", 3, "exit status 3") == (
        body["job"], body["outcome"], body["exit_status"], body["reason"])
    deployment.wait_for(lambda: deployment.history_json("broken")[0].get("notifications")
                        == [{"notifier": "ops", "state": "sent", "attempts": 1,
                             "error": None}])
    deployment.kill(daemon)
    assert "SECRET-PATH" not in deployment.daemon_log()


def test_a_slow_notifier_never_holds_up_the_next_run(deployment: Deployment) -> None:
    slow = Endpoint(delay=4.0)
    try:
        deployment.write(f"""
notifiers:
  slow: {{url: "{slow.url}"}}
jobs:
  flaky: {{run: "echo x >> runs.txt; exit 1", every: 1s}}
""")
        daemon = deployment.serve()
        deployment.wait_for(lambda: len(deployment.lines("runs.txt")) >= 3, timeout=10)
        assert len(slow.bodies) <= 2  # the first POST is still waiting for its answer
        deployment.kill(daemon)
    finally:
        slow.close()
