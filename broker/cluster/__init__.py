"""The reference cluster: a controller process and broker processes on 127.0.0.1 (issue 4).

* :mod:`.model`: pure controller decisions (assignment, election, ISR);
* :mod:`.controller`: the controller (registration, epochs, events, control requests), :mod:`.controller_main` its
  process; :mod:`.http`: the registration channel (HTTP/JSON) and the broker-side client;
* :mod:`.node`: a broker process as a cluster member (registration, heartbeats, fetchers, ISR, CreateTopics);
* :mod:`.launcher`: start/stop everything, ``cluster.json``.
"""

from __future__ import annotations
