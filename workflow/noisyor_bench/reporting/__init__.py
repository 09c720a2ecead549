"""Collection of runs, statistics, tables, claims, plots and the report's views."""
