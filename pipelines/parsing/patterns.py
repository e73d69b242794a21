"""Every Kafka log line planewatch understands, declared once as data (FACTS.md sections 1, 2 and 6).

Theory of operation
-------------------
A log line is parsed in three steps by one interpreter of this module (:mod:`pipelines.parsing.engine_logs`, polars
over whole batches, the regexes translated by :mod:`pipelines.parsing.rust_regex`):

1. ``SHIPPER_PREFIX``: zero or more container runtime / shipper prefixes (Kubernetes CRI, docker compose, a test
   harness's logger) before the layout; ``FOREIGN_APACHE`` finds an Apache-layout line behind any other prefix.
2. ``LAYOUT``: one regex with one alternative per log4j layout (Apache ``[%d] %p %m (%c)``, Strimzi
   ``%d{ISO8601} %p %m (%c) [%t]``, Strimzi log4j2 ``%d %-5p [%t] %c{1}:%L - %m``, LinkedIn's ``yyyy/MM/dd`` one)
   gives ts, level, logger, thread, the optional log ident (``[Broker id=1] ``) and the message body.
3. ``MESSAGES``: a cheap classifier (a literal prefix of the body, optionally plus a literal it contains) picks ONE
   message pattern; only that pattern's regex runs, on the rows it was picked for. Its named groups fill the
   columns of ``state_change_events``; constants (event, request, role, kafka_format) come with it.

The regexes are written in Python syntax restricted to what Rust's regex crate (polars) also has: ``(?P<name>...)``
groups, ``[0-9]`` rather than ``\\d``, no look-around and no back-references (``END`` is translated to ``\\z``), no
``$`` except as "end of text" (the translator appends an absolute end anchor), DOTALL semantics.
A group name ``field__x`` feeds column ``field``; several alternatives may feed the same column.
"""

# Over 500 lines: a table of data, one entry per Kafka log layout and message, with its provenance.
from __future__ import annotations

from dataclasses import dataclass, field

from schemas.events import Event

__all__ = [
    "APACHE_HEAD",
    "APACHE_IDENT",
    "APACHE_TAIL",
    "API_KEYS",
    "BODY_FIELDS",
    "END",
    "EVENTS",
    "FOREIGN_APACHE",
    "IDENT",
    "IDENT_FIELDS",
    "LAYOUT",
    "LAYOUT_APACHE",
    "LAYOUT_FIELDS",
    "LAYOUT_PREFIXED",
    "MESSAGES",
    "NUMERIC",
    "REQUEST_JSON_FIELDS",
    "REQUEST_TEXT",
    "REQUEST_TEXT_FIELDS",
    "SHIPPER_PREFIX",
    "TS_STRICT",
    "Message",
]

# Absolute end of input in Python syntax (rust_regex translates it to `\z`).
END = r"(?![\s\S])"

# ---------------------------------------------------------------------------------------------------- 1. prefixes
# A line may sit behind the prefix of whatever wrote it to the file: a container runtime (Kubernetes CRI), docker
# compose, a test harness's own logger. Zero or more of these come before the layout (LAYOUT_PREFIXED); a prefix of
# any other logger is found by FOREIGN_APACHE below.
SHIPPER_PREFIX = (
    r"(?:"
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})"
    r" (?:stdout|stderr) [FP] "
    r"|[A-Za-z0-9][A-Za-z0-9_.-]* *\| "
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}[,.][0-9]{3} +[A-Z]+ +\[[^\]]*\] +(?:- +)?"
    r")"
)

# ---------------------------------------------------------------------------------------------------- 2. layouts
_IDENT = r"\[(?P<ident__{n}>[^\]]*)\] "
_IDENT_BODY = "(?:" + _IDENT + r")?(?P<body__{n}>.*)"
# Apache: [%d] %p %m (%c). The only alternative of LAYOUT that can match a line starting with `[` (the others start
# with a digit), so the engine runs it alone on such lines: same result, a smaller regex. Its three fixed parts are
# declared apart for the engine's fast path (engine_logs: head and tail matched alone, the ident cut from the middle).
APACHE_HEAD = r"\[(?P<ts__a>[^\]]+)\] (?P<level__a>[A-Z]+) "
APACHE_IDENT = _IDENT.format(n="a")
APACHE_TAIL = r" \((?P<logger__a>[^()]*)\)"
_APACHE = APACHE_HEAD + _IDENT_BODY.format(n="a") + APACHE_TAIL
LAYOUT_APACHE = "^(?:" + _APACHE + ")"
_LAYOUTS = (
    _APACHE
    # Strimzi log4j1: %d{ISO8601} %p %m (%c) [%t]
    + r"|(?P<ts__s>[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2},[0-9]{3}) (?P<level__s>[A-Z]+) "
    + _IDENT_BODY.format(n="s")
    + r" \((?P<logger__s>[^()]*)\) \[(?P<thread__s>[^\]]*)\]"
    # Strimzi log4j2: %d{yyyy-MM-dd HH:mm:ss} %-5p [%t] %c{1}:%L - %m
    r"|(?P<ts__l>[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}) (?P<level__l>[A-Z]+) +"
    r"\[(?P<thread__l>[^\]]*)\] "
    r"(?P<logger__l>[^\s:]+):(?:[0-9]+|\?) - " + _IDENT_BODY.format(n="l") +
    # LinkedIn fork: yyyy/MM/dd HH:mm:ss.SSS [logger] %m
    r"|(?P<ts__k>[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}) \[(?P<logger__k>[^\]]*)\] "
    + _IDENT_BODY.format(n="k")
)
LAYOUT = "^(?:" + _LAYOUTS + ")"
# The layouts behind zero or more shipper prefixes.
LAYOUT_PREFIXED = "^" + SHIPPER_PREFIX + "*(?:" + _LAYOUTS + ")"
# The Apache layout with its exact timestamp (`[yyyy-MM-dd HH:mm:ss,SSS] LEVEL `) anywhere in a line: a Kafka line
# behind the prefix of a logger nobody declared (its own time, level, class, thread). Tried only on lines no
# declared layout matches; the leftmost such start whose rest is a whole Apache line wins.
FOREIGN_APACHE = (
    r"\[(?P<ts__a>[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2},[0-9]{3})\] (?P<level__a>[A-Z]+) "
    + _IDENT_BODY.format(n="a") + r" \((?P<logger__a>[^()]*)\)"
)
LAYOUT_FIELDS = ("ts", "level", "logger", "thread", "ident", "body")

