"""What the tool ships for trying it without a model server."""
