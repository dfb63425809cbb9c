"""What setup.cfg cannot say: the top-level ``corpus/`` ships inside the package.

The repository keeps the corpus at the top (``corpus/``: tests, benchmarks,
editable installs and ``regenerate.py`` use it there), but a wheel must be
self-contained, so the folder is mapped to the package ``ptxopt._corpus``
(its files are listed in setup.cfg's ``[options.package_data]``) and
:func:`ptxopt.corpus.corpus_root` looks there first.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["ptxopt", "ptxopt.*", "rl", "rl.*"]) + ["ptxopt._corpus"],
    package_dir={"ptxopt._corpus": "corpus"},
)
