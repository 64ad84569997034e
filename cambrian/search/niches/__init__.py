"""Strategy niches (seed 002 §10.3-10.4, seed 004 §10.3-10.4): the niche archive built from the
stored strategy tags (``archive.py``), the diversity distance between programs
(``distance.py``), niche-aware parent selection any selector can use (``sampler.py``), the
``niches`` selector (``selector.py``), the wiring of the tagger (``wiring.py``) and the niche map
``cambrian status`` and the web UI show (``view.py``)."""
