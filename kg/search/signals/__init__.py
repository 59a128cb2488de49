"""The local search signals, registered by name.

Adding a signal is one new module here, with a class that keeps
:class:`~kg.search.signals.base.Signal`, and one line below. Hybrid mode runs and fuses every
registered signal, in this order, with its ``search.fusion_weights`` entry (a signal without a
weight is fetched but counts 0); the other modes run the signal of their name. The global
signal (``communities``) is routed to, not fused, so it is not registered here.
"""

from __future__ import annotations

from kg.search.signals.base import SignalFactory
from kg.search.signals.graph import GraphSignal
from kg.search.signals.text import TextSignal
from kg.search.signals.vector import VectorSignal

#: Name -> how to build it; the order is the fusion order (ties in fused scores break by id).
SIGNALS: dict[str, SignalFactory] = {
    "text": TextSignal,
    "vector": VectorSignal,
    "graph": GraphSignal,
}