# The timestamp text after normalisation (`/`->`-`, `T`->` `, `,`->`.`) must look like this before it is parsed.
TS_STRICT = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?"

# ---------------------------------------------------------------------------------------------------- 3. log idents
IDENT = (
    "^(?:"
    r"Broker id=(?P<broker_id__b>[0-9]+)"
    r"|Controller id=(?P<controller_id__c>[0-9]+) epoch=(?P<controller_epoch__c>[0-9]+)"
    r"|Controller id=(?P<controller_id__o>[0-9]+)$"  # KafkaController's own ident (controller.log)
    r"|KafkaApi-(?P<broker_id__k>[0-9]+)"
    r"|Partition (?P<topic__p>\S+)-(?P<partition__p>[0-9]+) broker=(?P<broker_id__p>[0-9]+)"
    r"|(?:Unified)?Log partition=(?P<topic__l>[^,]+)-(?P<partition__l>[0-9]+), dir=.*"
    r"|LeaderEpochCache (?P<topic__e>\S+)-(?P<partition__e>[0-9]+)"
    r"|ReplicaFetcherManager on broker (?P<broker_id__m>[0-9]+)"
    r"|ReplicaManager broker=(?P<broker_id__r>[0-9]+)"
    r"|ReplicaFetcher replicaId=(?P<broker_id__f>[0-9]+), leaderId=(?P<leader__f>[0-9]+), fetcherId=[0-9]+"
    r"|QuorumController id=(?P<controller_id__q>[0-9]+)"  # a KRaft controller node (its node id)
    r"|BrokerLifecycleManager id=(?P<broker_id__y>[0-9]+)"
    r"|.*"
    ")"
)
IDENT_FIELDS = ("broker_id", "controller_id", "controller_epoch", "topic", "partition", "leader")

# ---------------------------------------------------------------------------------------------------- 4. messages
# Columns a message pattern may fill (groups or constants). Types are those of STATE_CHANGE_EVENTS.
BODY_FIELDS = (
    "event",
    "request",
    "role",
    "kafka_format",
    "correlation_id",
    "controller_id",
    "controller_epoch",
    "target_broker_id",
    "target_brokers",
    "partitions",
    "topic",
    "partition",
    "elapsed_ms",
    "leader",
    "leader_epoch",
    "become_leader",
    "become_follower",
    "broker_epoch",
    "current_broker_epoch",
    "lock_wait_ms",
    "offset",
    "count_arrows",
    "count_csv",
)

_N = "[0-9]+"
_TP = r"(?P<topic>[^\s,()\[\]]+)-(?P<partition>[0-9]+)"
_REQ_WORDS = r"(?P<request>LeaderAndIsr|UpdateMetadata|StopReplica|update metadata|stop replica)"


@dataclass(frozen=True)
class Message:
    """One message text: `prefix` (literal start of the body) and/or `contains` (a literal inside) classify it,
    `regex` (whole body) extracts named groups; `consts` fill columns the text implies."""

    event: Event
    prefix: str
    regex: str
    role: str
    kafka_format: str
    request: str | None = None
    contains: str = ""
    consts: dict[str, str] = field(default_factory=dict)
    doc: str = ""


def _m(event: Event, prefix: str, regex: str, role: str, fmt: str, request: str | None = None, **kw: object) -> Message:
    return Message(event, prefix, "^" + regex, role, fmt, request, **kw)  # type: ignore[arg-type]


_CORR_FROM = rf"correlationId (?P<correlation_id>{_N}) from controller (?P<controller_id>{_N})"
_FROM_EPOCH_CORR = (
    rf"from controller (?P<controller_id>{_N}) epoch (?P<controller_epoch>{_N}) "
    rf"with correlation id (?P<correlation_id>{_N})"
)
_STATE = (
    r"(?:LeaderAndIsr|UpdateMetadata)?PartitionState\((?:topicName='(?P<topic__s>[^']*)', )?"
    r"(?:partitionIndex=(?P<partition__s>[0-9]+), )?"
    rf"controllerEpoch={_N}, leader=(?P<leader>-?{_N}), leaderEpoch=(?P<leader_epoch>{_N}).*\)"
)
_ONE = {"partitions": "1"}

