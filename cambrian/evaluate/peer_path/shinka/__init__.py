"""Cambrian's stand-in for the parts of ShinkaEvolve an evaluator imports
(``from shinka.core import run_shinka_eval``); see cambrian/evaluate/peer_helpers.py."""
