"""evidence-gate: keeps the evidence of a pull request out of the patch's reach."""

__version__ = "0.1.0"