# Order matters: the first classifier that matches wins, so specific prefixes come before general ones.
MESSAGES: tuple[Message, ...] = (
    # ---- broker side, 2.6+ INFO summaries (most frequent in modern logs first)
    _m(Event.BECOME_LEADER_STARTED, "Handling LeaderAndIsr request correlationId ",
       rf"Handling LeaderAndIsr request {_CORR_FROM} epoch (?P<controller_epoch>{_N}) starting the become-leader "
       rf"transition for partition {_TP}", "broker", "2.2-2.5", "LeaderAndIsr",
       contains=" starting the become-leader ", consts={"partitions": "1", "become_leader": "1"}),
    _m(Event.BECOME_FOLLOWER_STARTED, "Handling LeaderAndIsr request correlationId ",
       rf"Handling LeaderAndIsr request {_CORR_FROM} epoch (?P<controller_epoch>{_N}) starting the become-follower "
       rf"transition for partition {_TP} with leader (?P<leader>-?{_N})", "broker", "2.2-2.5", "LeaderAndIsr",
       contains=" starting the become-follower ", consts={"partitions": "1", "become_follower": "1"}),
    _m(Event.LEADER_AND_ISR_HANDLING, "Handling LeaderAndIsr request correlationId ",
       rf"Handling LeaderAndIsr request {_CORR_FROM} for (?P<partitions>{_N}) partitions", "broker", "2.6+",
       "LeaderAndIsr"),
    _m(Event.LEADER_AND_ISR_FINISHED, "Finished LeaderAndIsr request in ",
       rf"Finished LeaderAndIsr request in (?P<elapsed_ms>{_N}) ?ms {_CORR_FROM} for (?P<partitions>{_N}) partitions"
       rf"(?:.*lock_wait_ms=(?P<lock_wait_ms>{_N}))?.*", "broker", "2.7+", "LeaderAndIsr"),
    _m(Event.FETCHERS_STOPPED, "Stopped fetchers as part of LeaderAndIsr request ",
       rf"Stopped fetchers as part of LeaderAndIsr request {_CORR_FROM} epoch (?P<controller_epoch>{_N}) as part of "
       rf"the become-leader transition for (?P<become_leader>(?P<partitions>{_N})) partitions", "broker", "2.6+",
       "LeaderAndIsr"),
    _m(Event.FETCHERS_STOPPED, "Stopped fetchers as part of become-follower request ",
       rf"Stopped fetchers as part of become-follower request {_FROM_EPOCH_CORR} for partition {_TP} with leader "
       rf"(?P<leader>-?{_N})", "broker", "2.2-2.5", "LeaderAndIsr", contains=" for partition ",
       consts={"partitions": "1", "become_follower": "1"}),
    _m(Event.FETCHERS_STOPPED, "Stopped fetchers as part of become-follower request ",
       rf"Stopped fetchers as part of become-follower request {_FROM_EPOCH_CORR} for "
       rf"(?P<become_follower>(?P<partitions>{_N})) partitions", "broker", "2.6+", "LeaderAndIsr"),
    _m(Event.FETCHERS_STOPPED, "Stopped fetchers as part of become-leader request ",
       rf"Stopped fetchers as part of become-leader request {_FROM_EPOCH_CORR} for partition {_TP}"
       r" \(last update controller epoch [0-9]+\)", "broker", "2.2-2.5", "LeaderAndIsr",
       consts={"partitions": "1", "become_leader": "1"}),
    _m(Event.METADATA_CACHE_UPDATED, "Add ",
       rf"Add (?P<partitions>{_N}) partitions and deleted {_N} partitions from metadata cache in response to "
       rf"UpdateMetadata request sent by controller (?P<controller_id>{_N}) epoch (?P<controller_epoch>{_N}) "
       rf"with correlation id (?P<correlation_id>{_N})", "broker", "2.6+", "UpdateMetadata"),
    _m(Event.STOP_REPLICA_HANDLING, "Handling StopReplica request correlationId ",
       rf"Handling StopReplica request {_CORR_FROM} for (?P<partitions>{_N}) partitions", "broker", "2.6+",
       "StopReplica"),
    _m(Event.LEADER_STARTED, "Leader ",
       rf"Leader {_TP}(?: with topic id \S+)? starts at leader epoch (?P<leader_epoch>{_N}) from offset "
       rf"(?P<offset>{_N}) with .*", "broker", "2.6+", contains=" starts at leader epoch "),
    _m(Event.FOLLOWER_STARTED, "Follower ",
       rf"Follower {_TP}(?: with topic id \S+)? starts at leader epoch (?P<leader_epoch>{_N}) from offset "
       rf"(?P<offset>{_N}) with .*?(?:Current leader is (?P<leader>-?{_N})\..*)?", "broker", "2.6+",
       contains=" starts at leader epoch "),
    # ---- controller side
    _m(Event.LEADER_AND_ISR_SENDING, "Sending LeaderAndIsr request to broker ",
       rf"Sending LeaderAndIsr request to broker (?P<target_broker_id>{_N}) with (?P<become_leader>{_N}) "
       rf"become-leader and (?P<become_follower>{_N}) become-follower partitions", "controller", "2.6+",
       "LeaderAndIsr"),
    _m(Event.UPDATE_METADATA_SENDING, "Sending UpdateMetadata request to brokers ",
       rf"Sending UpdateMetadata request to brokers (?:Hash)?Set\((?P<target_brokers>[0-9, ]*)\) for "
       rf"(?P<partitions>{_N}) partitions", "controller", "2.6+", "UpdateMetadata"),
    _m(Event.STOP_REPLICA_SENDING, "Sending StopReplica request ",
       rf"Sending StopReplica request (?:\(delete = (?:true|false)\) )?for (?P<partitions>{_N}) replicas to broker "
       rf"(?P<target_broker_id>{_N})", "controller", "2.6+", "StopReplica", contains=" replicas to broker "),
    _m(Event.STOP_REPLICA_PARTITION_SENDING, "Sending StopReplica request ",
       rf"Sending StopReplica request .* to broker (?P<target_broker_id>{_N}) for partition {_TP}",
       "controller", "2.6+", "StopReplica", consts=_ONE),
    _m(Event.LEADER_AND_ISR_PARTITION_SENDING, "Sending become-leader LeaderAndIsr request ",
       rf"Sending become-leader LeaderAndIsr request {_STATE} to broker (?P<target_broker_id>{_N}) for partition "
       rf"{_TP}", "controller", "2.2+", "LeaderAndIsr", consts={"partitions": "1", "become_leader": "1"}),
    _m(Event.LEADER_AND_ISR_PARTITION_SENDING, "Sending become-follower LeaderAndIsr request ",
       rf"Sending become-follower LeaderAndIsr request {_STATE} to broker (?P<target_broker_id>{_N}) for partition "
       rf"{_TP}", "controller", "2.2+", "LeaderAndIsr", consts={"partitions": "1", "become_follower": "1"}),
    _m(Event.UPDATE_METADATA_PARTITION_SENDING, "Sending UpdateMetadata request ",
       rf"Sending UpdateMetadata request .* to brokers (?:Hash)?Set\((?P<target_brokers>[0-9, ]*)\) for partition "
       rf"{_TP}", "controller", "2.2-2.5", "UpdateMetadata", consts=_ONE),
    _m(Event.RESPONSE_RECEIVED, "Received response ",
       r"Received response .* for request (?P<request>[A-Z_]+) with correlation id "
       rf"(?P<correlation_id>{_N}) sent to broker .*\(id: (?P<target_broker_id>{_N}) rack: [^)]*\)",
       "controller", "2.2+"),
    _m(Event.PARTITION_STATE_CHANGED, "Changed partition ",
       rf"Changed partition {_TP} from \S+ to \S+ with state LeaderAndIsr\(leader=(?P<leader>-?{_N}), "
       rf"leaderEpoch=(?P<leader_epoch>{_N}).*", "controller", "2.2+"),
    # ---- epoch rejections
    _m(Event.STALE_BROKER_EPOCH, "Received LeaderAndIsr request with stale broker epoch info ",
       rf"Received LeaderAndIsr request with stale broker epoch info \(broker epoch:(?P<broker_epoch>-?{_N})\}}?,"
       rf"max broker epoch:-?{_N}\) when the current broker epoch is (?P<current_broker_epoch>-?{_N}).*",
       "broker", "linkedin", "LeaderAndIsr"),
    _m(Event.STALE_BROKER_EPOCH, "Received ",
       rf"Received {_REQ_WORDS} request with broker epoch (?P<broker_epoch>-?{_N}) smaller than the current broker "
       rf"epoch (?P<current_broker_epoch>-?{_N})(?: from controller (?P<controller_id>{_N}) with epoch "
       rf"(?P<controller_epoch>{_N})\.)?", "broker", "2.2+", contains=" request with broker epoch "),
    _m(Event.STALE_CONTROLLER_EPOCH, "Ignoring LeaderAndIsr request from controller ",
       rf"Ignoring LeaderAndIsr request from controller (?P<controller_id>{_N}) with correlation id "
       rf"(?P<correlation_id>{_N}) since its controller epoch (?P<controller_epoch>{_N}) is old\..*",
       "broker", "2.2+", "LeaderAndIsr", contains=" is old. "),
    _m(Event.STALE_LEADER_EPOCH, "Ignoring LeaderAndIsr request from controller ",
       rf"Ignoring LeaderAndIsr request from controller (?P<controller_id>{_N}) with correlation id "
       rf"(?P<correlation_id>{_N}) epoch (?P<controller_epoch>{_N}) for partition {_TP} since its associated leader "
       rf"epoch (?P<leader_epoch>{_N}) .*", "broker", "2.2+", "LeaderAndIsr", contains=" associated leader epoch "),
    _m(Event.LEADER_AND_ISR_PARTITION_IGNORED, "Ignoring LeaderAndIsr request from controller ",
       rf"Ignoring LeaderAndIsr request from controller (?P<controller_id>{_N}) with correlation id "
       rf"(?P<correlation_id>{_N}) epoch (?P<controller_epoch>{_N}) for partition {_TP} as .*", "broker", "2.2+",
       "LeaderAndIsr"),
    _m(Event.STALE_CONTROLLER_EPOCH, "Received update metadata request with correlation id ",
       rf"Received update metadata request with correlation id (?P<correlation_id>{_N}) from an old controller "
       rf"(?P<controller_id>{_N}) with epoch (?P<controller_epoch>{_N})\..*", "broker", "2.2+", "UpdateMetadata"),
    _m(Event.STALE_CONTROLLER_EPOCH, "Received stop replica request from an old controller epoch ",
       rf"Received stop replica request from an old controller epoch (?P<controller_epoch>{_N})\..*",
       "broker", "2.2-2.5", "StopReplica"),
    _m(Event.STALE_CONTROLLER_EPOCH, "Ignoring StopReplica request from controller ",
       rf"Ignoring StopReplica request from controller (?P<controller_id>{_N}) with correlation id "
       rf"(?P<correlation_id>{_N}) since its controller epoch (?P<controller_epoch>{_N}) is old\..*",
       "broker", "2.6+", "StopReplica", contains=" is old. "),
    _m(Event.STALE_LEADER_EPOCH, "Ignoring StopReplica request ",
       rf"Ignoring StopReplica request .* for partition {_TP} since its associated leader epoch "
       rf"(?P<leader_epoch>{_N}) .*", "broker", "2.6+", "StopReplica", contains=" associated leader epoch "),
    # ---- broker side, 2.2-2.5 per-partition TRACE (and 2.6+ TRACE Received)
    _m(Event.LEADER_AND_ISR_PARTITION_RECEIVED, "Received LeaderAndIsr request ",
       rf"Received LeaderAndIsr request {_STATE} correlation id (?P<correlation_id>{_N}) from controller "
       rf"(?P<controller_id>{_N}) epoch (?P<controller_epoch>{_N})(?: for partition {_TP})?", "broker", "2.2+",
       "LeaderAndIsr", consts=_ONE),
    _m(Event.BECOME_LEADER_COMPLETED, "Completed LeaderAndIsr request correlationId ",
       rf"Completed LeaderAndIsr request {_CORR_FROM} epoch (?P<controller_epoch>{_N}) for the become-leader "
       rf"transition for partition {_TP}", "broker", "2.2-2.5", "LeaderAndIsr", contains=" become-leader ",
       consts={"partitions": "1", "become_leader": "1"}),
    _m(Event.BECOME_FOLLOWER_COMPLETED, "Completed LeaderAndIsr request correlationId ",
       rf"Completed LeaderAndIsr request {_CORR_FROM} epoch (?P<controller_epoch>{_N}) for the become-follower "
       rf"transition for partition {_TP} with leader (?P<leader>-?{_N})", "broker", "2.2-2.5", "LeaderAndIsr",
       consts={"partitions": "1", "become_follower": "1"}),
    _m(Event.LOGS_TRUNCATED, "Truncated logs and checkpointed recovery boundaries for partition ",
       rf"Truncated logs and checkpointed recovery boundaries for partition {_TP} as part of become-follower request "
       rf"with correlation id (?P<correlation_id>{_N}) from controller (?P<controller_id>{_N}) epoch "
       rf"(?P<controller_epoch>{_N}) with leader (?P<leader>-?{_N})", "broker", "2.2-2.5", "LeaderAndIsr",
       consts=_ONE),
    _m(Event.FETCHER_STARTED, "Started fetcher to new leader as part of become-follower request ",
       rf"Started fetcher to new leader as part of become-follower request {_FROM_EPOCH_CORR} for partition {_TP} "
       rf"with leader (?:BrokerEndPoint\(id=)?(?P<leader>-?{_N}).*", "broker", "2.2-2.5", "LeaderAndIsr",
       consts=_ONE),
    _m(Event.LEADER_SKIPPED, "Skipped the become-leader state change ",
       rf"Skipped the become-leader state change after marking its partition as leader with correlation id "
       rf"(?P<correlation_id>{_N}) from controller (?P<controller_id>{_N}) epoch (?P<controller_epoch>{_N}) for "
       rf"partition {_TP} .*", "broker", "2.2+", "LeaderAndIsr", consts=_ONE,
       contains=" after marking its partition as leader "),
    _m(Event.FOLLOWER_SKIPPED, "Skipped the become-follower state change ",
       rf"Skipped the become-follower state change after marking its partition as follower with correlation id "
       rf"(?P<correlation_id>{_N}) from controller (?P<controller_id>{_N}) epoch (?P<controller_epoch>{_N}) for "
       rf"partition {_TP} .*", "broker", "2.6+", "LeaderAndIsr", consts=_ONE),
    _m(Event.BECOME_FOLLOWER_FAILED, "Received LeaderAndIsrRequest with correlation id ",
       rf"Received LeaderAndIsrRequest with correlation id (?P<correlation_id>{_N}) from controller "
       rf"(?P<controller_id>{_N}) epoch (?P<controller_epoch>{_N}) for partition {_TP} .* since the new leader "
       rf"(?P<leader>-?{_N}) is unavailable\.", "broker", "2.2+", "LeaderAndIsr", consts=_ONE),
    _m(Event.LEADER_AND_ISR_ERROR, "Error while processing LeaderAndIsr request correlationId ",
       rf"Error while processing LeaderAndIsr request correlationId (?P<correlation_id>{_N}) received from controller "
       rf"(?P<controller_id>{_N}) epoch (?P<controller_epoch>{_N}) for partition {_TP}.*", "broker", "2.2+",
       "LeaderAndIsr", consts=_ONE),
    _m(Event.LEADER_INFO_CACHED, "Cached leader info ",
       rf"Cached leader info {_STATE} for partition {_TP} in response to UpdateMetadata request sent by controller "
       rf"(?P<controller_id>{_N}) epoch (?P<controller_epoch>{_N}) with correlation id (?P<correlation_id>{_N})",
       "broker", "2.2+", "UpdateMetadata", consts=_ONE),
    _m(Event.PARTITION_DELETED_FROM_CACHE, "Deleted partition ",
       rf"Deleted partition {_TP} from metadata cache in response to UpdateMetadata request sent by controller "
       rf"(?P<controller_id>{_N}) epoch (?P<controller_epoch>{_N}) with correlation id (?P<correlation_id>{_N})",
       "broker", "2.2+", "UpdateMetadata", consts=_ONE),
    _m(Event.STOP_REPLICA_HANDLING, "Handling stop replica ",
       rf"Handling stop replica \(delete=(?:true|false)\) for partition {_TP}", "broker", "2.2-2.5", "StopReplica",
       consts=_ONE),
    _m(Event.STOP_REPLICA_FINISHED, "Finished handling stop replica ",
       rf"Finished handling stop replica \(delete=(?:true|false)\) for partition {_TP}", "broker", "2.2-2.5",
       "StopReplica", consts=_ONE),
    _m(Event.STOP_REPLICA_IGNORED, "Ignoring stop replica ",
       rf"Ignoring stop replica \(delete=(?:true|false)\) for partition {_TP} .*", "broker", "2.2-2.5",
       "StopReplica", consts=_ONE),
    _m(Event.STOP_REPLICA_PARTITION_RECEIVED, "Received StopReplica request ",
       rf"Received StopReplica request .* correlation id (?P<correlation_id>{_N}) from controller "
       rf"(?P<controller_id>{_N}) epoch (?P<controller_epoch>{_N}) for partition {_TP}", "broker", "2.6+",
       "StopReplica", consts=_ONE),
    _m(Event.LEADER_AND_ISR_BREAKDOWN, "Breakdown time in milliseconds for LeaderAndIsr request ",
       rf"Breakdown time in milliseconds for LeaderAndIsr request with correlationId (?P<correlation_id>{_N}) from "
       rf"controller (?P<controller_id>{_N}): Map\((?:.*acquireReplicaStateChangeLock -> (?P<lock_wait_ms>{_N}))?.*",
       "broker", "linkedin", "LeaderAndIsr"),
    # ---- KRaft broker (ReplicaManager.applyDelta)
    _m(Event.KRAFT_LEADERS_TRANSITION, "Transitioning ",
       rf"Transitioning (?P<become_leader>(?P<partitions>{_N})) partition\(s\) to local leaders\.", "kraft", "kraft",
       contains=" to local leaders"),
    _m(Event.KRAFT_LEADER_UNCHANGED, "Skipped the become-leader state change ",
       rf"Skipped the become-leader state change for {_TP} with topic id .* since it is already the leader with "
       rf"leader epoch (?P<leader_epoch>{_N})\. Current high watermark {_N}, ISR \[[0-9,]*\].*", "kraft", "kraft",
       contains=" since it is already the leader "),
    _m(Event.KRAFT_FOLLOWERS_TRANSITION, "Transitioning ",
       rf"Transitioning (?P<become_follower>(?P<partitions>{_N})) partition\(s\) to local followers\.", "kraft",
       "kraft"),
    _m(Event.KRAFT_PARTITIONS_DELETING, "Deleting ", rf"Deleting (?P<partitions>{_N}) partition\(s\)\.", "kraft",
       "kraft", contains=" partition(s)."),
    _m(Event.KRAFT_FETCHERS_STOPPED, "Stopped fetchers as part of become-follower for ",
       rf"Stopped fetchers as part of become-follower for (?P<become_follower>(?P<partitions>{_N})) partitions",
       "kraft", "kraft"),
    _m(Event.KRAFT_FETCHERS_STARTED, "Started fetchers as part of become-follower for ",
       rf"Started fetchers as part of become-follower for (?P<become_follower>(?P<partitions>{_N})) partitions",
       "kraft", "kraft"),
    # ---- KRaft control plane, as Apache Kafka 4.4 logs it: the active controller's controller.log
    # (org.apache.kafka.controller at INFO in the distribution's log4j2.yaml; ident [QuorumController id=N]) and a
    # broker's server.log ([BrokerLifecycleManager id=N])
    _m(Event.KRAFT_BROKER_FENCED, "Fencing broker ",
       rf"Fencing broker (?P<target_broker_id>{_N})(?: at epoch (?P<broker_epoch>{_N}))? because its session has "
       r"timed out\.", "kraft", "kraft"),  # 4.x names the broker epoch, 3.x does not
    _m(Event.KRAFT_SHUTDOWN_GRANTED, "The request from broker ",
       rf"The request from broker (?P<target_broker_id>{_N}) to shut down has been granted .*", "kraft", "kraft",
       contains=" to shut down has been granted"),
    _m(Event.KRAFT_BROKER_UNFENCED, "The request from broker ",
       rf"The request from broker (?P<target_broker_id>{_N}) to unfence has been granted .*", "kraft", "kraft",
       contains=" to unfence has been granted"),
    _m(Event.KRAFT_HEARTBEAT_EXPIRED, "processExpiredBrokerHeartbeat: ",
       rf"processExpiredBrokerHeartbeat: controller event queue overloaded\. Timed out heartbeat from broker "
       rf"(?P<target_broker_id>{_N})\.", "kraft", "kraft"),
    _m(Event.KRAFT_HEARTBEAT_NOT_SENT, "Unable to send a heartbeat ",
       r"Unable to send a heartbeat because the RPC got timed out before it could be sent\.", "kraft", "kraft"),
    _m(Event.KRAFT_ACTIVE_CONTROLLER, "Becoming the active controller at epoch ",
       rf"Becoming the active controller at epoch (?P<controller_epoch>{_N}), next write offset (?P<offset>{_N})\.",
       "kraft", "kraft"),
    # ---- server.log: the broker begins a controlled shutdown (its ident names it: the row's broker)
    _m(Event.CONTROLLED_SHUTDOWN_STARTED, "Starting controlled shutdown", r"Starting controlled shutdown", "broker",
       "2.2+"),
    _m(Event.CONTROLLED_SHUTDOWN_STARTED, "Beginning controlled shutdown.", r"Beginning controlled shutdown\.",
       "kraft", "kraft"),
    _m(Event.PROCESS_SIGTERM, "Terminating process due to signal SIGTERM",
       r"Terminating process due to signal SIGTERM", "broker", "2.2+"),
    # ---- server.log: the fetcher / log activity that contends for the partition-map lock (FACTS.md 6)
    _m(Event.LOG_START_OFFSET_INCREMENTED, "Increment",
       rf"Increment(?:ed|ing) (?:local )?log start offset (?:of partition {_TP} )?to (?P<offset>{_N})"
       r"(?: due to .*| in dir .*)?", "log", "2.2+"),
    _m(Event.EPOCH_CACHE_CLEARED, "Cleared earliest ",
       rf"Cleared earliest {_N} entries from epoch cache based on passed offset (?P<offset>{_N}) leaving {_N} in "
       rf"EpochFile for partition {_TP}", "log", "1.1-2.x"),
    _m(Event.EPOCH_CACHE_TRUNCATED, "Cleared entries ",
       rf"Cleared entries .* from epoch cache after truncating to (?:end|start) offset (?P<offset>{_N}).*", "log",
       "2.1+"),
    _m(Event.ISR_SHRINKING, "Shrinking ISR from ", r"Shrinking ISR from [0-9,]* to [0-9,]*.*", "log", "2.2+"),
    _m(Event.ISR_EXPANDING, "Expanding ISR from ", r"Expanding ISR from [0-9,]* to [0-9,]*.*", "log", "2.2+"),
    _m(Event.ISR_UPDATED, "ISR updated to ", r"ISR updated to [0-9,]* .*", "log", "3.x"),
    _m(Event.FETCHER_ADDED, "Added fetcher to broker ",
       rf"Added fetcher to broker (?:BrokerEndPoint\(id=)?(?P<leader>{_N}).* for partitions "
       rf"(?:Map|HashMap)\((?P<count_arrows>.*)\)", "fetcher", "2.2+"),
    _m(Event.FETCHER_REMOVED, "Removed fetcher for partitions ",
       r"Removed fetcher for partitions (?:Set|HashSet)\((?P<count_csv>.*)\)", "fetcher", "2.2+"),
    # ---- controller.log (KafkaController.onBrokerChange, 2.2-3.x ZK): a deleted or bounced broker's queued control
    # requests are dropped with its RequestSendThread (target_brokers = the deleted ones, else the bounced ones: a
    # bounced broker's old RequestSendThread and its queue go too; a line naming both keeps the deleted ones)
    _m(Event.BROKER_CHANGE, "Newly added brokers: ",
       r"Newly added brokers: [0-9, ]*, deleted brokers: (?P<target_brokers>[0-9, ]*), "
       r"bounced brokers: (?P<target_brokers__bounced>[0-9, ]*), "
       r"all live brokers: [0-9, ]*", "controller", "2.2+"),
    # controller.log (KafkaController.elect, 2.2-3.x ZK): a new controller epoch; the previous controller's queued
    # requests died with it
    _m(Event.CONTROLLER_ELECTED, "",
       rf"(?P<controller_id>{_N}) successfully elected as the controller\. Epoch incremented to "
       rf"(?P<controller_epoch>{_N}).*", "controller", "2.2+", contains=" successfully elected as the controller"),
    # ---- the reference broker's own lock-wait line (DEBUG, logger `planewatch`):
    #   [ReplicaManager broker=1] LeaderAndIsr correlationId 7 waited 0 ms for replicaStateChangeLock
    #   [ReplicaFetcherManager on broker 1] LeaderAndIsr waited N ms for partitionMapLock of ReplicaFetcherThread-0-2
    _m(Event.LOCK_WAIT, "",
       rf"(?:(?P<request>LeaderAndIsr|UpdateMetadata|StopReplica) (?:correlationId (?P<correlation_id>{_N}) )?|.* )"
       rf"waited (?P<lock_wait_ms>{_N}) ?ms for .*", "broker", "reference", contains=" waited "),
    _m(Event.LOCK_WAIT, "", rf".*lock_wait_ms=(?P<lock_wait_ms>{_N}).*", "broker", "reference",
       contains="lock_wait_ms="),
    _m(Event.LEADER_EPOCH_CHECKPOINT_FLUSHED, "",
       rf".*leader-epoch-checkpoint.*?(?:(?:in|took) (?P<elapsed_ms>{_N}) ?ms.*)?", "log", "reference",
       contains="leader-epoch-checkpoint"),
    # ---- 2.2-2.5 server.log Partition leader lines (no literal prefix: the body starts with the partition)
    _m(Event.LEADER_STARTED, "",
       rf"{_TP} starts at [Ll]eader [Ee]poch (?P<leader_epoch>{_N}) from offset (?P<offset>{_N}).*", "broker",
       "2.2-2.5", contains=" starts at "),
)


