"""Detection: control-request pairing, detectors for every alert type, and the alert lifecycle.

Pure functions only (Columns/DataFrames in and out, plain Python for pairing state and the lifecycle);
`jobs/detect.py` is the streaming shell that reads silver and writes gold.
"""
