"""The JVM artifacts planewatch runs: Apache Kafka per version, the JMX exporter agent, Spark's Kafka and Delta jars.

Each set is resolved from Maven Central by ``mvn`` from the project's pom (``jvm/pom.xml``) into its own directory
under ``.jvm/`` (git-ignored; ``PLANEWATCH_JVM_DIR`` moves it), with a ``.complete`` stamp written last, so a set is
either whole or fetched again::

    .jvm/kafka-3.9.1/*.jar     kafka_2.13 3.9.1, the ZooKeeper it was built with, reload4j
    .jvm/kafka-4.4.0/*.jar     kafka_2.13 4.4.0 (KRaft only), log4j2
    .jvm/agent/*.jar           io.prometheus.jmx:jmx_prometheus_javaagent
    .jvm/s3/*.jar              org.gaul:s3proxy's runnable jar: an S3 server on a directory (the object-store lake)
    .jvm/spark/*.jar           spark-sql-kafka and delta-spark for the pinned pyspark; spark-jars.txt names the
                               jars pyspark does not already ship (what ``spark.jars`` needs), one file name a line

``python -m planewatch.kafka.artifacts fetch [SET ...]`` fetches (the README's set-up runs it for
:data:`DEFAULT_SETS`); ``... path SET`` prints a set's directory. A missing set is an :class:`ArtifactMissing` whose
message names the artifact and the command that fetches it; a failed resolution is an :class:`ArtifactFetchError`
naming the artifacts Maven could not resolve.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_KAFKA_VERSIONS",
    "DEFAULT_SETS",
    "DELTA_VERSION",
    "JMX_EXPORTER_VERSION",
    "S3PROXY_VERSION",
    "SPARK_VERSION",
    "ArtifactFetchError",
    "ArtifactMissing",
    "ArtifactSet",
    "agent_jar",
    "artifact_set",
    "ensure",
    "fetch",
    "jvm_dir",
    "kafka_classpath",
    "kafka_major_minor",
    "s3proxy_jar",
]

REPO = Path(__file__).resolve().parents[2]
POM = REPO / "jvm" / "pom.xml"
STAMP = ".complete"

# 3.9: the last line with ZooKeeper mode and control.plane.listener.name (KIP-291); 4.4: the newest 4.x served
# (KRaft only); 2.8: the INFO Handling/Finished era before the 3.x changes (runs on Java 17, verified).
DEFAULT_KAFKA_VERSIONS: tuple[str, ...] = ("3.9.1", "4.4.0", "2.8.2")
JMX_EXPORTER_VERSION = "1.0.1"
# s3proxy 4.x: honours If-None-Match / If-Match on PUT (delta-rs's commits are conditional puts); Java 11+.
S3PROXY_VERSION = "4.1.0"
# No spark-sql-kafka or delta-spark jar for Spark 4.3 exists on Maven Central: pyspark is pinned to 4.2.0 to match.
SPARK_VERSION = "4.2.0"
DELTA_VERSION = "4.4.0"
DEFAULT_SETS: tuple[str, ...] = (*(f"kafka-{v}" for v in DEFAULT_KAFKA_VERSIONS), "agent", "spark", "s3")
# One resolution downloads ~100 MB on a cold cache; Maven Central answers within seconds per artifact here.
FETCH_TIMEOUT_S = 900.0
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_JAR_VERSION = re.compile(r"^(.*?)-(\d+(?:\.\d+)+[\w.-]*)\.jar$")
_UNRESOLVED = re.compile(r"([\w.\-]+:[\w.\-]+:(?:jar|pom):[\w.\-]+)")


class ArtifactMissing(RuntimeError):
    """A set that was never fetched (or only in part)."""


class ArtifactFetchError(RuntimeError):
    """Maven could not resolve a set."""


@dataclass(frozen=True)
class ArtifactSet:
    """One classpath: its directory name, the pom profiles and properties that resolve it, what it is."""

    name: str
    profiles: tuple[str, ...]
    properties: tuple[tuple[str, str], ...]
    describes: str


def kafka_major_minor(version: str) -> tuple[int, int]:
    """(major, minor) of a Kafka version string; ValueError when it is not ``X.Y.Z``."""
    if not _VERSION.match(version):
        raise ValueError(f"not a Kafka release version (X.Y.Z): {version!r}")
    major, minor, _ = version.split(".")
    return int(major), int(minor)


def artifact_set(name: str) -> ArtifactSet:
    """The set called ``name``: ``kafka-X.Y.Z``, ``agent``, ``spark`` or ``s3``."""
    if name.startswith("kafka-"):
        version = name.removeprefix("kafka-")
        major, _ = kafka_major_minor(version)
        logging = "log4j2" if major >= 4 else "log4j1"
        return ArtifactSet(name, ("kafka", logging), (("kafka.version", version),),
                           f"org.apache.kafka:kafka_2.13:{version}")
    if name == "agent":
        return ArtifactSet(name, ("agent",), (("jmx.exporter.version", JMX_EXPORTER_VERSION),),
                           f"io.prometheus.jmx:jmx_prometheus_javaagent:{JMX_EXPORTER_VERSION}")
    if name == "s3":
        return ArtifactSet(name, ("s3",), (("s3proxy.version", S3PROXY_VERSION),),
                           f"org.gaul:s3proxy:{S3PROXY_VERSION}:jar-with-dependencies")
    if name == "spark":
        return ArtifactSet(name, ("spark",), (("spark.version", SPARK_VERSION), ("delta.version", DELTA_VERSION)),
                           f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_VERSION}, "
                           f"io.delta:delta-spark_2.13:{DELTA_VERSION}")
    raise ValueError(f"unknown artifact set {name!r} (kafka-X.Y.Z, agent, spark, s3)")


def jvm_dir() -> Path:
    """Where the sets live: ``$PLANEWATCH_JVM_DIR`` or ``<repo>/.jvm``."""
    return Path(os.environ.get("PLANEWATCH_JVM_DIR") or REPO / ".jvm")


def _set_dir(name: str) -> Path:
    return jvm_dir() / name


def ensure(name: str) -> Path:
    """The directory of a fetched set; ArtifactMissing (naming the artifact and the fetch command) when it is not."""
    target = _set_dir(name)
    if not (target / STAMP).exists():
        spec = artifact_set(name)
        raise ArtifactMissing(f"{spec.describes} is not fetched ({target}); run "
                              f"`python -m planewatch.kafka.artifacts fetch {name}` (needs mvn and Maven Central)")
    return target


def kafka_classpath(version: str) -> str:
    """The ``-cp`` of Apache Kafka ``version`` (every jar of its set)."""
    target = ensure(f"kafka-{version}")
    return os.pathsep.join(str(p) for p in sorted(target.glob("*.jar")))


def agent_jar() -> Path:
    """The JMX exporter java agent."""
    jars = sorted(ensure("agent").glob("jmx_prometheus_javaagent-*.jar"))
    if not jars:
        raise ArtifactMissing(f"no jmx_prometheus_javaagent jar in {_set_dir('agent')}")
    return jars[-1]


def s3proxy_jar() -> Path:
    """s3proxy's runnable jar."""
    jars = sorted(ensure("s3").glob("s3proxy-*.jar"))
    if not jars:
        raise ArtifactMissing(f"no s3proxy jar in {_set_dir('s3')}")
    return jars[-1]


