"""curation: the engine-free library of a data-curation pipeline for LLM pre-training.

Everything here works on Arrow tables and never imports Ray; `pipelines` runs it on Ray.
"""

__version__ = "0.1.0"
