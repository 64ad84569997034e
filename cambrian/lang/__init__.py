"""Programming languages: what Cambrian knows of each (comments, fences, functions, syntax check,
compiler) and the source-code analyses built on it (masking, definitions, line normalisation)."""
