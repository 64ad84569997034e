"""Export of a run's scores, costs and events to experiment trackers (MLflow, Weights &
Biases): a subscriber of the run's event bus (``tracker.py``) and one sink per tracker."""
