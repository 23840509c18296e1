"""matplotlib without a display (Agg), shared by the sections."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401
