"""Tuna: a distributed tuning service for kernel libraries, backed by MySQL."""

__version__ = "0.1.0"
