"""The controller side: per-broker send threads (one request in flight, KIP-291 routing) and request batches.

It grows into the reference cluster's controller (events queue, broker registration and epochs, the cached
UpdateMetadata payload shared by all brokers).

Modules: `channel` (The controller's channel to the brokers (Kafka 2.8 `ControllerChannelManager` /...); `requests`
(Pure helpers of the controller side); `sender` (The controller's request batches).
"""

from __future__ import annotations

from broker.controller.channel import ControllerChannelManager, ControlResponse
from broker.controller.requests import BrokerNode, select_control_endpoint
from broker.controller.sender import ControlRequestSender

__all__ = ["BrokerNode", "ControlRequestSender", "ControlResponse", "ControllerChannelManager",
           "select_control_endpoint"]