EVENTS: tuple[Event, ...] = tuple(dict.fromkeys(m.event for m in MESSAGES))
"""The events the message patterns produce, in declaration order (every member of schemas.events.Event)."""

# ---------------------------------------------------------------------------------------------------- request log
REQUEST_TEXT = (
    r"^Completed request: ?RequestHeader\(apiKey=(?P<api>[A-Z0-9_]+), apiVersion=(?P<api_version>-?[0-9]+), "
    r"clientId=(?P<client_id>[^,]*), correlationId=(?P<correlation_id>-?[0-9]+)[^)]*\) -- "
    r"(?:\{controller_id=(?P<controller_id>-?[0-9]+),controller_epoch=(?P<controller_epoch>-?[0-9]+)"
    r"(?:,broker_epoch=(?P<broker_epoch>-?[0-9]+))?)?.*"
    r",response[:=](?:\{error_code=(?P<error_code>-?[0-9]+))?.* from connection (?P<connection>\S+);"
    r"totalTime:(?P<total_time_ms>[^,]*),requestQueueTime:(?P<request_queue_time_ms>[^,]*),"
    r"localTime:(?P<local_time_ms>[^,]*),remoteTime:(?P<remote_time_ms>[^,]*),throttleTime:(?P<throttle_time_ms>[^,]*),"
    r"responseQueueTime:(?P<response_queue_time_ms>[^,]*),sendTime:(?P<send_time_ms>[^,]*)(?:,sendIoTime:[^,]*)?,"
    r"securityProtocol:(?P<security_protocol>[^,]*),principal:(?P<principal>[^,]*),listener:(?P<listener>[^,]*)"
    r"(?:,.*)?"
)
REQUEST_TEXT_FIELDS = (
    "api",
    "api_version",
    "client_id",
    "correlation_id",
    "controller_id",
    "controller_epoch",
    "broker_epoch",
    "error_code",
    "connection",
    "total_time_ms",
    "request_queue_time_ms",
    "local_time_ms",
    "remote_time_ms",
    "throttle_time_ms",
    "response_queue_time_ms",
    "send_time_ms",
    "security_protocol",
    "principal",
    "listener",
)
# request_events column -> JSON path in the 2.8+ (KIP-673) object; the KIP's proposal spelling is the fallback.
REQUEST_JSON_FIELDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "api_key": (("requestHeader", "requestApiKey"),),
    "api": (("requestHeader", "requestApiKeyName"), ("requestHeader", "apiKey")),
    "api_version": (("requestHeader", "requestApiVersion"), ("requestHeader", "apiVersion")),
    "correlation_id": (("requestHeader", "correlationId"),),
    "client_id": (("requestHeader", "clientId"),),
    "controller_id": (("request", "controllerId"),),
    "controller_epoch": (("request", "controllerEpoch"),),
    "broker_epoch": (("request", "brokerEpoch"),),
    "error_code": (("response", "errorCode"),),
    "connection": (("connection",),),
    "total_time_ms": (("totalTimeMs",),),
    "request_queue_time_ms": (("requestQueueTimeMs",),),
    "local_time_ms": (("localTimeMs",),),
    "remote_time_ms": (("remoteTimeMs",),),
    "throttle_time_ms": (("throttleTimeMs",),),
    "response_queue_time_ms": (("responseQueueTimeMs",),),
    "send_time_ms": (("sendTimeMs",),),
    "security_protocol": (("securityProtocol",),),
    "principal": (("principal",),),
    "listener": (("listener",),),
}

