"""Kernel definitions, each written once against the Isa vector-ops table."""
