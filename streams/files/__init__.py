"""The file stages: media checked by their bytes and chart CSVs snapshotted,
inside their roots, bounded.
"""
