"""Spaces: where differences come from, and how a subset of them becomes something runnable."""
