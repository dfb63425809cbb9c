"""Where kernels come from: the corpus manifest and the command line's targets (files, folders,
``corpus:SELECTOR``), with :class:`~ptxopt.kernels.inputs.InputError` for the user's mistakes.

The bottom floor: it imports nothing of ptxopt.
"""
