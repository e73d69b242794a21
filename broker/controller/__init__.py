"""The controller side: per-broker send threads (one request in flight, KIP-291 routing) and request batches.

It grows into the reference cluster's controller (events queue, broker registration and epochs, the cached
UpdateMetadata payload shared by all brokers).
"""

from __future__ import annotations

from broker.controller.channel import ControllerChannelManager, ControlResponse
from broker.controller.requests import BrokerNode, select_control_endpoint
from broker.controller.sender import ControlRequestSender

__all__ = ["BrokerNode", "ControlRequestSender", "ControlResponse", "ControllerChannelManager",
           "select_control_endpoint"]
