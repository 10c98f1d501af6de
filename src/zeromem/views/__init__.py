"""Retrieval views over the units: the entity–context graph and the temporal hierarchy."""
