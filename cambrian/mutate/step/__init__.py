"""The improvement step (`improve_step` intent): a hill-climbing loop the framework wires after
the program's entry function, whose score and move the model writes. `python.py` and `cpp.py`
are its halves per language, `wiring.py` picks the one of a program's language, `intent.py` is
the intent the mutation schedule draws."""
