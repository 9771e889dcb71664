"""What reviews used and cost, read back from their receipts."""
