"""The vocabulary every layer shares: candidate statuses, the objective, evaluation results,
typed events, proposal outcomes and the registry pattern. Imports nothing else of Cambrian."""
