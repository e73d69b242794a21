"""Regenerate the JSON-derived message modules (developer tool, not used at run time).

Usage: ``.venv/bin/python -m broker.protocol.messages._generate [ApiName ...]`` (default: every API)

Reads Apache Kafka's message schemas (``*Request.json``/``*Response.json``, Apache-2.0) as vendored by
kafka-python (test dependency) and writes one module per API in this package, in the table form of
:mod:`broker.protocol.schema`.  The ZooKeeper-era control APIs (LeaderAndIsr, UpdateMetadata,
StopReplica, ControlledShutdown) were removed from Kafka 4 and are therefore written by hand
(``leader_and_isr.py`` …), from the 3.8 schema files.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

#: API name → module name, for every API generated from JSON.
GENERATED = {
    "ApiVersions": "api_versions",
    "Metadata": "metadata",
    "Produce": "produce",
    "Fetch": "fetch",
    "ListOffsets": "list_offsets",
    "OffsetForLeaderEpoch": "offset_for_leader_epoch",
    "CreateTopics": "create_topics",
    "DeleteTopics": "delete_topics",
    "FindCoordinator": "find_coordinator",
    "OffsetCommit": "offset_commit",
    "OffsetFetch": "offset_fetch",
    "JoinGroup": "join_group",
    "SyncGroup": "sync_group",
    "Heartbeat": "heartbeat",
    "LeaveGroup": "leave_group",
    "ListGroups": "list_groups",
    "DescribeGroups": "describe_groups",
    "InitProducerId": "init_producer_id",
    "DescribeConfigs": "describe_configs",
    "AlterConfigs": "alter_configs",
    "IncrementalAlterConfigs": "incremental_alter_configs",
    "DescribeCluster": "describe_cluster",
    "CreatePartitions": "create_partitions",
    "DeleteRecords": "delete_records",
    "DeleteGroups": "delete_groups",
    "ElectLeaders": "elect_leaders",
    "DescribeLogDirs": "describe_log_dirs",
    "AlterReplicaLogDirs": "alter_replica_log_dirs",
    "ListPartitionReassignments": "list_partition_reassignments",
    "AlterPartitionReassignments": "alter_partition_reassignments",
    "DescribeAcls": "describe_acls",
    "CreateAcls": "create_acls",
    "DeleteAcls": "delete_acls",
    "DescribeQuorum": "describe_quorum",
    "SaslHandshake": "sasl_handshake",
    "SaslAuthenticate": "sasl_authenticate",
}

#: validVersions as Kafka 3.9 has them.  Kafka 4 (KIP-896) dropped old versions from ``validVersions`` but left every
#: field's version range in place, so extending down to version 0 keeps the tables exact; versions newer than 3.9's
#: (DescribeLogDirs v5's IsCordoned, AlterPartitionReassignments v1's AllowReplicationFactorChange) are cut off.
VALID_OVERRIDES = {
    "CreateTopics": "0-7",
    "DeleteTopics": "0-6",
    "OffsetCommit": "0-10",
    "OffsetForLeaderEpoch": "0-4",
    "OffsetFetch": "0-10",
    "DescribeConfigs": "0-4",
    "DescribeLogDirs": "0-4",
    "AlterReplicaLogDirs": "0-2",
    "AlterPartitionReassignments": "0",
    "DescribeAcls": "0-3",
    "CreateAcls": "0-3",
    "DeleteAcls": "0-3",
}

_COMMENTS = re.compile(r"(?m)^\s*//.*\n?")


def _load(name: str) -> dict[str, Any]:
    text = resources.files("kafka.protocol.schemas.resources").joinpath(name + ".json").read_text()
    data: dict[str, Any] = json.loads(_COMMENTS.sub("", text))
    common = {s["name"]: s["fields"] for s in data.get("commonStructs", [])}
    _resolve(data["fields"], common)
    return data


def _resolve(fields: list[dict[str, Any]], common: dict[str, list[dict[str, Any]]]) -> None:
    for fld in fields:
        t = fld["type"][2:] if fld["type"].startswith("[]") else fld["type"]
        if t in common and "fields" not in fld:
            fld["fields"] = common[t]
        if "fields" in fld:
            _resolve(fld["fields"], common)


def _field(fld: dict[str, Any], indent: int) -> str:
    pad = " " * indent
    args = [repr(fld["name"]), repr(fld["type"]), repr(fld["versions"])]
    if "nullableVersions" in fld:
        args.append(f"nullable={fld['nullableVersions']!r}")
    if "default" in fld:
        args.append(f"default={fld['default']!r}")
    if "tag" in fld:
        args.append(f"tag={fld['tag']!r}")
        args.append(f"tagged={fld.get('taggedVersions', fld['versions'])!r}")
    if "fields" in fld:
        inner = ",\n".join(_field(x, indent + 4) for x in fld["fields"])
        args.append(f"fields=[\n{inner},\n{pad}]")
    return f"{pad}f({', '.join(args)})"


def _message(var: str, data: dict[str, Any]) -> str:
    fields = ",\n".join(_field(x, 8) for x in data["fields"])
    return (
        f"{var} = msg(\n    {data['name']!r},\n    {data['apiKey']},\n    {data['validVersions']!r},\n"
        f"    {data['flexibleVersions']!r},\n    [\n{fields},\n    ],\n)\n"
    )


def render(api: str) -> str:
    """The module text for one API."""
    req, resp = _load(api + "Request"), _load(api + "Response")
    note = ""
    if api in VALID_OVERRIDES:
        req["validVersions"] = resp["validVersions"] = VALID_OVERRIDES[api]
        note = f"\nvalidVersions extended to {VALID_OVERRIDES[api]}: the pre-Kafka-4 versions (see VALID_OVERRIDES)."
    return (
        f'"""{api} (api key {req["apiKey"]}): generated by ``_generate.py`` from Kafka\'s\n{api}Request.json and '
        f'{api}Response.json (Apache-2.0).{note}\nDo not edit by hand."""\n\n'
        "from __future__ import annotations\n\n"
        "from ..schema import f, msg\n\n" + _message("REQUEST", req) + "\n" + _message("RESPONSE", resp)
    )


def main(apis: list[str] | None = None) -> None:
    """Write the generated modules of ``apis`` (default: every one) next to this file, then ``ruff format`` them
    (the generated modules' style)."""
    here = Path(__file__).parent
    paths = []
    for api, module in GENERATED.items():
        if apis and api not in apis:
            continue
        path = here / f"{module}.py"
        path.write_text(render(api))
        paths.append(str(path))
    ruff = Path(sys.executable).with_name("ruff")
    subprocess.run([str(ruff), "format", "--quiet", *paths], check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
