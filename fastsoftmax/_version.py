"""The version, in a file of its own so that packaging reads it without importing."""
__version__ = "0.3.0"
