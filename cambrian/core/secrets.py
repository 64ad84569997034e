"""Which values are secrets: those of variables whose names look like credentials.

The store redacts them from everything it writes (`store/codec.py`), whoever produced the text,
whether or not the run's config names the variable: a task's code or a candidate that read an
unconfigured key must not be able to put it in a stored message. (A sandboxed command never
sees them at all: its environment is an allow-list, `evaluate/child_env.py`.)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

# *_API_KEY, *_TOKEN, *_SECRET, *_ACCESS_KEY, *_PRIVATE_KEY, *_CREDENTIALS, and any name holding
# PASSWORD or PASSWD (PGPASSWORD). A part must end at "_" or the end: MAX_TOKENS is no secret.
CREDENTIAL_NAME_PATTERN = re.compile(
    r"(^|_)(API_?KEY|SECRET|TOKEN|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?|AUTH_KEY)(_|$)"
    r"|PASSW(OR)?D",
    re.IGNORECASE,
)
# Shorter values would match ordinary words (and are no credential).
MIN_SECRET_CHARS = 6


def looks_like_credential(name: str) -> bool:
    return CREDENTIAL_NAME_PATTERN.search(name) is not None


def environment_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values (at least MIN_SECRET_CHARS long) of the credential-named variables of
    `environ` (default: this process's environment)."""
    source = os.environ if environ is None else environ
    return tuple(sorted({value for name, value in source.items()
                         if looks_like_credential(name) and len(value) >= MIN_SECRET_CHARS}))
