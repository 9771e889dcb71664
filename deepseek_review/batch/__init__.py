"""Batches: the manifest, planning its entries, scheduling them, the report and resuming."""
