"""What setup.cfg cannot say: the top-level ``corpus/`` ships inside the package.

The repository keeps the corpus at the top (``corpus/``: tests, benchmarks,
editable installs and ``regenerate.py`` use it there), but a wheel must be
self-contained, so the folder is mapped to the package ``ptxopt._corpus``
(its files are listed in setup.cfg's ``[options.package_data]``) and
:func:`ptxopt.kernels.corpus.corpus_root` looks there first. The learning layer's
folder ``rl/`` is the package ``ptxopt_rl``, for the same kind of reason.
"""

from setuptools import find_packages, setup

setup(
    # the learning layer lives in the folder rl/ and installs as ptxopt_rl: a top-level "rl" would
    # collide with any other project's
    packages=(find_packages(include=["ptxopt", "ptxopt.*"]) + ["ptxopt._corpus"]
              + ["ptxopt_rl" + p[2:] for p in find_packages(include=["rl", "rl.*"])]),
    package_dir={"ptxopt._corpus": "corpus", "ptxopt_rl": "rl"},
)
