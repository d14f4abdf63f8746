"""``cronduit webhook url JOB``: the signed URL a caller POSTs to.

The token in the URL is an HMAC of the webhook secret over the job name, so the URL is
stable across restarts and revoked by rotating the secret; printing it needs the secret's
value, which this command reads the way the daemon does (secrets file, then environment).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from cronduit.cli.context import open_configured_store, runtime
from cronduit.cli.options import config_option, fail, load_config_file
from cronduit.core.config.model import Config
from cronduit.core.signing import webhook_token
from cronduit.daemon import running_daemon
from cronduit.secrets import SecretsError, load_secrets, missing_secrets_file


@click.group()
def webhook() -> None:
    """Job webhooks."""


@webhook.command("url")
@click.argument("name")
@click.option("--base", metavar="URL",
              help="The address callers reach the daemon at (a proxy, a public host) "
                   "[default: http://<settings.listen>].")
@config_option
def url(name: str, base: str | None, config_path: Path) -> None:
    """Print the signed webhook URL of job NAME (it contains the token: treat it as one)."""
    config = load_config_file(config_path)
    job = config.jobs.get(name)
    if job is None:
        fail(f"no job named {name!r} in {config_path}")
    if not job.webhook:
        fail(f"job {name} does not take webhooks: set webhook: true on it")
    secret_name = config.settings.webhook_secret
    try:
        secret = load_secrets(config, config_path, os.environ).get(secret_name or "")
    except SecretsError as error:
        fail(str(error))
    if secret_name is None or secret is None:
        missing = missing_secrets_file(config, config_path)
        fail(f"settings.webhook_secret names {secret_name!r}, but no such secret is set "
             "(in the secrets file or the environment)"
             + ("" if missing is None else f"; {missing}"), code=1)
    root = (base or f"http://{_listening(config, config_path)}").rstrip("/")
    click.echo(f"{root}/hooks/{name}/{webhook_token(secret, name)}")


def _listening(config: Config, config_path: Path) -> str:
    """``settings.listen``; with port 0, the address the running daemon got."""
    _, port = config.settings.listen_address
    if port:
        return config.settings.listen
    store = open_configured_store(config, config_path)
    try:
        daemon = running_daemon(store, runtime().clock.now())
    finally:
        store.close()
    if daemon is None or daemon.listen is None:
        fail("settings.listen has port 0 (the system picks one) and no daemon is running to "
             "say which: start it, or give --base", code=1)
    return daemon.listen


COMMANDS: list[click.Command] = [webhook]
