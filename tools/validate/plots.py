"""matplotlib without a display (Agg), shared by the sections."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401


def legend(ax):
    """ax.legend() when something is labelled (a section whose runs all failed plots nothing)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
