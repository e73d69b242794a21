"""Secrets named by the settings (a file or an environment variable, never the secret itself), read where a client is
made: a password or token is thus in no Spark plan, option, checkpoint, log line or table.

`read_secret` returns a file's first line or a variable's value; `SecretError` names the setting and why it cannot
be read, never the secret. No restart mends it: the run stops (jobs.run.runner).
"""

from __future__ import annotations

import os
from pathlib import Path

from jobs import SourceRefused

__all__ = ["MAX_SECRET_BYTES", "SecretError", "read_secret"]

# A secret file larger than this is not a password or token (a wrong path to a certificate bundle, a log file).
MAX_SECRET_BYTES = 4096


class SecretError(SourceRefused):
    """A secret named by the settings cannot be read; the message names the setting, never the secret. No restart
    mends it: the run stops (jobs.run.runner)."""


def read_secret(setting: str, path: str | None, env: str | None) -> str:
    """The secret at `path` (its first line) or in the variable `env`; `setting` (e.g. `sources.kafka.security`)
    names it in errors.

    Raises:
        SecretError: neither is given, the file cannot be read or is too large, the variable is not set.
    """
    if path:
        try:
            p = Path(path)
            if p.stat().st_size > MAX_SECRET_BYTES:
                raise SecretError(f"{setting}.password_file {path}: larger than {MAX_SECRET_BYTES} bytes, not a "
                                  "password")
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise SecretError(f"{setting}.password_file {path}: cannot read it "
                              f"({type(e).__name__}: {getattr(e, 'strerror', None) or 'not UTF-8'})") from None
        return text.splitlines()[0] if text else ""
    if env:
        value = os.environ.get(env)
        if value is None:
            raise SecretError(f"{setting}.password_env: the variable {env} is not set in this process (executors: "
                              "spark.executorEnv.*)")
        return value
    raise SecretError(f"{setting}: needs password_file or password_env")
