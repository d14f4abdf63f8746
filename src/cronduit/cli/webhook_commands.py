"""``cronduit webhook url JOB``: the signed URL a caller POSTs to.

The token in the URL is an HMAC of the webhook secret over the job name, so the URL is
stable across restarts and revoked by rotating the secret; printing it needs the secret's
value, which this command reads the way the daemon does (secrets file, then environment).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from cronduit.cli.options import config_option, fail, load_config_file
from cronduit.core.signing import webhook_token
from cronduit.secrets import load_secrets


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
    secret = load_secrets(config, config_path, os.environ).get(secret_name or "")
    if secret_name is None or secret is None:
        fail(f"settings.webhook_secret names {secret_name!r}, but no such secret is set "
             "(in the secrets file or the environment)", code=1)
    root = (base or f"http://{config.settings.listen}").rstrip("/")
    click.echo(f"{root}/hooks/{name}/{webhook_token(secret, name)}")


COMMANDS: list[click.Command] = [webhook]
