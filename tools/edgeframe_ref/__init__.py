"""edgeframe_ref: the PyTorch reference of the edgeframe model (doc/model.md)."""

__version__ = "1.0.0"
