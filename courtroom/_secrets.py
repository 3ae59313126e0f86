"""The one redaction of a URL the user gave (``--api-base``, ``--storage``) before it is written or printed.

:func:`without_password` replaces the password of a URL, in its user part
(``postgresql://me:secret@db/studies``) or in a query parameter such as ``?password=secret``, with
the placeholder ``PASSWORD``; the rest stays, so a message still names the server and a printed
command shows where the password goes. Text that is not such a URL (a file path) is unchanged.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

PLACEHOLDER = "PASSWORD"
SECRET_PARAMETERS = frozenset({"password", "passwd", "pwd", "secret", "token", "access_token", "api_key", "apikey"})
"""Query parameters whose value is a secret (libpq takes ``?password=``; proxies take tokens)."""


def without_password(url: str) -> str:
    """``url`` with any password (user part or query parameter) replaced by ``PASSWORD``."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    netloc = parts.netloc
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:{PLACEHOLDER}@{host}"
    query = "&".join(_masked(pair) for pair in parts.query.split("&")) if parts.query else ""
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _masked(pair: str) -> str:
    name, eq, value = pair.partition("=")
    return f"{name}={PLACEHOLDER}" if eq and value and name.lower() in SECRET_PARAMETERS else pair
