"""Issue 51, finding 14: a config that would silently not do what it says is refused at load, in
one line naming the key - a webhook secret too short to resist guessing, a monitor with no
command and no url (or both), a monitor url that is not http(s), a name that is lower-cased when
used (so it could never be used), a secret_env naming a variable that is not set."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import ConfigError, channel_secrets
from core.loading import load_config
from harness import free_port

REPO = Path(__file__).resolve().parent.parent
GOOD_SECRET = "0123456789abcdef"  # 16 characters: channels.min_secret_chars


@pytest.mark.parametrize("tables, says", [
    ('[channels.ci]\nsecret = "x"\n',
     "channels.ci.secret is 1 characters; a webhook secret has at least 16 (channels.min_secret_chars)"),
    ('[monitors.build]\ninterval_s = 30\n', "monitors.build needs either command (argv) or url, not neither"),
    ('[monitors.build]\ncommand = ["make"]\nurl = "https://ci.example/health"\n',
     "monitors.build needs either command (argv) or url, not both"),
    ('[monitors.passwd]\nurl = "file:///etc/passwd"\n',
     'monitors.passwd.url must be an http:// or https:// URL (got "file:///etc/passwd")'),
    ('[monitors.Build]\ncommand = ["make"]\n',
     "monitors.Build: a monitor's name must be lower-case with no surrounding or double spaces (names are "
     "lower-cased when used, so 'Build' could never be used); write 'build'"),
    (f'[channels.Telegram]\nsecret = "{GOOD_SECRET}"\n', "channels.Telegram: a channel's name must be lower-case"),
    ('[channels]\nmin_secret_chars = 8\n', "channels.min_secret_chars must be >= 16 (got 8)"),
])
def test_a_config_that_could_never_work_as_written_is_refused_in_one_line(tmp_path, tables, says):
    path = tmp_path / "porfiry.toml"
    path.write_text(tables)
    with pytest.raises(ConfigError) as refused:
        load_config(path, env={})
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_what_each_check_allows_still_loads(tmp_path):
    path = tmp_path / "porfiry.toml"
    path.write_text(f'[channels.ci]\nsecret = "{GOOD_SECRET}"\n[channels.mail]\nsecret_env = "MAIL_HOOK"\n'
                    '[monitors.build]\ncommand = ["make", "status"]\n[monitors.site]\nurl = "HTTPS://example.org/"\n')
    config = load_config(path, env={})
    assert channel_secrets(config.channels, {"MAIL_HOOK": "m" * 20}) == {"ci": GOOD_SECRET, "mail": "m" * 20}
    with pytest.raises(ValueError, match=r"channels.mail.secret_env \(MAIL_HOOK\) is 3 characters"):
        channel_secrets(config.channels, {"MAIL_HOOK": "abc"})


def _run(config: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "run.py", "--config", str(config), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=30, env=env)


def test_serve_and_web_refuse_such_a_config_before_anything_starts(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PORFIRY_") and k != "CI_HOOK_SECRET"}
    config = tmp_path / "porfiry.toml"
    # were it not refused, it would serve here, on a port of its own and files under tmp_path
    where = (f'[topology]\nipc_dir = "{tmp_path}/ipc"\n[phone]\nendpoint = "tcp://127.0.0.1:{free_port()}"\n'
             f'[storage]\npath = "{tmp_path}/porfiry.sqlite3"\n[web]\nport = {free_port()}\n'
             f'token_path = "{tmp_path}/web-token"\n')
    config.write_text(where + '[monitors.Build]\ncommand = ["make"]\n')
    served = _run(config, "serve", env=env)
    assert served.returncode == 2 and "Traceback" not in served.stderr
    assert served.stderr.strip().splitlines() == [
        f"porfiry: config {config}: monitors.Build: a monitor's name must be lower-case with no surrounding or double "
        "spaces (names are lower-cased when used, so 'Build' could never be used); write 'build'"]
    config.write_text(where + '[channels.ci]\nsecret_env = "CI_HOOK_SECRET"\nsessions = ["s1"]\n')
    web = _run(config, "web", env=env)
    assert web.returncode == 2 and "Traceback" not in web.stderr
    assert web.stderr.strip().splitlines() == [
        "porfiry web: channels.ci.secret_env names CI_HOOK_SECRET, which is not set (or empty) in this environment; "
        "set it, or remove secret_env"]
