"""Derived, rebuildable indexes over traces: units at four granularities and their encodings."""
