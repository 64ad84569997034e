"""Errors every layer may raise and every front end knows how to show in one line."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration problem, phrased for the person who wrote the config."""
