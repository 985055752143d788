"""``python -m crsbench.cli``: the same command line as the ``crsbench`` script."""

from crsbench.cli import main

main()
