"""``python -m ptxopt.cli``."""

from ptxopt.cli.app import main

if __name__ == "__main__":
    main()
