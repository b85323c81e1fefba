"""Metrics, video-level aggregation, predictions files, tables, plots and analysis tools."""
