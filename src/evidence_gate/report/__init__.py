"""Every renderer of a receipt: text, JSON, SARIF, the check run, the job summary, the history picture."""
