"""The port `crontick serve` and `crontick dev` listen on: --port, else PORT, else 8000, checked free before anything starts."""

from __future__ import annotations

import argparse
import os
import socket

from crontick.errors import ConfigError

DEV_PORT = 8000


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:  # 0: any free port
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got: {text!r}")
    return port


def free_port(args: argparse.Namespace, host: str) -> int:
    """--port, else PORT, else 8000; ConfigError in one line when something already listens there."""
    env = os.environ if args.env is None else args.env
    port: int = args.port if args.port is not None else port_from_env(env.get("PORT", ""))
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a TIME_WAIT port is free
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"expected port {port} on {host} to be free, got: {exc.strerror or exc}; "
                "stop what listens there, or choose another with PORT=... or --port"
            ) from None
    return port


def port_from_env(value: str) -> int:
    if not value.strip():
        return DEV_PORT
    try:
        return port_number(value.strip())
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(f"PORT: {exc}") from None
