"""edgeframe trainer: fits the reference model (tools/edgeframe_ref) to tools/data."""

__version__ = "1.0.0"