# A number as a metric value or request-log time may be written (Prometheus also writes NaN/+Inf).
NUMERIC = r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|Inf|inf|Infinity|NaN|nan)"

# ApiKeys (clients/.../protocol/ApiKeys.java, 3.8): id -> name in the metric spelling (RequestMetrics `request=` tag).
API_KEYS: dict[int, str] = dict(
    enumerate(
        (
            "Produce", "Fetch", "ListOffsets", "Metadata", "LeaderAndIsr", "StopReplica", "UpdateMetadata",
            "ControlledShutdown", "OffsetCommit", "OffsetFetch", "FindCoordinator", "JoinGroup", "Heartbeat",
            "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "SaslHandshake", "ApiVersions", "CreateTopics",
            "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch", "AddPartitionsToTxn",
            "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit", "DescribeAcls", "CreateAcls",
            "DeleteAcls", "DescribeConfigs", "AlterConfigs", "AlterReplicaLogDirs", "DescribeLogDirs",
            "SaslAuthenticate", "CreatePartitions", "CreateDelegationToken", "RenewDelegationToken",
            "ExpireDelegationToken", "DescribeDelegationToken", "DeleteGroups", "ElectLeaders",
            "IncrementalAlterConfigs", "AlterPartitionReassignments", "ListPartitionReassignments", "OffsetDelete",
            "DescribeClientQuotas", "AlterClientQuotas", "DescribeUserScramCredentials", "AlterUserScramCredentials",
            "Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "DescribeQuorum", "AlterPartition", "UpdateFeatures",
            "Envelope", "FetchSnapshot", "DescribeCluster", "DescribeProducers", "BrokerRegistration",
            "BrokerHeartbeat",
            "UnregisterBroker", "DescribeTransactions", "ListTransactions", "AllocateProducerIds",
        )
    )
)
