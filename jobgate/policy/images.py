"""Image references → normalised repository names, and registry allow-list matching.

A reference is normalised as the container runtimes do (github.com/distribution/reference): the
first path component is a registry host only if it contains ``.`` or ``:``, is ``localhost``, or has
an upper-case letter; otherwise the image is docker.io's, and a single-component docker.io name is
under ``library/`` (``python`` → ``docker.io/library/python``). ``index.docker.io`` is docker.io.
The tag and the digest are not part of the name (``a/b:1@sha256:…`` → ``docker.io/a/b``); a port is
part of the host (``reg:5000/x`` is not ``reg/x``).
"""

from __future__ import annotations

DOCKER_HUB = "docker.io"


def normalise_image(image: str) -> str | None:
    """``host/path`` of an image reference, or None when it is empty or malformed."""
    ref = image.strip()
    # Stripped, so whitespace left splits it: the reference has a space inside.
    if not ref or len(ref.split()) != 1:
        return None
    name = ref.split("@", 1)[0]
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first.lower() != first):
        host, path = first.lower(), rest
    else:
        host, path = DOCKER_HUB, name
    if host == "index.docker.io":
        host = DOCKER_HUB
    # The tag is after the last ":" of the last component (a ":" before it belongs to the host).
    last_slash = path.rfind("/")
    colon = path.rfind(":")
    if colon > last_slash:
        path = path[:colon]
    if not path or path.startswith("/") or path.endswith("/") or "//" in path:
        return None
    if host == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    return f"{host}/{path}"


def entry_prefix(entry: str) -> str:
    """An allow-list entry as a prefix of normalised names: an exact host ``h`` matches ``h/…``."""
    entry = entry.strip()
    if "/" not in entry:
        host = entry.lower()
        return f"{DOCKER_HUB if host == 'index.docker.io' else host}/"
    host, _, rest = entry.partition("/")
    host = host.lower()
    return f"{DOCKER_HUB if host == 'index.docker.io' else host}/{rest}"


def image_allowed(image: str, entries: list[str]) -> bool:
    """Whether the image comes from one of ``entries`` (exact hosts or ``host/path/`` prefixes)."""
    return name_allowed(normalise_image(image), entries)


def name_allowed(name: str | None, entries: list[str]) -> bool:
    """Whether a normalised image name (``normalise_image``'s) comes from one of ``entries``."""
    if name is None:
        return False
    return any(name.startswith(entry_prefix(e)) for e in entries)
