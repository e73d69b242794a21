"""Detection: control-request pairing, detectors for every alert type, and the alert lifecycle.

Pure functions only (polars and Arrow in and out, plain Python for pairing state and the lifecycle); the log and
metric families' micro-batches (jobs/batch_detect.py) run them over their rows and write gold.
"""
