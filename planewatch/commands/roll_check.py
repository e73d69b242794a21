"""`planewatch roll-check --cluster C [--broker N]`: may the next broker be restarted now? Exit status 0 = safe,
1 = wait (or unsafe), 2 = unknown (missing or stale data, or a cluster that cannot be described), 3 = the lake could
not be read, 4 = the Admin API connections could not be read; the verdict and every
check's reason are printed (``--json``: as GET /clusters/{cluster}/roll-safety answers).

Reads the same lake tables as the API (api.roll_safety); scripts poll it before each restart:

    restarted=$(date -u +%FT%TZ)   # after the previous broker's restart returned
    until planewatch roll-check --cluster prod --lake /data/lake --since "$restarted"; do sleep 5; done
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path

from pipelines.roll_safety import DEFAULT_THRESHOLDS, RollThresholds

# exit status when the lake cannot be read (a table unreadable or the query timed out)
LAKE_UNREADABLE = 3
# exit status when the Admin API connections cannot be read
ADMIN_CONFIG_INVALID = 4
# how long one read of the lake may take
QUERY_TIMEOUT_S = 30.0


def iso_time(text: str) -> datetime:
    """An ISO 8601 time; without a zone, UTC."""
    t = datetime.fromisoformat(text)
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def add_admin_arguments(parser: argparse.ArgumentParser) -> None:
    """The Admin API connection's arguments (roll-check and roll)."""
    parser.add_argument("--admin-config", type=Path, default=None, metavar="YAML",
                        help="Admin API connections per cluster (docs/roll-safety.md): check the partitions the "
                             "broker's restart would put at risk and the controller quorum")
    parser.add_argument("--bootstrap-server", default=None, metavar="HOST:PORT",
                        help="the cluster's bootstrap servers, as Kafka's tools take them (instead of --admin-config)")
    parser.add_argument("--command-config", type=Path, default=None, metavar="PROPERTIES",
                        help="client properties for --bootstrap-server (librdkafka names: security.protocol, "
                             "sasl.*, ssl.*)")


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `planewatch roll-check`."""
    parser.add_argument("--cluster", required=True, help="the cluster (its name in the lake)")
    parser.add_argument("--broker", type=int, default=None, help="the broker to restart next (reported)")
    parser.add_argument("--lake", default="var/lake",
                        help="lake directory or object store URI (s3://bucket/prefix; default: var/lake)")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    parser.add_argument("--restarted", type=int, default=None, metavar="NODE",
                        help="the node restarted last: with an Admin API connection, it must be back in every ISR")
    add_admin_arguments(parser)
    parser.add_argument("--since", type=iso_time, default=None, metavar="TIME",
                        help="the last change made, ISO 8601 (e.g. the restart's `date -u +%%FT%%TZ`): every node "
                             "must have been scraped after it, else unknown")
    for f in fields(RollThresholds):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(getattr(DEFAULT_THRESHOLDS, f.name)),
                            default=getattr(DEFAULT_THRESHOLDS, f.name), metavar="N",
                            help=f"threshold (default {getattr(DEFAULT_THRESHOLDS, f.name):g})")


def admin_connections(args: argparse.Namespace) -> dict[str, dict[str, str]] | None:
    """cluster -> Admin API connection from --admin-config, or --bootstrap-server (+ --command-config).

    Raises:
        AdminConfigError: a file is unreadable or malformed.
    """
    from api.kafka_admin import load_admin_clusters, read_properties

    if args.bootstrap_server:
        props = read_properties(args.command_config) if args.command_config else {}
        return {args.cluster: {**props, "bootstrap.servers": args.bootstrap_server}}
    return load_admin_clusters(args.admin_config) if args.admin_config else None


def run(args: argparse.Namespace) -> int:
    """Print the verdict; the exit status says it (module docstring)."""
    from api.roll_safety import cluster_verdict, verdict_json
    from api.store import LakeStore, TableUnavailable
    from schemas.roll_safety import EXIT_CODES

    th = RollThresholds(**{f.name: getattr(args, f.name) for f in fields(RollThresholds)})
    from api.kafka_admin import AdminConfigError

    try:
        admin = admin_connections(args)
    except AdminConfigError as e:
        print(f"planewatch roll-check: {e}", file=sys.stderr)
        return ADMIN_CONFIG_INVALID
    store = LakeStore(args.lake, background_reload=False, query_timeout_s=QUERY_TIMEOUT_S)
    try:
        v = cluster_verdict(store, args.cluster, datetime.now(UTC), th, args.broker, args.since, admin,
                            args.restarted)
    except TableUnavailable as e:
        print(f"planewatch roll-check: cannot read the lake: {e}", file=sys.stderr)
        return LAKE_UNREADABLE
    finally:
        store.close()
    if args.json:
        print(json.dumps(verdict_json(v), default=str))
    else:
        target = "" if args.broker is None else f" (next: broker {args.broker})"
        print(f"{v.cluster}: {v.verdict.value.upper()}{target} as of {v.as_of:%H:%M:%S} UTC, {v.mode}, nodes "
              f"{', '.join(map(str, v.nodes)) or 'none'}")
        for r in v.reasons:
            age = "" if r.age_s is None else f" [{r.age_s:.0f} s old]"
            print(f"  {r.status.value:<8} {r.check.value:<22} {r.text}{age}")
    return EXIT_CODES[v.verdict]
