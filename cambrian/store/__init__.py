"""The run store (SQLite) and the recorder that writes a run's facts into it."""
