"""Transitional: the messaging service lives in :mod:`agentcoord.messaging`; these names stay
importable from here until the last importer moves, then this module goes."""

from __future__ import annotations

from agentcoord.messaging import Messaging, Offer, OfferBook

__all__ = ["Messaging", "Offer", "OfferBook"]
