"""The web UI: watch, inspect and steer runs in the browser (``cambrian ui``, ``cambrian run
--ui``). ``publisher.py`` runs inside the run's process and needs only the standard library;
everything else needs the ``ui`` extra (FastAPI, uvicorn, Jinja2)."""
