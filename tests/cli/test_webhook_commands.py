"""``cronduit webhook url``: the signed URL, and the refusals that name what is missing."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.core.signing import webhook_token

CONFIG = """\
settings:
  listen: 127.0.0.1:9100
  webhook_secret: HOOK_KEY
  secrets_file: secrets.env
jobs:
  poke: {run: "true", webhook: true}
  quiet: {run: "true"}
"""


def url(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    (tmp_path / "cronduit.yaml").write_text(CONFIG)
    result = CliRunner().invoke(cli, ["webhook", "url", *args, "-c",
                                      str(tmp_path / "cronduit.yaml")], env=env)
    return result.exit_code, result.stdout, result.stderr


def test_the_url_carries_the_token_of_the_secret_from_the_secrets_file(tmp_path: Path) -> None:
    (tmp_path / "secrets.env").write_text("HOOK_KEY=from-the-file\n")
    code, out, _ = url(tmp_path, "poke", env={"HOOK_KEY": ""})
    assert 0 == code
    token = webhook_token("from-the-file", "poke")
    assert f"http://127.0.0.1:9100/hooks/poke/{token}\n" == out


def test_the_environment_wins_and_a_base_url_replaces_the_listen_address(tmp_path: Path) -> None:
    (tmp_path / "secrets.env").write_text("HOOK_KEY=from-the-file\n")
    code, out, _ = url(tmp_path, "poke", "--base", "https://ci.example/cronduit/",
                       env={"HOOK_KEY": "from-env"})
    assert 0 == code
    assert f"https://ci.example/cronduit/hooks/poke/{webhook_token('from-env', 'poke')}\n" == out


def test_refusals_name_the_job_or_the_missing_secret(tmp_path: Path) -> None:
    code, _, err = url(tmp_path, "quiet")
    assert (2, True) == (code, "webhook: true" in err)
    code, _, err = url(tmp_path, "nosuch")
    assert (2, True) == (code, "nosuch" in err)
    code, _, err = url(tmp_path, "poke", env={"HOOK_KEY": ""})
    assert 1 == code
    assert "HOOK_KEY" in err


def test_port_0_needs_the_running_daemons_address_or_a_base(tmp_path: Path) -> None:
    (tmp_path / "cronduit.yaml").write_text(CONFIG.replace("127.0.0.1:9100", "127.0.0.1:0"))
    (tmp_path / "secrets.env").write_text("HOOK_KEY=k\n")
    result = CliRunner().invoke(cli, ["webhook", "url", "poke", "-c",
                                      str(tmp_path / "cronduit.yaml")])
    assert 1 == result.exit_code
    assert "port 0" in result.stderr
    given = CliRunner().invoke(cli, ["webhook", "url", "poke", "--base", "http://h:1", "-c",
                                     str(tmp_path / "cronduit.yaml")])
    assert f"http://h:1/hooks/poke/{webhook_token('k', 'poke')}\n" == given.stdout
