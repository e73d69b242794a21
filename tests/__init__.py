"""planewatch test suite."""
