"""Reply formats: one module each (``diff.py``, ``full.py``, ``function.py``), registered by
name in ``registry.py``; ``choice.py`` picks the format a proposal asks a model for."""
