"""Evaluation: the paper's T1–T5 metrics, its baselines, and reports."""
