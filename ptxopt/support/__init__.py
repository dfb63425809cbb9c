"""Process plumbing: forks, workers, the GC pause, atomic outputs, host state, cancellation,
captured pass output, JSON text and code digests.

Knows nothing of PTX; every other package may import it.
"""
