"""The reference cluster: a controller process and broker processes on 127.0.0.1 (issue 4).

* :mod:`.model`: pure controller decisions (assignment, election, ISR);
* :mod:`.controller`: the controller (registration, epochs, events, control requests), :mod:`.controller_main` its
  process; :mod:`.http`: the registration channel (HTTP/JSON) and the broker-side client;
* :mod:`.node`: a broker process as a cluster member (registration, heartbeats, fetchers, ISR, CreateTopics);
* :mod:`.launcher`: start/stop everything, ``cluster.json``.

Modules: `controller_admin` (The controller's admin events); `topic_config_store` (The controller's topic config
overrides (Kafka's `/config/topics/<topic>`) and their...); `topic_config_sync` (A cluster broker's topic configs
kept equal to the controller's (Kafka's...).
"""

from __future__ import annotations

__all__: list[str] = []
