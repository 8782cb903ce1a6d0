"""A base URL as an endpoint identity: what "the same server" means for the call cache
(judge.grading.keys) and for the structured-output mode remembered per server
(judge.providers.response_format)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_endpoint(url: str | None) -> str:
    """A base URL as an endpoint identity: scheme and host lower-cased, the default port and
    trailing slashes dropped, credentials (`user:pw@`) and fragment left out (they do not
    change which server answers, and the endpoint is stored with each call). "" for none."""
    text = (url or "").strip()
    if not text:
        return ""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:  # an unparsable URL is still a distinct endpoint
        return text
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    scheme = parts.scheme.lower()
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, parts.path.rstrip("/"), parts.query, ""))
