"""`planewatch api`: the REST service and dashboard over the lake's Delta tables (uvicorn, one process)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

# Exit code when the server did not start (the port is taken, the lifespan failed): uvicorn.run's own.
STARTUP_FAILURE = 3


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `planewatch api` (each also settable as PLANEWATCH_<NAME> in the environment)."""
    parser.add_argument("--lake", default=None,
                        help="lake directory or object store URI (s3://bucket/prefix; default: var/lake)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (default: 8080)")
    parser.add_argument(
        "--cluster-dir", type=Path, default=None, help="a reference cluster's directory (enables GET /cluster)"
    )
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    parser.epilog = (
        "Environment: PLANEWATCH_API_TOKEN (bearer token for data endpoints), PLANEWATCH_ALERTMANAGER_URL "
        "(push alerts), PLANEWATCH_PUBLIC_URL. OpenAPI at /docs, dashboard at /."
    )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted (uvicorn configured by api.main.server_config)."""
    import uvicorn

    from api.main import create_app, server_config
    from api.settings import get_settings

    if args.lake is not None:
        os.environ["PLANEWATCH_LAKE"] = str(args.lake)
    if args.cluster_dir is not None:
        os.environ["PLANEWATCH_CLUSTER_DIR"] = str(args.cluster_dir)
    os.environ.setdefault("PLANEWATCH_PUBLIC_URL", f"http://{args.host}:{args.port}")
    get_settings.cache_clear()
    settings = get_settings()
    print(
        f"planewatch api: lake {settings.lake}, http://{args.host}:{args.port}/ (docs at /docs)"
        + (", token required" if settings.api_token else ""),
        flush=True,
    )
    server = uvicorn.Server(server_config(create_app(), host=args.host, port=args.port, log_level=args.log_level))
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return 0 if server.started else STARTUP_FAILURE
