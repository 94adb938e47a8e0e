"""The GitHub Action (`evidence-gate action`) and its modes: gate, merge, publish, contexts."""
