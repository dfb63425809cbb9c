"""The PTX language: grammar, words, the frozen IR, parser, printer, layout, opcodes and operand facts.

The lowest floor that knows PTX: it imports only :mod:`ptxopt.support` and :mod:`ptxopt.kernels`.
"""
