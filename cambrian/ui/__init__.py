"""The web UI: watch, inspect and steer runs in the browser (``cambrian ui``, ``cambrian run
--ui``). The run's side of the live view is ``search/live_feed.py`` (standard library only);
everything here needs the ``ui`` extra (FastAPI, uvicorn, Jinja2)."""