def _spark_jars_list(target: Path) -> None:
    """Write ``spark-jars.txt``: the set's jars whose artifact pyspark does not ship already (for spark.jars)."""
    import pyspark

    shipped = {_artifact_name(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    extra = [p.name for p in sorted(target.glob("*.jar")) if _artifact_name(p.name) not in shipped]
    (target / "spark-jars.txt").write_text("".join(f"{p}\n" for p in extra))


def _artifact_name(jar: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients`` (the name before the first ``-X.Y`` version part)."""
    m = _JAR_VERSION.match(jar)
    return m.group(1) if m else jar.removesuffix(".jar")


def fetch(name: str, *, quiet: bool = True) -> Path:
    """Resolve one set with mvn into its directory (nothing done when already complete); its directory."""
    target = _set_dir(name)
    if (target / STAMP).exists():
        return target
    spec = artifact_set(name)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ArtifactFetchError(f"cannot fetch {spec.describes}: mvn is not on PATH (install Maven)")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    cmd = [mvn, "-B", "-f", str(POM), "-P", ",".join(spec.profiles),
           *(f"-D{k}={v}" for k, v in spec.properties),
           "dependency:copy-dependencies", f"-DoutputDirectory={partial}", "-DincludeScope=runtime"]
    if quiet:
        cmd.insert(2, "-q")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise ArtifactFetchError(f"fetching {spec.describes} took over {FETCH_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        output = done.stdout + done.stderr
        missing = sorted(set(_UNRESOLVED.findall(output)))
        detail = ", ".join(missing) if missing else output.strip().splitlines()[-1:] or ["(no output)"]
        raise ArtifactFetchError(f"mvn could not resolve {spec.describes}: {detail}")
    if name == "spark":
        _spark_jars_list(partial)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    (target / STAMP).write_text(spec.describes + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m planewatch.kafka.artifacts", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    f = sub.add_parser("fetch", help="resolve sets with mvn (default: the README set-up's sets)")
    f.add_argument("sets", nargs="*", default=list(DEFAULT_SETS))
    p = sub.add_parser("path", help="print a fetched set's directory")
    p.add_argument("set")
    args = parser.parse_args(argv)
    if args.action == "path":
        try:
            print(ensure(args.set))  # noqa: T201 - a command's answer
        except (ArtifactMissing, ValueError) as exc:
            print(f"planewatch: {exc}", file=sys.stderr)  # noqa: T201
            return 1
        return 0
    failed = 0
    for name in args.sets:
        try:
            already = (_set_dir(name) / STAMP).exists()
            where = fetch(name)
            print(f"jvm: {name} {'present' if already else 'fetched'} in {where}", flush=True)  # noqa: T201
        except (ArtifactFetchError, ValueError) as exc:
            print(f"jvm: {exc}", file=sys.stderr, flush=True)  # noqa: T201
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
