"""The load generator: webhooks (with and without idempotency keys), GitHub pushes and run-now
requests, sent from a thread at whichever daemon is listening, while the killer kills it.

What counts as accepted is what the daemon said it accepted: a 202 or 201 with its delivery
id. A request whose answer was lost to a kill is unknown; one that can be repeated safely (a
webhook with an ``Idempotency-Key``, a GitHub delivery with its ``X-GitHub-Delivery``) is
sent again until it is answered, which is what a caller relying on that idempotency does;
one that cannot is forgotten (whatever the store holds of it, the checker still checks).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import httpx

from cronduit.core.signing import SIGNATURE_PREFIX, webhook_token
from tests.chaos.deployment import MANUAL_JOBS, SECRETS, WEBHOOK_JOBS

TIMEOUT = 10.0
"""Seconds a request may take; a daemon killed mid-request usually ends it at once."""


@dataclass(frozen=True)
class Request:
    """One HTTP request the load sends, kept so that it can be sent again unchanged."""

    what: str
    """``webhook``, ``keyed webhook``, ``github`` or ``run-now``."""
    job: str
    """The job it is for (``github``: the jobs the push may match)."""
    path: str
    body: bytes
    headers: dict[str, str]
    repeatable: bool


@dataclass
class Accepted:
    """Everything the daemons said they accepted, by delivery id, and the GitHub deliveries."""

    triggers: dict[str, str] = field(default_factory=dict)
    """Delivery id of each accepted trigger, and how it came (webhook, github, run-now, cli)."""
    deliveries: set[str] = field(default_factory=set)
    """GitHub delivery ids answered 202."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, delivery_id: str, how: str) -> None:
        with self.lock:
            self.triggers.setdefault(delivery_id, how)


class Load:
    """Sends requests from a thread at ``address`` (None while no daemon listens)."""

    def __init__(self, rng: random.Random, accepted: Accepted) -> None:
        self.rng = rng
        self.accepted = accepted
        self.address: str | None = None
        self.counts: Counter[str] = Counter()
        self.unexpected: list[str] = []
        """Answers no request should get (a 5xx, or a refusal of a well-formed request)."""
        self.retrying: list[Request] = []
        self.signal_accept = threading.Event()
        """Armed by the killer: set at the next 202 or 201, so it can kill right after one."""
        self.armed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-load", daemon=True)
        self._keys = 0
        self._client: httpx.Client | None = None
        self._client_for: str | None = None

    # -- the thread --------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2 * TIMEOUT)
        self._close()

    def _run(self) -> None:
        while not self._stop.is_set():
            address = self.address
            if address is None:
                time.sleep(0.02)
                continue
            if self.retrying and self.rng.random() < 0.5:
                self.send(address, self.retrying.pop(0))
            else:
                self.send(address, self._next())
            time.sleep(self.rng.uniform(0.02, 0.25))

    def finish_retries(self, address: str, timeout: float) -> None:
        """Send the repeatable requests whose answers were lost until each is answered."""
        deadline = time.monotonic() + timeout
        while self.retrying and time.monotonic() < deadline:
            self.send(address, self.retrying.pop(0))
        self._close()

    def _close(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client, self._client_for = None, None

    # -- requests ----------------------------------------------------------------------------

    def _next(self) -> Request:
        roll = self.rng.random()
        if roll < 0.55:
            return self._webhook()
        if roll < 0.8:
            return self._push()
        return self._run_now()

    def _webhook(self) -> Request:
        job = self.rng.choice(WEBHOOK_JOBS)
        token = webhook_token(SECRETS["CHAOS_HOOK"], job)
        headers = {"content-type": "application/json"}
        keyed = self.rng.random() < 0.7
        if keyed:
            # Now and then a key sent before: the same trigger again, never a second one.
            self._keys += 1 if self._keys == 0 or self.rng.random() > 0.1 else 0
            headers["Idempotency-Key"] = f"chaos-{job}-{self._keys}"
        body = json.dumps({"n": self.rng.randrange(1000)}).encode()
        return Request("keyed webhook" if keyed else "webhook", job, f"/hooks/{job}/{token}",
                       body, headers, repeatable=keyed)

    def _push(self) -> Request:
        branch = self.rng.choice(("main", "main", "feature"))
        files = self.rng.sample(["docs/guide.md", "docs/api/index.md", "src/app.py", "README"],
                                self.rng.randint(1, 2))
        after = uuid.uuid4().hex + uuid.uuid4().hex[:8]
        payload = {"ref": f"refs/heads/{branch}", "before": "0" * 39 + "1", "after": after,
                   "repository": {"full_name": "acme/chaos"},
                   "commits": [{"id": after, "added": files, "removed": [], "modified": []}]}
        body = json.dumps(payload).encode()
        signature = hmac.new(SECRETS["CHAOS_GITHUB"].encode(), body, hashlib.sha256)
        headers = {"content-type": "application/json", "X-GitHub-Event": "push",
                   "X-GitHub-Delivery": str(uuid.uuid4()),
                   "X-Hub-Signature-256": SIGNATURE_PREFIX + signature.hexdigest()}
        return Request("github", "push-*", "/github", body, headers, repeatable=True)

    def _run_now(self) -> Request:
        job = self.rng.choice(MANUAL_JOBS)
        queue = "?queue=1" if self.rng.random() < 0.8 else ""
        headers = {"Authorization": f"Bearer {SECRETS['CHAOS_API']}",
                   "content-type": "application/json"}
        return Request("run-now", job, f"/v1/jobs/{job}/run{queue}", b"{}", headers,
                       repeatable=False)

    def send(self, address: str, request: Request) -> None:
        """Send one request and note what its answer says was accepted."""
        self.counts[f"{request.what} sent"] += 1
        try:
            answer = self._http(address).post(request.path, content=request.body,
                                              headers=request.headers)
        except httpx.HTTPError:
            self.counts[f"{request.what} answer lost"] += 1
            if request.repeatable:
                self.retrying.append(request)
            return
        self._note(request, answer)

    def _note(self, request: Request, answer: httpx.Response) -> None:
        status = answer.status_code
        if status in (201, 202):
            body = answer.json()
            if request.what == "github":
                delivery = request.headers["X-GitHub-Delivery"]
                with self.accepted.lock:
                    self.accepted.deliveries.add(delivery)
                for job in body["triggered"]:
                    self.accepted.add(f"github/{delivery}/{job}", "github")
            else:
                self.accepted.add(body["delivery_id"], request.what)
            self.counts[f"{request.what} {status}"] += 1
            if self.armed:
                self.armed = False
                self.signal_accept.set()
        elif status == 409 and request.what == "run-now" and "queue=1" not in request.path:
            self.counts["run-now 409"] += 1  # refused while a run goes, as documented
        else:
            self.unexpected.append(f"{request.what} {request.job}: {status} {answer.text[:200]}")

    def _http(self, address: str) -> httpx.Client:
        if self._client_for != address:
            if self._client is not None:
                self._client.close()
            self._client = httpx.Client(base_url=address, timeout=TIMEOUT)
            self._client_for = address
        assert self._client is not None
        return self._client
