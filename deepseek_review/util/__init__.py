"""Small helpers every layer may use: bounded JSON, safe text, logging, resources."""
